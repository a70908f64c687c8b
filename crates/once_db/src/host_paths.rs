//! Paths outside the workspace's files that queries look at, as inputs: a Python
//! interpreter or virtual environment a target names (hidden, ignored or outside the
//! workspace, so the walk never lists it and no file event names it).
//!
//! [`Db::host_path`](crate::Db::host_path) gives the input of an absolute path, created
//! on first use; [`host_entry`] is what is there, read through the
//! [`System`](crate::System) after touching the input's revision. Every
//! [`apply_changes`](crate::apply_changes) call, an empty batch too (a server applies
//! its watcher's batch, often empty, before each request), looks at each such path again
//! and bumps exactly those whose entry changed ([`refresh_host_paths`]). So a query that
//! asked re-runs only when what it asked about changed, and a long-running host sees a
//! virtual environment made, removed or broken at its next change batch, with no edit.

use std::path::{Path, PathBuf};

use rustc_hash::FxHashMap;
use salsa::{Durability, Setter};

use crate::system::{EntryKind, System};
use crate::{Db, RootDatabase};

/// One absolute path of the host, looked at by some query.
#[salsa::input(debug)]
pub struct HostPath {
    #[returns(ref)]
    pub path: PathBuf,
    #[returns(copy)]
    pub revision: u64,
}

/// What is at a host path, as far as queries ask: only what they decide by, so a
/// changed time alone changes nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct HostEntry {
    /// What the path leads to, following symbolic links; `None` when nothing is there
    /// (a link to nothing too) or it cannot be looked at.
    pub kind: Option<EntryKind>,
    /// Whether what it leads to has an execute permission bit set.
    pub executable: bool,
    /// Whether the path itself is a symbolic link.
    pub link: bool,
}

impl HostEntry {
    /// What `system` says is at `path` now.
    pub fn of(system: &dyn System, path: &Path) -> HostEntry {
        let stamp = system.stamp(path).ok().flatten();
        let link = matches!(
            system.link_stamp(path),
            Ok(Some(own)) if own.kind == EntryKind::Symlink
        );
        HostEntry {
            kind: stamp.map(|stamp| stamp.kind),
            executable: stamp.is_some_and(|stamp| stamp.mode & 0o111 != 0),
            link,
        }
    }
}

/// What is at `path` (see the module doc).
#[salsa::tracked]
pub fn host_entry(db: &dyn Db, path: HostPath) -> HostEntry {
    let _ = path.revision(db);
    HostEntry::of(db.system(), path.path(db))
}

/// The path → input table, shared by all snapshots.
#[derive(Default, Debug)]
pub(crate) struct HostPathTable {
    paths: FxHashMap<PathBuf, HostPath>,
}

/// The input of the absolute `path`, created on first use.
pub(crate) fn host_path_input(db: &RootDatabase, path: &Path) -> HostPath {
    let mut table = db.lock_host_paths();
    if let Some(input) = table.paths.get(path) {
        return *input;
    }
    // MEDIUM until it first changes, then LOW, as a file's revision (`file_input`).
    let input = HostPath::builder(path.to_path_buf(), 0)
        .path_durability(Durability::HIGH)
        .revision_durability(Durability::MEDIUM)
        .new(db);
    table.paths.insert(path.to_path_buf(), input);
    input
}

/// Bumps every host path whose entry on disk differs from what [`host_entry`] last
/// answered.
pub(crate) fn refresh_host_paths(db: &mut RootDatabase) {
    let inputs: Vec<HostPath> = db.lock_host_paths().paths.values().copied().collect();
    let changed: Vec<HostPath> = inputs
        .into_iter()
        .filter(|input| *host_entry(db, *input) != HostEntry::of(db.system(), input.path(db)))
        .collect();
    for input in changed {
        let next = input.revision(db) + 1;
        input
            .set_revision(db)
            .with_durability(Durability::LOW)
            .to(next);
    }
}
