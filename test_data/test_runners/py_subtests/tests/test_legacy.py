"""The older tests, still `unittest` test cases: one subtest per SKU with `subTest`."""

import unittest

from inventory import LEVELS, needs_restock


class LegacyStockTest(unittest.TestCase):
    def test_nothing_is_out_of_stock(self):
        for sku, level in LEVELS.items():
            with self.subTest(sku=sku):
                self.assertGreater(level, 0)

    def test_well_stocked_needs_nothing(self):
        for sku in ("A1",):
            with self.subTest(sku=sku):
                self.assertFalse(needs_restock(sku))

    def test_levels_are_counts(self):
        self.assertTrue(all(isinstance(level, int) for level in LEVELS.values()))
