//! Small text helpers: range conversion and "did you mean" suggestions.

use once_model::TextRange;

/// Converts a syntax range to the model's range.
pub(crate) fn range(range: once_syntax::TextRange) -> TextRange {
    TextRange::new(u32::from(range.start()), u32::from(range.end()))
}

/// The Levenshtein distance between two strings, by characters.
pub(crate) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.chars().enumerate() {
        current[0] = i + 1;
        for (j, &cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    previous[b.len()]
}

/// How closely a candidate matches a typed word, best first: the ranking of
/// [`closest`] before edit distance.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Closeness {
    /// The same word but for case and separators (`pytest` → `py_test`).
    Spelling,
    /// The word is one of the candidate's components or begins it (`pytest` →
    /// `pytest_test`, `binary` → `sh_binary`, `A` → `pkg/A`).
    Component,
    /// Only near it in edit distance, or sharing it as a substring.
    Distance,
}

/// The separators between the components of a name: kinds (`rust_binary`), slugs
/// (`c-test-minimal`), target ids (`apps/cli/Cli`).
fn is_separator(c: char) -> bool {
    matches!(c, '_' | '-' | '/' | '.')
}

/// How `candidate` matches `word` (both lowercase), or `None` when it is unrelated.
fn closeness(word: &str, candidate: &str, distance: usize, threshold: usize) -> Option<Closeness> {
    let letters = |s: &str| s.chars().filter(|c| !is_separator(*c)).collect::<String>();
    if !word.is_empty() && letters(word) == letters(candidate) {
        return Some(Closeness::Spelling);
    }
    let component = candidate.split(is_separator).any(|part| part == word);
    let prefix = word.chars().count() >= 3 && candidate.starts_with(word);
    if component || prefix {
        return Some(Closeness::Component);
    }
    let related = distance <= threshold
        || (word.len() >= 3 && (candidate.contains(word) || word.contains(candidate)));
    related.then_some(Closeness::Distance)
}

/// The candidates closest to `word`, best first: those spelled the same but for case and
/// separators, then those having it as a component or a prefix, then those within a
/// third of its length in edit distance or sharing it as a substring; within each, the
/// nearest in edit distance first.
pub fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let lower = word.to_lowercase();
    let threshold = (word.chars().count() / 3).max(2);
    let mut scored: Vec<(Closeness, usize, &str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let candidate_lower = candidate.to_lowercase();
            let distance = edit_distance(&lower, &candidate_lower);
            closeness(&lower, &candidate_lower, distance, threshold)
                .map(|closeness| (closeness, distance, candidate))
        })
        .collect();
    // Equal distances: prefer the candidate sharing the longer prefix (`2025` → `2024`).
    let common_prefix = |c: &str| {
        lower
            .chars()
            .zip(c.to_lowercase().chars())
            .take_while(|(a, b)| a == b)
            .count()
    };
    scored.sort_by(|a, b| {
        a.0.cmp(&b.0)
            .then(a.1.cmp(&b.1))
            .then(common_prefix(b.2).cmp(&common_prefix(a.2)))
            .then(a.2.cmp(b.2))
    });
    scored.dedup();
    scored
        .into_iter()
        .take(limit)
        .map(|(_, _, c)| c.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edit_distances() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        assert_eq!(edit_distance("", "abc"), 3);
        assert_eq!(edit_distance("pytest", "c_test"), 2);
    }

    /// The kinds of the prelude, as the unknown-kind diagnostic ranks them.
    const KINDS: &[&str] = &[
        "c_binary",
        "c_library",
        "c_test",
        "command",
        "filegroup",
        "go_binary",
        "go_library",
        "go_test",
        "js_library",
        "node_binary",
        "node_test",
        "pytest_test",
        "python_binary",
        "python_library",
        "rust_binary",
        "rust_library",
        "rust_test",
        "script",
        "sh_binary",
        "sh_library",
        "sh_test",
    ];

    /// Each case: a typed word, the candidates, and the suggestions best first.
    #[test]
    fn suggestions_rank_components_before_edit_distance() {
        let with_py_test: Vec<&str> = KINDS.iter().copied().chain(["py_test"]).collect();
        let ids = ["pkg/A", "pkg/Tool", "apps/greeter/Greeter", "Root"];
        let cases: &[(&str, &[&str], &[&str])] = &[
            // A component or a prefix ranks before a near spelling.
            ("pytest", KINDS, &["pytest_test", "c_test"]),
            // The same letters but for separators rank first.
            (
                "pytest",
                &with_py_test,
                &["py_test", "pytest_test", "c_test"],
            ),
            ("rustbinary", KINDS, &["rust_binary"]),
            ("python", KINDS, &["python_binary", "python_library"]),
            ("rust", KINDS, &["rust_test", "rust_binary", "rust_library"]),
            ("binary", KINDS, &["c_binary", "go_binary", "sh_binary"]),
            ("PyTest", KINDS, &["pytest_test", "c_test"]),
            // No component or prefix: edit distance alone, as before.
            ("rust_bianry", KINDS, &["rust_binary"]),
            ("rust_binery", KINDS, &["rust_binary"]),
            ("filegrup", KINDS, &["filegroup"]),
            ("zzz", KINDS, &[]),
            // A short word is a prefix of too much: only whole components count.
            ("go", KINDS, &["go_test", "go_binary", "go_library"]),
            ("n", KINDS, &[]),
            // Target ids: a bare name is a component of its id.
            ("A", &ids, &["pkg/A"]),
            ("tool", &ids, &["pkg/Tool", "Root"]),
            ("pkg/Tol", &ids, &["pkg/Tool"]),
            ("Greeter", &ids, &["apps/greeter/Greeter"]),
        ];
        for (word, candidates, expected) in cases {
            assert_eq!(
                closest(word, candidates.iter().copied(), 3),
                *expected,
                "suggestions for `{word}`"
            );
        }
    }
}
