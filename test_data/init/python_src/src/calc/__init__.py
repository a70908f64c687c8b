"""A calculator package in a src layout."""

from calc.ops import add, mul

__all__ = ["add", "mul"]
