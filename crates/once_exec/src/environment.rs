//! The scrubbed environment an action runs in: its declared variables on top of a
//! documented allowlist taken from the environment `once` itself runs in.
//!
//! Nothing else leaks in: a variable set in the user's shell (`CFLAGS`, `RUSTFLAGS`, …)
//! reaches an action only if the action declares it. The locale variables
//! ([`KEYED_VARIABLES`]) change what tools print and how they sort, so their values are
//! part of the action key, and they never come from whoever started `once`: an action
//! gets the value it declares or the fixed default ([`HERMETIC_DEFAULTS`]: `LANG=C.UTF-8`,
//! `TZ=UTC`; `LC_ALL` and `LC_CTYPE` unset), so a CLI started from a German shell and an
//! MCP server started by a client that drops `LANG` share results. The allowlisted
//! variables name places (`PATH` is covered by the identity of the program found on it,
//! `HOME` and `TMPDIR` differ between users and machines that should share results, the
//! toolchain homes locate rustup, Cargo and pyenv) and are not keyed.
//!
//! A declared value may name the workspace root as [`WORKSPACE_PLACEHOLDER`]: tools that
//! want absolute paths for their own state (`GOCACHE=$WORKSPACE/.once/go/cache`) get them
//! while the key, which holds the declaration as written, stays the same wherever the
//! workspace is checked out.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

/// The variables passed through from `once`'s own environment when an action does not
/// declare them.
pub const ALLOWLIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "TMPDIR",
    "RUSTUP_HOME",
    "CARGO_HOME",
    "PYENV_ROOT",
];

/// The variables whose values are part of the action key: declared, or the defaults.
pub const KEYED_VARIABLES: &[&str] = &["LANG", "LC_ALL", "LC_CTYPE", "TZ"];

/// The values of keyed variables an action that does not declare them gets, whatever
/// the environment `once` runs in.
pub const HERMETIC_DEFAULTS: &[(&str, &str)] = &[("LANG", "C.UTF-8"), ("TZ", "UTC")];

/// The text a declared value uses for the workspace root's absolute path; replaced when
/// the action runs, never in the key.
pub const WORKSPACE_PLACEHOLDER: &str = "$WORKSPACE";

/// Toolchain homes outside the workspace: each variable, and where it defaults to under
/// the caller's home. A declared value that is exactly `$NAME` of one of them becomes that
/// home's path when the action runs (the key keeps the text), and in the sandbox the
/// action may then write it (Cargo's fetch step downloads into `CARGO_HOME`).
pub const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("RUSTUP_HOME", ".rustup"),
    ("CARGO_HOME", ".cargo"),
    ("PYENV_ROOT", ".pyenv"),
];

/// The `PATH` used when the host has none.
pub const DEFAULT_PATH: &str = "/usr/local/bin:/usr/bin:/bin";

/// The allowlisted variables of the host, as captured once per executor.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HostEnvironment {
    pub variables: BTreeMap<String, String>,
}

impl HostEnvironment {
    /// The allowlisted variables of this process's environment (non-UTF-8 values are
    /// left out).
    pub fn from_process() -> HostEnvironment {
        let variables = ALLOWLIST
            .iter()
            .filter_map(|name| {
                std::env::var(name)
                    .ok()
                    .map(|value| ((*name).to_owned(), value))
            })
            .collect();
        HostEnvironment { variables }
    }

    /// A host environment of exactly these variables (those not on the allowlist are
    /// dropped).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Self {
        let variables = pairs
            .into_iter()
            .filter(|(name, _)| ALLOWLIST.contains(name))
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .collect();
        HostEnvironment { variables }
    }

    /// The complete environment of an action declaring `declared`, run in the workspace at
    /// `workspace_root`: the allowlist, then the declared variables over it with every
    /// [`WORKSPACE_PLACEHOLDER`] replaced by the root; `PATH` defaults to [`DEFAULT_PATH`].
    pub fn action_environment(
        &self,
        declared: &BTreeMap<String, String>,
        workspace_root: &Path,
    ) -> BTreeMap<String, String> {
        let mut environment = self.variables.clone();
        for (name, value) in HERMETIC_DEFAULTS {
            environment.insert((*name).to_owned(), (*value).to_owned());
        }
        environment
            .entry("PATH".to_owned())
            .or_insert_with(|| DEFAULT_PATH.to_owned());
        for (name, value) in declared {
            environment.insert(name.clone(), self.expand(value, workspace_root));
        }
        environment
    }

    /// Where the toolchain home `variable` ([`TOOLCHAIN_HOMES`]) is for this caller: its
    /// own value, else its default under `HOME`.
    pub fn toolchain_home(&self, variable: &str) -> Option<String> {
        if let Some(value) = self.variables.get(variable) {
            return Some(value.clone());
        }
        let (_, default) = TOOLCHAIN_HOMES.iter().find(|(name, _)| *name == variable)?;
        let home = self.variables.get("HOME")?;
        Some(format!("{}/{default}", home.trim_end_matches('/')))
    }

    /// A declared value as the action sees it: [`WORKSPACE_PLACEHOLDER`] replaced by the
    /// root, and a whole value `$NAME` of a toolchain home by that home.
    fn expand(&self, value: &str, workspace_root: &Path) -> String {
        if let Some(variable) = value.strip_prefix('$')
            && TOOLCHAIN_HOMES.iter().any(|(name, _)| *name == variable)
            && let Some(home) = self.toolchain_home(variable)
        {
            return home;
        }
        value.replace(WORKSPACE_PLACEHOLDER, &workspace_root.to_string_lossy())
    }
}

impl HostEnvironment {
    /// The value `name` has in the complete environment of an action declaring
    /// `declared` ([`HostEnvironment::action_environment`]), without making the rest of
    /// it; `PATH` is `None` when neither declares it (the complete environment then has
    /// [`DEFAULT_PATH`]).
    pub fn action_variable<'a>(
        &'a self,
        declared: &'a BTreeMap<String, String>,
        name: &str,
        workspace_root: &Path,
    ) -> Option<Cow<'a, str>> {
        match declared.get(name) {
            Some(value) if value.contains('$') => {
                Some(Cow::Owned(self.expand(value, workspace_root)))
            }
            Some(value) => Some(Cow::Borrowed(value)),
            None if KEYED_VARIABLES.contains(&name) => HERMETIC_DEFAULTS
                .iter()
                .find(|(default, _)| *default == name)
                .map(|(_, value)| Cow::Borrowed(*value)),
            None => self
                .variables
                .get(name)
                .map(|value| Cow::Borrowed(value.as_str())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn declared_variables_override_the_allowlist_and_nothing_else_passes() {
        let host = HostEnvironment::from_pairs([
            ("PATH", "/bin"),
            ("HOME", "/home/me"),
            ("CFLAGS", "-O3"),
            ("LANG", "C"),
        ]);
        let declared = BTreeMap::from([
            ("LANG".to_owned(), "de_DE".to_owned()),
            (
                "GOCACHE".to_owned(),
                "$WORKSPACE/.once/go:$WORKSPACE/x".to_owned(),
            ),
        ]);
        let environment = host.action_environment(&declared, Path::new("/src/ws"));
        let names: Vec<&str> = environment.keys().map(String::as_str).collect();
        assert_eq!(names, ["GOCACHE", "HOME", "LANG", "PATH", "TZ"]);
        assert_eq!(environment["LANG"], "de_DE");
        assert_eq!(environment["TZ"], "UTC");
        assert_eq!(environment["GOCACHE"], "/src/ws/.once/go:/src/ws/x");
        // One variable at a time, as the key and the program lookup ask for them.
        for name in ["GOCACHE", "HOME", "LANG", "PATH", "CFLAGS", "TZ"] {
            assert_eq!(
                host.action_variable(&declared, name, Path::new("/src/ws"))
                    .as_deref(),
                environment.get(name).map(String::as_str),
                "{name}"
            );
        }
        let bare = HostEnvironment::default().action_environment(&BTreeMap::new(), Path::new("/"));
        assert_eq!(bare["PATH"], DEFAULT_PATH);
        // The caller's locale never reaches an action that does not declare one.
        let undeclared = host.action_environment(&BTreeMap::new(), Path::new("/"));
        assert_eq!(undeclared["LANG"], "C.UTF-8");
        assert!(!undeclared.contains_key("LC_ALL"));
        let no_path = HostEnvironment::default();
        assert_eq!(
            no_path.action_variable(&BTreeMap::new(), "PATH", Path::new("/")),
            None
        );
    }
}
