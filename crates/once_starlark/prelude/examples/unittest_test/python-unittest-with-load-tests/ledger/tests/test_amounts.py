"""Tests of parsing amounts, one subtest per written form."""

import unittest

from ledger import parse_amount


class ParseAmountTest(unittest.TestCase):
    def test_written_forms(self):
        for text, cents in [("12.34", 1234), ("0.5", 50), ("-3", -300), ("+7.01", 701)]:
            with self.subTest(text=text):
                self.assertEqual(parse_amount(text), cents)
