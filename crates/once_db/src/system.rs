//! The outside world, behind one trait: [`OsSystem`] for the disk, [`MemorySystem`] for tests.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

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
    /// Reads a file as UTF-8 text.
    fn read_to_string(&self, path: &Path) -> io::Result<String>;

    /// Whether `path` is an existing regular file.
    fn is_file(&self, path: &Path) -> bool;

    /// Every regular file below `root`, as sorted `/`-separated root-relative paths.
    ///
    /// Skips hidden entries (names starting with `.`), directories named `.once`,
    /// `target` or `node_modules`, and whatever `.gitignore` files exclude.
    fn walk(&self, root: &Path) -> io::Result<Vec<String>>;

    fn host_platform(&self) -> HostPlatform;

    /// Reads a file's bytes.
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>>;

    /// What is at `path`, without following a final symbolic link; `None` when nothing is.
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>>;

    /// The absolute path with every symbolic link resolved (the path must exist).
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf>;

    /// Replaces (or creates) the file at `path` atomically: the contents go to a temporary
    /// file in the same directory, are flushed to disk, and the temporary file is renamed
    /// over `path`. Missing parent directories are created. Callers check confinement first
    /// ([`crate::writes`]).
    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<()>;

    /// The metadata fingerprint of what `path` names (following symbolic links, as reading
    /// does); `None` when nothing is there.
    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>>;

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

/// The bytes of a read and the stamp of the file they were read from.
#[derive(Debug)]
pub struct StampedRead {
    pub contents: io::Result<Vec<u8>>,
    /// `None` when the path named nothing (or could not be examined).
    pub stamp: Option<FileStamp>,
}

/// A file's metadata fingerprint: two stamps differ whenever the file was replaced,
/// written, truncated, or changed kind or mode (the inputs of the change layer's rescan
/// and of the digest index). Timestamps are in nanoseconds since the Unix epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FileStamp {
    pub kind: EntryKind,
    pub size: u64,
    pub mtime_ns: i128,
    pub ctime_ns: i128,
    pub inode: u64,
    pub mode: u32,
}

impl FileStamp {
    /// The stamp of `std::fs` metadata (of a followed path or an open handle).
    pub fn of_metadata(metadata: &std::fs::Metadata) -> FileStamp {
        let kind = EntryKind::of_file_type(metadata.file_type());
        #[cfg(unix)]
        {
            use std::os::unix::fs::MetadataExt as _;
            FileStamp {
                kind,
                size: metadata.size(),
                mtime_ns: i128::from(metadata.mtime()) * 1_000_000_000
                    + i128::from(metadata.mtime_nsec()),
                ctime_ns: i128::from(metadata.ctime()) * 1_000_000_000
                    + i128::from(metadata.ctime_nsec()),
                inode: metadata.ino(),
                mode: metadata.mode(),
            }
        }
        #[cfg(not(unix))]
        {
            let nanos = |time: io::Result<std::time::SystemTime>| {
                time.ok()
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_nanos() as i128)
            };
            FileStamp {
                kind,
                size: metadata.len(),
                mtime_ns: nanos(metadata.modified()),
                ctime_ns: nanos(metadata.created()),
                inode: 0,
                mode: u32::from(metadata.permissions().readonly()),
            }
        }
    }
}

/// The error of reading something that is no regular file.
fn not_a_regular_file(path: &Path) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("`{}` is not a regular file", path.display()),
    )
}

/// What a path names, without following a final symbolic link.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EntryKind {
    File,
    Directory,
    Symlink,
    Other,
}

impl EntryKind {
    pub fn of_file_type(file_type: std::fs::FileType) -> EntryKind {
        if file_type.is_symlink() {
            EntryKind::Symlink
        } else if file_type.is_dir() {
            EntryKind::Directory
        } else if file_type.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }
}

/// Directory names never walked into, wherever they appear.
pub const SKIPPED_DIRECTORIES: &[&str] = &[".once", "target", "node_modules"];

/// The real file system.
#[derive(Debug, Default)]
pub struct OsSystem;

impl System for OsSystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn walk(&self, root: &Path) -> io::Result<Vec<String>> {
        walk_directories(root, None)
    }

    fn host_platform(&self) -> HostPlatform {
        HostPlatform::current()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        std::fs::read(path)
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

    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        write_atomic_with(path, contents, |_| Ok(()))
    }

    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        match std::fs::metadata(path) {
            Ok(metadata) => Ok(Some(FileStamp::of_metadata(&metadata))),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn is_ignored(&self, root: &Path, relative: &str) -> bool {
        is_ignored_on_disk(root, relative)
    }

    fn read_stamped(&self, path: &Path) -> StampedRead {
        use std::io::Read as _;
        // Stat first (a FIFO must not be opened: that blocks), then read.
        let metadata = match std::fs::metadata(path) {
            Ok(metadata) => metadata,
            Err(e) => {
                return StampedRead {
                    contents: Err(e),
                    stamp: None,
                };
            }
        };
        let stamp = Some(FileStamp::of_metadata(&metadata));
        if !metadata.is_file() {
            return StampedRead {
                contents: Err(not_a_regular_file(path)),
                stamp,
            };
        }
        let contents = std::fs::File::open(path).and_then(|mut file| {
            let mut bytes = Vec::with_capacity(metadata.len() as usize);
            file.read_to_end(&mut bytes)?;
            Ok(bytes)
        });
        StampedRead { contents, stamp }
    }
}

/// Called with every directory a walk is about to read (the root first), from the walk's
/// threads.
pub type DirectoryHook = Arc<dyn Fn(&Path) + Send + Sync>;

/// [`OsSystem::walk`] on one thread per core; `on_directory` sees every directory before
/// its entries are read, so a watch added there misses no change made to it later.
pub fn walk_directories(
    root: &Path,
    on_directory: Option<DirectoryHook>,
) -> io::Result<Vec<String>> {
    if !root.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            format!("`{}` is not a directory", root.display()),
        ));
    }
    if let Some(hook) = &on_directory {
        hook(root);
    }
    let walker = ignore::WalkBuilder::new(root)
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
        })
        .build_parallel();
    let found = std::sync::Mutex::new(Vec::new());
    walker.run(|| {
        let found = &found;
        Box::new(move |entry| {
            if let Ok(entry) = entry
                && entry.file_type().is_some_and(|t| t.is_file())
                && let Ok(relative) = entry.path().strip_prefix(root)
                && let Some(relative) = relative_to_slash(relative)
                && let Ok(mut found) = found.lock()
            {
                found.push(relative);
            }
            ignore::WalkState::Continue
        })
    });
    let mut files = found
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    files.sort_unstable();
    Ok(files)
}

/// [`OsSystem::write_atomic`] with a hook that runs after the temporary file is written
/// and flushed and before it is renamed over `path` (tests inject failures there). When
/// the hook or any step fails, the temporary file is removed and `path` is untouched.
pub fn write_atomic_with(
    path: &Path,
    contents: &[u8],
    before_rename: impl FnOnce(&Path) -> io::Result<()>,
) -> io::Result<()> {
    use std::io::Write as _;
    let parent = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .ok_or_else(|| io::Error::other(format!("`{}` has no parent directory", path.display())))?;
    std::fs::create_dir_all(parent)?;
    let mut temp = tempfile::Builder::new()
        .prefix(".once-write-")
        .tempfile_in(parent)?;
    temp.write_all(contents)?;
    if let Ok(metadata) = std::fs::metadata(path) {
        temp.as_file().set_permissions(metadata.permissions())?;
    }
    temp.as_file().sync_all()?;
    before_rename(temp.path())?;
    temp.persist(path).map_err(|e| e.error)?;
    // Make the rename itself durable; not every platform can open a directory.
    if let Ok(directory) = std::fs::File::open(parent) {
        let _ = directory.sync_all();
    }
    Ok(())
}

/// [`OsSystem::is_ignored`]: the deepest `.gitignore` with a matching rule decides (a
/// negated rule keeps the file), as in the walk; `.git/info/exclude` applies last.
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

/// An in-memory file system for tests. Cloning shares the same files.
#[derive(Clone, Debug)]
pub struct MemorySystem {
    files: Arc<RwLock<BTreeMap<PathBuf, String>>>,
    /// Symbolic links: path → target (only reported by `entry_kind`, never followed).
    symlinks: Arc<RwLock<BTreeMap<PathBuf, PathBuf>>>,
    /// Per path, the generation of its last write or touch (its stamp's modification time).
    generations: Arc<RwLock<BTreeMap<PathBuf, u64>>>,
    next_generation: Arc<std::sync::atomic::AtomicU64>,
    host: HostPlatform,
}

impl Default for MemorySystem {
    fn default() -> MemorySystem {
        MemorySystem {
            files: Arc::default(),
            symlinks: Arc::default(),
            generations: Arc::default(),
            next_generation: Arc::default(),
            host: HostPlatform {
                os: "linux".into(),
                arch: "x86_64".into(),
            },
        }
    }
}

impl MemorySystem {
    pub fn with_host(host: HostPlatform) -> MemorySystem {
        MemorySystem {
            host,
            ..MemorySystem::default()
        }
    }

    pub fn write(&self, path: impl Into<PathBuf>, contents: impl Into<String>) {
        let path = path.into();
        self.touch(&path);
        if let Ok(mut files) = self.files.write() {
            files.insert(path, contents.into());
        }
    }

    /// Changes a path's stamp without changing its contents (like `touch`).
    pub fn touch(&self, path: &Path) {
        let generation = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if let Ok(mut generations) = self.generations.write() {
            generations.insert(path.to_path_buf(), generation);
        }
    }

    /// Records a symbolic link at `path` (for confinement tests).
    pub fn symlink(&self, path: impl Into<PathBuf>, target: impl Into<PathBuf>) {
        if let Ok(mut links) = self.symlinks.write() {
            links.insert(path.into(), target.into());
        }
    }

    /// Removes a symbolic link recorded with [`MemorySystem::symlink`].
    pub fn remove_symlink(&self, path: &Path) {
        self.touch(path);
        if let Ok(mut links) = self.symlinks.write() {
            links.remove(path);
        }
    }

    pub fn remove(&self, path: &Path) {
        self.touch(path);
        if let Ok(mut files) = self.files.write() {
            files.remove(path);
        }
    }
}

impl System for MemorySystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.files
            .read()
            .ok()
            .and_then(|files| files.get(path).cloned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.files
            .read()
            .is_ok_and(|files| files.contains_key(path))
    }

    fn walk(&self, root: &Path) -> io::Result<Vec<String>> {
        let files = self
            .files
            .read()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        let mut out = Vec::new();
        for path in files.keys() {
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let Some(relative) = relative_to_slash(relative) else {
                continue;
            };
            let parts: Vec<&str> = relative.split('/').collect();
            let skipped = parts.iter().enumerate().any(|(i, part)| {
                part.starts_with('.') || (i + 1 < parts.len() && SKIPPED_DIRECTORIES.contains(part))
            });
            if !skipped {
                out.push(relative);
            }
        }
        Ok(out)
    }

    fn host_platform(&self) -> HostPlatform {
        self.host.clone()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_to_string(path).map(String::into_bytes)
    }

    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        if self
            .symlinks
            .read()
            .is_ok_and(|links| links.contains_key(path))
        {
            return Ok(Some(EntryKind::Symlink));
        }
        let files = self
            .files
            .read()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        if files.contains_key(path) {
            return Ok(Some(EntryKind::File));
        }
        let is_directory =
            files.keys().any(|f| f.starts_with(path) && f != path) || path.parent().is_none();
        Ok(is_directory.then_some(EntryKind::Directory))
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        Ok(path.to_path_buf())
    }

    fn write_atomic(&self, path: &Path, contents: &[u8]) -> io::Result<()> {
        let text = String::from_utf8(contents.to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))?;
        self.write(path.to_path_buf(), text);
        Ok(())
    }

    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        let Some(kind) = self.entry_kind(path)? else {
            return Ok(None);
        };
        let size = self
            .files
            .read()
            .ok()
            .and_then(|files| files.get(path).map(|text| text.len() as u64))
            .unwrap_or(0);
        let generation = self
            .generations
            .read()
            .ok()
            .and_then(|generations| generations.get(path).copied())
            .unwrap_or(0);
        Ok(Some(FileStamp {
            kind,
            size,
            mtime_ns: i128::from(generation),
            ctime_ns: i128::from(generation),
            inode: 0,
            mode: 0o644,
        }))
    }

    fn read_stamped(&self, path: &Path) -> StampedRead {
        let stamp = self.stamp(path).ok().flatten();
        let contents = match stamp {
            Some(FileStamp {
                kind: EntryKind::File,
                ..
            }) => self.read_bytes(path),
            Some(_) => Err(not_a_regular_file(path)),
            None => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        };
        StampedRead { contents, stamp }
    }
}
