//! What `once` reads and writes of its host below the database, for the database's
//! `OsSystem` and for the crates that execute (`once_exec`, `once_evidence`,
//! `once_runtime`) alike, so those need no database:
//!
//! - [`confined`]: file access relative to directory handles without following links
//!   (reads, atomic writes, directory creation), the one way `once` touches the workspace
//!   and the store;
//! - [`stamp`]: [`FileStamp`], the `stat` fingerprint compared to tell a file changed;
//! - [`machine_parallelism`]: how many threads the process may use.

#[cfg(unix)]
pub mod confined;
pub mod stamp;

pub use stamp::{EntryKind, FileStamp};

/// The largest file `once_db::System::read_to_string` and `read_bytes` (and the confined
/// reads) read: manifests,
/// modules and edited files are far smaller; anything bigger is refused, not loaded.
pub const MAX_READ_BYTES: u64 = 64 << 20;

/// How many threads this machine runs at once: the parallelism the process may use (CPU
/// affinity and cgroup quota). Asked once per process: the answer reads several files
/// under `/proc` and `/sys`.
pub fn machine_parallelism() -> usize {
    static PARALLELISM: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *PARALLELISM.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}
