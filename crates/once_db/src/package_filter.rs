//! `[workspace] include/exclude`: which package directories belong to the workspace.
//!
//! Patterns match workspace-relative package directories (`apps/*`, `legacy/**`). `*`
//! stays inside one path segment and `**` crosses segments. The root package is `""`
//! and is always included. Exclude wins over include; an empty include list includes all.

use globset::{Glob, GlobBuilder, GlobSet, GlobSetBuilder};

use crate::simple_glob::SimpleGlob;

/// A compiled include/exclude pair.
#[derive(Clone, Debug)]
pub struct PackageFilter {
    include: Option<Patterns>,
    exclude: Patterns,
}

/// One compiled list: matched without a regex when every pattern has a simple shape
/// ([`SimpleGlob`]), else as a `globset` set.
#[derive(Clone, Debug)]
enum Patterns {
    Simple(Vec<SimpleGlob>),
    Set(GlobSet),
}

impl Patterns {
    fn is_match(&self, package: &str) -> bool {
        match self {
            Patterns::Simple(globs) => globs.iter().any(|glob| glob.is_match(package)),
            Patterns::Set(set) => set.is_match(package),
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
            exclude: Patterns::Simple(Vec::new()),
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

/// Compiles one glob with `*` confined to a path segment.
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
    let simple: Option<Vec<SimpleGlob>> = patterns
        .iter()
        .map(|pattern| {
            check_pattern(pattern)
                .ok()
                .and_then(|()| SimpleGlob::new(pattern.trim_end_matches('/')))
        })
        .collect();
    if let Some(simple) = simple {
        return (Patterns::Simple(simple), Vec::new());
    }
    let mut builder = GlobSetBuilder::new();
    let mut errors = Vec::new();
    for (index, pattern) in patterns.iter().enumerate() {
        match compile_glob(pattern) {
            Ok(glob) => {
                builder.add(glob);
            }
            Err(message) => errors.push(PatternError { index, message }),
        }
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
    }
}
