//! The base of the salsa database: inputs, file access, discovery and changes.
//!
//! - [`system`]: the [`System`] trait, the only way core crates touch the outside world,
//!   with [`OsSystem`] (the real disk) and [`MemorySystem`] (tests, editor overlays).
//! - [`files`]: the [`File`] input, [`source_text`] and [`line_index`].
//! - [`workspace`]: the [`Workspace`] and [`Package`] inputs and host platform.
//! - [`discovery`]: finding the workspace root and walking the tree into packages.
//! - [`changes`]: [`ChangeEvent`] and [`apply_changes`], the one door through which inputs change.
//! - [`package_filter`]: `[workspace] include/exclude` glob semantics.
//! - [`writes`]: planned file writes reaching the disk, confined to the workspace and atomic.
//!
//! **Architecture Invariant:** nothing here reads the disk, the environment or the clock
//! except through [`System`]; inputs are set only by [`apply_changes`] and [`RootDatabase::load`].

pub mod changes;
#[cfg(unix)]
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "OsSystem's confined reads, writes and write lock: the real disk behind `System`"
)]
mod confined;
pub mod discovery;
pub mod files;
pub mod package_filter;
pub mod system;
pub mod workspace;
pub mod writes;

use std::sync::{Arc, Mutex};

pub use changes::{ChangeEvent, apply_changes};
pub use discovery::{DiscoveredPackage, discover_packages, find_workspace_root};
pub use files::{File, LineIndex, SourceText, line_index, source_text};
pub use package_filter::{PackageFilter, PatternError};
pub use system::{EntryKind, HostPlatform, MemorySystem, OsSystem, System, WriteLock};
pub use workspace::{Package, Workspace};
pub use writes::{FileWrite, WriteError, write_files};

/// The database trait every query takes as `db: &dyn Db`.
#[salsa::db]
pub trait Db: salsa::Database {
    /// The outside world: file contents, the directory walk, the host platform.
    fn system(&self) -> &dyn System;
}

/// The one concrete database. Clones are cheap snapshots for other threads.
#[salsa::db]
#[derive(Clone)]
pub struct RootDatabase {
    storage: salsa::Storage<RootDatabase>,
    system: Arc<dyn System>,
    /// The path → input table, shared by all snapshots.
    pub(crate) file_table: Arc<Mutex<files::FileTable>>,
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl Db for RootDatabase {
    fn system(&self) -> &dyn System {
        &*self.system
    }
}

/// The names of queries that executed, in order, for incrementality tests.
#[derive(Clone, Default, Debug)]
pub struct ExecutionLog(Arc<Mutex<Vec<String>>>);

impl ExecutionLog {
    /// Takes the names logged so far (e.g. `parse_manifest(Id(3))`).
    pub fn take(&self) -> Vec<String> {
        match self.0.lock() {
            Ok(mut log) => std::mem::take(&mut *log),
            Err(poisoned) => std::mem::take(&mut *poisoned.into_inner()),
        }
    }
}

impl RootDatabase {
    pub fn new(system: Arc<dyn System>) -> RootDatabase {
        RootDatabase {
            storage: salsa::Storage::new(None),
            system,
            file_table: Arc::default(),
        }
    }

    /// A database that logs every query execution into the returned log.
    pub fn with_execution_log(system: Arc<dyn System>) -> (RootDatabase, ExecutionLog) {
        let log = ExecutionLog::default();
        let sink = log.clone();
        let callback = move |event: salsa::Event| {
            if let salsa::EventKind::WillExecute { database_key } = event.kind
                && let Ok(mut entries) = sink.0.lock()
            {
                entries.push(format!("{database_key:?}"));
            }
        };
        let db = RootDatabase {
            storage: salsa::Storage::new(Some(Box::new(callback))),
            system,
            file_table: Arc::default(),
        };
        (db, log)
    }

    /// Walks the workspace at `root` and creates its inputs.
    pub fn load(&mut self, root: std::path::PathBuf) -> Workspace {
        changes::load_workspace(self, root)
    }

    /// Creates the inputs from the sorted root-relative `files` of a walk of `root` that
    /// already happened (a server's watching walk, `once_watch::WorkspaceWatcher::watch_and_walk`).
    pub fn load_walked(&mut self, root: std::path::PathBuf, files: &[String]) -> Workspace {
        changes::load_walked_workspace(self, root, files)
    }

    pub fn system_arc(&self) -> Arc<dyn System> {
        self.system.clone()
    }

    /// The input for a workspace-relative path, if the database knows the file.
    pub fn file(&self, path: &str) -> Option<File> {
        self.file_table
            .lock()
            .ok()
            .and_then(|table| table.get(path))
    }
}
