//! Tidy checks over the repository, run as tests.
//!
//! - Every `crates/*/Cargo.toml` respects the crate layering of `ARCHITECTURE.md` and the
//!   placement of external crates (`starlark` only in `once_starlark`, …).
//! - Every `.rs` file under `crates/` opens with a `//!` module doc.
//! - No source file under `crates/` holds a banned macro or attribute (see [`BANNED`]).
//! - Core-crate sources opt out of the no-I/O lint only in the files `no_io` lists.
//!
//! The checks are plain functions over text, so the tests below also prove the rules
//! themselves on small inline inputs.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Which workspace crates a crate may depend on.
#[derive(Clone, Copy)]
pub enum Allowed {
    /// Any workspace crate.
    Any,
    /// Only these.
    Only(&'static [&'static str]),
}

/// The dependency direction, one row per workspace crate. A crate missing here is a
/// violation: add its row when you add the crate, and update `ARCHITECTURE.md`.
pub const LAYERS: &[(&str, Allowed)] = &[
    ("once_syntax", Allowed::Only(&[])),
    ("once_model", Allowed::Only(&[])),
    ("once_starlark", Allowed::Only(&["once_model"])),
    // What once reads and writes of its host below the database: confined file access,
    // file stamps, the machine's parallelism.
    ("once_host", Allowed::Only(&[])),
    // The kernel's confinement (Landlock, namespaces) installed on commands once_exec
    // builds: a leaf, the one crate allowed unsafe code.
    ("once_sandbox", Allowed::Only(&[])),
    (
        "once_db",
        Allowed::Only(&["once_syntax", "once_model", "once_host"]),
    ),
    // Inline test fixtures loaded into a `MemorySystem`: a dev-dependency of the crates
    // whose tests build workspaces.
    ("once_fixture", Allowed::Only(&["once_db"])),
    // The file watcher: direct disk, clock and kernel-notification access, kept out of
    // the core crates; it shares once_db's walk and answers in its change events.
    ("once_watch", Allowed::Only(&["once_db"])),
    (
        "once_graph",
        Allowed::Only(&[
            "once_db",
            "once_syntax",
            "once_model",
            "once_starlark",
            "once_fixture",
        ]),
    ),
    (
        "once_analysis",
        Allowed::Only(&[
            "once_graph",
            "once_db",
            "once_syntax",
            "once_model",
            "once_starlark",
            "once_fixture",
        ]),
    ),
    // The network client for external source: a leaf, next to nothing in the workspace.
    ("once_fetch", Allowed::Only(&[])),
    // The JSON records shared by the CLI and the MCP server.
    (
        "once_json",
        Allowed::Only(&[
            "once_analysis",
            "once_model",
            "once_fetch",
            "once_evidence",
            "once_runtime",
        ]),
    ),
    (
        "once_mcp",
        Allowed::Only(&[
            "once_analysis",
            "once_json",
            "once_fetch",
            "once_watch",
            "once_evidence",
            "once_build",
            "once_exec",
            "once_test_results",
            "once_runtime",
        ]),
    ),
    (
        "once_lsp",
        Allowed::Only(&["once_analysis", "once_json", "once_watch", "once_fixture"]),
    ),
    // The evidence database: SQLite, reached through once_host's confined paths.
    ("once_evidence", Allowed::Only(&["once_model", "once_host"])),
    // Normalized test results: pure parsers and records, a leaf.
    ("once_test_results", Allowed::Only(&[])),
    (
        "once_exec",
        Allowed::Only(&["once_model", "once_host", "once_evidence", "once_sandbox"]),
    ),
    // Planning (from an analysis snapshot) joined to execution, shared by the CLI and the
    // MCP server's executing tools.
    (
        "once_build",
        Allowed::Only(&[
            "once_analysis",
            "once_exec",
            "once_model",
            "once_db",
            "once_evidence",
            "once_test_results",
            "once_runtime",
            "once_remote",
        ]),
    ),
    // The remote cache client (REAPI over gRPC, Bazel's HTTP cache): implements
    // once_exec's RemoteCache seam; its async runtime stays inside it.
    ("once_remote", Allowed::Only(&["once_exec", "once_model"])),
    // Runtime sessions: the supervisor, the session store and logs, over once_exec's
    // program lookup and environment.
    (
        "once_runtime",
        Allowed::Only(&["once_exec", "once_model", "once_host"]),
    ),
    ("once_cli", Allowed::Any),
    // The fuzz targets: plain functions over the crates whose parsers they exercise
    // (`fuzz/` calls them under libFuzzer); nothing depends on it.
    (
        "once_fuzz",
        Allowed::Only(&[
            "once_syntax",
            "once_model",
            "once_starlark",
            "once_db",
            "once_graph",
            "once_analysis",
            "once_build",
            "once_exec",
            "once_evidence",
            "once_test_results",
            "once_mcp",
            "once_lsp",
        ]),
    ),
    ("xtask", Allowed::Any),
];

/// Where an external crate may appear.
#[derive(Clone, Copy)]
pub enum Placement {
    /// Only in these crates.
    OnlyIn(&'static [&'static str]),
    /// Anywhere but these crates.
    NotIn(&'static [&'static str]),
}

/// Which dependency tables a placement rule looks at.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// `[dependencies]`, `[build-dependencies]` and `[dev-dependencies]`.
    AllTables,
    /// `[dependencies]` and `[build-dependencies]`: tests may use the crate.
    ShippedOnly,
}

/// The crates that do not speak a wire format: they must not serialize.
const NO_SERDE: &[&str] = crate::no_io::CORE_CRATES;

/// External-crate placement: (crate, where it may appear, which tables count).
pub const EXTERNAL: &[(&str, Placement, Scope)] = &[
    (
        "starlark",
        Placement::OnlyIn(&["once_starlark"]),
        Scope::AllTables,
    ),
    (
        "salsa",
        Placement::NotIn(&["once_syntax", "once_model", "once_starlark"]),
        Scope::AllTables,
    ),
    ("serde", Placement::NotIn(NO_SERDE), Scope::ShippedOnly),
    ("serde_json", Placement::NotIn(NO_SERDE), Scope::ShippedOnly),
    ("clap", Placement::OnlyIn(&["once_cli"]), Scope::AllTables),
    (
        "clap_complete",
        Placement::OnlyIn(&["once_cli"]),
        Scope::AllTables,
    ),
    (
        "clap_mangen",
        Placement::OnlyIn(&["once_cli"]),
        Scope::AllTables,
    ),
    (
        "lsp-types",
        Placement::OnlyIn(&["once_lsp"]),
        Scope::AllTables,
    ),
    (
        "lsp-server",
        Placement::OnlyIn(&["once_lsp"]),
        Scope::AllTables,
    ),
    (
        "ureq",
        Placement::OnlyIn(&["once_fetch", "once_remote"]),
        Scope::AllTables,
    ),
    (
        "tonic",
        Placement::OnlyIn(&["once_remote"]),
        Scope::ShippedOnly,
    ),
    (
        "tokio",
        Placement::OnlyIn(&["once_remote"]),
        Scope::ShippedOnly,
    ),
    (
        "rusqlite",
        Placement::OnlyIn(&["once_evidence"]),
        Scope::AllTables,
    ),
    (
        "quick-xml",
        Placement::OnlyIn(&["once_test_results"]),
        Scope::AllTables,
    ),
    (
        "notify",
        Placement::OnlyIn(&["once_watch"]),
        Scope::AllTables,
    ),
    (
        "inotify",
        Placement::OnlyIn(&["once_watch"]),
        Scope::AllTables,
    ),
];

/// Development tools that ship nothing: the external-crate placement does not apply.
const PLACEMENT_EXEMPT: &[&str] = &["xtask"];

/// A dependency table kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DepKind {
    Normal,
    Build,
    Dev,
}

impl DepKind {
    fn table(self) -> &'static str {
        match self {
            DepKind::Normal => "dependencies",
            DepKind::Build => "build-dependencies",
            DepKind::Dev => "dev-dependencies",
        }
    }
}

/// One dependency of a crate, with its real package name (after `package = "…"` renames,
/// including renames made in `[workspace.dependencies]`).
#[derive(Debug, PartialEq, Eq)]
pub struct Dep {
    pub package: String,
    pub kind: DepKind,
    /// Where it is declared, for messages: `[dependencies]` or `[target.'cfg(unix)'.dependencies]`.
    pub table: String,
}

/// What the manifest checks need to know about the whole workspace.
pub struct WorkspaceFacts {
    /// Package names of the workspace members.
    pub members: BTreeSet<String>,
    /// `[workspace.dependencies]` keys that rename a package: key → package.
    pub renames: BTreeMap<String, String>,
}

impl WorkspaceFacts {
    /// Reads the root `Cargo.toml` text and the member package names.
    pub fn new(root_manifest: &str, members: BTreeSet<String>) -> Result<WorkspaceFacts, String> {
        let root: toml::Table = root_manifest
            .parse()
            .map_err(|e| format!("root Cargo.toml: {e}"))?;
        let mut renames = BTreeMap::new();
        let deps = root
            .get("workspace")
            .and_then(|w| w.get("dependencies"))
            .and_then(toml::Value::as_table);
        for (key, value) in deps.into_iter().flatten() {
            if let Some(package) = value.get("package").and_then(toml::Value::as_str) {
                renames.insert(key.clone(), package.to_owned());
            }
        }
        Ok(WorkspaceFacts { members, renames })
    }
}

/// The package name declared by a `Cargo.toml`.
pub fn package_name(manifest: &toml::Table) -> Option<&str> {
    manifest.get("package")?.get("name")?.as_str()
}

/// Every dependency a `Cargo.toml` declares, in all tables (including `[target.*]`).
pub fn dependencies(manifest: &toml::Table, facts: &WorkspaceFacts) -> Vec<Dep> {
    let mut tables: Vec<(String, DepKind, &toml::Table)> = Vec::new();
    for kind in [DepKind::Normal, DepKind::Build, DepKind::Dev] {
        if let Some(table) = manifest.get(kind.table()).and_then(toml::Value::as_table) {
            tables.push((format!("[{}]", kind.table()), kind, table));
        }
    }
    let targets = manifest.get("target").and_then(toml::Value::as_table);
    for (cfg, target) in targets.into_iter().flatten() {
        for kind in [DepKind::Normal, DepKind::Build, DepKind::Dev] {
            if let Some(table) = target.get(kind.table()).and_then(toml::Value::as_table) {
                tables.push((format!("[target.'{cfg}'.{}]", kind.table()), kind, table));
            }
        }
    }
    let mut deps = Vec::new();
    for (table_name, kind, table) in tables {
        for (key, value) in table {
            let own_rename = value.get("package").and_then(toml::Value::as_str);
            let inherited = value.get("workspace").and_then(toml::Value::as_bool) == Some(true);
            let package = match (own_rename, inherited) {
                (Some(package), _) => package.to_owned(),
                (None, true) => facts
                    .renames
                    .get(key)
                    .cloned()
                    .unwrap_or_else(|| key.clone()),
                (None, false) => key.clone(),
            };
            deps.push(Dep {
                package,
                kind,
                table: table_name.clone(),
            });
        }
    }
    deps
}

/// Checks one crate's manifest against [`LAYERS`] and [`EXTERNAL`]; `dir` is the crate's
/// directory name under `crates/`.
pub fn check_manifest(dir: &str, manifest_text: &str, facts: &WorkspaceFacts) -> Vec<String> {
    let at = format!("crates/{dir}/Cargo.toml");
    let manifest: toml::Table = match manifest_text.parse() {
        Ok(manifest) => manifest,
        Err(err) => return vec![format!("{at}: not valid TOML: {err}")],
    };
    let Some(name) = package_name(&manifest) else {
        return vec![format!("{at}: has no `[package] name`")];
    };
    let mut problems = Vec::new();
    if name != dir {
        problems.push(format!(
            "{at}: package `{name}` must live in `crates/{name}` (directory name == crate name)"
        ));
    }
    let layer = LAYERS
        .iter()
        .find(|(krate, _)| *krate == name)
        .map(|(_, allowed)| *allowed);
    if layer.is_none() {
        problems.push(format!(
            "{at}: `{name}` has no row in the dependency direction; add it to `LAYERS` in crates/xtask/src/tidy.rs \
             (and to the crates table of ARCHITECTURE.md)"
        ));
    }
    for dep in dependencies(&manifest, facts) {
        if facts.members.contains(&dep.package) {
            if dep.package == name {
                continue;
            }
            if let Some(Allowed::Only(allowed)) = layer
                && !allowed.contains(&dep.package.as_str())
            {
                let allowed = if allowed.is_empty() {
                    "no workspace crate".to_owned()
                } else {
                    allowed.join(", ")
                };
                problems.push(format!(
                    "{at}: `{name}` must not depend on `{}` ({}); it may depend on: {allowed}",
                    dep.package, dep.table
                ));
            }
            continue;
        }
        if PLACEMENT_EXEMPT.contains(&name) {
            continue;
        }
        for (external, placement, scope) in EXTERNAL {
            if dep.package != *external
                || (*scope == Scope::ShippedOnly && dep.kind == DepKind::Dev)
            {
                continue;
            }
            let violation = match placement {
                Placement::OnlyIn(crates) => (!crates.contains(&name))
                    .then(|| format!("only {} may use it", crates.join(", "))),
                Placement::NotIn(crates) => crates
                    .contains(&name)
                    .then(|| format!("it is banned from {}", crates.join(", "))),
            };
            if let Some(why) = violation {
                let tests_note = if *scope == Scope::ShippedOnly {
                    " (a [dev-dependencies] entry is allowed)"
                } else {
                    ""
                };
                problems.push(format!(
                    "{at}: `{name}` must not depend on `{external}` ({}): {why}{tests_note}",
                    dep.table
                ));
            }
        }
    }
    problems
}

/// Banned in every source file under `crates/`: (needle, why). The needles are built with
/// `concat!` so that this file does not trip its own check.
pub const BANNED: &[(&str, &str)] = &[
    (concat!("todo", "!("), "finish the code or return an error"),
    (
        concat!("unimplemented", "!("),
        "finish the code or return an error",
    ),
    (concat!("dbg", "!("), "remove the debugging output"),
    (
        concat!("#[", "ignore]"),
        "every test runs; fix it or delete it",
    ),
    (
        concat!("#[", "ignore ="),
        "every test runs; fix it or delete it",
    ),
    (
        concat!("#[", "ignore="),
        "every test runs; fix it or delete it",
    ),
];

/// How a test entry that only runs as another test's child process is marked.
pub const CHILD_PROCESS_IGNORE: &str = concat!("#[", "ignore = \"a child process of ");

/// Checks one Rust source file; `path` is workspace-relative, for messages.
pub fn check_source(path: &str, text: &str) -> Vec<String> {
    let mut problems = Vec::new();
    if !text.starts_with("//!") {
        problems.push(format!(
            "{path}:1: the file must start with a `//!` module doc comment saying what it is for"
        ));
    }
    for (index, line) in text.lines().enumerate() {
        // The one exception: a test entry that is a helper process of another test (the
        // other test runs the test binary again with `--ignored --exact NAME`), so that it
        // is not counted as a test of its own.
        if line.trim_start().starts_with(CHILD_PROCESS_IGNORE) {
            continue;
        }
        for (needle, why) in BANNED {
            if line.contains(needle) {
                problems.push(format!(
                    "{path}:{}: `{needle}` is not allowed in crates: {why}",
                    index + 1
                ));
            }
        }
    }
    problems.extend(crate::no_io::check_opt_outs(path, text));
    problems.extend(crate::spawns::check_spawns(path, text));
    problems
}

/// Every `.rs` file under `dir`, sorted; skips hidden directories and `target/`.
pub fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            let name = entry.file_name().to_string_lossy().into_owned();
            let Ok(file_type) = entry.file_type() else {
                continue;
            };
            if file_type.is_dir() {
                if !name.starts_with('.') && name != "target" {
                    stack.push(path);
                }
            } else if file_type.is_file() && name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The crate directories under `crates/` that hold a `Cargo.toml`, sorted by name.
pub fn crate_dirs(root: &Path) -> Vec<(String, PathBuf)> {
    let mut dirs: Vec<(String, PathBuf)> = std::fs::read_dir(root.join("crates"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
                .filter(|(_, path)| path.join("Cargo.toml").is_file())
                .collect()
        })
        .unwrap_or_default();
    dirs.sort();
    dirs
}

/// Runs the manifest checks over the real repository.
pub fn check_repository_manifests(root: &Path) -> Vec<String> {
    let read = |path: &Path| {
        std::fs::read_to_string(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))
    };
    let mut problems = Vec::new();
    let mut manifests = Vec::new();
    let mut members = BTreeSet::new();
    for (dir, path) in crate_dirs(root) {
        match read(&path.join("Cargo.toml")) {
            Ok(text) => {
                if let Some(name) = text
                    .parse::<toml::Table>()
                    .ok()
                    .as_ref()
                    .and_then(package_name)
                {
                    members.insert(name.to_owned());
                }
                manifests.push((dir, text));
            }
            Err(err) => problems.push(err),
        }
    }
    let facts =
        match read(&root.join("Cargo.toml")).and_then(|text| WorkspaceFacts::new(&text, members)) {
            Ok(facts) => facts,
            Err(err) => return vec![err],
        };
    for (dir, text) in manifests {
        problems.extend(check_manifest(&dir, &text, &facts));
    }
    problems
}

/// Runs the source checks over every `.rs` file under `crates/`.
pub fn check_repository_sources(root: &Path) -> Vec<String> {
    let mut problems = Vec::new();
    for path in rust_files(&root.join("crates")) {
        let relative = path
            .strip_prefix(root)
            .unwrap_or(&path)
            .to_string_lossy()
            .replace('\\', "/");
        match std::fs::read_to_string(&path) {
            Ok(text) => problems.extend(check_source(&relative, &text)),
            Err(err) => problems.push(format!("{relative}: cannot read: {err}")),
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assert_clean(what: &str, problems: &[String]) {
        assert!(
            problems.is_empty(),
            "tidy: {what}:\n  {}\n",
            problems.join("\n  ")
        );
    }

    #[test]
    fn crate_dependencies_follow_the_architecture() {
        assert_clean(
            "crate dependencies break ARCHITECTURE.md",
            &check_repository_manifests(&crate::project_root()),
        );
    }

    #[test]
    fn rust_files_have_module_docs_and_no_banned_macros() {
        let root = crate::project_root();
        assert!(
            rust_files(&root.join("crates")).len() > 10,
            "the walk found no sources under {}",
            root.display()
        );
        assert_clean("source files", &check_repository_sources(&root));
    }

    fn facts() -> WorkspaceFacts {
        let root = "[workspace.dependencies]\nmodel = { path = \"crates/once_model\", package = \"once_model\" }\n";
        let members = LAYERS.iter().map(|(name, _)| (*name).to_owned()).collect();
        WorkspaceFacts::new(root, members).unwrap()
    }

    /// Checks an inline `Cargo.toml` for crate `name` and renders the problems, one a line.
    fn check(name: &str, deps: &str) -> String {
        let manifest = format!("[package]\nname = \"{name}\"\n\n{deps}");
        check_manifest(name, &manifest, &facts()).join("\n")
    }

    #[test]
    fn layering_rejects_upward_and_sideways_dependencies() {
        assert_eq!(
            check("once_syntax", "[dependencies]\nrowan = \"0.17\"\n"),
            ""
        );
        assert_eq!(
            check(
                "once_syntax",
                "[dependencies]\nonce_model.workspace = true\n"
            ),
            "crates/once_syntax/Cargo.toml: `once_syntax` must not depend on `once_model` ([dependencies]); \
             it may depend on: no workspace crate"
        );
        assert_eq!(
            check(
                "once_graph",
                "[dependencies]\nonce_db.workspace = true\nonce_starlark.workspace = true\n"
            ),
            ""
        );
        assert_eq!(
            check(
                "once_graph",
                "[dev-dependencies]\nonce_analysis = { path = \"../once_analysis\" }\n"
            ),
            "crates/once_graph/Cargo.toml: `once_graph` must not depend on `once_analysis` ([dev-dependencies]); \
             it may depend on: once_db, once_syntax, once_model, once_starlark, once_fixture"
        );
        assert_eq!(
            check(
                "once_json",
                "[dependencies]\nonce_analysis.workspace = true\nonce_model.workspace = true\n"
            ),
            ""
        );
        assert_eq!(
            check(
                "once_cli",
                "[dependencies]\nonce_analysis.workspace = true\nonce_json.workspace = true\n"
            ),
            ""
        );
    }

    #[test]
    fn layering_sees_through_renames() {
        // `model` is renamed to `once_model` in the root `[workspace.dependencies]`.
        assert_eq!(
            check("once_syntax", "[dependencies]\nmodel.workspace = true\n"),
            "crates/once_syntax/Cargo.toml: `once_syntax` must not depend on `once_model` ([dependencies]); \
             it may depend on: no workspace crate"
        );
        assert_eq!(
            check(
                "once_model",
                "[target.'cfg(unix)'.dependencies]\nsyn = { path = \"../once_syntax\", package = \"once_syntax\" }\n"
            ),
            "crates/once_model/Cargo.toml: `once_model` must not depend on `once_syntax` ([target.'cfg(unix)'.dependencies]); \
             it may depend on: no workspace crate"
        );
    }

    #[test]
    fn external_crates_stay_in_their_place() {
        assert_eq!(
            check(
                "once_starlark",
                "[dependencies]\nstarlark.workspace = true\n"
            ),
            ""
        );
        assert_eq!(
            check("once_graph", "[dependencies]\nstarlark.workspace = true\n"),
            "crates/once_graph/Cargo.toml: `once_graph` must not depend on `starlark` ([dependencies]): only once_starlark may use it"
        );
        assert_eq!(
            check("once_model", "[dev-dependencies]\nsalsa.workspace = true\n"),
            "crates/once_model/Cargo.toml: `once_model` must not depend on `salsa` ([dev-dependencies]): \
             it is banned from once_syntax, once_model, once_starlark"
        );
        assert_eq!(
            check("once_db", "[dependencies]\nsalsa.workspace = true\n"),
            ""
        );
        assert_eq!(
            check("once_analysis", "[dependencies]\nclap = \"4\"\n")
                .lines()
                .count(),
            1
        );
        assert_eq!(
            check(
                "once_lsp",
                "[dependencies]\nlsp-types = \"0.97\"\nlsp-server = \"0.10\"\n"
            ),
            ""
        );
        assert_eq!(
            check("once_mcp", "[dependencies]\nlsp-server = \"0.10\"\n")
                .lines()
                .count(),
            1
        );
        assert_eq!(
            check(
                "xtask",
                "[dependencies]\nclap = \"4\"\nstarlark = \"0.14\"\n"
            ),
            ""
        );
    }

    #[test]
    fn serde_is_allowed_in_tests_only_below_the_protocol_crates() {
        assert_eq!(
            check(
                "once_graph",
                "[dev-dependencies]\nserde_json.workspace = true\nserde.workspace = true\n"
            ),
            ""
        );
        assert_eq!(
            check(
                "once_graph",
                "[dependencies]\nserde_json.workspace = true\n"
            ),
            "crates/once_graph/Cargo.toml: `once_graph` must not depend on `serde_json` ([dependencies]): \
             it is banned from once_syntax, once_model, once_starlark, once_db, once_graph, once_analysis \
             (a [dev-dependencies] entry is allowed)"
        );
        assert_eq!(
            check("once_db", "[build-dependencies]\nserde = \"1\"\n")
                .lines()
                .count(),
            1
        );
        assert_eq!(
            check(
                "once_json",
                "[dependencies]\nserde.workspace = true\nserde_json.workspace = true\n"
            ),
            ""
        );
    }

    #[test]
    fn every_crate_needs_a_layer_and_a_matching_directory() {
        assert_eq!(
            check("once_new", ""),
            "crates/once_new/Cargo.toml: `once_new` has no row in the dependency direction; add it to `LAYERS` in \
             crates/xtask/src/tidy.rs (and to the crates table of ARCHITECTURE.md)"
        );
        let problems = check_manifest("syntax", "[package]\nname = \"once_syntax\"\n", &facts());
        assert_eq!(
            problems,
            [
                "crates/syntax/Cargo.toml: package `once_syntax` must live in `crates/once_syntax` (directory name == crate name)"
            ]
        );
    }

    #[test]
    fn sources_need_a_module_doc() {
        assert_eq!(
            check_source("a.rs", "//! Does a thing.\nfn f() {}\n"),
            Vec::<String>::new()
        );
        assert_eq!(
            check_source("a.rs", "// Not a module doc.\nfn f() {}\n"),
            ["a.rs:1: the file must start with a `//!` module doc comment saying what it is for"]
        );
        assert_eq!(check_source("a.rs", "\n//! Too late.\n").len(), 1);
        assert_eq!(check_source("a.rs", "").len(), 1);
    }

    #[test]
    fn sources_must_not_hold_banned_macros() {
        let text = [
            "//! Module.",
            concat!("fn a() { todo", "!() }"),
            concat!("fn b() { unimplemented", "!(\"x\") }"),
            concat!("fn c() { dbg", "!(1); }"),
            concat!("#[", "ignore]"),
            concat!("#[", "ignore = \"slow\"]"),
            "fn todo() {} // a function named todo is fine, as is `#[ignored_attr]`",
            concat!(
                "#[",
                "ignore = \"a child process of parent_test, which runs it\"]"
            ),
        ]
        .join("\n");
        let problems = check_source("a.rs", &text);
        let lines: Vec<&str> = problems
            .iter()
            .map(|p| p.split(": ").next().unwrap())
            .collect();
        assert_eq!(
            lines,
            ["a.rs:2", "a.rs:3", "a.rs:4", "a.rs:5", "a.rs:6"],
            "{problems:#?}"
        );
    }
}
