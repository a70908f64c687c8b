//! The built-in prelude: it evaluates, every kind is documented and has runnable examples.
