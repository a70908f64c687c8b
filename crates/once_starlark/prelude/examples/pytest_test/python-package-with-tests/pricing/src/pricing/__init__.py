"""Order totals with percentage discounts, in integer cents."""


def apply_discount(cents: int, percent: int) -> int:
    """Returns `cents` reduced by `percent`, rounded half up to a whole cent."""
    if not 0 <= percent <= 100:
        raise ValueError(f"discount must be between 0 and 100, got {percent}")
    return (cents * (100 - percent) + 50) // 100


def order_total(prices: list[int], percent: int = 0) -> int:
    """Returns the discounted sum of `prices`."""
    return apply_discount(sum(prices), percent)
