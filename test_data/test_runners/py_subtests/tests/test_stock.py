"""Stock checks, one subtest per SKU (pytest's `subtests` fixture)."""

import os

from inventory import LEVELS, is_valid_sku, needs_restock


def test_restock_levels(subtests):
    expected = {"A1": False, "B2": True, "C3": True}
    for sku, restock in expected.items():
        with subtests.test(msg="restock", sku=sku):
            assert needs_restock(sku) == restock, f"{sku} has {LEVELS[sku]} in stock"


def test_every_sku_is_valid(subtests):
    for sku in LEVELS:
        with subtests.test(sku=sku):
            assert is_valid_sku(sku)


def test_reservation_is_flaky(subtests):
    with subtests.test(msg="reserve"):
        marker = os.environ["FLAKY_MARKER"]
        if not os.path.exists(marker):
            open(marker, "w").close()
            assert False, "fails the first time"


def test_without_subtests():
    assert sorted(LEVELS) == ["A1", "B2", "C3"]
