//! The base of the salsa database: inputs, file access, discovery and changes.
//!
//! - [`system`]: the [`System`] trait, the only way core crates touch the outside world,
//!   with [`OsSystem`] (the real disk) and [`MemorySystem`] (tests, editor overlays).
//! - [`files`]: the [`File`] input, [`source_text`] and [`line_index`].
//! - [`host_paths`]: the [`HostPath`] input of a path outside the workspace's files a
//!   query looks at (a Python interpreter), and [`host_entry`].
//! - [`workspace`]: the [`Workspace`] and [`Package`] inputs and host platform.
//! - [`discovery`]: finding the workspace root and walking the tree into packages.
//! - [`digests`]: [`file_digest`], [`source_file`] and the persistent
//!   [`DigestIndex`](digests::DigestIndex).
//! - [`framed`]: the header, version and checksum every file kept to decide hits shares.
//! - [`links`]: where a symbolic link among the workspace's files leads ([`link_target`]).
//! - [`changes`]: [`ChangeEvent`] and [`apply_changes`], the one door through which inputs change.
//! - [`glob_list`]: ordered glob lists with `!` exclusions, as every glob-taking list reads them.
//! - [`package_filter`]: `[workspace] include/exclude` glob semantics.
//! - [`writes`]: planned file writes reaching the disk, confined to the workspace and atomic.
//! - [`plan_memo`]: the [`PlanMemo`] a one-shot front end lends planning.
//!
//! **Architecture Invariant:** nothing here reads the disk, the environment or the clock
//! except through [`System`]; inputs are set only by [`apply_changes`] and [`RootDatabase::load`].

pub mod changes;
#[cfg(unix)]
pub use once_host::confined;
pub mod digests;
pub mod discovery;
pub mod files;
pub mod glob_list;
pub mod host_paths;
pub use once_model::framed;
pub mod links;
pub mod memory;
pub mod package_filter;
pub mod plan_memo;
pub mod simple_glob;
pub mod system;
pub mod workspace;
pub mod writes;

use std::sync::{Arc, Mutex};

pub use changes::{ChangeEvent, apply_changes, is_excluded_from_walk};
pub use digests::{DigestError, FileDigest, Sha256Digest, SourceFile, file_digest, source_file};
pub use discovery::{DiscoveredPackage, discover_packages, find_workspace_root};
pub use files::{ColumnUnit, File, LineIndex, SourceText, line_index, source_text};
pub use glob_list::{GlobEffect, GlobEntry, GlobList};
pub use host_paths::{HostEntry, HostPath, host_entry};
pub use links::{LinkTarget, link_target};
pub use package_filter::{PackageFilter, PatternError};
pub use plan_memo::PlanMemo;
pub use system::{
    EntryKind, FileStamp, HostPlatform, MemorySystem, OsSystem, StampedRead, System, Walked,
    WriteLock,
};
pub use workspace::{Package, Workspace};
pub use writes::{FileWrite, WriteError, write_files};

/// The database trait every query takes as `db: &dyn Db`.
#[salsa::db]
pub trait Db: salsa::Database {
    /// The outside world: file contents, the directory walk, the host platform.
    fn system(&self) -> &dyn System;

    /// The input of a workspace-relative path, created on first use (the path need not
    /// exist: a missing file's queries answer that it is missing).
    fn file_for_path(&self, path: &str) -> File;

    /// The input of an absolute host path outside the workspace's files, created on
    /// first use ([`host_paths`]: what is there is [`host_entry`]).
    fn host_path(&self, path: &std::path::Path) -> HostPath;

    /// Records the stamp a read of `file` saw (only [`files`] reads call this).
    fn record_seen(&self, file: File, stamp: Option<FileStamp>);

    /// Records where the link `file` led when it was resolved ([`links::link_target`]).
    fn record_link(&self, file: File, target: links::LinkTarget);

    /// This process's digest index (loaded from `.once/digests` on first use).
    fn digest_index(&self) -> &digests::DigestIndex;

    /// The planning memo of a one-shot front end, when it installed one.
    fn plan_memo(&self) -> Option<&dyn PlanMemo>;
}

/// The one concrete database. Clones are cheap snapshots for other threads.
#[salsa::db]
#[derive(Clone)]
pub struct RootDatabase {
    storage: salsa::Storage<RootDatabase>,
    system: Arc<dyn System>,
    /// The path → input table, shared by all snapshots.
    pub(crate) file_table: Arc<Mutex<files::FileTable>>,
    /// The host path → input table, shared by all snapshots.
    host_paths: Arc<Mutex<host_paths::HostPathTable>>,
    digest_index: Arc<digests::DigestIndex>,
    plan_memo: Option<Arc<dyn PlanMemo>>,
}

#[salsa::db]
impl salsa::Database for RootDatabase {}

#[salsa::db]
impl Db for RootDatabase {
    fn system(&self) -> &dyn System {
        &*self.system
    }

    fn file_for_path(&self, path: &str) -> File {
        changes::file_input(self, path)
    }

    fn host_path(&self, path: &std::path::Path) -> HostPath {
        host_paths::host_path_input(self, path)
    }

    fn record_seen(&self, file: File, stamp: Option<FileStamp>) {
        self.lock_file_table().record_seen(file, stamp);
    }

    fn record_link(&self, file: File, target: links::LinkTarget) {
        self.lock_file_table().record_link(file, target);
    }

    fn digest_index(&self) -> &digests::DigestIndex {
        &self.digest_index
    }

    fn plan_memo(&self) -> Option<&dyn PlanMemo> {
        self.plan_memo.as_deref()
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
            host_paths: Arc::default(),
            digest_index: Arc::default(),
            plan_memo: None,
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
            host_paths: Arc::default(),
            digest_index: Arc::default(),
            plan_memo: None,
        };
        (db, log)
    }

    /// A database that logs every query execution into the first log and every memo
    /// validated without running (in one step by durability, or dependency by
    /// dependency) into the second.
    pub fn with_validation_log(
        system: Arc<dyn System>,
    ) -> (RootDatabase, ExecutionLog, ExecutionLog) {
        let (executions, validations) = (ExecutionLog::default(), ExecutionLog::default());
        let (executed, validated) = (executions.clone(), validations.clone());
        let callback = move |event: salsa::Event| {
            let (sink, key) = match event.kind {
                salsa::EventKind::WillExecute { database_key } => (&executed, database_key),
                salsa::EventKind::DidValidateMemoizedValue { database_key } => {
                    (&validated, database_key)
                }
                _ => return,
            };
            if let Ok(mut entries) = sink.0.lock() {
                entries.push(format!("{key:?}"));
            }
        };
        let db = RootDatabase {
            storage: salsa::Storage::new(Some(Box::new(callback))),
            system,
            file_table: Arc::default(),
            host_paths: Arc::default(),
            digest_index: Arc::default(),
            plan_memo: None,
        };
        (db, executions, validations)
    }

    /// Walks the workspace at `root` and creates its inputs.
    pub fn load(&mut self, root: std::path::PathBuf) -> Workspace {
        changes::load_workspace(self, root)
    }

    /// Creates the inputs from a walk of `root` that already happened (a server's
    /// watching walk, `once_watch::WorkspaceWatcher::watch_and_walk`).
    pub fn load_walked(&mut self, root: std::path::PathBuf, walked: &Walked) -> Workspace {
        changes::load_walked_workspace(self, root, walked)
    }

    /// Lends planning a memo kept between processes; set it before the first plan is
    /// asked. A server's warm database memoises by itself and sets none.
    pub fn set_plan_memo(&mut self, memo: Arc<dyn PlanMemo>) {
        self.plan_memo = Some(memo);
    }

    pub fn system_arc(&self) -> Arc<dyn System> {
        self.system.clone()
    }

    /// The input for a workspace-relative path, if the database knows the file.
    pub fn file(&self, path: &str) -> Option<File> {
        self.lock_file_table().get(path)
    }

    /// Saves the digests this process computed to the workspace's `.once/digests`
    /// (atomically; nothing is written when no digest was computed). Returns whether it
    /// wrote.
    pub fn save_digest_index(&self) -> std::io::Result<bool> {
        let root = workspace::workspace_root(self);
        self.digest_index.save(&*self.system, &root)
    }

    /// The warning to show when the digest index this process read was damaged
    /// ([`digests::DigestIndex::damage`]).
    pub fn digest_index_damage(&self) -> Option<String> {
        self.digest_index.damage()
    }

    /// Reads the persistent digest index now if no digest did yet (it is otherwise read
    /// by the first digest, which every other thread's first digest then waits for).
    pub fn prepare_digest_index(&self) {
        self.digest_index.prepare(self);
    }

    /// How many bytes this process hashed for digests.
    pub fn bytes_hashed(&self) -> u64 {
        self.digest_index.bytes_hashed()
    }

    pub(crate) fn lock_host_paths(&self) -> std::sync::MutexGuard<'_, host_paths::HostPathTable> {
        match self.host_paths.lock() {
            Ok(table) => table,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    pub(crate) fn lock_file_table(&self) -> std::sync::MutexGuard<'_, files::FileTable> {
        match self.file_table.lock() {
            Ok(table) => table,
            Err(poisoned) => poisoned.into_inner(),
        }
    }
}
