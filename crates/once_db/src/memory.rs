//! [`MemorySystem`]: an in-memory file system for tests and editor overlays, with
//! symbolic links that reads and stamps follow as the disk's do.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use crate::system::{
    EntryKind, FileStamp, HostPlatform, SKIPPED_DIRECTORIES, StampedRead, System, Walked,
    WriteLock, not_a_regular_file, relative_to_slash, sorted_walk,
};

/// The most links [`MemorySystem`] follows in a row (as Linux does).
const MEMORY_LINK_HOPS: usize = 40;

/// `path` with `.` and `..` components applied lexically.
fn lexically_normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                out.pop();
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// An in-memory file system for tests. Cloning shares the same files.
#[derive(Clone, Debug)]
pub struct MemorySystem {
    files: Arc<RwLock<BTreeMap<PathBuf, String>>>,
    /// Symbolic links: path → target (relative to the link's directory unless absolute),
    /// followed by reads and stamps as the disk's are (a final component only).
    symlinks: Arc<RwLock<BTreeMap<PathBuf, PathBuf>>>,
    /// Per path, the generation of its last write or touch (its stamp's modification time).
    generations: Arc<RwLock<BTreeMap<PathBuf, u64>>>,
    /// Permission bits set with [`MemorySystem::chmod`] (0o644 otherwise).
    modes: Arc<RwLock<BTreeMap<PathBuf, u32>>>,
    next_generation: Arc<std::sync::atomic::AtomicU64>,
    host: HostPlatform,
}

impl Default for MemorySystem {
    fn default() -> MemorySystem {
        MemorySystem {
            files: Arc::default(),
            symlinks: Arc::default(),
            generations: Arc::default(),
            modes: Arc::default(),
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

    /// Sets a file's permission bits (its stamp changes, like a `chmod`'s change time).
    pub fn chmod(&self, path: &Path, mode: u32) {
        self.touch(path);
        if let Ok(mut modes) = self.modes.write() {
            modes.insert(path.to_path_buf(), mode & 0o7777);
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

    /// Records a symbolic link at `path` leading to `target` (relative to the link's
    /// directory unless absolute), replacing what was there.
    pub fn symlink(&self, path: impl Into<PathBuf>, target: impl Into<PathBuf>) {
        let path = path.into();
        self.touch(&path);
        if let Ok(mut links) = self.symlinks.write() {
            links.insert(path, target.into());
        }
    }

    /// Where a read of `path` arrives: through the links at it and at what they lead to
    /// (at most [`MEMORY_LINK_HOPS`]); an error for a cycle.
    fn follow(&self, path: &Path) -> io::Result<PathBuf> {
        let links = self
            .symlinks
            .read()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        let mut current = path.to_path_buf();
        for _ in 0..MEMORY_LINK_HOPS {
            let Some(target) = links.get(&current) else {
                return Ok(current);
            };
            let joined = match current.parent() {
                Some(parent) if !target.is_absolute() => parent.join(target),
                _ => target.clone(),
            };
            current = lexically_normal(&joined);
        }
        Err(io::Error::other("too many levels of symbolic links"))
    }

    fn generation(&self, path: &Path) -> u64 {
        self.generations
            .read()
            .ok()
            .and_then(|generations| generations.get(path).copied())
            .unwrap_or(0)
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

    /// The absolute path of `relative` below `root`, refusing what the disk would refuse:
    /// a symbolic link or a file on the way, a directory at the file's place.
    fn check_confined(&self, root: &Path, relative: &str) -> io::Result<PathBuf> {
        let refuse = |message: String| Err(io::Error::new(io::ErrorKind::InvalidInput, message));
        let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
        if parts.is_empty() {
            return refuse("the path names the workspace root, not a file".to_owned());
        }
        let mut path = root.to_path_buf();
        for (index, part) in parts.iter().enumerate() {
            path.push(part);
            let so_far = parts[..=index].join("/");
            let last = index + 1 == parts.len();
            match self.entry_kind(&path)? {
                Some(EntryKind::Symlink) => {
                    return refuse(format!(
                        "`{so_far}` is a symbolic link; once does not write through links, which may lead outside the workspace"
                    ));
                }
                Some(EntryKind::Directory) if last => {
                    return refuse(format!(
                        "an existing directory occupies the file path `{so_far}`"
                    ));
                }
                Some(EntryKind::File) if !last => {
                    return refuse(format!(
                        "`{so_far}` is not a directory, but `{relative}` needs it to be one"
                    ));
                }
                _ => {}
            }
        }
        Ok(path)
    }
}

impl System for MemorySystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        let path = self.follow(path)?;
        self.files
            .read()
            .ok()
            .and_then(|files| files.get(&path).cloned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.follow(path).is_ok_and(|path| {
            self.files
                .read()
                .is_ok_and(|files| files.contains_key(&path))
        })
    }

    fn walk_entries(&self, root: &Path) -> io::Result<Walked> {
        fn poisoned<T>(_: T) -> io::Error {
            io::Error::other("memory system poisoned")
        }
        let mut found: Vec<(String, bool)> = Vec::new();
        let listed = |path: &Path| -> Option<String> {
            let relative = relative_to_slash(path.strip_prefix(root).ok()?)?;
            let parts: Vec<&str> = relative.split('/').collect();
            let skipped = parts.iter().enumerate().any(|(i, part)| {
                part.starts_with('.') || (i + 1 < parts.len() && SKIPPED_DIRECTORIES.contains(part))
            });
            (!skipped && !relative.is_empty()).then_some(relative)
        };
        let links: Vec<PathBuf> = self
            .symlinks
            .read()
            .map_err(poisoned)?
            .keys()
            .cloned()
            .collect();
        for path in self.files.read().map_err(poisoned)?.keys() {
            if !links.contains(path)
                && let Some(relative) = listed(path)
            {
                found.push((relative, false));
            }
        }
        // As on disk: every link is listed, whatever it leads to, and none is followed.
        for path in &links {
            if let Some(relative) = listed(path) {
                found.push((relative, true));
            }
        }
        Ok(sorted_walk(found))
    }

    fn host_platform(&self) -> HostPlatform {
        self.host.clone()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.read_to_string(path).map(String::into_bytes)
    }

    fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        let text_length = self
            .symlinks
            .read()
            .ok()
            .and_then(|links| links.get(path).map(|t| t.as_os_str().len() as u64));
        match text_length {
            Some(size) => Ok(Some(FileStamp {
                kind: EntryKind::Symlink,
                size,
                mtime_ns: i128::from(self.generation(path)),
                ctime_ns: i128::from(self.generation(path)),
                inode: 0,
                mode: 0o777,
            })),
            None => self.stamp(path),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.symlinks
            .read()
            .ok()
            .and_then(|links| links.get(path).cloned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "not a symbolic link"))
    }

    fn now(&self) -> std::time::SystemTime {
        // Later than every stamp (generations count from the epoch in nanoseconds).
        std::time::UNIX_EPOCH + std::time::Duration::from_secs(1 << 32)
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
        let target = self.follow(path)?;
        match self.entry_kind(&target)? {
            Some(EntryKind::File | EntryKind::Directory | EntryKind::Other) => Ok(target),
            _ => Err(io::Error::new(io::ErrorKind::NotFound, "no such file")),
        }
    }

    fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
        let path = self.check_confined(root, relative)?;
        match self.read_bytes(&path) {
            Ok(bytes) => Ok(Some(bytes)),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    fn lock_writes(&self, _root: &Path) -> io::Result<WriteLock> {
        Ok(WriteLock::unheld())
    }

    fn write_confined(
        &self,
        _lock: &WriteLock,
        root: &Path,
        relative: &str,
        contents: &[u8],
    ) -> io::Result<bool> {
        let path = self.check_confined(root, relative)?;
        let text = String::from_utf8(contents.to_vec())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8"))?;
        let existed = self.is_file(&path);
        self.write(path, text);
        Ok(existed)
    }

    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        let path = &self.follow(path)?;
        let Some(kind) = self.entry_kind(path)? else {
            return Ok(None);
        };
        let size = self
            .files
            .read()
            .ok()
            .and_then(|files| files.get(path).map(|text| text.len() as u64))
            .unwrap_or(0);
        let generation = self.generation(path);
        Ok(Some(FileStamp {
            kind,
            size,
            mtime_ns: i128::from(generation),
            ctime_ns: i128::from(generation),
            inode: 0,
            mode: self
                .modes
                .read()
                .ok()
                .and_then(|modes| modes.get(path).copied())
                .unwrap_or(0o644),
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
