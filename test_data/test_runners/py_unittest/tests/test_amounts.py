"""Tests of parsing amounts: one subtest per written form."""

import unittest

from ledger import parse_amount


class ParseAmountTest(unittest.TestCase):
    def test_written_forms(self):
        for text, cents in [("12.34", 1234), ("0.5", 50), ("1.005", 101), ("-3", -300)]:
            with self.subTest(text=text):
                self.assertEqual(parse_amount(text), cents)

    def test_signs(self):
        for text in ("+1", "-1"):
            with self.subTest("sign", text=text):
                self.assertEqual(abs(parse_amount(text)), 100)
        with self.subTest("no sign"):
            self.skipTest("unsigned amounts are checked elsewhere")

    def test_rejects_letters(self):
        raise NotImplementedError("letters are not rejected yet")

    @unittest.skip("currencies are not supported")
    def test_currencies(self):
        parse_amount("EUR 1")

    @unittest.expectedFailure
    def test_rounds_half_cents(self):
        self.assertEqual(parse_amount("0.005"), 1)
