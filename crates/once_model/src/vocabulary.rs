//! The manifest vocabulary: every key a `once.toml` table may hold, with the shape of its
//! value and its docs, declared once.
//!
//! The manifest reader takes its known keys from here (anything else is `unknown_key`), IDE
//! completion its keys, table headers and their docs, the JSON Schema generator its
//! properties and descriptions, and the edit planner the order it writes a new target's
//! fields in ([`MANIFEST_KEYS`] lists each table's keys in that order).

/// A table of a manifest that has a fixed set of keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ManifestTable {
    /// The top level of `once.toml`.
    TopLevel,
    /// A `[[target]]` table.
    Target,
    /// The root manifest's `[workspace]`.
    Workspace,
    /// `[workspace.configuration]`.
    Configuration,
    /// The root manifest's `[modules]`.
    Modules,
    /// The root manifest's `[cache]` (the remote cache).
    Cache,
}

impl ManifestTable {
    pub const ALL: [ManifestTable; 6] = [
        ManifestTable::TopLevel,
        ManifestTable::Target,
        ManifestTable::Workspace,
        ManifestTable::Configuration,
        ManifestTable::Modules,
        ManifestTable::Cache,
    ];

    /// The keys leading to the table from the top level.
    pub fn path(self) -> &'static [&'static str] {
        match self {
            ManifestTable::TopLevel => &[],
            ManifestTable::Target => &["target"],
            ManifestTable::Workspace => &["workspace"],
            ManifestTable::Configuration => &["workspace", "configuration"],
            ManifestTable::Modules => &["modules"],
            ManifestTable::Cache => &["cache"],
        }
    }

    /// The table at a key path, if it has a fixed set of keys.
    pub fn at(path: &[&str]) -> Option<ManifestTable> {
        Self::ALL.into_iter().find(|t| t.path() == path)
    }

    /// The table's keys, in the order a new table is written in.
    pub fn keys(self) -> impl Iterator<Item = &'static ManifestKey> {
        MANIFEST_KEYS.iter().filter(move |k| k.table == self)
    }

    /// The names of the table's keys, in write order.
    pub fn key_names(self) -> Vec<&'static str> {
        self.keys().map(|k| k.name).collect()
    }

    /// The key of the table named `name`, if the vocabulary has it.
    pub fn key(self, name: &str) -> Option<&'static ManifestKey> {
        self.keys().find(|k| k.name == name)
    }
}

/// What a key's value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KeyShape {
    String,
    /// `true` or `false`.
    Boolean,
    /// An integer from the first bound to the second (inclusive).
    Integer(i64, i64),
    /// A list of strings.
    Strings,
    /// A list of target references, or a `select` of such lists.
    Labels,
    /// A table of dependency role = list of target references (each may be a `select`).
    Roles,
    /// A table of the kind's attributes, typed by the kind.
    Attrs,
    /// A table with keys of its own ([`ManifestKey::opens`]).
    Table,
    /// An array of tables with keys of their own (`[[target]]`).
    Tables,
}

impl KeyShape {
    /// The shape in words, as docs/manifest.md writes it.
    pub fn describe(self) -> &'static str {
        match self {
            KeyShape::String => "string",
            KeyShape::Boolean => "boolean",
            KeyShape::Integer(..) => "integer",
            KeyShape::Strings => "list of strings",
            KeyShape::Labels => "list of target references, or a `select`",
            KeyShape::Roles => "table of role = list of references (each may be a `select`)",
            KeyShape::Attrs | KeyShape::Table => "table",
            KeyShape::Tables => "array of tables",
        }
    }

    /// Whether the value is written as a table (or array of tables) and so may have its own
    /// header.
    pub fn is_table(self) -> bool {
        matches!(
            self,
            KeyShape::Roles | KeyShape::Attrs | KeyShape::Table | KeyShape::Tables
        )
    }
}

/// One key of a manifest table.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ManifestKey {
    pub table: ManifestTable,
    pub name: &'static str,
    pub shape: KeyShape,
    /// Whether every table of its kind must hold it.
    pub required: bool,
    /// One or two markdown sentences.
    pub docs: &'static str,
}

impl ManifestKey {
    /// The key path of the key itself.
    pub fn path(&self) -> Vec<&'static str> {
        let mut path = self.table.path().to_vec();
        path.push(self.name);
        path
    }

    /// The table with keys of its own this key's value is, if any.
    pub fn opens(&self) -> Option<ManifestTable> {
        ManifestTable::at(&self.path())
    }

    /// The header that opens the key's value as a table (`[[target]]`, `[target.attrs]`).
    pub fn header(&self) -> Option<String> {
        let path = self.path().join(".");
        match self.shape {
            KeyShape::Tables => Some(format!("[[{path}]]")),
            shape if shape.is_table() => Some(format!("[{path}]")),
            _ => None,
        }
    }
}

const fn key(
    table: ManifestTable,
    name: &'static str,
    shape: KeyShape,
    docs: &'static str,
) -> ManifestKey {
    ManifestKey {
        table,
        name,
        shape,
        required: false,
        docs,
    }
}

const fn required(key: ManifestKey) -> ManifestKey {
    ManifestKey {
        required: true,
        ..key
    }
}

use KeyShape as S;
use ManifestTable as T;

/// Every key of every manifest table; each table's keys in write order.
pub const MANIFEST_KEYS: &[ManifestKey] = &[
    key(
        T::TopLevel,
        "target",
        S::Tables,
        "Declares one target: a name, a kind, and the kind's attributes.",
    ),
    key(
        T::TopLevel,
        "workspace",
        S::Table,
        "Root manifest only: which package directories belong to the workspace, and the configuration `select` resolves against.",
    ),
    key(
        T::TopLevel,
        "modules",
        S::Table,
        "Root manifest only: project Starlark modules declaring kinds.",
    ),
    key(
        T::TopLevel,
        "cache",
        S::Table,
        "Root manifest only: a shared remote cache (REAPI over gRPC, or Bazel's HTTP cache protocol). See docs/remote-cache.md.",
    ),
    required(key(
        T::Target,
        "name",
        S::String,
        "The target's name, unique within the package.",
    )),
    required(key(
        T::Target,
        "kind",
        S::String,
        "The target kind: a built-in kind, or one a project module declares.",
    )),
    key(
        T::Target,
        "deps",
        S::Labels,
        "Dependencies in the kind's `deps` role.",
    ),
    key(
        T::Target,
        "srcs",
        S::Strings,
        "Source files, as paths or globs relative to the package. Entries apply in order: `!pattern` leaves out what the entries before it select (`[\"*.go\", \"!*_test.go\"]`), a later entry selects again; `\\!` starts a name with `!`.",
    ),
    key(
        T::Target,
        "visibility",
        S::Strings,
        "Who may depend on this target: `public`, `private`, `package:<pkg>`, `subtree:<pkg>` or a target; public when absent.",
    ),
    key(
        T::Target,
        "labels",
        S::Strings,
        "Free-form tags, such as `smoke` or `team:web`, that select tests.",
    ),
    key(
        T::Target,
        "attrs",
        S::Attrs,
        "The kind's attributes; values are typed by the kind.",
    ),
    key(
        T::Target,
        "dependencies",
        S::Roles,
        "Dependencies in the kind's named roles: `{ role = [\"label\"] }`.",
    ),
    key(
        T::Workspace,
        "include",
        S::Strings,
        "Globs of the package directories that belong to the workspace (`apps/*`, `libs/**`); every package when absent. `!pattern` leaves out what the entries before it match.",
    ),
    key(
        T::Workspace,
        "exclude",
        S::Strings,
        "Globs of package directories left out of the workspace; wins over `include`. `!pattern` keeps what the entries before it match.",
    ),
    key(
        T::Workspace,
        "test_attempts",
        S::Integer(1, 20),
        "Runs of a failing test case for every test target, the first included (1 to 20; 1: no retry), unless the target's `attempts` attribute or `once test --attempts` says otherwise.",
    ),
    key(
        T::Workspace,
        "sandbox",
        S::String,
        "`\"on\"` (the default): every action runs confined to what it declares; `\"off\"`: actions run unconfined, unsafe for caching (an undeclared read is outside the key), their results kept apart from sandboxed ones. See docs/sandbox.md.",
    ),
    key(
        T::Workspace,
        "server",
        S::String,
        "`\"auto\"`: `once` commands start the workspace server in the background when none runs (never when `CI` is set, unless `ONCE_SERVER=auto`); `\"off\"` (the default): only a server started with `once server start` answers. See docs/server.md.",
    ),
    key(
        T::Workspace,
        "python",
        S::String,
        "The Python interpreter of every Python target that does not set its own `python` attribute, instead of the `python3` on `PATH`: a virtual environment or installation directory (its `bin/python3` runs) or an interpreter file (a last component such as `python3` or `python3.12`), relative to the workspace root or absolute. See docs/kinds.md.",
    ),
    key(
        T::Workspace,
        "configuration",
        S::Table,
        "The configuration `select` resolves against.",
    ),
    key(
        T::Configuration,
        "os",
        S::String,
        "The operating system; the host's when absent.",
    ),
    key(
        T::Configuration,
        "arch",
        S::String,
        "The CPU architecture; the host's when absent.",
    ),
    key(
        T::Configuration,
        "tokens",
        S::Strings,
        "Extra tokens, tried after the platform tokens and before `default`.",
    ),
    key(
        T::Modules,
        "paths",
        S::Strings,
        "Globs of the Starlark modules declaring project kinds, relative to the workspace root. `!pattern` leaves out what the entries before it match.",
    ),
    key(
        T::Cache,
        "remote",
        S::String,
        "The remote cache's URL: `grpc://host:port` or `grpcs://host:port` (REAPI v2), `http://host:port/prefix` or `https://…` (Bazel's HTTP cache protocol). No credentials here: see `credentials_file`. `ONCE_REMOTE_CACHE` and `--remote-cache` override it.",
    ),
    key(
        T::Cache,
        "instance_name",
        S::String,
        "The REAPI instance name (gRPC only); empty by default.",
    ),
    key(
        T::Cache,
        "read_only",
        S::Boolean,
        "Look results up but never upload (`false` by default).",
    ),
    key(
        T::Cache,
        "max_upload_size",
        S::String,
        "Upload policy: a result with a file larger than this (`500M`, `2GiB`, bytes) is not uploaded; 1GiB by default.",
    ),
    key(
        T::Cache,
        "upload_jobs",
        S::Integer(1, 64),
        "How many uploads run at once, in the background (4 by default).",
    ),
    key(
        T::Cache,
        "timeout_seconds",
        S::Integer(1, 3600),
        "The time limit of one request to the remote cache (60 by default).",
    ),
    key(
        T::Cache,
        "credentials_file",
        S::String,
        "A file outside the workspace holding a bearer token, or one `Name: value` header line (`~/` is the home directory). `ONCE_REMOTE_CACHE_TOKEN` and `ONCE_REMOTE_CACHE_HEADER` are read first.",
    ),
];

/// Every table header a manifest may hold, with the key it opens: each table before the
/// tables nested in it (`[[target]]`, `[target.attrs]`, …, `[workspace]`, …).
pub fn table_headers() -> Vec<(String, &'static ManifestKey)> {
    fn walk(table: ManifestTable, out: &mut Vec<(String, &'static ManifestKey)>) {
        for key in table.keys() {
            if let Some(header) = key.header() {
                out.push((header, key));
            }
            if let Some(nested) = key.opens() {
                walk(nested, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(ManifestTable::TopLevel, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_unique_per_table_and_tables_are_reachable() {
        for table in ManifestTable::ALL {
            let mut names = table.key_names();
            let count = names.len();
            names.sort_unstable();
            names.dedup();
            assert_eq!(names.len(), count, "{table:?} repeats a key");
            assert!(count > 0, "{table:?} has no keys");
        }
        let opened: Vec<ManifestTable> = MANIFEST_KEYS.iter().filter_map(|k| k.opens()).collect();
        for table in ManifestTable::ALL {
            assert!(
                table == ManifestTable::TopLevel || opened.contains(&table),
                "no key opens {table:?}"
            );
        }
    }

    #[test]
    fn headers_nest_under_their_tables() {
        let headers: Vec<String> = table_headers().into_iter().map(|(h, _)| h).collect();
        assert_eq!(
            headers,
            [
                "[[target]]",
                "[target.attrs]",
                "[target.dependencies]",
                "[workspace]",
                "[workspace.configuration]",
                "[modules]",
                "[cache]",
            ]
        );
    }
}
