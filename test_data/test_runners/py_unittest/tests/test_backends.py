"""Balance tests run against every storage backend: `load_tests` builds one test case per
backend from the mixin, so no test case class of this module is found without it."""

import os
import unittest

from ledger import balance


class BackendTests:
    backend = None

    def test_balance(self):
        self.assertEqual(balance([1000, -250, 15]), 765)

    def test_reopen(self):
        # A flaky case on one backend: it fails while `$FLAKY_MARKER` does not exist,
        # creating it.
        marker = os.environ["FLAKY_MARKER"]
        if self.backend == "disk" and not os.path.exists(marker):
            open(marker, "w").close()
            self.fail("the disk backend fails the first time")


def load_tests(loader, standard_tests, pattern):
    for backend in ("memory", "disk"):
        name = backend.capitalize() + "BackendTest"
        case = type(name, (BackendTests, unittest.TestCase), {"backend": backend})
        standard_tests.addTests(loader.loadTestsFromTestCase(case))
    return standard_tests
