//! Recovery costs the length of what it skips, once: inputs that used to make the parser
//! rescan the rest of a line (or of the file) for every token parse in linear time.
//!
//! The size is chosen so that the quadratic parser took about a minute in a debug build
//! (each skipped token searched for the end of its line: 4 minutes for a 1 MB line), while
//! the linear one takes about 3 s unoptimised (0.1 s in release). The bound only guards
//! against the quadratic time, with room for a loaded machine.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up and inspect real files and time real work"
)]

use std::time::{Duration, Instant};

const BOUND: Duration = Duration::from_secs(20);

fn parse_within_bound(text: &str) -> usize {
    let started = Instant::now();
    let parse = once_syntax::parse(text);
    let document = once_syntax::value::document(&parse);
    let elapsed = started.elapsed();
    assert_eq!(parse.syntax().to_string().len(), text.len());
    assert!(elapsed < BOUND, "parsing took {elapsed:?}");
    document.errors.len()
}

/// One 500 KB line of `a a a …`: the key `a` lacks its `=`, and the rest of the line is
/// skipped as one error.
#[test]
fn one_long_line_of_bare_words() {
    let text = "a ".repeat(250_000);
    let errors = parse_within_bound(&text);
    assert_eq!(errors, 1);
}
