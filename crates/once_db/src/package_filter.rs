//! `[workspace] include/exclude`: which package directories belong to the workspace.
//!
//! Patterns match workspace-relative package directories (`apps/*`, `legacy/**`). `*`
//! stays inside one path segment and `**` crosses segments. The root package is `""`
//! and is always included. Exclude wins over include; an empty include list includes all.
//! Each list reads its entries in order, as every glob list does ([`crate::glob_list`]):
//! a `!pattern` entry takes back what the entries before it matched, so
//! `include = ["apps/*", "!apps/legacy"]` and `exclude = ["legacy/**", "!legacy/keep"]`
//! both work.

use globset::{Glob, GlobBuilder, GlobMatcher, GlobSet, GlobSetBuilder};

use crate::glob_list::{GlobEffect, GlobEntry, GlobList};
use crate::simple_glob::SimpleGlob;

/// A compiled include/exclude pair.
#[derive(Clone, Debug)]
pub struct PackageFilter {
    include: Option<Patterns>,
    exclude: Patterns,
}

/// One compiled list: matched without a regex when every pattern has a simple shape
/// ([`SimpleGlob`]), else as one `globset` set, or pattern by pattern when order matters
/// (the list has an exclusion).
#[derive(Clone, Debug)]
enum Patterns {
    Simple(GlobList<SimpleGlob>),
    Set(GlobSet),
    Ordered(GlobList<GlobMatcher>),
}

impl Patterns {
    fn is_match(&self, package: &str) -> bool {
        match self {
            Patterns::Simple(globs) => globs.selects(|glob| glob.is_match(package)),
            Patterns::Set(set) => set.is_match(package),
            Patterns::Ordered(globs) => globs.selects(|glob| glob.is_match(package)),
        }
    }
}

/// A pattern that could not be compiled, with its index in the list it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PatternError {
    pub index: usize,
    pub message: String,
}

impl PackageFilter {
    /// Compiles the lists; bad patterns are reported and left out.
    pub fn new(
        include: &[String],
        exclude: &[String],
    ) -> (PackageFilter, Vec<PatternError>, Vec<PatternError>) {
        let (include_set, include_errors) = compile(include);
        let (exclude_set, exclude_errors) = compile(exclude);
        let filter = PackageFilter {
            include: if include.is_empty() {
                None
            } else {
                Some(include_set)
            },
            exclude: exclude_set,
        };
        (filter, include_errors, exclude_errors)
    }

    /// A filter that keeps every package.
    pub fn all() -> PackageFilter {
        PackageFilter {
            include: None,
            exclude: Patterns::Simple(GlobList::default()),
        }
    }

    pub fn includes(&self, package: &str) -> bool {
        if package.is_empty() {
            return true;
        }
        if self.exclude.is_match(package) {
            return false;
        }
        self.include
            .as_ref()
            .is_none_or(|include| include.is_match(package))
    }
}

/// The indices of the valid exclusions of one list (`include` or `exclude`, as written)
/// that take back none of the non-root `packages` an entry before them matched. Bad
/// patterns are left out (they are [`PatternError`]s).
pub fn unused_exclusions<'a>(
    patterns: &[String],
    packages: impl IntoIterator<Item = &'a str>,
) -> Vec<usize> {
    let list = GlobList::new(
        patterns
            .iter()
            .enumerate()
            .filter_map(|(index, text)| {
                let entry = GlobEntry::parse(text);
                let glob = compile_entry(&entry).ok()?;
                Some((index, entry.effect, glob.compile_matcher()))
            })
            .collect(),
    );
    let effective = list.effective_exclusions(
        packages.into_iter().filter(|package| !package.is_empty()),
        |glob, package| glob.is_match(package),
    );
    list.entries()
        .filter(|(index, effect, _)| *effect == GlobEffect::Exclude && !effective.contains(index))
        .map(|(index, ..)| index)
        .collect()
}

/// Why a pattern may not be used, before compiling it.
fn check_pattern(pattern: &str) -> Result<(), String> {
    if pattern.starts_with('/') {
        return Err("must be relative to the workspace root".into());
    }
    if pattern.split('/').any(|segment| segment == "..") {
        return Err("must not contain `..`".into());
    }
    Ok(())
}

/// Compiles one entry's glob: [`compile_glob`], and an exclusion must have a pattern.
fn compile_entry(entry: &GlobEntry<'_>) -> Result<Glob, String> {
    if entry.is_exclusion() && entry.pattern.is_empty() {
        return Err("the pattern after `!` is empty".into());
    }
    compile_glob(entry.pattern)
}

/// `path` as a glob matching exactly it: each character globs read specially (`*`,
/// `?`, `[`, `]`, `{`, `}`, `\`, and a leading `!`, which would make an entry an
/// exclusion) behind a backslash. Not `globset::escape`: it leaves `\` as it is, which
/// [`compile_glob`]'s patterns read as an escape, and knows nothing of `!`.
pub fn escape_glob(path: &str) -> String {
    let mut escaped = String::with_capacity(path.len());
    for (index, c) in path.char_indices() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\') || (index == 0 && c == '!') {
            escaped.push('\\');
        }
        escaped.push(c);
    }
    escaped
}

/// Compiles one glob (without an exclusion's `!`) with `*` confined to a path segment.
pub fn compile_glob(pattern: &str) -> Result<Glob, String> {
    check_pattern(pattern)?;
    let pattern = pattern.trim_end_matches('/');
    GlobBuilder::new(pattern)
        .literal_separator(true)
        .backslash_escape(true)
        .build()
        .map_err(|err| err.kind().to_string())
}

fn compile(patterns: &[String]) -> (Patterns, Vec<PatternError>) {
    let entries: Vec<GlobEntry<'_>> = patterns.iter().map(|p| GlobEntry::parse(p)).collect();
    let simple: Option<Vec<(usize, GlobEffect, SimpleGlob)>> = entries
        .iter()
        .enumerate()
        .map(|(index, entry)| {
            let empty_exclusion = entry.is_exclusion() && entry.pattern.is_empty();
            check_pattern(entry.pattern)
                .ok()
                .filter(|()| !empty_exclusion)
                .and_then(|()| SimpleGlob::new(entry.pattern.trim_end_matches('/')))
                .map(|glob| (index, entry.effect, glob))
        })
        .collect();
    if let Some(simple) = simple {
        return (Patterns::Simple(GlobList::new(simple)), Vec::new());
    }
    let mut errors = Vec::new();
    let mut globs = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        match compile_entry(entry) {
            Ok(glob) => globs.push((index, entry.effect, glob)),
            Err(message) => errors.push(PatternError { index, message }),
        }
    }
    if entries.iter().any(GlobEntry::is_exclusion) {
        let ordered = globs
            .into_iter()
            .map(|(index, effect, glob)| (index, effect, glob.compile_matcher()))
            .collect();
        return (Patterns::Ordered(GlobList::new(ordered)), errors);
    }
    let mut builder = GlobSetBuilder::new();
    for (_, _, glob) in globs {
        builder.add(glob);
    }
    let set = builder.build().unwrap_or_else(|_| GlobSet::empty());
    (Patterns::Set(set), errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(include: &[&str], exclude: &[&str], package: &str, expected: bool) {
        let include: Vec<String> = include.iter().map(|s| s.to_string()).collect();
        let exclude: Vec<String> = exclude.iter().map(|s| s.to_string()).collect();
        let (filter, ..) = PackageFilter::new(&include, &exclude);
        assert_eq!(
            filter.includes(package),
            expected,
            "{include:?} {exclude:?} {package}"
        );
    }

    #[test]
    fn escaped_paths_match_only_themselves() {
        for name in [
            "a[b]",
            "x*y",
            "q?",
            "{a,b}",
            "!bang",
            "back\\slash",
            "]",
            "a/[x]/b",
        ] {
            let exclude = [escape_glob(name), format!("{}/**", escape_glob(name))];
            let exclude: Vec<&str> = exclude.iter().map(String::as_str).collect();
            check(&[], &exclude, name, false);
            check(&[], &exclude, &format!("{name}/deep/er"), false);
            // What the unescaped pattern would also have matched stays in.
            for other in [
                "ab",
                "xzzy",
                "qz",
                "a",
                "bang",
                "backslash",
                "a/x/b",
                "other",
            ] {
                check(&[], &exclude, other, true);
            }
        }
    }

    #[test]
    fn star_stays_in_one_segment() {
        check(&["apps/*"], &[], "apps/a", true);
        check(&["apps/*"], &[], "apps/a/deep", false);
        check(&["apps/**"], &[], "apps/a/deep", true);
        check(&["apps/*"], &[], "libs/a", false);
    }

    #[test]
    fn exclude_wins_and_root_is_always_in() {
        check(
            &["apps/**"],
            &["apps/legacy/**", "apps/legacy"],
            "apps/legacy",
            false,
        );
        check(&["apps/**"], &["apps/legacy/**"], "apps/legacy/x", false);
        check(&[], &["**"], "", true);
        check(&[], &[], "anything/at/all", true);
    }

    #[test]
    fn bad_patterns_are_reported() {
        let (_, include_errors, exclude_errors) =
            PackageFilter::new(&["a/[".into(), "/abs".into()], &["../up".into()]);
        assert_eq!(include_errors.len(), 2);
        assert_eq!(exclude_errors.len(), 1);
        let (_, include_errors, exclude_errors) = PackageFilter::new(
            &["apps/*".into(), "!".into(), "![".into()],
            &["x".into(), "!../up".into()],
        );
        let indices = |errors: &[PatternError]| errors.iter().map(|e| e.index).collect::<Vec<_>>();
        assert_eq!(indices(&include_errors), [1, 2]);
        assert_eq!(indices(&exclude_errors), [1]);
    }

    #[test]
    fn later_entries_win_in_each_list() {
        for (include, exclude) in [
            (&["apps/*", "!apps/legacy"][..], &[][..]),
            (&["apps/*"][..], &["apps/**", "!apps/cli"][..]),
            // The same through `globset` (a pattern of another shape in the list).
            (&["apps/{cli,legacy}", "!apps/legacy"][..], &[][..]),
        ] {
            check(include, exclude, "apps/cli", true);
            check(include, exclude, "apps/legacy", false);
        }
        check(&["!apps/legacy", "apps/*"], &[], "apps/legacy", true);
        check(
            &["apps/*"],
            &["apps/*", "!apps/x", "apps/x"],
            "apps/x",
            false,
        );
        // Only exclusions: nothing is included but the root.
        check(&["!apps/legacy"], &[], "apps/cli", false);
        check(&["!apps/legacy"], &[], "", true);
        // `\!` selects a name starting with `!`.
        check(&["\\!odd"], &[], "!odd", true);
        check(&["!odd"], &[], "!odd", false);
    }

    #[test]
    fn an_exclusion_is_unused_without_a_package_matched_before_it() {
        let list: Vec<String> = ["!apps/a", "apps/*", "!apps/a", "!apps/z", "!apps/a", "!["]
            .iter()
            .map(|s| s.to_string())
            .collect();
        assert_eq!(
            unused_exclusions(&list, ["", "apps/a", "apps/b"]),
            [0, 3, 4]
        );
    }
}
