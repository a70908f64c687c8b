//! The `once` binary.
fn main() {}
