"""Fixtures shared by the msgcheck tests."""

from pathlib import Path

import pytest


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    """A catalog with two good messages."""
    (tmp_path / "en.txt").write_text("Hello, World!\n", encoding="utf-8")
    (tmp_path / "fr.txt").write_text("Bonjour, le monde !\n", encoding="utf-8")
    return tmp_path
