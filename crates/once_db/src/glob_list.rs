//! Ordered glob lists with exclusions, as in `.gitignore`: every list of globs a manifest
//! or a kind writes (`srcs`, `[workspace] include` and `exclude`, `[modules] paths`, a
//! kind's `workspace_inputs`) reads its entries in order, and the last entry matching a
//! candidate decides: an entry starting with `!` excludes what its pattern matches from
//! what the entries before it selected, any other entry selects (again, after an
//! exclusion). A candidate no entry matches is not selected, so a list made only of
//! exclusions selects nothing.
//!
//! Only the first `!` is the marker: `!!x` excludes files named `!x`. A pattern selecting
//! a name that starts with `!` escapes it as globs escape any character, `\!x`.
//!
//! This module knows nothing of how a pattern matches; each list compiles its patterns
//! its own way ([`GlobList`] is generic over the compiled pattern).

/// What a list entry does with the candidates its pattern matches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum GlobEffect {
    /// A plain entry: its matches are selected.
    Select,
    /// A `!pattern` entry: its matches are left out of what the entries before it selected.
    Exclude,
}

/// One written entry of a glob list, split into its effect and the pattern after the
/// marker.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct GlobEntry<'a> {
    pub effect: GlobEffect,
    /// The glob itself, without the leading `!` of an exclusion.
    pub pattern: &'a str,
}

impl<'a> GlobEntry<'a> {
    /// Reads a written entry: `!pattern` is an exclusion of `pattern`, anything else
    /// selects what it matches.
    pub fn parse(text: &'a str) -> GlobEntry<'a> {
        match text.strip_prefix('!') {
            Some(pattern) => GlobEntry {
                effect: GlobEffect::Exclude,
                pattern,
            },
            None => GlobEntry {
                effect: GlobEffect::Select,
                pattern: text,
            },
        }
    }

    pub fn is_exclusion(&self) -> bool {
        self.effect == GlobEffect::Exclude
    }
}

/// A glob list whose patterns compiled: each with its effect and its index among the
/// written entries (entries that did not compile are left out; their owner reports them).
#[derive(Clone, Debug)]
pub struct GlobList<P> {
    entries: Vec<(usize, GlobEffect, P)>,
    has_exclusions: bool,
}

impl<P> Default for GlobList<P> {
    fn default() -> Self {
        GlobList {
            entries: Vec::new(),
            has_exclusions: false,
        }
    }
}

impl<P> GlobList<P> {
    /// A list of `(written index, effect, compiled pattern)`, in written order.
    pub fn new(entries: Vec<(usize, GlobEffect, P)>) -> GlobList<P> {
        let has_exclusions = entries
            .iter()
            .any(|(_, effect, _)| *effect == GlobEffect::Exclude);
        GlobList {
            entries,
            has_exclusions,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Whether some entry is an exclusion (without one, a list selects what any entry
    /// matches, and order does not matter).
    pub fn has_exclusions(&self) -> bool {
        self.has_exclusions
    }

    /// The entries, in written order.
    pub fn entries(&self) -> impl Iterator<Item = (usize, GlobEffect, &P)> {
        self.entries
            .iter()
            .map(|(index, effect, p)| (*index, *effect, p))
    }

    /// Whether the list selects a candidate that `matches` tells the patterns of: the last
    /// entry matching it decides.
    pub fn selects(&self, matches: impl Fn(&P) -> bool) -> bool {
        if !self.has_exclusions {
            return self.entries.iter().any(|(_, _, p)| matches(p));
        }
        self.entries
            .iter()
            .rev()
            .find(|(_, _, p)| matches(p))
            .is_some_and(|(_, effect, _)| *effect == GlobEffect::Select)
    }

    /// The written indices of the exclusions that leave out at least one of `candidates`:
    /// a candidate that the entries before the exclusion select, and that it matches.
    /// Linear in candidates times entries; an empty answer when the list has no exclusion.
    pub fn effective_exclusions<C>(
        &self,
        candidates: impl IntoIterator<Item = C>,
        matches: impl Fn(&P, &C) -> bool,
    ) -> Vec<usize> {
        if !self.has_exclusions {
            return Vec::new();
        }
        let mut effective = vec![false; self.entries.len()];
        for candidate in candidates {
            let mut selected = false;
            for (position, (_, effect, pattern)) in self.entries.iter().enumerate() {
                if !matches(pattern, &candidate) {
                    continue;
                }
                match effect {
                    GlobEffect::Select => selected = true,
                    GlobEffect::Exclude => {
                        effective[position] |= selected;
                        selected = false;
                    }
                }
            }
        }
        self.entries
            .iter()
            .zip(effective)
            .filter(|(_, effective)| *effective)
            .map(|((index, ..), _)| *index)
            .collect()
    }

    /// Whether an entry that selects comes before the entry written at `index` (without
    /// one, an exclusion there has nothing to leave out).
    pub fn selects_before(&self, index: usize) -> bool {
        self.entries
            .iter()
            .take_while(|(at, ..)| *at < index)
            .any(|(_, effect, _)| *effect == GlobEffect::Select)
    }

    /// Whether any entry selects (a list made only of exclusions selects nothing).
    pub fn has_selections(&self) -> bool {
        self.entries
            .iter()
            .any(|(_, effect, _)| *effect == GlobEffect::Select)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A list of the written `entries` whose patterns are literal names, asked about
    /// `candidate` and about which exclusions leave out one of `candidates`.
    fn check(entries: &[&str], candidate: &str, selected: bool) {
        let list = GlobList::new(
            entries
                .iter()
                .enumerate()
                .map(|(index, text)| {
                    let entry = GlobEntry::parse(text);
                    (index, entry.effect, entry.pattern.to_owned())
                })
                .collect(),
        );
        assert_eq!(
            list.selects(|pattern| pattern == candidate),
            selected,
            "{entries:?} selects {candidate}"
        );
    }

    #[test]
    fn the_last_matching_entry_decides() {
        check(&["a"], "a", true);
        check(&["a", "!a"], "a", false);
        check(&["a", "!a", "a"], "a", true);
        check(&["!a", "a"], "a", true);
        check(&["!a"], "a", false);
        check(&["!b"], "a", false);
        check(&["a", "!b"], "a", true);
        check(&[], "a", false);
    }

    #[test]
    fn only_the_first_bang_is_the_marker() {
        assert_eq!(
            GlobEntry::parse("!!x"),
            GlobEntry {
                effect: GlobEffect::Exclude,
                pattern: "!x"
            }
        );
        assert_eq!(
            GlobEntry::parse("\\!x"),
            GlobEntry {
                effect: GlobEffect::Select,
                pattern: "\\!x"
            }
        );
        check(&["!x", "!!x"], "!x", false);
    }

    #[test]
    fn effective_exclusions_leave_out_what_was_selected_before_them() {
        let list = GlobList::new(vec![
            (0, GlobEffect::Exclude, 'a'),
            (1, GlobEffect::Select, 'a'),
            (2, GlobEffect::Exclude, 'a'),
            (3, GlobEffect::Exclude, 'a'),
            (5, GlobEffect::Exclude, 'b'),
        ]);
        let candidates = ["a", "b"];
        let matches = |pattern: &char, candidate: &&str| candidate.starts_with(*pattern);
        // `!a` first has nothing before it; the second `!a` only finds what the first left.
        assert_eq!(list.effective_exclusions(candidates, matches), [2]);
        assert!(!list.selects_before(0));
        assert!(list.selects_before(2));
        assert!(list.has_selections());
    }
}
