import unittest

import ledger


class BalanceTest(unittest.TestCase):
    def test_empty(self):
        self.assertEqual(ledger.balance([]), 0)

    def test_amounts(self):
        for amounts, total in [([1], 1), ([2, 3], 5)]:
            with self.subTest(amounts=amounts):
                self.assertEqual(ledger.balance(amounts), total)

    @unittest.skip("later")
    def test_later(self):
        pass
