//! Compiled `srcs` patterns, shared by every package that writes the same pattern, and
//! compiled glob lists ([`SourceSelection`]): `srcs`, `[modules] paths` and a kind's
//! `workspace_inputs`, read in order with `!` exclusions ([`once_db::glob_list`]).

use std::sync::{Arc, Mutex, OnceLock};

use globset::{GlobBuilder, GlobMatcher};
use once_db::simple_glob::SimpleGlob;
use once_db::{GlobEntry, GlobList};
use rustc_hash::FxHashMap;

/// A compiled `srcs` pattern: a literal path or a glob where `*` stays in one segment
/// (matched without a regex when its shape allows, see [`SimpleGlob`]).
pub enum SourcePattern {
    Literal(String),
    Simple(SimpleGlob),
    Glob(GlobMatcher),
}

impl SourcePattern {
    pub fn new(pattern: &str) -> Result<SourcePattern, String> {
        if pattern.is_empty() {
            return Err("the pattern is empty".into());
        }
        if pattern.starts_with('/') {
            return Err("must be relative to the package".into());
        }
        if pattern.split('/').any(|s| s == "..") {
            return Err("must not leave the package with `..`".into());
        }
        let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
        if !pattern.contains(['*', '?', '[', '{', '\\']) {
            return Ok(SourcePattern::Literal(
                pattern.trim_end_matches('/').to_owned(),
            ));
        }
        if let Some(simple) = SimpleGlob::new(pattern) {
            return Ok(SourcePattern::Simple(simple));
        }
        GlobBuilder::new(pattern)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map(|glob| SourcePattern::Glob(glob.compile_matcher()))
            .map_err(|err| err.kind().to_string())
    }

    /// Like [`SourcePattern::new`], reusing an earlier compilation of the same text:
    /// compiling a glob builds a regex, which would otherwise dominate loading a large
    /// workspace whose targets repeat the same patterns. The cache is process-wide and
    /// bounded; compilation is a pure function of the text, so sharing it is safe.
    pub fn cached(pattern: &str) -> Result<Arc<SourcePattern>, String> {
        type Cache = Mutex<FxHashMap<String, Result<Arc<SourcePattern>, String>>>;
        static CACHE: OnceLock<Cache> = OnceLock::new();
        const MAX_ENTRIES: usize = 4096;
        let cache = CACHE.get_or_init(Cache::default);
        let mut entries = cache
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(found) = entries.get(pattern) {
            return found.clone();
        }
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        let compiled = SourcePattern::new(pattern).map(Arc::new);
        entries.insert(pattern.to_owned(), compiled.clone());
        compiled
    }

    /// Whether any of the sorted package-relative `files` matches. A literal is two binary
    /// searches (the file itself, then the files below it as a directory), so checking a
    /// manifest's literal `srcs` costs a logarithm per entry, not the package's file count.
    pub fn matches_any(&self, sorted_files: &[String]) -> bool {
        match self {
            SourcePattern::Literal(literal) => {
                if sorted_files
                    .binary_search_by(|f| f.as_str().cmp(literal))
                    .is_ok()
                {
                    return true;
                }
                let directory = format!("{literal}/");
                let first = sorted_files.partition_point(|f| f.as_str() < directory.as_str());
                sorted_files
                    .get(first)
                    .is_some_and(|f| f.starts_with(&directory))
            }
            SourcePattern::Simple(_) | SourcePattern::Glob(_) => {
                sorted_files.iter().any(|f| self.matches(f))
            }
        }
    }

    /// Whether a package-relative file matches (a literal directory matches its files).
    pub fn matches(&self, file: &str) -> bool {
        match self {
            SourcePattern::Literal(literal) => {
                file == literal
                    || (file.len() > literal.len()
                        && file.starts_with(literal.as_str())
                        && file.as_bytes()[literal.len()] == b'/')
            }
            SourcePattern::Simple(glob) => glob.is_match(file),
            SourcePattern::Glob(glob) => glob.is_match(file),
        }
    }
}

/// A compiled glob list: its entries in order, each selecting what its [`SourcePattern`]
/// matches or, written `!pattern`, excluding it from what the entries before it selected;
/// the last entry matching a file decides. An entry that does not compile is left out
/// (it is reported where the list is checked).
#[derive(Default)]
pub struct SourceSelection {
    list: GlobList<Arc<SourcePattern>>,
}

impl SourceSelection {
    /// The list of the written `entries`.
    pub fn new<'a>(entries: impl IntoIterator<Item = &'a str>) -> SourceSelection {
        SourceSelection::rewritten(entries, |pattern| pattern.to_owned())
    }

    /// The list of the written `entries`, each pattern (after an exclusion's `!`)
    /// rewritten by `rewrite` before it is compiled.
    pub fn rewritten<'a>(
        entries: impl IntoIterator<Item = &'a str>,
        rewrite: impl Fn(&str) -> String,
    ) -> SourceSelection {
        let compiled = entries
            .into_iter()
            .enumerate()
            .filter_map(|(index, text)| {
                let entry = GlobEntry::parse(text);
                let pattern = SourcePattern::cached(&rewrite(entry.pattern)).ok()?;
                Some((index, entry.effect, pattern))
            })
            .collect();
        SourceSelection {
            list: GlobList::new(compiled),
        }
    }

    /// Whether the list selects `file` (a path in the terms of its patterns).
    pub fn selects(&self, file: &str) -> bool {
        self.list.selects(|pattern| pattern.matches(file))
    }

    /// Whether no entry compiled (the list selects nothing).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// The compiled entries.
    pub fn list(&self) -> &GlobList<Arc<SourcePattern>> {
        &self.list
    }
}
