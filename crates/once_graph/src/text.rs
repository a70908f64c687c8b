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

/// The candidates closest to `word`, best first: those within a third of its length in
/// edit distance, or sharing it as a substring.
pub fn closest<'a>(
    word: &str,
    candidates: impl IntoIterator<Item = &'a str>,
    limit: usize,
) -> Vec<String> {
    let lower = word.to_lowercase();
    let threshold = (word.chars().count() / 3).max(2);
    let mut scored: Vec<(usize, &str)> = candidates
        .into_iter()
        .filter_map(|candidate| {
            let distance = edit_distance(&lower, &candidate.to_lowercase());
            let related = distance <= threshold
                || (lower.len() >= 3 && (candidate.contains(&*lower) || lower.contains(candidate)));
            related.then_some((distance, candidate))
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
            .then(common_prefix(b.1).cmp(&common_prefix(a.1)))
            .then(a.1.cmp(b.1))
    });
    scored.dedup();
    scored
        .into_iter()
        .take(limit)
        .map(|(_, c)| c.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        assert_eq!(edit_distance("kitten", "sitting"), 3);
        let kinds = ["rust_binary", "rust_library", "sh_binary", "filegroup"];
        assert_eq!(closest("rust_bianry", kinds, 3), vec!["rust_binary"]);
        assert_eq!(
            closest("binary", kinds, 3),
            vec!["sh_binary", "rust_binary"]
        );
        assert!(closest("zzz", kinds, 3).is_empty());
    }
}
