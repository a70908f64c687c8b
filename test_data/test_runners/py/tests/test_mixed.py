import os

import pytest


def test_passes():
    assert "a".upper() == "A"


def test_fails():
    expected = 3
    assert 1 + 1 == expected, "one and one make two"


@pytest.mark.skip(reason="not on this machine")
def test_skipped():
    pass


def test_flaky():
    marker = os.environ["FLAKY_MARKER"]
    if not os.path.exists(marker):
        open(marker, "w").close()
        assert False, "fails the first time"
