"""Fixtures shared by the pricing tests."""

import pytest


@pytest.fixture
def basket() -> list[int]:
    """Three items, in cents."""
    return [250, 1999, 1]
