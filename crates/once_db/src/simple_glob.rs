//! Globs matched without compiling a regex, for the common shapes of `srcs` and package
//! patterns (`src/**/*.rs`, `apps/*`, `tests/*_test.py`): compiling a glob into a regex
//! is most of what checking a small workspace's patterns costs a new process.
//!
//! [`SimpleGlob::new`] accepts a pattern only when every `/`-separated segment is either
//! `**` alone (zero or more segments; one or more at the end) or text whose only special
//! character is `*` (any run of characters inside the segment). Anything else (`?`,
//! classes, alternatives, escapes, `**` beside other text, two `**` in a row) answers
//! `None`, and the caller compiles the pattern with `globset`. For what it accepts, the
//! answers equal `globset`'s with `literal_separator(true)` (a test compares them).

/// One segment of a [`SimpleGlob`].
#[derive(Clone, Debug, PartialEq, Eq)]
enum Segment {
    /// `**`: any number of whole segments.
    Any,
    /// Text where `*` matches any run of characters other than `/`.
    Text(String),
}

/// A glob of the shapes described in the module documentation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimpleGlob {
    segments: Vec<Segment>,
}

impl SimpleGlob {
    /// The pattern as a [`SimpleGlob`], when it has only the accepted shapes.
    pub fn new(pattern: &str) -> Option<SimpleGlob> {
        if pattern.contains(['?', '[', ']', '{', '}', '\\']) {
            return None;
        }
        let mut segments = Vec::new();
        for text in pattern.split('/') {
            if text == "**" {
                if segments.last() == Some(&Segment::Any) {
                    return None;
                }
                segments.push(Segment::Any);
            } else if text.contains("**") {
                return None;
            } else {
                segments.push(Segment::Text(text.to_owned()));
            }
        }
        Some(SimpleGlob { segments })
    }

    /// Whether the `/`-separated `path` matches the whole pattern.
    pub fn is_match(&self, path: &str) -> bool {
        let parts: Vec<&str> = path.split('/').collect();
        matches_from(&self.segments, &parts)
    }
}

/// Whether `parts` match `segments`; `**` takes zero or more parts, or one or more when
/// it ends the pattern (`a/**` does not match `a`, as in `globset`).
fn matches_from(segments: &[Segment], parts: &[&str]) -> bool {
    match segments.split_first() {
        None => parts.is_empty(),
        Some((Segment::Text(text), rest)) => parts
            .split_first()
            .is_some_and(|(part, others)| wildcard(text, part) && matches_from(rest, others)),
        Some((Segment::Any, rest)) => {
            let least = usize::from(rest.is_empty());
            (least..=parts.len()).any(|skipped| matches_from(rest, &parts[skipped..]))
        }
    }
}

/// Whether `text` (no `/`) matches `pattern`, where `*` matches any run of characters.
fn wildcard(pattern: &str, text: &str) -> bool {
    let Some((first, rest)) = pattern.split_once('*') else {
        return pattern == text;
    };
    let Some(mut remaining) = text.strip_prefix(first) else {
        return false;
    };
    let mut pieces: Vec<&str> = rest.split('*').collect();
    // The text after the last `*` must end the text.
    let last = pieces.pop().unwrap_or_default();
    for piece in pieces {
        match remaining.find(piece) {
            Some(at) => remaining = &remaining[at + piece.len()..],
            None => return false,
        }
    }
    remaining.len() >= last.len() && remaining.ends_with(last)
}

#[cfg(test)]
mod tests {
    use super::*;
    use globset::GlobBuilder;

    const PATTERNS: &[&str] = &[
        "src/**/*.rs",
        "src/*.rs",
        "**/*.rs",
        "**",
        "*",
        "apps/*",
        "apps/**",
        "apps/legacy/**",
        "a/**/b",
        "a/**/b/**/c",
        "tests/*_test.py",
        "*test*",
        "a*b*c",
        "x*x",
        "Cargo.toml",
        "data",
        "",
        "a//b",
        "*.",
        ".*",
        "src/**",
        "**/x",
        "é/*ü",
    ];

    const PATHS: &[&str] = &[
        "",
        "src",
        "src/a.rs",
        "src/.rs",
        "src/a/b.rs",
        "src/a/b/c.rs",
        "src/a.rsx",
        "a.rs",
        "x/a.rs",
        "/a.rs",
        "apps",
        "apps/a",
        "apps/a/deep",
        "apps/legacy",
        "apps/legacy/x",
        "apps/",
        "a/b",
        "a/x/b",
        "a/x/y/b",
        "a//b",
        "a/b/c",
        "a/x/b/y/c",
        "a/b/b/c",
        "tests/foo_test.py",
        "tests/_test.py",
        "tests/x/foo_test.py",
        "test",
        "xtestx",
        "abc",
        "aXbYc",
        "acb",
        "x",
        "xx",
        "xax",
        "Cargo.toml",
        "data",
        "data/x",
        "x.",
        ".x",
        "x",
        "/x",
        "a/x",
        "é/aü",
        "é/ü",
    ];

    #[test]
    fn answers_equal_globset_for_every_accepted_pattern() {
        for pattern in PATTERNS {
            let simple = SimpleGlob::new(pattern).unwrap_or_else(|| panic!("{pattern}"));
            let Ok(glob) = GlobBuilder::new(pattern)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
            else {
                continue;
            };
            let matcher = glob.compile_matcher();
            for path in PATHS {
                assert_eq!(
                    simple.is_match(path),
                    matcher.is_match(path),
                    "pattern `{pattern}`, path `{path}`"
                );
            }
        }
    }

    #[test]
    fn other_shapes_are_left_to_globset() {
        for pattern in ["a?", "[ab]", "{a,b}", "a\\*", "a**", "**b", "a/**/**/b"] {
            assert_eq!(SimpleGlob::new(pattern), None, "{pattern}");
        }
    }
}
