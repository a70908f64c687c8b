//! The local store: content-addressed blobs and the action cache, shared safely by every
//! `once` process using it.
//!
//! ## Layout (default `<workspace>/.once/cache`, any directory may be used)
//!
//! - `blobs/<2 hex>/<62 hex>`: file contents by SHA-256, sealed (below);
//! - `actions/<2 hex>/<62 hex>`: result records by action key ([`ActionRecord`]);
//! - `locks/<3 hex>`: the lock files of action keys being executed, one per stripe of
//!   the key space ([`lock_stripe`]);
//! - `derived/`: the files the store's clients keep in it, each worked out again when it
//!   is missing (the digests of programs, [`crate::tools`]; toolchain-probe answers,
//!   [`crate::probes`]; the plan memo and last plans, `once_build::plan_cache`; per
//!   workspace, record indexes, [`crate::record_index`]; their shared body format is
//!   [`keyed`]). The store
//!   knows none of them by name: `clean` and `gc` empty the directory;
//! - `tmp/`: temporary files being written (streams, blobs, records);
//! - `store.lock`: held shared by every executor while it runs, exclusively by `gc` and
//!   `clean`.
//!
//! ## Safety
//!
//! Every file reaches its place by `renameat` from a temporary file, so a reader sees
//! nothing or all of it, and a writer killed mid-write leaves only a temporary file
//! (removed by the next executor that finds the store unused, or by `gc`/`clean`). Blobs
//! are checked against their name whenever they are read; one that does not match is
//! removed and reported, and whatever needed it is a miss; so is anything but a regular
//! file at a blob's name (a link, a directory), which is removed, never followed, so the
//! blob is stored again. Records and the derived files are framed with a checksum
//! (`store/files.rs`): a damaged one is removed and reported. Nothing is `fsync`ed: a power cut
//! can leave an empty or partial blob or record, which the checks turn into misses.
//!
//! **Sealed blobs.** When the store writes a blob it makes it read-only (0444) and sets
//! its modification time to a fixed instant in the past ([`SEAL_SECONDS`]); nothing else
//! is recorded. Any write to the blob's inode afterwards (through a hard-linked output,
//! by any process, root included) moves the modification time to "now", and a truncation
//! changes the size too; a `chmod` changes the mode. So before a blob is linked into the
//! workspace, or an output linked to it is taken as in place, its size, modification time
//! and mode are checked on the open handle ([`Store::link_blob`], [`Store::is_linked`]);
//! a blob failing the check is hashed again: a mismatch is a corrupt blob (removed,
//! reported, a miss), a match seals it again. Only setting the time back on purpose
//! (`touch -d`, `utimensat`) after a write would go unnoticed.
//!
//! Executions of one key are serialised across threads and processes by an advisory lock
//! (`flock`) on its lock file; the executor reads the record again once it holds the
//! lock, so a process that waited for another one's run reuses its result.

use std::fs::File;
use std::io::{self, Read as _, Seek as _, SeekFrom, Write as _};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use once_host::confined::{TEMPORARY_PREFIX, create_temporary, open_directory_at, open_root};
use once_model::Sha256Digest;
use rustix::fs::{
    AtFlags, FileType, FlockOperation, Mode, OFlags, Stat, Timespec, Timestamps, fchmod, flock,
    fstat, futimens, linkat, openat, renameat, statat, unlinkat,
};
use rustix::io::Errno;
use sha2::{Digest as _, Sha256};

use crate::handles::{self, with_context};
use crate::record::ActionRecord;

mod files;
pub mod keyed;
pub use files::{FramedBody, RecordRead};

/// The store's directory under the workspace root when none is configured.
pub const DEFAULT_STORE_DIR: &str = ".once/cache";

const BLOBS: &str = "blobs";
const ACTIONS: &str = "actions";
const LOCKS: &str = "locks";
const TEMPORARIES: &str = "tmp";
const DERIVED: &str = "derived";
const STORE_LOCK: &str = "store.lock";
const COPY_CHUNK: usize = 64 * 1024;

/// The modification time of every sealed blob (2001-09-09T01:46:40Z, whole seconds so
/// that file systems with coarse times keep it exactly): a write to the blob moves its
/// time away from it.
pub const SEAL_SECONDS: i64 = 1_000_000_000;

/// The mode of every sealed blob, and of every output linked to one.
pub const BLOB_MODE: u32 = 0o444;

/// Whether an output recorded with `mode` is restored as a hard link to its blob: a file
/// readable by everyone and executable by no one (its write bits are dropped: linked
/// outputs are read-only). Other modes (executables, private files) are copied, since a
/// blob has a single mode.
pub fn links_with_mode(mode: u32) -> bool {
    mode & !0o222 == BLOB_MODE
}

static LINK_COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// An open store.
pub struct Store {
    path: PathBuf,
    root: OwnedFd,
    blobs: OwnedFd,
    actions: OwnedFd,
    locks: OwnedFd,
    temporaries: OwnedFd,
    /// `derived/`: the clients' files (see the module's documentation).
    derived: OwnedFd,
    /// Damaged files met (and removed) that no action's result reports: for the front
    /// end to show ([`Store::take_warnings`]).
    warnings: std::sync::Mutex<Vec<String>>,
}

/// Why a blob could not be read.
#[derive(Debug)]
pub enum BlobError {
    Missing,
    /// Its content did not match its digest; it has been removed.
    Corrupt,
    Io(io::Error),
}

impl std::fmt::Display for BlobError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BlobError::Missing => f.write_str("the blob is missing"),
            BlobError::Corrupt => {
                f.write_str("the blob's content does not match its digest; it was removed")
            }
            BlobError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// Holds the lock of one action key; released when dropped.
pub struct KeyLock {
    _file: File,
}

/// Held while an executor uses the store (shared) or while `gc`/`clean` run (exclusive).
pub struct StoreUse {
    _file: File,
}

/// Counts and sizes of what a store holds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct StoreStats {
    pub blobs: u64,
    pub blob_bytes: u64,
    pub actions: u64,
    pub action_bytes: u64,
}

impl StoreStats {
    pub fn total_bytes(&self) -> u64 {
        self.blob_bytes + self.action_bytes
    }
}

/// What `gc` did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct GcReport {
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub removed_blobs: u64,
    pub removed_actions: u64,
}

fn fan_out(digest: &Sha256Digest) -> (String, String) {
    let hex = digest.to_hex();
    (hex[..2].to_owned(), hex[2..].to_owned())
}

/// The fan-out directory and name of a blob's or record's `fan/name`.
fn split_fan(relative: &str) -> (&str, &str) {
    relative.split_once('/').unwrap_or(("", relative))
}

impl Store {
    /// Opens (creating it when missing) the store at `path`.
    pub fn open(path: &Path) -> io::Result<Store> {
        std::fs::create_dir_all(path).map_err(|e| {
            with_context(
                e,
                format_args!("cannot create the store `{}`", path.display()),
            )
        })?;
        let root = open_root(path)?;
        let directory = |name: &str| -> io::Result<OwnedFd> {
            open_directory_at(root.as_fd(), name, true)?
                .ok_or_else(|| io::Error::other(format!("cannot create `{name}` in the store")))
        };
        Ok(Store {
            blobs: directory(BLOBS)?,
            actions: directory(ACTIONS)?,
            locks: directory(LOCKS)?,
            temporaries: directory(TEMPORARIES)?,
            derived: directory(DERIVED)?,
            root,
            path: path.to_path_buf(),
            warnings: std::sync::Mutex::default(),
        })
    }

    /// The store of a workspace: `<root>/.once/cache`.
    pub fn default_path(workspace_root: &Path) -> PathBuf {
        workspace_root.join(DEFAULT_STORE_DIR)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The directory of the derived files (`derived/`), for tests and inspection.
    pub fn derived_path(&self) -> PathBuf {
        self.path.join(DERIVED)
    }

    /// Keeps a warning for the front end (a damaged file met and removed).
    pub fn warn(&self, warning: String) {
        let mut warnings = self.warnings.lock().unwrap_or_else(|e| e.into_inner());
        if !warnings.contains(&warning) {
            warnings.push(warning);
        }
    }

    /// The warnings kept since the last call.
    pub fn take_warnings(&self) -> Vec<String> {
        std::mem::take(&mut *self.warnings.lock().unwrap_or_else(|e| e.into_inner()))
    }

    fn lock_store(&self, operation: FlockOperation) -> io::Result<File> {
        let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let fd = openat(&self.root, STORE_LOCK, flags, Mode::from_raw_mode(0o666))?;
        flock(&fd, operation)?;
        Ok(File::from(fd))
    }

    /// Marks the store as in use until the answer is dropped. When no other process uses
    /// it, leftovers of writers that died (temporary files) are removed first.
    pub fn start_use(&self) -> io::Result<StoreUse> {
        match self.lock_store(FlockOperation::NonBlockingLockExclusive) {
            Ok(file) => {
                self.remove_temporaries();
                flock(&file, FlockOperation::LockShared)?;
                Ok(StoreUse { _file: file })
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => Ok(StoreUse {
                _file: self.lock_store(FlockOperation::LockShared)?,
            }),
            Err(e) => Err(e),
        }
    }

    /// Removes temporary files (in `tmp/` and those of derived files); only while
    /// nobody else uses the store.
    fn remove_temporaries(&self) {
        for directory in [&self.temporaries, &self.derived] {
            if let Ok(names) = handles::entry_names(directory) {
                for name in names {
                    if name.starts_with(TEMPORARY_PREFIX) {
                        let _ = unlinkat(directory, name.as_str(), AtFlags::empty());
                    }
                }
            }
        }
    }

    /// A new temporary file in the store (for a stream being captured).
    pub fn temporary_file(&self) -> io::Result<(String, File)> {
        create_temporary(&self.temporaries)
    }

    /// Opens the temporary file `name` again, for reading.
    pub fn reopen_temporary(&self, name: &str) -> io::Result<File> {
        handles::open_file(&self.temporaries, name)?
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "the temporary file is gone"))
    }

    /// Removes a temporary file made by [`Store::temporary_file`].
    pub fn remove_temporary(&self, name: &str) {
        let _ = unlinkat(&self.temporaries, name, AtFlags::empty());
    }

    /// Whether the blob `digest` is stored (a regular file at its name; anything else
    /// there, a link or a directory, is removed: the blob is then stored again).
    pub fn has_blob(&self, digest: &Sha256Digest) -> bool {
        let (directory, name) = fan_out(digest);
        let relative = format!("{directory}/{name}");
        match statat(&self.blobs, relative.as_str(), AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) if handles::file_type(&stat) == FileType::RegularFile => true,
            Ok(_) => {
                let _ = self.remove_blob_entry(&relative);
                false
            }
            Err(_) => false,
        }
    }

    /// Removes whatever is at the blob name `relative` (`fan/name`), a directory too.
    fn remove_blob_entry(&self, relative: &str) -> io::Result<()> {
        let (fan, name) = split_fan(relative);
        match handles::open_directory(&self.blobs, fan)? {
            Some(directory) => handles::remove_entry(&directory, name),
            None => Ok(()),
        }
    }

    /// Opens the blob `relative` (`fan/name`): [`BlobError::Missing`] when nothing is
    /// there; something other than a regular file there (a link, a directory, a pipe) is
    /// removed and [`BlobError::Corrupt`].
    fn open_blob(&self, relative: &str) -> Result<(File, Stat), BlobError> {
        let opened = match handles::open_file(&self.blobs, relative) {
            Ok(Some(file)) => fstat(&file)
                .map(|stat| (file, stat))
                .map_err(|e| BlobError::Io(e.into()))?,
            Ok(None) => return Err(BlobError::Missing),
            // A symbolic link at the name.
            Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                let _ = self.remove_blob_entry(relative);
                return Err(BlobError::Corrupt);
            }
            Err(e) => return Err(BlobError::Io(e)),
        };
        if handles::file_type(&opened.1) != FileType::RegularFile {
            let _ = self.remove_blob_entry(relative);
            return Err(BlobError::Corrupt);
        }
        Ok(opened)
    }

    /// Moves the temporary file `temporary` (already hashed to `digest`) into the blobs.
    pub fn adopt_temporary(
        &self,
        temporary: &str,
        file: &File,
        digest: &Sha256Digest,
    ) -> io::Result<()> {
        if self.has_blob(digest) {
            self.remove_temporary(temporary);
            return Ok(());
        }
        let (directory, name) = fan_out(digest);
        let fan = handles::make_directory(&self.blobs, &directory)?;
        let moved = (|| {
            seal(file)?;
            renameat(&self.temporaries, temporary, &fan, name.as_str())?;
            Ok(())
        })();
        if moved.is_err() {
            self.remove_temporary(temporary);
        }
        moved
    }

    /// Copies `source` (from its current position) into the store, hashing it on the way;
    /// answers its digest and size.
    pub fn put_blob_from(&self, source: &mut impl io::Read) -> io::Result<(Sha256Digest, u64)> {
        let (temporary, mut file) = self.temporary_file()?;
        let copied = crate::outputs::hash_stream(source, |chunk| file.write_all(chunk));
        match copied {
            Ok((digest, size)) => {
                self.adopt_temporary(&temporary, &file, &digest)?;
                Ok((digest, size))
            }
            Err(e) => {
                self.remove_temporary(&temporary);
                Err(e)
            }
        }
    }

    /// Makes the file `name` in `directory` (open as `file`, an output an action just
    /// wrote, with no other link) a blob itself instead of copying it: seals it, hashes
    /// it, checks that nothing wrote to it meanwhile and links it into the blobs. Answers
    /// its digest and size, and whether the output now is a link of a sound blob (when
    /// the blob already existed, the output is replaced by a link to it). `None` when this
    /// cannot be done (another file system, a write during the hash): the caller copies.
    pub fn adopt_output(
        &self,
        directory: &OwnedFd,
        name: &str,
        file: &mut File,
    ) -> io::Result<Option<(Sha256Digest, u64, bool)>> {
        seal(file)?;
        file.seek(SeekFrom::Start(0))?;
        let (digest, size) = crate::outputs::hash_stream(file, |_| Ok(()))?;
        if !is_sealed(&fstat(&*file)?, size) {
            return Ok(None);
        }
        if self.has_blob(&digest) {
            let linked = self
                .link_blob(&digest, size, directory, name)
                .unwrap_or(false);
            return Ok(Some((digest, size, linked)));
        }
        let (fan_name, blob_name) = fan_out(&digest);
        let fan = handles::make_directory(&self.blobs, &fan_name)?;
        match linkat(directory, name, &fan, blob_name.as_str(), AtFlags::empty()) {
            Ok(()) => Ok(Some((digest, size, true))),
            // Stored by another process meanwhile: link that one.
            Err(Errno::EXIST) => {
                let linked = self
                    .link_blob(&digest, size, directory, name)
                    .unwrap_or(false);
                Ok(Some((digest, size, linked)))
            }
            Err(Errno::XDEV) | Err(Errno::PERM) | Err(Errno::MLINK) | Err(Errno::OPNOTSUPP) => {
                Ok(None)
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Stores `bytes`, already hashed to `digest`; writes nothing when the blob is there.
    pub fn put_hashed_blob(&self, bytes: &[u8], digest: &Sha256Digest) -> io::Result<()> {
        if self.has_blob(digest) {
            return Ok(());
        }
        let (temporary, mut file) = self.temporary_file()?;
        if let Err(e) = file.write_all(bytes) {
            self.remove_temporary(&temporary);
            return Err(e);
        }
        self.adopt_temporary(&temporary, &file, digest)
    }

    pub fn put_blob(&self, mut bytes: &[u8]) -> io::Result<Sha256Digest> {
        Ok(self.put_blob_from(&mut bytes)?.0)
    }

    /// Links the blob `digest` (of `size` bytes) to `name` in `directory`, replacing what
    /// is there unless it is a directory (the caller removes those). The blob is checked
    /// first on its open handle (sealed: size, modification time, mode), else hashed again
    /// ([`BlobError::Corrupt`] when it does not match: removed). Answers `false`, leaving
    /// `name` alone, when the link cannot be made (another file system, too many links, a
    /// file system without links): the caller copies instead.
    pub fn link_blob(
        &self,
        digest: &Sha256Digest,
        size: u64,
        directory: &OwnedFd,
        name: &str,
    ) -> Result<bool, BlobError> {
        let (fan, blob_name) = fan_out(digest);
        let relative = format!("{fan}/{blob_name}");
        let (mut file, stat) = self.open_blob(&relative)?;
        if !is_sealed(&stat, size) {
            self.verify_blob(&mut file, &relative, digest)?;
        }
        let temporary = format!(
            "{TEMPORARY_PREFIX}{}-link-{}",
            std::process::id(),
            LINK_COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        );
        if linkat(
            &self.blobs,
            relative.as_str(),
            directory,
            temporary.as_str(),
            AtFlags::empty(),
        )
        .is_err()
        {
            return Ok(false);
        }
        // The name linked must still be the inode checked (a writer replacing the blob
        // with equal bytes in between is fine, anything else is refused).
        let linked = statat(directory, temporary.as_str(), AtFlags::SYMLINK_NOFOLLOW);
        let same = linked.is_ok_and(|linked| {
            linked.st_dev == stat.st_dev && linked.st_ino == stat.st_ino && is_sealed(&linked, size)
        });
        if !same || renameat(directory, temporary.as_str(), directory, name).is_err() {
            let _ = unlinkat(directory, temporary.as_str(), AtFlags::empty());
            return Ok(false);
        }
        Ok(true)
    }

    /// Whether the file whose status is `output` is a hard link to the blob `digest` (of
    /// `size` bytes) and that blob is sound: sealed, or hashed again and matching. A blob
    /// linked but unsound is removed ([`BlobError::Corrupt`]); `Ok(false)` when the file
    /// is not a link to the blob (or the blob is gone).
    pub fn is_linked(
        &self,
        digest: &Sha256Digest,
        size: u64,
        output: &Stat,
    ) -> Result<bool, BlobError> {
        let (fan, blob_name) = fan_out(digest);
        let relative = format!("{fan}/{blob_name}");
        let Ok(stat) = statat(&self.blobs, relative.as_str(), AtFlags::SYMLINK_NOFOLLOW) else {
            return Ok(false);
        };
        if stat.st_dev != output.st_dev || stat.st_ino != output.st_ino {
            return Ok(false);
        }
        if is_sealed(&stat, size) {
            return Ok(true);
        }
        let (mut file, stat) = match self.open_blob(&relative) {
            Ok(opened) => opened,
            Err(BlobError::Missing) => return Ok(false),
            Err(e) => return Err(e),
        };
        if stat.st_ino != output.st_ino {
            return Ok(false);
        }
        if !is_sealed(&stat, size) {
            self.verify_blob(&mut file, &relative, digest)?;
        }
        Ok(true)
    }

    /// Whether the file whose status is `output` is a hard link to the blob `digest` (of
    /// `size` bytes) and that blob is sealed, so that its bytes are the blob's: nothing
    /// wrote to the inode since the store hashed and sealed it. Metadata only: a blob
    /// that is not sealed answers `false` (and is left for [`Store::is_linked`] to hash).
    pub fn is_sealed_link(&self, digest: &Sha256Digest, size: u64, output: &Stat) -> bool {
        let (fan, blob_name) = fan_out(digest);
        statat(
            &self.blobs,
            format!("{fan}/{blob_name}"),
            AtFlags::SYMLINK_NOFOLLOW,
        )
        .is_ok_and(|stat| {
            stat.st_dev == output.st_dev && stat.st_ino == output.st_ino && is_sealed(&stat, size)
        })
    }

    /// Hashes the open blob `relative` again: a mismatch removes it
    /// ([`BlobError::Corrupt`]); a match seals it again (when nothing wrote to it while it
    /// was read, and the store may change its mode).
    fn verify_blob(
        &self,
        file: &mut File,
        relative: &str,
        digest: &Sha256Digest,
    ) -> Result<(), BlobError> {
        let before = fstat(&*file).map_err(|e| BlobError::Io(e.into()))?;
        file.seek(SeekFrom::Start(0)).map_err(BlobError::Io)?;
        let (actual, _) = crate::outputs::hash_stream(file, |_| Ok(())).map_err(BlobError::Io)?;
        if actual != *digest {
            let _ = unlinkat(&self.blobs, relative, AtFlags::empty());
            return Err(BlobError::Corrupt);
        }
        let after = fstat(&*file).map_err(|e| BlobError::Io(e.into()))?;
        if (after.st_mtime, after.st_mtime_nsec, after.st_size)
            == (before.st_mtime, before.st_mtime_nsec, before.st_size)
        {
            let _ = seal(&*file);
        }
        Ok(())
    }

    /// Copies the blob `digest` into `destination`, checking it on the way. A blob that
    /// does not match is removed ([`BlobError::Corrupt`]); `destination` then holds
    /// garbage and must be discarded.
    pub fn copy_blob_to(
        &self,
        digest: &Sha256Digest,
        destination: &mut impl io::Write,
    ) -> Result<u64, BlobError> {
        let (directory, name) = fan_out(digest);
        let relative = format!("{directory}/{name}");
        let (mut file, _) = self.open_blob(&relative)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; COPY_CHUNK];
        let mut size = 0u64;
        loop {
            let read = match file.read(&mut buffer) {
                Ok(0) => break,
                Ok(read) => read,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(BlobError::Io(e)),
            };
            hasher.update(&buffer[..read]);
            destination
                .write_all(&buffer[..read])
                .map_err(BlobError::Io)?;
            size += read as u64;
        }
        if Sha256Digest(hasher.finalize().into()) != *digest {
            let _ = unlinkat(&self.blobs, relative.as_str(), AtFlags::empty());
            return Err(BlobError::Corrupt);
        }
        Ok(size)
    }

    /// Opens the blob `digest` of `size` bytes for reading it whole (an upload to a remote
    /// cache): a sealed blob is trusted by its seal, another one is hashed first
    /// ([`BlobError::Corrupt`] when it does not match: removed). The file is at its start.
    pub fn open_blob_checked(&self, digest: &Sha256Digest, size: u64) -> Result<File, BlobError> {
        let (directory, name) = fan_out(digest);
        let relative = format!("{directory}/{name}");
        let (mut file, stat) = self.open_blob(&relative)?;
        if !is_sealed(&stat, size) {
            self.verify_blob(&mut file, &relative, digest)?;
        }
        file.seek(SeekFrom::Start(0)).map_err(BlobError::Io)?;
        Ok(file)
    }

    /// The checked content of the blob `digest`.
    pub fn read_blob(&self, digest: &Sha256Digest) -> Result<Vec<u8>, BlobError> {
        let mut bytes = Vec::new();
        self.copy_blob_to(digest, &mut bytes)?;
        Ok(bytes)
    }

    /// Takes the lock of `key` (of its stripe: [`lock_stripe`]), waiting while another
    /// thread or process holds it; gives up
    /// (answering `None`) once `give_up` says so, checked every 20 ms.
    pub fn lock_key(
        &self,
        key: &Sha256Digest,
        give_up: impl Fn() -> bool,
    ) -> io::Result<Option<KeyLock>> {
        Ok(
            handles::lock_exclusive(&self.locks, &lock_stripe(&key.0), give_up)?
                .map(|file| KeyLock { _file: file }),
        )
    }

    /// Every entry of a fanned-out directory: (fan/name, size, time): the change time
    /// for blobs (their modification time is the seal; the change time moves when a blob
    /// is written or linked), the modification time for records (a hit touches it).
    fn listing(directory: &OwnedFd) -> io::Result<Vec<(String, u64, SystemTime)>> {
        let mut entries = Vec::new();
        for fan in handles::entry_names(directory)? {
            let Some(fan_fd) = handles::open_directory(directory, &fan)? else {
                continue;
            };
            for name in handles::entry_names(&fan_fd)? {
                if let Some(stat) = handles::stat_entry(&fan_fd, &name)?
                    && handles::file_type(&stat) == FileType::RegularFile
                {
                    let (seconds, nanoseconds) = if stat.st_mtime == SEAL_SECONDS {
                        (stat.st_ctime, stat.st_ctime_nsec)
                    } else {
                        (stat.st_mtime, stat.st_mtime_nsec)
                    };
                    let modified = SystemTime::UNIX_EPOCH
                        + Duration::new(
                            seconds.max(0) as u64,
                            nanoseconds.clamp(0, 999_999_999) as u32,
                        );
                    entries.push((
                        format!("{fan}/{name}"),
                        stat.st_size.max(0) as u64,
                        modified,
                    ));
                }
            }
        }
        Ok(entries)
    }

    pub fn stats(&self) -> io::Result<StoreStats> {
        let blobs = Store::listing(&self.blobs)?;
        let actions = Store::listing(&self.actions)?;
        Ok(StoreStats {
            blobs: blobs.len() as u64,
            blob_bytes: blobs.iter().map(|entry| entry.1).sum(),
            actions: actions.len() as u64,
            action_bytes: actions.iter().map(|entry| entry.1).sum(),
        })
    }

    /// Removes everything the store holds, waiting until no executor uses it.
    pub fn clean(&self) -> io::Result<StoreStats> {
        let _exclusive = self.lock_store(FlockOperation::LockExclusive)?;
        let before = self.stats()?;
        for directory in [
            &self.blobs,
            &self.actions,
            &self.locks,
            &self.temporaries,
            &self.derived,
        ] {
            for name in handles::entry_names(directory)? {
                handles::remove_entry(directory, &name)?;
            }
        }
        Ok(before)
    }

    /// Removes every derived file: each is worked out again when it is missing, and after
    /// `clean` or `gc` nothing is left that only a workspace gone since would have used
    /// (after them, only record files make hits).
    fn remove_derived(&self) -> io::Result<()> {
        for name in handles::entry_names(&self.derived)? {
            handles::remove_entry(&self.derived, &name)?;
        }
        Ok(())
    }

    /// Shrinks the store to at most `max_bytes` (blobs and records), waiting until no
    /// executor uses it. Blobs no record refers to go first (oldest first), then records
    /// from the least recently used, each taking the blobs only it referred to. Lock files,
    /// temporary files and the derived files are removed too.
    pub fn gc(&self, max_bytes: u64) -> io::Result<GcReport> {
        let _exclusive = self.lock_store(FlockOperation::LockExclusive)?;
        self.remove_temporaries();
        self.remove_derived()?;
        for name in handles::entry_names(&self.locks)? {
            let _ = unlinkat(&self.locks, name.as_str(), AtFlags::empty());
        }
        let mut blobs = Store::listing(&self.blobs)?;
        let mut actions = Store::listing(&self.actions)?;
        let bytes_before: u64 =
            blobs.iter().map(|b| b.1).sum::<u64>() + actions.iter().map(|a| a.1).sum::<u64>();
        let mut total = bytes_before;
        let mut report = GcReport {
            bytes_before,
            ..GcReport::default()
        };
        // References of each blob, from every readable record; unreadable records go.
        let mut references: std::collections::HashMap<String, u32> =
            std::collections::HashMap::new();
        let mut records = Vec::new();
        for (name, size, modified) in actions.drain(..) {
            let key = Sha256Digest::from_hex(&name.replace('/', ""));
            let record = handles::read_file(&self.actions, &name)
                .ok()
                .flatten()
                .zip(key)
                .and_then(|(bytes, key)| ActionRecord::decode(&key, &bytes).ok());
            match record {
                Some(record) => {
                    let referenced: std::collections::BTreeSet<String> = record
                        .blobs()
                        .map(|digest| fan_out(&digest))
                        .map(|(a, b)| format!("{a}/{b}"))
                        .collect();
                    for blob in &referenced {
                        *references.entry(blob.clone()).or_default() += 1;
                    }
                    records.push((name, size, modified, referenced));
                }
                None => {
                    let _ = unlinkat(&self.actions, name.as_str(), AtFlags::empty());
                    total -= size;
                    report.removed_actions += 1;
                }
            }
        }
        let blob_sizes: std::collections::HashMap<String, u64> = blobs
            .iter()
            .map(|(name, size, _)| (name.clone(), *size))
            .collect();
        blobs.sort_by_key(|blob| blob.2);
        for (name, size, _) in &blobs {
            if total <= max_bytes {
                break;
            }
            if !references.contains_key(name) {
                let _ = unlinkat(&self.blobs, name.as_str(), AtFlags::empty());
                total -= size;
                report.removed_blobs += 1;
            }
        }
        records.sort_by_key(|record| record.2);
        for (name, size, _, referenced) in records {
            if total <= max_bytes {
                break;
            }
            let _ = unlinkat(&self.actions, name.as_str(), AtFlags::empty());
            total -= size;
            report.removed_actions += 1;
            for blob in referenced {
                let Some(count) = references.get_mut(&blob) else {
                    continue;
                };
                *count -= 1;
                if *count == 0
                    && let Some(size) = blob_sizes.get(&blob)
                {
                    references.remove(&blob);
                    let _ = unlinkat(&self.blobs, blob.as_str(), AtFlags::empty());
                    total -= size;
                    report.removed_blobs += 1;
                }
            }
        }
        report.bytes_after = total;
        Ok(report)
    }
}

/// How precisely `gc` knows when a record was last used: a hit touches a record only when
/// its last use is at least this long ago ([`Store::touch_record_if_stale`]).
pub const TOUCH_GRANULARITY: Duration = Duration::from_secs(60 * 60);

/// Whether a use at `used` is less than [`TOUCH_GRANULARITY`] before `now` (not marked
/// again).
fn used_recently(used: SystemTime, now: SystemTime) -> bool {
    now.duration_since(used)
        .is_ok_and(|age| age < TOUCH_GRANULARITY)
}

/// Access and modification times "now", for `utimensat`.
fn timestamps_now() -> Timestamps {
    let now = Timespec {
        tv_sec: 0,
        tv_nsec: rustix::fs::UTIME_NOW,
    };
    Timestamps {
        last_access: now,
        last_modification: now,
    }
}

fn modification_time(stat: &Stat) -> SystemTime {
    let since_epoch = Duration::new(
        stat.st_mtime.max(0) as u64,
        stat.st_mtime_nsec.clamp(0, 999_999_999) as u32,
    );
    SystemTime::UNIX_EPOCH + since_epoch
}

/// Makes a blob read-only and sets its modification time to [`SEAL_SECONDS`].
fn seal(file: &File) -> io::Result<()> {
    fchmod(file, Mode::from_raw_mode(BLOB_MODE))?;
    futimens(
        file,
        &Timestamps {
            last_access: Timespec {
                tv_sec: 0,
                tv_nsec: rustix::fs::UTIME_OMIT,
            },
            last_modification: Timespec {
                tv_sec: SEAL_SECONDS,
                tv_nsec: 0,
            },
        },
    )?;
    Ok(())
}

/// Whether a blob's status shows that nothing wrote to it since the store sealed it.
fn is_sealed(stat: &Stat, size: u64) -> bool {
    FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile
        && stat.st_mode & 0o7777 == BLOB_MODE
        && stat.st_size >= 0
        && stat.st_size as u64 == size
        && stat.st_mtime == SEAL_SECONDS
        && stat.st_mtime_nsec == 0
}

/// Reads the tail of `file` (at most `limit` bytes) and its size, from the start.
pub fn stream_tail(file: &mut File, limit: usize) -> io::Result<(Vec<u8>, u64)> {
    let size = file.seek(SeekFrom::End(0))?;
    let start = size.saturating_sub(limit as u64);
    file.seek(SeekFrom::Start(start))?;
    let mut tail = Vec::new();
    file.take(limit as u64).read_to_end(&mut tail)?;
    file.seek(SeekFrom::Start(0))?;
    Ok((tail, size))
}

/// Parses a size such as `500M`, `2G`, `1GiB`, `1048576` (binary units).
pub fn parse_size(text: &str) -> Option<u64> {
    once_model::remote::parse_size(text)
}

/// How many lock files a kind of lock is spread over.
pub const LOCK_STRIPES: u16 = 4096;

/// The name of the lock file guarding `digest`: its first 12 bits in hex (`000`–`fff`).
///
/// Locks are striped instead of one file per key or output set: creating a file is by
/// far the most expensive step of executing a small action on some file systems (ext4
/// allocating an inode after many deletions), and one file per key would also grow the
/// directory without bound. Two different keys on one stripe only wait for each other;
/// with 4,096 stripes and `j` actions in flight that happens to a new action with a
/// probability of about `j / 4096`. Deadlock is impossible: an executor takes at most
/// one output lock and then at most one key lock, always in that order.
pub fn lock_stripe(digest: &[u8; 32]) -> String {
    let stripe = (u16::from(digest[0]) << 4) | u16::from(digest[1] >> 4);
    debug_assert!(stripe < LOCK_STRIPES);
    format!("{stripe:03x}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blobs_are_checked_on_read_and_a_corrupt_one_is_removed() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let digest = store.put_blob(b"hello").unwrap();
        assert_eq!(digest, Sha256Digest::of(b"hello"));
        assert_eq!(store.read_blob(&digest).unwrap(), b"hello");
        assert_eq!(
            store.put_blob(b"hello").unwrap(),
            digest,
            "a second put is a no-op"
        );
        let (fan, name) = fan_out(&digest);
        let path = directory.path().join(BLOBS).join(fan).join(name);
        let mode = std::fs::metadata(&path).unwrap().permissions();
        assert!(mode.readonly(), "blobs are read-only");
        let mut permissions = mode;
        #[allow(
            clippy::permissions_set_readonly_false,
            reason = "the test corrupts a blob"
        )]
        permissions.set_readonly(false);
        std::fs::set_permissions(&path, permissions).unwrap();
        std::fs::write(&path, b"hellO").unwrap();
        assert!(matches!(store.read_blob(&digest), Err(BlobError::Corrupt)));
        assert!(!path.exists(), "the corrupt blob is gone");
        assert!(matches!(store.read_blob(&digest), Err(BlobError::Missing)));
    }

    #[test]
    fn gc_evicts_orphans_first_then_least_recently_used_records() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let orphan = store.put_blob(&[1u8; 1000]).unwrap();
        let record = |content: &[u8]| {
            let digest = store.put_blob(content).unwrap();
            let empty = store.put_blob(b"").unwrap();
            let stream = crate::record::StreamDigest {
                digest: empty,
                size: 0,
            };
            ActionRecord {
                exit_code: 0,
                duration: Duration::ZERO,
                stdout: stream,
                stderr: stream,
                outputs: vec![crate::record::OutputEntry {
                    path: ".once/out/A/x".to_owned(),
                    kind: crate::record::OutputKind::File {
                        mode: 0o644,
                        size: content.len() as u64,
                        digest,
                    },
                }],
            }
        };
        let old_key = Sha256Digest::of(b"old");
        let new_key = Sha256Digest::of(b"new");
        store.write_record(&old_key, &record(&[2u8; 1000])).unwrap();
        store.write_record(&new_key, &record(&[3u8; 1000])).unwrap();
        // Make the old record older than the new one.
        let (fan, name) = fan_out(&old_key);
        let old_path = directory.path().join(ACTIONS).join(fan).join(name);
        std::fs::File::options()
            .write(true)
            .open(&old_path)
            .unwrap()
            .set_modified(SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000))
            .unwrap();
        let before = store.stats().unwrap();
        assert_eq!(before.blobs, 4);
        assert_eq!(before.actions, 2);
        let report = store.gc(before.total_bytes() - 500).unwrap();
        assert_eq!((report.removed_blobs, report.removed_actions), (1, 0));
        assert!(!store.has_blob(&orphan));
        let report = store.gc(report.bytes_after - 500).unwrap();
        assert_eq!((report.removed_blobs, report.removed_actions), (1, 1));
        assert!(store.read_record(&old_key).is_none());
        assert!(store.read_record(&new_key).is_some());
        assert!(
            store.has_blob(&Sha256Digest::of(b"")),
            "still referenced by the new record"
        );
        let cleaned = store.clean().unwrap();
        assert_eq!(cleaned.actions, 1);
        assert_eq!(store.stats().unwrap(), StoreStats::default());
    }

    #[test]
    fn a_hit_touches_a_record_only_when_its_last_use_is_an_hour_old() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let empty = store.put_blob(b"").unwrap();
        let stream = crate::record::StreamDigest {
            digest: empty,
            size: 0,
        };
        let record = ActionRecord {
            exit_code: 0,
            duration: Duration::ZERO,
            stdout: stream,
            stderr: stream,
            outputs: Vec::new(),
        };
        let key = Sha256Digest::of(b"key");
        store.write_record(&key, &record).unwrap();
        let (fan, name) = fan_out(&key);
        let path = directory.path().join(ACTIONS).join(fan).join(name);
        let set_used = |ago: Duration| {
            std::fs::File::options()
                .write(true)
                .open(&path)
                .unwrap()
                .set_modified(SystemTime::now() - ago)
                .unwrap();
        };
        let used = || std::fs::metadata(&path).unwrap().modified().unwrap();
        for (ago, touched) in [
            (Duration::from_secs(10 * 60), false),
            (TOUCH_GRANULARITY + Duration::from_secs(60), true),
        ] {
            set_used(ago);
            let RecordRead::Found(read, last_use) = store.read_record_used(&key) else {
                panic!("the record is there");
            };
            assert_eq!(read, record);
            assert_eq!(last_use, used());
            store.touch_record_if_stale(&key, last_use);
            let age = SystemTime::now().duration_since(used()).unwrap_or_default();
            assert_eq!(age < Duration::from_secs(60), touched, "{ago:?} ago");
        }
    }

    #[test]
    fn sizes_parse_with_binary_units() {
        assert_eq!(parse_size("1048576"), Some(1 << 20));
        assert_eq!(parse_size("500M"), Some(500 << 20));
        assert_eq!(parse_size("2GiB"), Some(2 << 30));
        assert_eq!(parse_size("2 g"), Some(2 << 30));
        assert_eq!(parse_size("lots"), None);
        assert_eq!(parse_size("1X"), None);
    }
}
