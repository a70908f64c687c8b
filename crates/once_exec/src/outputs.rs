//! Build outputs in the workspace: clearing them before a run, capturing them into the
//! store after it, and restoring them from the store on a hit.
//!
//! Every operation starts from a handle of the workspace root and reaches the output's
//! directory one component at a time without following links
//! ([`once_host::confined::open_directory_at`]); files are written to a temporary file in
//! their directory and renamed into place.
//!
//! **Restore strategy: a hard link to a sealed blob, else a checked copy.** An output
//! file readable by everyone and executable by no one ([`links_with_mode`]) is a hard
//! link to its blob, made under a temporary name and renamed into place; so are such
//! files once an action that wrote them has been captured, so a dependent sees the same
//! read-only file after a hit as after a miss. Linked outputs are read-only (0444). The
//! store seals each blob (read-only, a fixed modification time in the past) and checks
//! the seal on the open blob before linking it and whenever an output linked to it is
//! taken as in place; an in-place write through the output (root ignores the missing
//! write bit), a truncation or a `chmod` breaks the seal, the blob is hashed again and,
//! if it no longer matches, removed and reported: the action runs again (its outputs are
//! removed first, never written through). Other modes (executables), and a link that
//! fails (the store on another file system, too many links), are copied from the blob
//! while hashing it into a temporary file next to the output, renamed into place only
//! when the digest matches.
//!
//! **Outputs already in place are not touched.** A file whose stamp (size, modification
//! and change times, inode, mode) matches a stamp recorded with the same digest in the
//! workspace's stamp file `.once/output-stamps` is known to hold the right bytes without
//! reading it. Otherwise a file that is a link to its sound blob (same device and inode,
//! the blob sealed) is in place without reading it, whatever its change time (linking
//! the blob elsewhere moves that), and its stamp is recorded so that the next build's
//! look needs no system call for the blob. Otherwise a file of the right size and mode
//! is hashed, and only a mismatch is restored. Stamps follow
//! git's racy rule: one whose change time is not older than the stamp file itself is not
//! trusted (the file could have changed again within the same clock tick).

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, Read as _, Seek as _};
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use once_host::confined::{create_temporary, open_directory_at, open_root};
use once_model::Sha256Digest;
use once_model::framed::{Damage, Format, Unframed};
use rustix::fs::{
    AtFlags, FileType, Mode, Stat, fchmod, fstat, readlinkat, renameat, symlinkat, unlinkat,
};
use sha2::{Digest as _, Sha256};

use crate::handles::{self, with_context};
use crate::record::{OutputEntry, OutputKind};
use crate::store::{BLOB_MODE, BlobError, Store, links_with_mode};

/// The directory of the workspace's output locks, relative to its root.
pub const LOCKS_DIR: &str = ".once/locks";

/// The stamp file, relative to the workspace root.
pub const STAMPS_FILE: &str = ".once/output-stamps";

/// The stamp file's framing ([`once_model::framed`]).
const STAMPS_FORMAT: Format = Format {
    name: "once-output-stamps",
    version: 2,
};

/// The workspace root, held open.
pub struct WorkspaceRoot {
    pub path: PathBuf,
    handle: OwnedFd,
    /// `.once/locks`, opened (and made) by the first output lock.
    locks: std::sync::OnceLock<OwnedFd>,
}

/// A file's metadata that changes whenever its content may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    size: u64,
    modified_ns: i128,
    changed_ns: i128,
    inode: u64,
    mode: u32,
}

impl Stamp {
    fn of(stat: &Stat) -> Stamp {
        Stamp {
            size: stat.st_size.max(0) as u64,
            modified_ns: i128::from(stat.st_mtime) * 1_000_000_000 + i128::from(stat.st_mtime_nsec),
            changed_ns: i128::from(stat.st_ctime) * 1_000_000_000 + i128::from(stat.st_ctime_nsec),
            inode: stat.st_ino,
            mode: stat.st_mode,
        }
    }
}

/// The workspace's output stamps (path → stamp and digest).
#[derive(Default)]
pub struct OutputStamps {
    entries: Mutex<HashMap<String, (Stamp, Sha256Digest)>>,
    /// Whether an entry was added or changed since loading (else saving is skipped).
    changed: std::sync::atomic::AtomicBool,
    /// Why the file read was not intact, when it was not (it is then rewritten).
    damage: Option<Damage>,
}

/// Why the outputs of a record could not be restored.
#[derive(Debug)]
pub enum RestoreError {
    /// A blob was missing or corrupt: the action must run again.
    Blob(Sha256Digest, BlobError),
    Io(io::Error),
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreError::Blob(digest, e) => write!(f, "blob {digest}: {e}"),
            RestoreError::Io(e) => write!(f, "{e}"),
        }
    }
}

/// A workspace path's directory (`""`: the root) and last name.
pub(crate) fn split(relative: &str) -> (&str, &str) {
    relative.rsplit_once('/').unwrap_or(("", relative))
}

impl WorkspaceRoot {
    pub fn open(path: &Path) -> io::Result<WorkspaceRoot> {
        Ok(WorkspaceRoot {
            path: path.to_path_buf(),
            handle: open_root(path)?,
            locks: std::sync::OnceLock::new(),
        })
    }

    /// The root's handle.
    pub(crate) fn handle(&self) -> std::os::fd::BorrowedFd<'_> {
        self.handle.as_fd()
    }

    /// The directory `relative`, reached from the root without following links (made
    /// with its parents when `create`); `None` when missing.
    pub(crate) fn directory(&self, relative: &str, create: bool) -> io::Result<Option<OwnedFd>> {
        open_directory_at(self.handle.as_fd(), relative, create)
    }

    /// Takes the workspace's lock of the output set `outputs` (`.once/locks/outputs-<3 hex>`,
    /// striped by the digest of the sorted paths: [`crate::store::lock_stripe`]),
    /// so two executors in one workspace never write the same outputs at once (even for
    /// different keys: two revisions of one action); `None` once `give_up` says so.
    pub fn lock_outputs(
        &self,
        outputs: &[String],
        give_up: impl Fn() -> bool,
    ) -> io::Result<Option<File>> {
        let mut sorted: Vec<&str> = outputs.iter().map(String::as_str).collect();
        sorted.sort_unstable();
        sorted.dedup();
        let mut hasher = Sha256::new();
        for output in sorted {
            hasher.update(output.as_bytes());
            hasher.update([0]);
        }
        let name = format!(
            "outputs-{}",
            crate::store::lock_stripe(&hasher.finalize().into())
        );
        let locks = match self.locks.get() {
            Some(locks) => locks,
            None => {
                let opened = self
                    .directory(LOCKS_DIR, true)?
                    .ok_or_else(|| io::Error::other(format!("cannot create `{LOCKS_DIR}`")))?;
                self.locks.get_or_init(|| opened)
            }
        };
        handles::lock_exclusive(locks, &name, give_up)
    }

    /// Removes whatever is at `relative` (a whole directory), so a run starts clean.
    pub fn remove(&self, relative: &str) -> io::Result<()> {
        let (directory, name) = split(relative);
        match self.directory(directory, false)? {
            Some(handle) => handles::remove_entry(&handle, name),
            None => Ok(()),
        }
    }

    /// Makes the directory that will hold `relative`.
    pub fn make_parent(&self, relative: &str) -> io::Result<()> {
        let (directory, _) = split(relative);
        self.directory(directory, true).map(|_| ())
    }

    /// Makes the directory `relative` and its parents.
    pub fn make_directory(&self, relative: &str) -> io::Result<()> {
        self.directory(relative, true).map(|_| ())
    }

    /// Writes `contents` to `relative` atomically with `mode`.
    pub fn write_file(&self, relative: &str, contents: &[u8], mode: u32) -> io::Result<()> {
        let (directory, name) = split(relative);
        let handle = self.directory(directory, true)?.ok_or_else(|| {
            io::Error::other(format!("cannot create the directory of `{relative}`"))
        })?;
        handles::write_atomically(&handle, name, contents, mode)
    }

    /// The content and permission bits of the regular file `relative`.
    pub fn read_file(&self, relative: &str) -> io::Result<(Vec<u8>, u32)> {
        let (directory, name) = split(relative);
        let missing = || {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{relative}` does not exist"),
            )
        };
        let handle = self.directory(directory, false)?.ok_or_else(missing)?;
        let mut file = handles::open_file(&handle, name)?.ok_or_else(missing)?;
        let stat = fstat(&file)?;
        if handles::file_type(&stat) != FileType::RegularFile {
            return Err(io::Error::other(format!(
                "`{relative}` is not a regular file"
            )));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        Ok((bytes, stat.st_mode & 0o777))
    }

    /// Makes `relative` a symbolic link to `target` (replacing what is there).
    pub fn symlink(&self, target: &str, relative: &str) -> io::Result<()> {
        let (directory, name) = split(relative);
        let handle = self.directory(directory, true)?.ok_or_else(|| {
            io::Error::other(format!("cannot create the directory of `{relative}`"))
        })?;
        handles::remove_entry(&handle, name)?;
        symlinkat(target, &handle, name)?;
        Ok(())
    }

    /// Replaces the links in the declared output `declared` that lead out of it with
    /// copies of their targets ([`crate::materialize`]); answers how many.
    pub fn materialize_external_links(&self, declared: &str) -> io::Result<usize> {
        crate::materialize::materialize_external_links(self.handle.as_fd(), &self.path, declared)
    }

    /// Captures the declared output `declared`: its entries (everything under it when it
    /// is a directory), each file copied into `store` when given (else only hashed).
    pub fn capture(
        &self,
        declared: &str,
        store: Option<&Store>,
        stamps: &OutputStamps,
    ) -> io::Result<Vec<OutputEntry>> {
        if declared.contains('\n') {
            return Err(io::Error::other(format!(
                "the output path `{declared:?}` holds a newline"
            )));
        }
        let (directory, name) = split(declared);
        let not_written = || {
            io::Error::new(
                io::ErrorKind::NotFound,
                format!("the action did not write its declared output `{declared}`"),
            )
        };
        let handle = self.directory(directory, false)?.ok_or_else(not_written)?;
        let mut entries = Vec::new();
        capture_entry(&handle, name, declared, store, stamps, &mut entries)?;
        if entries.is_empty() {
            return Err(not_written());
        }
        Ok(entries)
    }

    /// Whether every one of `entries` (a record's outputs) is already in place, decided
    /// by reading metadata only: it writes nothing, to the workspace, the store or the
    /// stamps, and reads no file's content. `false` whenever it is not sure (a missing or
    /// extra entry, a file that is neither a link to its sealed blob nor matched by a
    /// stamp recorded with its digest): [`WorkspaceRoot::restore`] under the output lock
    /// decides those.
    ///
    /// Holding no lock is sound because every check is of one atomic state: a file is a
    /// link to a sealed blob (whose bytes hash to the digest: [`Store::is_sealed_link`])
    /// or has a stamp recorded with that digest (any write moves the stamp). A concurrent
    /// executor rewriting these outputs for another key (it holds their lock) replaces
    /// or removes files, which these checks see as "not in place"; what they accept did
    /// hold the record's bytes when it was checked, which is what a hit reports, and all
    /// that a locked restore can promise too once its lock is released.
    pub fn in_place(&self, entries: &[OutputEntry], store: &Store, stamps: &OutputStamps) -> bool {
        let mut opened: Option<(&str, OwnedFd)> = None;
        // Every entry's path, made at the first directory: each child on disk is one
        // lookup (a search of the entries per child made a directory of 100,000 files
        // cost 10^10 comparisons per no-op build).
        let mut listed: Option<Listed<'_>> = None;
        for entry in entries {
            let (directory, name) = split(&entry.path);
            let handle = match &opened {
                Some((path, handle)) if *path == directory => handle,
                _ => match self.directory(directory, false) {
                    Ok(Some(handle)) => &opened.insert((directory, handle)).1,
                    _ => return false,
                },
            };
            let Ok(Some(current)) = handles::stat_entry(handle, name) else {
                return false;
            };
            let held = match &entry.kind {
                OutputKind::Directory => {
                    handles::file_type(&current) == FileType::Directory
                        && handles::open_directory(handle, name)
                            .ok()
                            .flatten()
                            .and_then(|inner| handles::entry_names(&inner).ok())
                            .is_some_and(|children| {
                                let listed = listed.get_or_insert_with(|| Listed::of(entries));
                                let mut path = format!("{}/", entry.path);
                                let parent = path.len();
                                children.iter().all(|child| {
                                    path.truncate(parent);
                                    path.push_str(child);
                                    listed.contains(&path)
                                })
                            })
                }
                OutputKind::Symlink { target } => {
                    handles::file_type(&current) == FileType::Symlink
                        && readlinkat(handle, name, Vec::new())
                            .is_ok_and(|text| text.as_bytes() == target.as_bytes())
                }
                OutputKind::File { mode, size, digest } => {
                    let linkable = links_with_mode(*mode);
                    let mode_held = current.st_mode & 0o777 == *mode
                        || (linkable && current.st_mode & 0o7777 == BLOB_MODE);
                    // The stamp first (no system call); a link to the sealed blob proves
                    // the bytes as well and is stamped, so the next look needs no blob.
                    handles::file_type(&current) == FileType::RegularFile
                        && current.st_size.max(0) as u64 == *size
                        && ((mode_held && stamps.known(&entry.path, &current, digest))
                            || (linkable && store.is_sealed_link(digest, *size, &current) && {
                                stamps.record(&entry.path, &current, digest);
                                true
                            }))
                }
            };
            if !held {
                return false;
            }
        }
        true
    }

    /// Puts `entries` (a record's outputs) in place, leaving alone what already matches.
    /// Answers how many files were written.
    pub fn restore(
        &self,
        entries: &[OutputEntry],
        store: &Store,
        stamps: &OutputStamps,
    ) -> Result<usize, RestoreError> {
        let mut written = 0;
        let listed: std::collections::HashSet<&str> =
            entries.iter().map(|entry| entry.path.as_str()).collect();
        for entry in entries {
            let (directory, name) = split(&entry.path);
            let handle = self
                .directory(directory, true)
                .map_err(RestoreError::Io)?
                .ok_or_else(|| RestoreError::Io(io::Error::other("cannot create a directory")))?;
            let current = handles::stat_entry(&handle, name).map_err(RestoreError::Io)?;
            match &entry.kind {
                OutputKind::Directory => {
                    if current.as_ref().map(handles::file_type) != Some(FileType::Directory) {
                        handles::remove_entry(&handle, name).map_err(RestoreError::Io)?;
                    }
                    // What the record does not list (left by another run) goes.
                    let inner = handles::make_directory(&handle, name).map_err(RestoreError::Io)?;
                    for child in handles::entry_names(&inner).map_err(RestoreError::Io)? {
                        let path = format!("{}/{child}", entry.path);
                        if !listed.contains(path.as_str()) {
                            handles::remove_entry(&inner, &child).map_err(RestoreError::Io)?;
                        }
                    }
                }
                OutputKind::Symlink { target } => {
                    let same = current.as_ref().map(handles::file_type) == Some(FileType::Symlink)
                        && readlinkat(&handle, name, Vec::new())
                            .is_ok_and(|text| text.as_bytes() == target.as_bytes());
                    if !same {
                        handles::remove_entry(&handle, name).map_err(RestoreError::Io)?;
                        symlinkat(target.as_str(), &handle, name)
                            .map_err(|e| RestoreError::Io(e.into()))?;
                    }
                }
                OutputKind::File { mode, size, digest } => {
                    let linkable = links_with_mode(*mode);
                    if let Some(stat) = &current
                        && handles::file_type(stat) == FileType::RegularFile
                        && stat.st_size.max(0) as u64 == *size
                    {
                        let linked_mode = linkable && stat.st_mode & 0o7777 == BLOB_MODE;
                        if linkable
                            && store
                                .is_linked(digest, *size, stat)
                                .map_err(|e| RestoreError::Blob(*digest, e))?
                        {
                            continue;
                        }
                        if (stat.st_mode & 0o777 == *mode || linked_mode)
                            && stamps.holds(&entry.path, stat, digest, &handle, name)
                        {
                            continue;
                        }
                    }
                    if current.as_ref().map(handles::file_type) == Some(FileType::Directory) {
                        handles::remove_entry(&handle, name).map_err(RestoreError::Io)?;
                    }
                    if linkable
                        && store
                            .link_blob(digest, *size, &handle, name)
                            .map_err(|e| RestoreError::Blob(*digest, e))?
                    {
                        written += 1;
                        continue;
                    }
                    let (temporary, mut file) =
                        create_temporary(&handle).map_err(RestoreError::Io)?;
                    let copied = (|| {
                        store
                            .copy_blob_to(digest, &mut file)
                            .map_err(|e| RestoreError::Blob(*digest, e))?;
                        // A linkable output is read-only even when copied.
                        let restored_mode = if linkable { BLOB_MODE } else { *mode };
                        fchmod(&file, Mode::from_raw_mode(restored_mode))
                            .map_err(|e| RestoreError::Io(e.into()))?;
                        renameat(&handle, temporary.as_str(), &handle, name)
                            .map_err(|e| RestoreError::Io(e.into()))?;
                        let stat = fstat(&file).map_err(|e| RestoreError::Io(e.into()))?;
                        stamps.record(&entry.path, &stat, digest);
                        Ok(())
                    })();
                    if copied.is_err() {
                        let _ = unlinkat(&handle, temporary.as_str(), AtFlags::empty());
                    }
                    copied?;
                    written += 1;
                }
            }
        }
        Ok(written)
    }
}

/// The paths of a record's entries, for membership tests in constant time.
struct Listed<'a>(rustc_hash::FxHashSet<EntryPath<'a>>);

impl<'a> Listed<'a> {
    fn of(entries: &'a [OutputEntry]) -> Listed<'a> {
        Listed(
            entries
                .iter()
                .map(|entry| EntryPath(entry.path.as_str()))
                .collect(),
        )
    }

    fn contains(&self, path: &str) -> bool {
        self.0.contains(&EntryPath(path))
    }
}

/// An entry's path as a set key; its comparisons are counted in tests
/// ([`tests::path_comparisons`]), which is how a test sees a lookup that is not constant
/// time without timing anything.
#[derive(Hash, Eq)]
struct EntryPath<'a>(&'a str);

impl PartialEq for EntryPath<'_> {
    fn eq(&self, other: &Self) -> bool {
        #[cfg(test)]
        tests::COMPARISONS.with(|count| count.set(count.get() + 1));
        self.0 == other.0
    }
}

fn capture_entry(
    directory: &OwnedFd,
    name: &str,
    path: &str,
    store: Option<&Store>,
    stamps: &OutputStamps,
    entries: &mut Vec<OutputEntry>,
) -> io::Result<()> {
    let Some(stat) = handles::stat_entry(directory, name)? else {
        return Ok(());
    };
    match handles::file_type(&stat) {
        FileType::RegularFile => {
            let mut file = handles::open_file(directory, name)?.ok_or_else(|| {
                io::Error::other(format!("`{path}` disappeared while it was read"))
            })?;
            let stat = fstat(&file)?;
            let mode = stat.st_mode & 0o777;
            // A file with no other link becomes its blob: no copy, no new file.
            if let Some(store) = store
                && links_with_mode(mode)
                && stat.st_nlink == 1
                && let Some((digest, size, linked)) = store
                    .adopt_output(directory, name, &mut file)
                    .map_err(|e| with_context(e, format_args!("cannot store `{path}`")))?
            {
                if !linked {
                    let stat = fstat(&file)?;
                    stamps.record(path, &stat, &digest);
                }
                entries.push(OutputEntry {
                    path: path.to_owned(),
                    kind: OutputKind::File { mode, size, digest },
                });
                return Ok(());
            }
            // Not adopted: copied from the start (the attempt may have read it).
            file.seek(io::SeekFrom::Start(0))?;
            let (digest, size) = match store {
                Some(store) => store
                    .put_blob_from(&mut file)
                    .map_err(|e| with_context(e, format_args!("cannot store `{path}`")))?,
                None => hash_file(&mut file)?,
            };
            // The file the action wrote becomes the link a hit would restore (when its
            // blob is sound and the link can be made; else it stays as written).
            let mut stat = stat;
            if let Some(store) = store
                && links_with_mode(mode)
            {
                let linked = match store.link_blob(&digest, size, directory, name) {
                    Ok(linked) => linked,
                    // The blob there was unsound (now removed): store this file instead.
                    Err(_) => {
                        file.seek(io::SeekFrom::Start(0))?;
                        store.put_blob_from(&mut file)?;
                        store
                            .link_blob(&digest, size, directory, name)
                            .unwrap_or(false)
                    }
                };
                if linked {
                    entries.push(OutputEntry {
                        path: path.to_owned(),
                        kind: OutputKind::File { mode, size, digest },
                    });
                    return Ok(());
                }
                // No link: read-only all the same, as a copy restored from the store is.
                fchmod(&file, Mode::from_raw_mode(BLOB_MODE))?;
                stat = fstat(&file)?;
            }
            stamps.record(path, &stat, &digest);
            entries.push(OutputEntry {
                path: path.to_owned(),
                kind: OutputKind::File { mode, size, digest },
            });
        }
        FileType::Directory => {
            entries.push(OutputEntry {
                path: path.to_owned(),
                kind: OutputKind::Directory,
            });
            let inner = handles::open_directory(directory, name)?.ok_or_else(|| {
                io::Error::other(format!("`{path}` disappeared while it was read"))
            })?;
            for child in handles::entry_names(&inner)? {
                if child.contains('\n') {
                    return Err(io::Error::other(format!(
                        "the output `{path}/{child:?}` holds a newline"
                    )));
                }
                capture_entry(
                    &inner,
                    &child,
                    &format!("{path}/{child}"),
                    store,
                    stamps,
                    entries,
                )?;
            }
        }
        FileType::Symlink => {
            let target = readlinkat(directory, name, Vec::new())?;
            let target = target.into_string().map_err(|_| {
                io::Error::other(format!(
                    "the link `{path}` points to a path that is not UTF-8"
                ))
            })?;
            entries.push(OutputEntry {
                path: path.to_owned(),
                kind: OutputKind::Symlink { target },
            });
        }
        _ => {
            return Err(io::Error::other(format!(
                "the output `{path}` is not a regular file, a directory or a symbolic link"
            )));
        }
    }
    Ok(())
}

/// The entries of an intact stamp file's body; `None` when a line does not parse.
fn parse_stamps(text: &str) -> Option<Vec<(String, Stamp, Sha256Digest)>> {
    text.lines()
        .map(|line| {
            let mut fields = line.splitn(7, ' ');
            let mut next = || fields.next();
            let digest = Sha256Digest::from_hex(next()?)?;
            let stamp = Stamp {
                size: next()?.parse().ok()?,
                modified_ns: next()?.parse().ok()?,
                changed_ns: next()?.parse().ok()?,
                inode: next()?.parse().ok()?,
                mode: next()?.parse().ok()?,
            };
            Some((next()?.to_owned(), stamp, digest))
        })
        .collect()
}

fn hash_file(file: &mut File) -> io::Result<(Sha256Digest, u64)> {
    hash_stream(file, |_| Ok(()))
}

/// Reads `reader` to its end, hashing every byte and handing each chunk to `each` (for a
/// copy kept on the side); returns the SHA-256 and the size.
pub(crate) fn hash_stream(
    reader: &mut impl io::Read,
    mut each: impl FnMut(&[u8]) -> io::Result<()>,
) -> io::Result<(Sha256Digest, u64)> {
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let read = match reader.read(&mut buffer) {
            Ok(0) => break,
            Ok(read) => read,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buffer[..read]);
        each(&buffer[..read])?;
        size += read as u64;
    }
    Ok((Sha256Digest(hasher.finalize().into()), size))
}

impl OutputStamps {
    /// The stamps saved in the workspace (none when the file is missing, another
    /// version's or damaged: [`OutputStamps::damage`]); entries failing the racy rule are
    /// left out.
    pub fn load(workspace: &WorkspaceRoot) -> OutputStamps {
        let mut stamps = OutputStamps::default();
        let (directory, name) = split(STAMPS_FILE);
        let Ok(Some(handle)) = workspace.directory(directory, false) else {
            return stamps;
        };
        let mut file = match handles::open_file(&handle, name) {
            Ok(Some(file)) => file,
            Ok(None) => return stamps,
            Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => {
                stamps.set_damaged(Damage::NotAFile);
                return stamps;
            }
            Err(_) => return stamps,
        };
        let Ok(own) = fstat(&file) else {
            return stamps;
        };
        if handles::file_type(&own) != FileType::RegularFile {
            stamps.set_damaged(Damage::NotAFile);
            return stamps;
        }
        let saved_ns = Stamp::of(&own).modified_ns;
        let mut bytes = Vec::new();
        if file.read_to_end(&mut bytes).is_err() {
            return stamps;
        }
        let body = match STAMPS_FORMAT.unframe(STAMPS_FILE.as_bytes(), &bytes) {
            Unframed::Intact(body) => body,
            Unframed::OtherVersion => return stamps,
            Unframed::Damaged(damage) => {
                stamps.set_damaged(damage);
                return stamps;
            }
        };
        let Some(parsed) = std::str::from_utf8(body).ok().and_then(parse_stamps) else {
            stamps.set_damaged(Damage::Unparsable);
            return stamps;
        };
        let entries = stamps.entries.get_mut().unwrap_or_else(|e| e.into_inner());
        for (path, stamp, digest) in parsed {
            if stamp.changed_ns < saved_ns && stamp.modified_ns < saved_ns {
                entries.insert(path, (stamp, digest));
            }
        }
        stamps
    }

    /// A damaged file is ignored as a whole, said ([`OutputStamps::damage`]) and
    /// rewritten by this execution's save.
    fn set_damaged(&mut self, damage: Damage) {
        self.damage = Some(damage);
        *self.changed.get_mut() = true;
    }

    /// The warning to show when the stamp file read was damaged.
    pub fn damage(&self) -> Option<String> {
        let damage = self.damage?;
        Some(format!(
            "the output stamps `{STAMPS_FILE}` were damaged ({damage}); they were ignored \
             (outputs were checked against the store instead) and are rewritten"
        ))
    }

    /// Saves the stamps when one changed (the last of concurrent savers wins; a lost
    /// entry only costs a hash). An entry whose file changed in the same timestamp tick
    /// as the new file was made or later is left out: the racy rule would ignore it on
    /// load, and a later change of the file's time (a `touch`) must not trust it.
    pub fn save(&self, workspace: &WorkspaceRoot) -> io::Result<()> {
        if !self.changed.load(std::sync::atomic::Ordering::Relaxed) {
            return Ok(());
        }
        let (directory, name) = split(STAMPS_FILE);
        let handle = workspace
            .directory(directory, true)?
            .ok_or_else(|| io::Error::other(format!("cannot create `{directory}`")))?;
        let (temporary, mut file) = create_temporary(&handle)?;
        let written = (|| {
            // The file system's clock as the file is made: entries must be older.
            let made_ns = Stamp::of(&fstat(&file)?).modified_ns;
            let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let mut sorted: Vec<_> = entries
                .iter()
                .filter(|(_, (s, _))| s.changed_ns < made_ns && s.modified_ns < made_ns)
                .collect();
            sorted.sort_by(|a, b| a.0.cmp(b.0));
            let mut text = String::new();
            for (path, (s, digest)) in sorted {
                text.push_str(&format!(
                    "{digest} {} {} {} {} {} {path}\n",
                    s.size, s.modified_ns, s.changed_ns, s.inode, s.mode
                ));
            }
            drop(entries);
            io::Write::write_all(
                &mut file,
                &STAMPS_FORMAT.frame(STAMPS_FILE.as_bytes(), text.as_bytes()),
            )?;
            fchmod(&file, Mode::from_raw_mode(0o644))?;
            renameat(&handle, temporary.as_str(), &handle, name)?;
            Ok(())
        })();
        if written.is_err() {
            let _ = unlinkat(&handle, temporary.as_str(), AtFlags::empty());
        }
        written
    }

    fn record(&self, path: &str, stat: &Stat, digest: &Sha256Digest) {
        let entry = (Stamp::of(stat), *digest);
        let previous = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(path.to_owned(), entry);
        if previous != Some(entry) {
            self.changed
                .store(true, std::sync::atomic::Ordering::Relaxed);
        }
    }

    /// Whether the stamp of `path` recorded with `digest` matches `stat` (without reading
    /// the file when it does not: [`OutputStamps::holds`] does that).
    fn known(&self, path: &str, stat: &Stat, digest: &Sha256Digest) -> bool {
        self.entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            .is_some_and(|(known, known_digest)| {
                *known == Stamp::of(stat) && known_digest == digest
            })
    }

    /// Whether the file `name` in `directory` (the output `path`, whose status is `stat`)
    /// holds `digest`: known from its stamp, else by hashing it.
    fn holds(
        &self,
        path: &str,
        stat: &Stat,
        digest: &Sha256Digest,
        directory: &OwnedFd,
        name: &str,
    ) -> bool {
        let stamp = Stamp::of(stat);
        if let Some((known, known_digest)) = self
            .entries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path)
            && *known == stamp
        {
            return known_digest == digest;
        }
        let Ok(Some(mut file)) = handles::open_file(directory, name) else {
            return false;
        };
        let Ok((actual, _)) = hash_file(&mut file) else {
            return false;
        };
        if let Ok(stat) = fstat(&file) {
            self.record(path, &stat, &actual);
        }
        actual == *digest
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// Comparisons of [`EntryPath`]s on this thread.
        pub(super) static COMPARISONS: Cell<u64> = const { Cell::new(0) };
    }

    /// How many path comparisons `run` makes.
    pub(super) fn path_comparisons(run: impl FnOnce()) -> u64 {
        COMPARISONS.with(|count| count.set(0));
        run();
        COMPARISONS.with(Cell::get)
    }

    /// The no-op check of a directory output compares each child's path a bounded
    /// number of times, whatever the number of entries: twice the files, about twice
    /// the comparisons (a search of the entries per child made it four times as many).
    #[test]
    fn the_in_place_check_of_a_directory_is_linear_in_its_entries() {
        let workspace = tempfile::tempdir().unwrap();
        let store_directory = tempfile::tempdir().unwrap();
        let store = Store::open(store_directory.path()).unwrap();
        let root = WorkspaceRoot::open(workspace.path()).unwrap();
        let mut counts = Vec::new();
        for files in [500usize, 1000] {
            let declared = format!(".once/out/p/T{files}/out/d");
            let directory = workspace.path().join(&declared);
            std::fs::create_dir_all(&directory).unwrap();
            for index in 0..files {
                std::fs::write(directory.join(format!("f{index}")), format!("{index}\n")).unwrap();
            }
            let stamps = OutputStamps::default();
            let entries = root.capture(&declared, Some(&store), &stamps).unwrap();
            assert_eq!(entries.len(), files + 1);
            let mut held = false;
            let comparisons = path_comparisons(|| {
                held = root.in_place(&entries, &store, &stamps);
            });
            assert!(held, "the captured outputs are in place");
            // At least one per child (a lookup that compares no `EntryPath` is not the
            // one counted), at most two.
            assert!(
                (files as u64..=2 * files as u64).contains(&comparisons),
                "{comparisons} comparisons for {files} files"
            );
            counts.push(comparisons);
        }
        assert!(counts[1] <= 3 * counts[0], "{counts:?}");
    }
}
