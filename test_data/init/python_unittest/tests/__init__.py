"""The ledger's tests: discovery calls this package's `load_tests`, which discovers the
test modules below as usual and adds the library's doctests."""

import doctest
import os

import ledger


def load_tests(loader, standard_tests, pattern):
    here = os.path.dirname(__file__)
    standard_tests.addTests(loader.discover(start_dir=here, pattern=pattern or "test*.py"))
    standard_tests.addTests(doctest.DocTestSuite(ledger))
    return standard_tests
