import pytest

import calc


def test_add(pair):
    assert calc.add(*pair) == 7


@pytest.mark.parametrize("a,b,product", [(2, 3, 6), (0, 5, 0)])
def test_mul(a, b, product):
    assert calc.mul(a, b) == product


@pytest.mark.skip(reason="not written yet")
def test_div():
    pass
