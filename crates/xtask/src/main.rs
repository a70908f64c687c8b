//! Project automation entry point.
fn main() {}
