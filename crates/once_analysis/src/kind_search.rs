//! Kind discovery: rank kinds for a short query such as "rust binary" or "pytest".
//!
//! A query is split into lower-case words; stop words ("a", "and", "for", …) are dropped,
//! so "and" never matches "android". Words name:
//!
//! - an **ecosystem**: the prelude file a kind comes from (`rust`, `c`, `go`, `python`,
//!   `js`, `sh`, `generic`), reached also through synonyms (`javascript`, `node`,
//!   `golang`, `cpp`, `shell`, `cargo`, …);
//! - a **family**: the text before a kind name's first `_` (`pytest` for `pytest_test`;
//!   one-word names such as `command` have none);
//! - a **segment** of a kind name (`binary`, `library`, `test`, plural forms too);
//! - or plain words found in docs, runners, tools, examples and source references.
//!
//! When a word naming what is wanted names an ecosystem or family, kinds outside those are
//! left out, so an ecosystem query is never padded with unrelated kinds. Words after
//! "for", "with", "from", "to" or "into" describe context ("a c library for rust"): they
//! weigh less and restrict nothing. A run of the wanted words found verbatim in a kind's
//! docs or examples adds weight. An empty query lists every kind.

use once_model::{KindOrigin, KindSchema};

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "or", "the", "of", "in", "on", "my", "me", "i", "is", "it", "its", "that",
    "this", "create", "make", "new", "want", "need", "some", "using", "use", "how", "do", "add",
    "please", "set", "up", "kind", "kinds", "target", "targets",
];

/// Words after which the rest of the query is context, not the thing wanted.
const CONTEXT_MARKERS: &[&str] = &["for", "with", "from", "to", "into", "by", "via"];

/// Alternative names of ecosystems.
const SYNONYMS: &[(&str, &str)] = &[
    ("javascript", "js"),
    ("typescript", "js"),
    ("node", "js"),
    ("nodejs", "js"),
    ("npm", "js"),
    ("golang", "go"),
    ("cpp", "c"),
    ("cxx", "c"),
    ("cc", "c"),
    ("gcc", "c"),
    ("clang", "c"),
    ("py", "python"),
    ("python3", "python"),
    ("pytest", "python"),
    ("unittest", "python"),
    ("shell", "sh"),
    ("bash", "sh"),
    ("cargo", "rust"),
    ("rustc", "rust"),
];

/// The ecosystem of a kind: its prelude file's stem, or its family for project modules.
pub fn ecosystem(kind: &KindSchema) -> &str {
    match &kind.origin {
        KindOrigin::Prelude(file) => file.trim_end_matches(".star"),
        KindOrigin::Module(_) => kind.family(),
    }
}

struct Term {
    word: String,
    /// Words naming what is wanted weigh more than context words.
    primary: bool,
}

/// The kinds matching `query`, best first; ties keep name order.
pub fn search_kinds<'a, K: std::borrow::Borrow<KindSchema>>(
    kinds: &'a [K],
    query: &str,
) -> Vec<&'a KindSchema> {
    let kinds: Vec<&'a KindSchema> = kinds.iter().map(K::borrow).collect();
    let mut terms = Vec::new();
    let mut primary = true;
    for word in query
        .split(|c: char| !c.is_alphanumeric())
        .map(str::to_lowercase)
        .filter(|w| !w.is_empty())
    {
        if CONTEXT_MARKERS.contains(&word.as_str()) {
            primary = false;
            continue;
        }
        if STOP_WORDS.contains(&word.as_str()) {
            continue;
        }
        terms.push(Term { word, primary });
    }
    if terms.is_empty() {
        return kinds;
    }
    let names_group = |word: &str| kinds.iter().any(|k| in_group(k, word));
    // Only words naming what is wanted restrict the answer ("a c library for rust" is
    // about C kinds); context words just add weight.
    let groups: Vec<&str> = terms
        .iter()
        .filter(|t| t.primary)
        .map(|t| t.word.as_str())
        .filter(|w| names_group(w))
        .collect();
    let phrase: Vec<&str> = terms
        .iter()
        .filter(|t| t.primary)
        .map(|t| t.word.as_str())
        .collect();
    let phrase = (phrase.len() >= 2).then(|| phrase.join(" "));
    let mut scored: Vec<(u32, &KindSchema)> = kinds
        .iter()
        .copied()
        .filter(|k| groups.is_empty() || groups.iter().any(|g| in_group(k, g)))
        .filter_map(|kind| {
            let mut score: u32 = terms.iter().map(|term| score(kind, term)).sum();
            if let Some(phrase) = &phrase
                && contains_phrase(kind, phrase)
            {
                score += 40;
            }
            (score > 0).then_some((score, kind))
        })
        .collect();
    scored.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.name.cmp(&b.1.name)));
    scored.into_iter().map(|(_, k)| k).collect()
}

fn canonical_ecosystem(word: &str) -> &str {
    SYNONYMS
        .iter()
        .find(|(alias, _)| *alias == word)
        .map_or(word, |(_, canonical)| canonical)
}

fn ecosystem_of(kind: &KindSchema) -> &str {
    ecosystem(kind)
}

/// Whether `word` names the kind's ecosystem or its family. A one-word kind name
/// (`command`, `script`) is no family: "command-line" must not select `command`.
fn in_group(kind: &KindSchema, word: &str) -> bool {
    (kind.name.contains('_') && kind.family() == word)
        || ecosystem_of(kind) == canonical_ecosystem(word)
}

fn score(kind: &KindSchema, term: &Term) -> u32 {
    let word = term.word.as_str();
    let singular = singular(word);
    let weight = |points: u32| if term.primary { points } else { points / 5 };
    let matches_word = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric()).any(|w| {
            let w = w.to_lowercase();
            w == word || w == singular
        })
    };
    let mut points = 0;
    if kind.name.contains('_') && kind.family() == word {
        points += weight(100);
    } else if ecosystem_of(kind) == canonical_ecosystem(word) {
        points += weight(80);
    }
    if kind
        .name
        .split('_')
        .skip(1)
        .any(|segment| segment == word || segment == singular)
        || (kind.name == word || kind.name == singular)
    {
        points += weight(60);
    }
    if kind
        .capabilities
        .iter()
        .any(|c| c.runner.as_deref() == Some(word) || c.name == singular)
    {
        points += weight(25);
    }
    if kind.tools.iter().any(|t| t.name == word) {
        points += weight(20);
    }
    if matches_word(&kind.docs) {
        points += weight(10);
    }
    if kind
        .examples
        .iter()
        .any(|e| matches_word(&e.name) || matches_word(&e.use_when) || matches_word(&e.slug))
    {
        points += weight(5);
    }
    if kind
        .source_references
        .iter()
        .any(|r| matches_word(&r.system) || matches_word(&r.symbol) || matches_word(&r.use_when))
    {
        points += weight(3);
    }
    points
}

/// Whether the docs or an example say the words of `phrase` in a row.
fn contains_phrase(kind: &KindSchema, phrase: &str) -> bool {
    let normalize = |text: &str| {
        text.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_lowercase)
            .collect::<Vec<_>>()
            .join(" ")
    };
    let padded = format!(" {phrase} ");
    std::iter::once(kind.docs.as_str())
        .chain(kind.examples.iter().map(|e| e.use_when.as_str()))
        .any(|text| format!(" {} ", normalize(text)).contains(&padded))
}

fn singular(word: &str) -> &str {
    if word.len() > 3 {
        if let Some(stem) = word.strip_suffix("ies") {
            return stem;
        }
        if let Some(stem) = word.strip_suffix('s')
            && !stem.ends_with('s')
        {
            return stem;
        }
    }
    word
}
