"""Tests of the pricing library."""

import pytest

from pricing import apply_discount, order_total


def test_no_discount_keeps_the_sum(basket):
    assert order_total(basket) == 2250


def test_discount_rounds_half_up():
    assert apply_discount(999, 50) == 500


@pytest.mark.parametrize("percent", [-1, 101])
def test_rejects_out_of_range_discounts(percent):
    with pytest.raises(ValueError):
        apply_discount(100, percent)
