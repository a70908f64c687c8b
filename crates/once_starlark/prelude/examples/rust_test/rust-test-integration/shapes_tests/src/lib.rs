//! Nothing here: the tests of this package are in `tests/`.
