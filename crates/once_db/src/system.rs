//! The outside world, behind one trait: [`OsSystem`] for the disk, [`MemorySystem`] for tests
//! (in [`crate::memory`]).

pub use crate::memory::MemorySystem;

use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The operating system and CPU architecture `select` tokens are derived from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPlatform {
    pub os: String,
    pub arch: String,
}

impl HostPlatform {
    /// The platform this binary was built for.
    pub fn current() -> HostPlatform {
        HostPlatform {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
        }
    }
}

/// Everything core crates need from the outside world.
pub trait System: Send + Sync + fmt::Debug {
    /// Reads a regular file as UTF-8 text (at most [`MAX_READ_BYTES`]; FIFOs, devices and
    /// other non-regular files are refused without blocking on them).
    fn read_to_string(&self, path: &Path) -> io::Result<String>;

    /// Whether `path` is an existing regular file.
    fn is_file(&self, path: &Path) -> bool;

    /// Every file below `root` ([`System::walk_entries`]), as sorted `/`-separated
    /// root-relative paths.
    fn walk(&self, root: &Path) -> io::Result<Vec<String>> {
        self.walk_entries(root).map(|walked| walked.files)
    }

    /// Every file below `root`, as sorted `/`-separated root-relative paths, and which of
    /// them are symbolic links: regular files, and every link (whatever it leads to: the
    /// analysis follows one leading to a workspace file and reports any other by name
    /// when a target names it). Links are never followed into directories.
    ///
    /// Skips hidden entries (names starting with `.`), directories named `.once`,
    /// `target` or `node_modules`, and whatever `.gitignore` files exclude.
    fn walk_entries(&self, root: &Path) -> io::Result<Walked>;

    fn host_platform(&self) -> HostPlatform;

    /// Reads a regular file's bytes, with the limits of [`System::read_to_string`].
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// What is at `path`, without following a final symbolic link; `None` when nothing is.
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>>;

    /// The absolute path with every symbolic link resolved (the path must exist).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// Reads the regular file at the workspace-relative, normalised path `relative` below
    /// `root` without following any symbolic link; `None` when it (or a directory above
    /// it) does not exist. A link, a special file or a file where a directory is needed is
    /// an error.
    fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>>;

    /// Takes the workspace's write lock (`.once/write.lock`), waiting while another writer,
    /// in this process or another, holds it. Every write goes through it
    /// ([`System::write_confined`] asks for the guard), held from reading the files a write
    /// is based on until the write is done, so concurrent writers never lose each other's
    /// changes.
    fn lock_writes(&self, root: &Path) -> io::Result<WriteLock>;

    /// Replaces (or creates) the file at the workspace-relative, normalised path `relative`
    /// below `root` atomically, confined to the workspace: every step goes through a
    /// directory handle of the root without following symbolic links (missing directories
    /// are created), the contents go to a temporary file in the final directory, are
    /// flushed to disk and renamed over the file. New files get mode 0666 less the umask,
    /// rewritten ones keep their mode. Leftover temporary files of writers that died are
    /// removed. Returns whether the file existed.
    fn write_confined(
        &self,
        lock: &WriteLock,
        root: &Path,
        relative: &str,
        contents: &[u8],
    ) -> io::Result<bool>;

    /// The metadata fingerprint of what `path` names (following symbolic links, as reading
    /// does); `None` when nothing is there.
    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>>;

    /// The metadata fingerprint of `path` itself, not following a final symbolic link (a
    /// link's stamp has the kind [`EntryKind::Symlink`]); `None` when nothing is there.
    fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>>;

    /// The text of the symbolic link at `path`.
    fn read_link(&self, path: &Path) -> io::Result<PathBuf>;

    /// The current time (the digest index keeps no digest of a file changed in the last
    /// moments before it was read: [`crate::digests`]).
    fn now(&self) -> std::time::SystemTime;

    /// Reads a regular file's bytes together with the stamp taken *before* reading, so the
    /// bytes are never older than the stamp. A path that is no regular file is an error
    /// (with its stamp, so a later change of kind is noticed).
    fn read_stamped(&self, path: &Path) -> StampedRead;

    /// Whether the `.gitignore` files from `root` down to the path's directory (and
    /// `.git/info/exclude`) exclude the root-relative file `relative` from the walk.
    fn is_ignored(&self, root: &Path, relative: &str) -> bool {
        let _ = (root, relative);
        false
    }
}

/// What a walk found: every file, links included, and the links among them; both sorted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walked {
    pub files: Vec<String>,
    pub links: Vec<String>,
}

impl Walked {
    /// A walk of `files` that met no link.
    pub fn of_files(files: Vec<String>) -> Walked {
        Walked {
            files,
            links: Vec::new(),
        }
    }
}

/// The bytes of a read and the stamp of the file they were read from.
#[derive(Debug)]
pub struct StampedRead {
    pub contents: io::Result<Vec<u8>>,
    /// `None` when the path named nothing (or could not be examined).
    pub stamp: Option<FileStamp>,
}

/// The error of reading something that is no regular file.
pub(crate) fn not_a_regular_file(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("`{}` is not a regular file", path.display()),
    )
}

/// Proof that the workspace's write lock is held ([`System::lock_writes`]); dropping it
/// releases the lock.
#[derive(Debug)]
#[allow(
    clippy::disallowed_types,
    reason = "the lock is an open file of OsSystem's, held behind `System`"
)]
pub struct WriteLock {
    /// The locked file (`None` for [`MemorySystem`], which has no other writers).
    _held: Option<std::fs::File>,
}

impl WriteLock {
    /// The lock of a system without other writers.
    pub(crate) fn unheld() -> WriteLock {
        WriteLock { _held: None }
    }
}

pub use once_host::stamp::{EntryKind, FileStamp};

/// Directory names never walked into, wherever they appear.
pub const SKIPPED_DIRECTORIES: &[&str] = &[".once", "target", "node_modules"];

/// The real file system.
#[derive(Debug, Default)]
pub struct OsSystem;

#[allow(
    clippy::disallowed_methods,
    reason = "OsSystem is the real disk behind `System`: the one place core crates touch it"
)]
impl System for OsSystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        String::from_utf8(read_regular_file(path)?).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn walk_entries(&self, root: &Path) -> io::Result<Walked> {
        walk_directories(root, None)
    }

    fn host_platform(&self) -> HostPlatform {
        HostPlatform::current()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        read_regular_file(path)
    }

    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        match std::fs::symlink_metadata(path) {
            Ok(metadata) => Ok(Some(EntryKind::of_file_type(metadata.file_type()))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::canonicalize(path)
    }

    #[cfg(unix)]
    fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
        crate::confined::read_confined(root, relative)
    }

    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        match std::fs::metadata(path) {
            Ok(metadata) => Ok(Some(FileStamp::of_metadata(&metadata))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        match std::fs::symlink_metadata(path) {
            Ok(metadata) => Ok(Some(FileStamp::of_metadata(&metadata))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        std::fs::read_link(path)
    }

    #[allow(clippy::disallowed_methods, reason = "OsSystem's clock")]
    fn now(&self) -> std::time::SystemTime {
        std::time::SystemTime::now()
    }

    fn is_ignored(&self, root: &Path, relative: &str) -> bool {
        is_ignored_on_disk(root, relative)
    }

    fn read_stamped(&self, path: &Path) -> StampedRead {
        read_regular_file_stamped(path)
    }

    #[cfg(unix)]
    fn lock_writes(&self, root: &Path) -> io::Result<WriteLock> {
        crate::confined::lock_writes(root).map(|file| WriteLock { _held: Some(file) })
    }

    #[cfg(unix)]
    fn write_confined(
        &self,
        _lock: &WriteLock,
        root: &Path,
        relative: &str,
        contents: &[u8],
    ) -> io::Result<bool> {
        crate::confined::write_confined(root, relative, contents, || Ok(()))
    }

    #[cfg(not(unix))]
    fn read_confined(&self, _root: &Path, _relative: &str) -> io::Result<Option<Vec<u8>>> {
        Err(confined_unsupported())
    }

    #[cfg(not(unix))]
    fn lock_writes(&self, _root: &Path) -> io::Result<WriteLock> {
        Err(confined_unsupported())
    }

    #[cfg(not(unix))]
    fn write_confined(&self, _: &WriteLock, _: &Path, _: &str, _: &[u8]) -> io::Result<bool> {
        Err(confined_unsupported())
    }
}

/// Confined reads and writes need `openat` without following links, which once only
/// implements for Unix.
#[cfg(not(unix))]
fn confined_unsupported() -> io::Error {
    io::Error::new(
        io::ErrorKind::Unsupported,
        "writing into the workspace is only supported on Unix",
    )
}

pub use once_host::MAX_READ_BYTES;

/// Reads the regular file at `path` (symbolic links followed), refusing anything else.
///
/// The file is opened non-blocking, so a FIFO (or a link to one) does not wait for a
/// writer; the kind is then checked on the open handle, so swapping the path for a FIFO
/// after a check cannot make the read block. Reads stop after [`MAX_READ_BYTES`].
pub fn read_regular_file(path: &Path) -> io::Result<Vec<u8>> {
    read_regular_file_stamped(path).contents
}

/// [`read_regular_file`] with the stamp of what was opened, taken from the open handle
/// before its bytes are read (so the bytes are never older than the stamp). A path that
/// names nothing has no stamp; one that is no regular file has its stamp and an error.
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "OsSystem's reads"
)]
pub fn read_regular_file_stamped(path: &Path) -> StampedRead {
    use std::io::Read;

    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // `O_NONBLOCK` fits an `i32` (it is 0o4000 on Linux).
        options.custom_flags(rustix::fs::OFlags::NONBLOCK.bits() as i32);
    }
    let opened = options.open(path).and_then(|file| {
        let metadata = file.metadata()?;
        Ok((file, metadata))
    });
    let (file, metadata) = match opened {
        Ok(opened) => opened,
        Err(error) => {
            // Opening can fail on something that exists (permissions, a socket): stamp it.
            let stamp = std::fs::metadata(path)
                .ok()
                .map(|m| FileStamp::of_metadata(&m));
            return StampedRead {
                contents: Err(error),
                stamp,
            };
        }
    };
    let stamp = Some(FileStamp::of_metadata(&metadata));
    let refuse = |error: io::Error| StampedRead {
        contents: Err(error),
        stamp,
    };
    if !metadata.is_file() {
        let what = if metadata.is_dir() {
            "a directory"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return refuse(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "`{}` is {what}; only regular files are read",
                path.display()
            ),
        ));
    }
    if metadata.len() > MAX_READ_BYTES {
        return refuse(too_large(path));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(metadata.len()).unwrap_or(0));
    if let Err(error) = file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes) {
        return refuse(error);
    }
    if bytes.len() as u64 > MAX_READ_BYTES {
        return refuse(too_large(path));
    }
    StampedRead {
        contents: Ok(bytes),
        stamp,
    }
}

fn too_large(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::FileTooLarge,
        format!(
            "`{}` is larger than the {} MiB read limit",
            path.display(),
            MAX_READ_BYTES >> 20
        ),
    )
}

/// Called with every directory a walk is about to read (the root first), from the walk's
/// threads.
pub type DirectoryHook = Arc<dyn Fn(&Path) + Send + Sync>;

pub use once_host::machine_parallelism;

/// How many entries (files and directories) a walk without a directory hook reads on
/// one thread before it starts again on one thread per core. Most workspaces are smaller:
/// a parallel walk costs threads and, when a worker runs out of work, sleeps of a
/// millisecond (`ignore`'s workers poll), more than a small tree takes to read.
const SERIAL_WALK_ENTRIES: usize = 2_000;

/// [`OsSystem::walk_entries`]: every file below `root` that is not ignored (links
/// included), workspace-relative and sorted. `on_directory` sees every directory before its entries are read, so a
/// watch added there misses no change made to it later; such a walk runs on one thread
/// per core. Without a hook the walk starts on the calling thread and moves to one thread
/// per core only past [`SERIAL_WALK_ENTRIES`] entries.
pub fn walk_directories(root: &Path, on_directory: Option<DirectoryHook>) -> io::Result<Walked> {
    if !is_directory(root) {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("`{}` is not a directory", root.display()),
        ));
    }
    if on_directory.is_none()
        && let Some(walked) = walk_serially(root, SERIAL_WALK_ENTRIES)
    {
        return Ok(walked);
    }
    if let Some(hook) = &on_directory {
        hook(root);
    }
    let found = std::sync::Mutex::new(Vec::new());
    walk_builder(root, on_directory)
        // What `ignore` would pick itself (the parallelism, at most 12), without asking
        // the system again; a serial walk never asks.
        .threads(machine_parallelism().min(12))
        .build_parallel()
        .run(|| {
            let found = &found;
            Box::new(move |entry| {
                if let Some(walked) = walked_file(root, entry)
                    && let Ok(mut found) = found.lock()
                {
                    found.push(walked);
                }
                ignore::WalkState::Continue
            })
        });
    let found = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    Ok(sorted_walk(found))
}

/// The files (and the links among them) of a walk, sorted.
pub(crate) fn sorted_walk(mut found: Vec<(String, bool)>) -> Walked {
    found.sort_unstable();
    let links = found
        .iter()
        .filter(|(_, link)| *link)
        .map(|(path, _)| path.clone())
        .collect();
    Walked {
        files: found.into_iter().map(|(path, _)| path).collect(),
        links,
    }
}

#[allow(clippy::disallowed_methods, reason = "OsSystem's walk")]
fn is_directory(path: &Path) -> bool {
    path.is_dir()
}

/// The files below `root` read on this thread, or `None` once more than `budget`
/// entries were seen (the caller walks again in parallel).
fn walk_serially(root: &Path, budget: usize) -> Option<Walked> {
    let mut found = Vec::new();
    for (seen, entry) in walk_builder(root, None).build().enumerate() {
        if seen > budget {
            return None;
        }
        if let Some(walked) = walked_file(root, entry) {
            found.push(walked);
        }
    }
    Some(sorted_walk(found))
}

/// The walk's rules: hidden entries and [`SKIPPED_DIRECTORIES`] skipped, `.gitignore`
/// files and `.git/info/exclude` obeyed (not the global ignore file), links not followed.
#[allow(
    clippy::disallowed_methods,
    reason = "OsSystem's walk: the real disk behind `System`"
)]
fn walk_builder(root: &Path, on_directory: Option<DirectoryHook>) -> ignore::WalkBuilder {
    let mut builder = ignore::WalkBuilder::new(root);
    builder
        .hidden(true)
        .git_ignore(true)
        .git_global(false)
        .git_exclude(true)
        .require_git(false)
        .ignore(false)
        .parents(false)
        .follow_links(false)
        .filter_entry(move |entry| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            let skipped = entry.depth() > 0
                && is_dir
                && entry
                    .file_name()
                    .to_str()
                    .is_some_and(|n| SKIPPED_DIRECTORIES.contains(&n));
            if is_dir
                && !skipped
                && entry.depth() > 0
                && let Some(hook) = &on_directory
            {
                hook(entry.path());
            }
            !skipped
        });
    builder
}

/// The workspace-relative path of a walked regular file or symbolic link (with `true`:
/// it is a link). Which kind an entry is comes from the directory listing: a link costs
/// nothing more here (the walk lists it whatever it leads to, so the file set changes
/// only when a link is made or removed, never when what it leads to changes).
fn walked_file(
    root: &Path,
    entry: Result<ignore::DirEntry, ignore::Error>,
) -> Option<(String, bool)> {
    let entry = entry.ok()?;
    let kind = entry.file_type()?;
    let link = kind.is_symlink();
    if !link && !kind.is_file() {
        return None;
    }
    let relative = relative_to_slash(entry.path().strip_prefix(root).ok()?)?;
    Some((relative, link))
}

/// [`OsSystem::is_ignored`]: the deepest `.gitignore` with a matching rule decides (a
/// negated rule keeps the file), as in the walk; `.git/info/exclude` applies last.
#[allow(clippy::disallowed_methods, reason = "OsSystem's reads")]
fn is_ignored_on_disk(root: &Path, relative: &str) -> bool {
    let path = root.join(relative);
    let mut dirs: Vec<PathBuf> = path
        .ancestors()
        .skip(1)
        .take_while(|dir| dir.starts_with(root))
        .map(Path::to_path_buf)
        .collect();
    dirs.reverse();
    let mut decision = None;
    for dir in &dirs {
        let file = dir.join(".gitignore");
        if !file.is_file() {
            continue;
        }
        let (matcher, _) = ignore::gitignore::Gitignore::new(&file);
        let matched = matcher.matched_path_or_any_parents(&path, false);
        if !matched.is_none() {
            decision = Some(matched.is_ignore());
        }
    }
    if decision.is_none() {
        let exclude = root.join(".git/info/exclude");
        if exclude.is_file() {
            let mut builder = ignore::gitignore::GitignoreBuilder::new(root);
            let _ = builder.add(&exclude);
            if let Ok(matcher) = builder.build() {
                let matched = matcher.matched_path_or_any_parents(&path, false);
                if !matched.is_none() {
                    decision = Some(matched.is_ignore());
                }
            }
        }
    }
    decision.unwrap_or(false)
}

/// Converts a relative path to `/`-separated UTF-8, or `None` if it is not UTF-8.
pub fn relative_to_slash(path: &Path) -> Option<String> {
    let mut out = String::new();
    for component in path.components() {
        let part = component.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    Some(out)
}

#[cfg(all(test, unix))]
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up real files and time real work"
)]
mod tests {
    use super::*;

    /// A FIFO (or a link to one) is refused at once instead of waiting for a writer, and
    /// so are directories; regular files read as before.
    #[test]
    fn only_regular_files_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.star");
        rustix::fs::mknodat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::FileType::Fifo,
            rustix::fs::Mode::from_raw_mode(0o600),
            0,
        )
        .unwrap();
        let link = dir.path().join("link.star");
        std::os::unix::fs::symlink(&fifo, &link).unwrap();
        let file = dir.path().join("file.star");
        std::fs::write(&file, "x = 1\n").unwrap();
        let system = OsSystem;
        for path in [&fifo, &link] {
            let error = system.read_to_string(path).unwrap_err();
            assert!(error.to_string().contains("not a regular file"), "{error}");
            assert!(system.read_bytes(path).is_err());
        }
        let error = system.read_to_string(dir.path()).unwrap_err();
        assert!(error.to_string().contains("a directory"), "{error}");
        assert_eq!(system.read_to_string(&file).unwrap(), "x = 1\n");
        assert_eq!(system.read_bytes(&file).unwrap(), b"x = 1\n");
    }
}

#[cfg(test)]
#[allow(clippy::disallowed_methods, reason = "tests build trees on disk")]
mod walk_tests {
    use std::path::Path;
    use std::sync::{Arc, Mutex};

    use super::{SERIAL_WALK_ENTRIES, walk_directories, walk_serially};

    fn write(root: &Path, relative: &str, text: &str) {
        let path = root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    /// The serial walk, the parallel walk (a hook forces it) and the fallback from one to
    /// the other find the same files under the same rules: links are listed (and
    /// marked), whatever they lead to, and never followed.
    #[test]
    fn serial_and_parallel_walks_agree() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, ".gitignore", "*.log\n");
        write(root, "app/.gitignore", "build/\n!keep.log\n");
        for file in [
            "once.toml",
            "a.log",
            "app/src/main.rs",
            "app/keep.log",
            "app/drop.log",
            "app/build/out.o",
            ".hidden/x",
            "node_modules/m/index.js",
            "lib/deep/er/file.txt",
        ] {
            write(root, file, "");
        }
        for (link, target) in [
            ("app/linked.rs", "src/main.rs"),
            ("app/dangling.rs", "nothing.rs"),
            ("app/outside", "/etc/hostname"),
            ("app/dir", "src"),
            ("app/.hidden-link", "src/main.rs"),
            ("app/build/ignored", "../src/main.rs"),
        ] {
            std::os::unix::fs::symlink(target, root.join(link)).unwrap();
        }
        let expected = [
            "app/dangling.rs",
            "app/dir",
            "app/keep.log",
            "app/linked.rs",
            "app/outside",
            "app/src/main.rs",
            "lib/deep/er/file.txt",
            "once.toml",
        ];
        let links = ["app/dangling.rs", "app/dir", "app/linked.rs", "app/outside"];
        let serial = walk_serially(root, 1_000).unwrap();
        assert_eq!(serial.files, expected);
        assert_eq!(serial.links, links);
        assert_eq!(walk_directories(root, None).unwrap(), serial);
        let hooked = Arc::new(Mutex::new(Vec::new()));
        let seen = hooked.clone();
        let hook: super::DirectoryHook = Arc::new(move |path: &Path| {
            seen.lock().unwrap().push(path.to_path_buf());
        });
        assert_eq!(walk_directories(root, Some(hook)).unwrap(), serial);
        assert!(hooked.lock().unwrap().contains(&root.join("lib/deep/er")));
        // Past its budget the serial walk gives up; the walk then goes on in parallel.
        assert_eq!(walk_serially(root, 3), None);
        for index in 0..SERIAL_WALK_ENTRIES {
            write(root, &format!("many/{}/f{index}", index % 50), "");
        }
        let walked = walk_directories(root, None).unwrap();
        assert_eq!(walked.links, links);
        let all = walked.files;
        assert_eq!(all.len(), expected.len() + SERIAL_WALK_ENTRIES);
        assert!(all.is_sorted());
        assert!(
            !all.iter()
                .any(|file| file.ends_with(".log") && file != "app/keep.log")
        );
    }

    #[test]
    fn temporary_files_are_never_discovered() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir(dir.path().join("pkg")).unwrap();
        std::fs::write(dir.path().join("pkg/once.toml"), "").unwrap();
        std::fs::write(dir.path().join("pkg/.once-write-4242-0"), "").unwrap();
        let walked = walk_directories(dir.path(), None).unwrap();
        assert_eq!(walked.files, ["pkg/once.toml"]);
    }
}
