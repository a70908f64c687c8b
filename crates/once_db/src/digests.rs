//! Content digests of workspace files: the [`file_digest`] query and the persistent
//! [`DigestIndex`] that lets a new process skip hashing files whose stamp is unchanged.
//!
//! The index lives in `.once/digests`, framed ([`crate::framed`]: a version line, the
//! entries, a checksum line): one line per file (`digest kind size mtime ctime inode mode
//! path`, numbers in decimal). A file of another version is ignored as a whole and
//! replaced by the next save; a damaged one (a byte changed, truncated, not a regular
//! file) is ignored as a whole too, reported ([`DigestIndex::damage`]) and rewritten by
//! the same process. Saving writes a temporary file and renames it over the index, so
//! readers see the old or the new index, never a mix; two processes saving at once each
//! rename a complete index and the last rename wins (the loser's new entries are only
//! lost work, re-hashed by a later process).
//!
//! **The racy rules.** A write within the timestamp tick of a file's last change does not
//! change its stamp, so a digest read in that tick may not be the digest of what the
//! stamp describes a moment later. Two rules keep such digests out of later processes:
//! a digest is kept for the index only when the file's modification and change times are
//! more than [`SETTLED_NS`] (two seconds, coarser than any file system's tick) older than
//! the moment it was read (however long after that the index is written); and (git's
//! rule) an entry is trusted only when the file's modification time is strictly older
//! than the index file's own. A save leaves entries the second rule would ignore out (it
//! writes the index again without them when the new file's time shows one), so no later
//! change of the index file's time (a `touch`, a copy) can make a racy entry trusted.
//! Entries hashed by this process are never reused by it (salsa memoises digests until
//! the file's revision changes, and a change within one tick must not be missed).
//!
//! **What a matching stamp proves.** Size, modification and change times, inode and mode
//! all equal: the file was not written since it was hashed, unless its change time was
//! forged, which takes setting the system clock back (no program can set a change time
//! otherwise). The checksum adds that the entry is the one this index wrote: an old
//! digest written over an entry by hand is damage, not a hit.
//!
//! A symbolic link has no entry of its own: its digest is its target's ([`source_file`]).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use rustc_hash::FxHashMap;

pub use once_model::digest::Sha256Digest;

use crate::Db;
use crate::files::File;
use crate::framed::{Damage, Format, Unframed};
use crate::links::LinkTarget;
use crate::system::{EntryKind, FileStamp, System};

/// Where the index lives, relative to the workspace root.
pub const DIGEST_INDEX_PATH: &str = ".once/digests";

/// The index's framing: its header line and this version.
const INDEX_FORMAT: Format = Format {
    name: "once-digest-index",
    version: 2,
};

/// Why a file has no digest.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum DigestError {
    /// Nothing is at the path.
    Missing,
    /// The path names a directory or another non-regular file.
    NotAFile,
    /// The file exists but could not be read.
    Unreadable(String),
    /// The path is a symbolic link once does not follow (see [`crate::links`]).
    Link(LinkTarget),
}

impl std::fmt::Display for DigestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DigestError::Missing => f.write_str("no such file"),
            DigestError::NotAFile => f.write_str("not a regular file"),
            DigestError::Unreadable(message) => write!(f, "unreadable: {message}"),
            DigestError::Link(target) => match target.refusal() {
                Some(why) => write!(f, "a symbolic link {why}"),
                None => f.write_str("a symbolic link"),
            },
        }
    }
}

/// A file's digest, or why it has none.
pub type FileDigest = Result<Sha256Digest, DigestError>;

/// What a source file shows an action that reads it: its content's digest and its
/// permission bits, with the stamp of the file they were read from (a link's are its
/// target's).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SourceFile {
    pub digest: Sha256Digest,
    /// The permission bits (`mode & 0o7777`): an action can see them (`test -x`, a copy
    /// keeps them), so they are keyed.
    pub permissions: u32,
    pub stamp: FileStamp,
}

/// The SHA-256 of a file's bytes, re-run only when the file's revision changes (and
/// backdated when only its stamp did).
#[salsa::tracked(returns(ref))]
pub fn file_digest(db: &dyn Db, file: File) -> FileDigest {
    match source_file(db, file) {
        Ok(source) => Ok(source.digest),
        Err(error) => Err(error.clone()),
    }
}

/// Set in [`SourceFile::permissions`] of a source reached through a symbolic link (above
/// every permission bit).
pub const LINKED: u32 = 0o100_000;

/// The digest and permission bits of a file ([`SourceFile`]), or why it has none; re-run
/// only when the file's revision changes. Reuses the persistent index's digest when the
/// file's stamp matches a trusted entry. A symbolic link the workspace follows
/// ([`crate::links`]) answers its target's, through the target's own input, so an edit of
/// the target reaches every reader of the link.
#[salsa::tracked(returns(ref))]
pub fn source_file(db: &dyn Db, file: File) -> Result<SourceFile, DigestError> {
    let _ = file.revision(db);
    let root = crate::workspace::workspace_root(db);
    let path = file.path(db);
    let absolute = root.join(path);
    let index = db.digest_index();
    index.prepare(db);
    // Not following a link (a regular file's stamp is the same either way).
    let stamp = db.system().link_stamp(&absolute);
    if let Ok(Some(stamp)) = stamp {
        if stamp.kind == EntryKind::Symlink {
            db.record_seen(file, Some(stamp));
            return match crate::links::link_target(db, file) {
                // Reached through a link: an action can tell (`ls -l`, `test -L`), so
                // the permissions carry [`LINKED`] and a file and a link to the same
                // content key apart.
                LinkTarget::File(target) => {
                    source_file(db, db.file_for_path(target))
                        .clone()
                        .map(|source| SourceFile {
                            permissions: source.permissions | LINKED,
                            ..source
                        })
                }
                refused => Err(DigestError::Link(refused.clone())),
            };
        }
        if let Some(digest) = index.trusted(path, &stamp) {
            db.record_seen(file, Some(stamp));
            return Ok(SourceFile {
                digest,
                permissions: stamp.mode & 0o7777,
                stamp,
            });
        }
    }
    let read = db.system().read_stamped(&absolute);
    db.record_seen(file, read.stamp);
    match (read.contents, read.stamp) {
        (Ok(bytes), Some(stamp)) => {
            let digest = Sha256Digest::of(&bytes);
            let now = db.system().now();
            index.hashed(path, stamp, digest, bytes.len() as u64, now);
            Ok(SourceFile {
                digest,
                permissions: stamp.mode & 0o7777,
                stamp,
            })
        }
        // A system that read bytes without a stamp: the digest, with nothing known of the
        // file's metadata (never kept in the index).
        (Ok(bytes), None) => Ok(SourceFile {
            digest: Sha256Digest::of(&bytes),
            permissions: 0,
            stamp: FileStamp {
                kind: EntryKind::File,
                size: bytes.len() as u64,
                mtime_ns: 0,
                ctime_ns: 0,
                inode: 0,
                mode: 0,
            },
        }),
        (Err(_), None) => Err(DigestError::Missing),
        (Err(_), Some(stamp)) if stamp.kind != EntryKind::File => Err(DigestError::NotAFile),
        (Err(err), Some(_)) => Err(DigestError::Unreadable(err.to_string())),
    }
}

/// How much older than the moment it was read a file's last change must be for its
/// digest to be kept in the index: two seconds, coarser than any file system's timestamp
/// tick (one second on some), so a later write within the same tick cannot leave a stale
/// digest under the stamp it did not change.
pub const SETTLED_NS: i128 = 2_000_000_000;

/// The digest index of one process: the entries loaded from `.once/digests` (trusted
/// under the racy rule) and the digests this process computed (saved by
/// [`DigestIndex::save`]).
#[derive(Debug, Default)]
pub struct DigestIndex {
    loaded: OnceLock<LoadedIndex>,
    computed: Mutex<FxHashMap<String, IndexEntry>>,
    dirty: AtomicBool,
    bytes_hashed: AtomicU64,
}

#[derive(Debug, Default)]
struct LoadedIndex {
    entries: FxHashMap<String, IndexEntry>,
    /// The index file's modification time when it was read (the racy rule's bound).
    written_ns: i128,
    /// Why the file there was not an intact index, when it was not.
    damage: Option<Damage>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct IndexEntry {
    stamp: FileStamp,
    digest: Sha256Digest,
}

impl DigestIndex {
    /// How many bytes this process hashed (the index's reuse shows as bytes not hashed).
    pub fn bytes_hashed(&self) -> u64 {
        self.bytes_hashed.load(Ordering::Relaxed)
    }

    fn loaded(&self, db: &dyn Db) -> &LoadedIndex {
        self.loaded.get_or_init(|| {
            let root = crate::workspace::workspace_root(db);
            let loaded = load_index(db.system(), &root.join(DIGEST_INDEX_PATH));
            if loaded.damage.is_some() {
                // Rewritten by this process's save, whatever it hashes.
                self.dirty.store(true, Ordering::Relaxed);
            }
            loaded
        })
    }

    /// The warning to show when the index file this process read was damaged (it was
    /// ignored, every file is hashed again, and the next save rewrites it).
    pub fn damage(&self) -> Option<String> {
        let damage = self.loaded.get()?.damage?;
        Some(format!(
            "the digest index `{DIGEST_INDEX_PATH}` was damaged ({damage}); it was ignored, \
             the files it listed were hashed again and it is rewritten"
        ))
    }

    /// The digest of an entry loaded from disk with exactly this stamp, when the racy rule
    /// trusts it.
    fn trusted(&self, path: &str, stamp: &FileStamp) -> Option<Sha256Digest> {
        let loaded = self.loaded.get()?;
        let entry = loaded.entries.get(path)?;
        (entry.stamp == *stamp && stamp.mtime_ns < loaded.written_ns).then_some(entry.digest)
    }

    /// Counts a digest this process computed, read at `now`, and keeps it for the index
    /// when the file had settled ([`SETTLED_NS`]).
    fn hashed(
        &self,
        path: &str,
        stamp: FileStamp,
        digest: Sha256Digest,
        bytes: u64,
        now: std::time::SystemTime,
    ) {
        self.bytes_hashed.fetch_add(bytes, Ordering::Relaxed);
        let now_ns = now
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos() as i128);
        if stamp.mtime_ns.max(stamp.ctime_ns) + SETTLED_NS > now_ns {
            return;
        }
        let mut computed = match self.computed.lock() {
            Ok(computed) => computed,
            Err(poisoned) => poisoned.into_inner(),
        };
        computed.insert(path.to_owned(), IndexEntry { stamp, digest });
        self.dirty.store(true, Ordering::Relaxed);
    }

    /// Loads the index from disk if it has not been yet (before the first digest, so
    /// reuse does not depend on which query ran first).
    pub fn prepare(&self, db: &dyn Db) {
        let _ = self.loaded(db);
    }

    /// Writes the loaded entries merged with this process's digests to `.once/digests`
    /// atomically, when this process computed any (or the file read was damaged).
    /// Returns whether it wrote.
    pub fn save(&self, system: &dyn System, root: &Path) -> std::io::Result<bool> {
        if !self.dirty.swap(false, Ordering::Relaxed) {
            return Ok(false);
        }
        let mut entries: FxHashMap<&str, IndexEntry> = FxHashMap::default();
        if let Some(loaded) = self.loaded.get() {
            entries.extend(loaded.entries.iter().map(|(p, e)| (p.as_str(), *e)));
        }
        let computed = match self.computed.lock() {
            Ok(computed) => computed,
            Err(poisoned) => poisoned.into_inner(),
        };
        entries.extend(computed.iter().map(|(p, e)| (p.as_str(), *e)));
        let mut paths: Vec<&str> = entries
            .keys()
            .copied()
            .filter(|path| !path.contains(['\n', '\r']))
            .collect();
        paths.sort_unstable();
        // Written again, without them, while entries are not older than the file: the
        // racy rule would ignore them now, and a later `touch` must not trust them.
        for _ in 0..3 {
            save_index_file(system, root, &index_text(&paths, &entries))?;
            let Some(written) = system.stamp(&index_path(root))? else {
                break;
            };
            let before = paths.len();
            paths.retain(|path| entries[path].stamp.mtime_ns < written.mtime_ns);
            if paths.len() == before {
                break;
            }
        }
        Ok(true)
    }
}

/// The framed index of `entries` at `paths` (sorted).
fn index_text(paths: &[&str], entries: &FxHashMap<&str, IndexEntry>) -> Vec<u8> {
    let mut text = String::new();
    for path in paths {
        let entry = entries[path];
        let stamp = entry.stamp;
        text.push_str(&format!(
            "{} {} {} {} {} {} {} {path}\n",
            entry.digest,
            kind_code(stamp.kind),
            stamp.size,
            stamp.mtime_ns,
            stamp.ctime_ns,
            stamp.inode,
            stamp.mode,
        ));
    }
    INDEX_FORMAT.frame(DIGEST_INDEX_PATH.as_bytes(), text.as_bytes())
}

/// The index file of the workspace at `root`.
pub fn index_path(root: &Path) -> PathBuf {
    root.join(DIGEST_INDEX_PATH)
}

/// Replaces the index file atomically and confined to the workspace (temporary file in
/// `.once/`, then rename), under the workspace's write lock.
fn save_index_file(system: &dyn System, root: &Path, contents: &[u8]) -> std::io::Result<()> {
    let lock = system.lock_writes(root)?;
    system
        .write_confined(&lock, root, DIGEST_INDEX_PATH, contents)
        .map(|_existed| ())
}

fn kind_code(kind: EntryKind) -> char {
    match kind {
        EntryKind::File => 'f',
        EntryKind::Directory => 'd',
        EntryKind::Symlink => 'l',
        EntryKind::Other => 'o',
    }
}

fn kind_of_code(code: &str) -> Option<EntryKind> {
    Some(match code {
        "f" => EntryKind::File,
        "d" => EntryKind::Directory,
        "l" => EntryKind::Symlink,
        "o" => EntryKind::Other,
        _ => return None,
    })
}

fn load_index(system: &dyn System, path: &Path) -> LoadedIndex {
    let read = system.read_stamped(path);
    let Some(stamp) = read.stamp else {
        return LoadedIndex::default();
    };
    let damaged = |damage| LoadedIndex {
        damage: Some(damage),
        ..LoadedIndex::default()
    };
    if stamp.kind != EntryKind::File {
        return damaged(Damage::NotAFile);
    }
    let Ok(bytes) = read.contents else {
        return LoadedIndex::default();
    };
    match parse_index(&bytes) {
        Ok(entries) => LoadedIndex {
            entries,
            written_ns: stamp.mtime_ns,
            damage: None,
        },
        Err(None) => LoadedIndex::default(),
        Err(Some(damage)) => damaged(damage),
    }
}

/// The entries of an index file's bytes: `Err(None)` for another version's file,
/// `Err(Some(damage))` for anything but an intact index of this version.
fn parse_index(bytes: &[u8]) -> Result<FxHashMap<String, IndexEntry>, Option<Damage>> {
    let body = match INDEX_FORMAT.unframe(DIGEST_INDEX_PATH.as_bytes(), bytes) {
        Unframed::Intact(body) => body,
        Unframed::OtherVersion => return Err(None),
        Unframed::Damaged(damage) => return Err(Some(damage)),
    };
    let text = std::str::from_utf8(body).map_err(|_| Some(Damage::Unparsable))?;
    let mut entries = FxHashMap::default();
    for line in text.split_terminator('\n') {
        let (path, entry) = parse_line(line).ok_or(Some(Damage::Unparsable))?;
        entries.insert(path.to_owned(), entry);
    }
    Ok(entries)
}

fn parse_line(line: &str) -> Option<(&str, IndexEntry)> {
    let mut fields = line.splitn(8, ' ');
    let digest = Sha256Digest::from_hex(fields.next()?)?;
    let stamp = FileStamp {
        kind: kind_of_code(fields.next()?)?,
        size: fields.next()?.parse().ok()?,
        mtime_ns: fields.next()?.parse().ok()?,
        ctime_ns: fields.next()?.parse().ok()?,
        inode: fields.next()?.parse().ok()?,
        mode: fields.next()?.parse().ok()?,
    };
    let path = fields.next().filter(|p| !p.is_empty())?;
    Some((path, IndexEntry { stamp, digest }))
}

/// Whether `text` is a complete, intact index of this version (for tests of concurrent
/// writers).
pub fn is_valid_index(text: &str) -> bool {
    parse_index(text.as_bytes()).is_ok()
}

/// `entries` as a complete index file (for tests that damage one).
pub fn index_file_for_tests(lines: &str) -> Vec<u8> {
    INDEX_FORMAT.frame(DIGEST_INDEX_PATH.as_bytes(), lines.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hex_round_trips_and_matches_sha256sum() {
        let digest = Sha256Digest::of(b"abc");
        assert_eq!(
            digest.to_hex(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(Sha256Digest::from_hex(&digest.to_hex()), Some(digest));
        assert_eq!(Sha256Digest::from_hex("zz"), None);
    }

    #[test]
    fn only_intact_indexes_of_this_version_parse() {
        let digest = Sha256Digest::of(b"x");
        let line = format!("{digest} f 1 10 10 7 33188 dir/a file.rs\n");
        let good = index_file_for_tests(&line);
        let entries = parse_index(&good).expect("valid");
        assert_eq!(entries["dir/a file.rs"].digest, digest);
        assert_eq!(
            parse_index(format!("once-digest-index 1\n{line}end 1\n").as_bytes()).err(),
            Some(None),
            "an older version: ignored, not damage"
        );
        let other = Sha256Digest::of(b"y");
        for bad in [
            Vec::new(),
            b"garbage".to_vec(),
            good[..good.len() - 1].to_vec(),
            String::from_utf8(good.clone())
                .unwrap()
                .replace(&digest.to_hex(), &other.to_hex())
                .into_bytes(),
            String::from_utf8(good.clone())
                .unwrap()
                .replace(" f ", " q ")
                .into_bytes(),
            index_file_for_tests(&line.replace(" f ", " q ")),
        ] {
            assert!(
                matches!(parse_index(&bad), Err(Some(_))),
                "{:?}",
                String::from_utf8_lossy(&bad)
            );
        }
    }
}
