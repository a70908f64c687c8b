"""Stock levels of a small warehouse, by SKU."""

LEVELS = {"A1": 12, "B2": 0, "C3": 4}
MINIMUM = 3


def needs_restock(sku):
    """Whether the stock of `sku` is below the minimum."""
    return LEVELS[sku] < MINIMUM


def is_valid_sku(sku):
    """A letter followed by a digit."""
    return len(sku) == 2 and sku[0].isalpha() and sku[1].isdigit()
