import pytest


@pytest.fixture
def pair():
    return (3, 4)
