"""Tests of balances, run against every kind of entry source that `load_tests` builds."""

import unittest

from ledger import balance


class EntrySourceTests:
    """Mixed into one test case per source by `load_tests`."""

    def entries(self):
        raise NotImplementedError

    def test_balance_of_deposits_and_withdrawals(self):
        self.assertEqual(balance(self.entries()), 765)


class ListSourceTest(EntrySourceTests, unittest.TestCase):
    def entries(self):
        return [1000, -250, 15]


def load_tests(loader, standard_tests, pattern):
    for source in ("csv", "json"):
        case = type(f"{source.upper()}SourceTest", (ListSourceTest,), {})
        standard_tests.addTests(loader.loadTestsFromTestCase(case))
    return standard_tests
