//! Kind discovery: rank kinds for a short query such as "rust binary" or "pytest".
//!
//! Terms are the query's lower-cased alphanumeric words, minus stop words. A kind scores
//! highest when a term is its family (`rust` for `rust_binary`), then a segment of its
//! name, then a word of its docs, examples or source references. When any term names a
//! family, kinds of other families are left out, so an ecosystem query is never padded
//! with unrelated kinds. An empty query lists every kind.

use once_model::KindSchema;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "the", "for", "of", "to", "in", "on", "with", "my", "me", "i", "is", "it",
    "that", "this", "create", "make", "new", "want", "need", "some", "using", "use", "how", "do",
];

/// The kinds matching `query`, best first; ties keep name order.
pub fn search_kinds<'a>(kinds: &'a [KindSchema], query: &str) -> Vec<&'a KindSchema> {
    let terms: Vec<String> = query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|t| !t.is_empty() && !STOP_WORDS.contains(&t.as_str()))
        .collect();
    if terms.is_empty() {
        return kinds.iter().collect();
    }
    let families: Vec<&str> = terms
        .iter()
        .map(String::as_str)
        .filter(|t| kinds.iter().any(|k| k.family() == *t))
        .collect();
    let mut scored: Vec<(u32, &KindSchema)> = kinds
        .iter()
        .filter(|k| families.is_empty() || families.contains(&k.family()))
        .filter_map(|kind| {
            let score: u32 = terms.iter().map(|term| score_term(kind, term)).sum();
            (score > 0).then_some((score, kind))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().map(|(_, k)| k).collect()
}

fn score_term(kind: &KindSchema, term: &str) -> u32 {
    let singular = term
        .strip_suffix('s')
        .filter(|s| s.len() >= 3)
        .unwrap_or(term);
    let matches_word = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric()).any(|w| {
            let w = w.to_lowercase();
            w == term || w == singular
        })
    };
    if kind.family() == term {
        return 100;
    }
    if kind
        .name
        .split('_')
        .any(|segment| segment == term || segment == singular)
    {
        return 50;
    }
    let mut score = 0;
    if matches_word(&kind.docs) {
        score += 10;
    }
    if kind
        .capabilities
        .iter()
        .any(|c| c.runner.as_deref() == Some(term))
    {
        score += 30;
    }
    if kind.tools.iter().any(|t| t.name == term) {
        score += 20;
    }
    if kind
        .examples
        .iter()
        .any(|e| matches_word(&e.name) || matches_word(&e.use_when) || matches_word(&e.slug))
    {
        score += 5;
    }
    if kind
        .source_references
        .iter()
        .any(|r| matches_word(&r.system) || matches_word(&r.symbol) || matches_word(&r.use_when))
    {
        score += 3;
    }
    score
}
