//! The overlay [`System`]: open editor buffers override the disk.
//!
//! Every read goes to the buffer when the path is open and to the wrapped system
//! otherwise; a buffer for a file that does not exist yet (a new `once.toml` being typed)
//! appears in walks, so the new package is discovered before it is saved.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use once_analysis::{EntryKind, FileStamp, HostPlatform, StampedRead, System, Walked, WriteLock};

/// Open buffers over a base system. Cloning shares the buffers.
#[derive(Clone, Debug)]
pub struct Overlay {
    base: Arc<dyn System>,
    buffers: Arc<RwLock<BTreeMap<PathBuf, String>>>,
    /// Per open buffer, the generation of its last change (its stamp's modification time,
    /// so the change layer's rescan sees buffer edits, opens and closes).
    generations: Arc<RwLock<BTreeMap<PathBuf, u64>>>,
    next_generation: Arc<std::sync::atomic::AtomicU64>,
}

impl Overlay {
    pub fn new(base: Arc<dyn System>) -> Overlay {
        Overlay {
            base,
            buffers: Arc::default(),
            generations: Arc::default(),
            next_generation: Arc::default(),
        }
    }

    /// Sets the text of an open buffer.
    pub fn set(&self, path: PathBuf, text: String) {
        let generation = self
            .next_generation
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            + 1;
        if let Ok(mut generations) = self.generations.write() {
            generations.insert(path.clone(), generation);
        }
        if let Ok(mut buffers) = self.buffers.write() {
            buffers.insert(path, text);
        }
    }

    /// Closes a buffer: the disk shows through again.
    pub fn remove(&self, path: &Path) {
        if let Ok(mut buffers) = self.buffers.write() {
            buffers.remove(path);
        }
        if let Ok(mut generations) = self.generations.write() {
            generations.remove(path);
        }
    }

    /// The stamp of an open buffer: never equal to a stamp of the disk.
    fn buffer_stamp(&self, path: &Path, text: &str) -> FileStamp {
        let generation = self
            .generations
            .read()
            .ok()
            .and_then(|generations| generations.get(path).copied())
            .unwrap_or(0);
        FileStamp {
            kind: EntryKind::File,
            size: text.len() as u64,
            mtime_ns: i128::from(generation),
            ctime_ns: i128::from(generation),
            inode: u64::MAX,
            mode: 0,
        }
    }

    fn buffer(&self, path: &Path) -> Option<String> {
        self.buffers.read().ok()?.get(path).cloned()
    }

    /// Whether the file exists on the base system (ignoring buffers).
    pub fn exists_on_disk(&self, path: &Path) -> bool {
        self.base.is_file(path)
    }
}

impl System for Overlay {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        match self.buffer(path) {
            Some(text) => Ok(text),
            None => self.base.read_to_string(path),
        }
    }

    fn is_file(&self, path: &Path) -> bool {
        self.buffers.read().is_ok_and(|b| b.contains_key(path)) || self.base.is_file(path)
    }

    fn walk_entries(&self, root: &Path) -> io::Result<Walked> {
        let Walked { mut files, links } = self.base.walk_entries(root)?;
        if let Ok(buffers) = self.buffers.read() {
            for path in buffers.keys() {
                let Ok(relative) = path.strip_prefix(root) else {
                    continue;
                };
                let Some(relative) = relative.to_str().map(|r| r.replace('\\', "/")) else {
                    continue;
                };
                if relative.split('/').any(|part| part.starts_with('.')) {
                    continue;
                }
                files.push(relative);
            }
        }
        files.sort_unstable();
        files.dedup();
        // An open buffer is a file, whatever the disk has at its path.
        let links = links
            .into_iter()
            .filter(|link| {
                !self
                    .buffers
                    .read()
                    .is_ok_and(|b| b.contains_key(&root.join(link)))
            })
            .collect();
        Ok(Walked { files, links })
    }

    fn host_platform(&self) -> HostPlatform {
        self.base.host_platform()
    }

    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        match self.buffer(path) {
            Some(text) => Ok(text.into_bytes()),
            None => self.base.read_bytes(path),
        }
    }

    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        if self.buffers.read().is_ok_and(|b| b.contains_key(path)) {
            return Ok(Some(EntryKind::File));
        }
        self.base.entry_kind(path)
    }

    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        match self.base.canonicalize(path) {
            Ok(path) => Ok(path),
            Err(_) if self.buffer(path).is_some() => Ok(path.to_path_buf()),
            Err(e) => Err(e),
        }
    }

    fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
        self.base.read_confined(root, relative)
    }

    fn lock_writes(&self, root: &Path) -> io::Result<WriteLock> {
        self.base.lock_writes(root)
    }

    fn write_confined(
        &self,
        lock: &WriteLock,
        root: &Path,
        relative: &str,
        contents: &[u8],
    ) -> io::Result<bool> {
        self.base.write_confined(lock, root, relative, contents)
    }

    fn is_ignored(&self, root: &Path, relative: &str) -> bool {
        self.base.is_ignored(root, relative)
    }

    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        match self.buffer(path) {
            Some(text) => Ok(Some(self.buffer_stamp(path, &text))),
            None => self.base.stamp(path),
        }
    }

    fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        match self.buffer(path) {
            Some(text) => Ok(Some(self.buffer_stamp(path, &text))),
            None => self.base.link_stamp(path),
        }
    }

    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.base.read_link(path)
    }

    fn now(&self) -> std::time::SystemTime {
        self.base.now()
    }

    fn read_stamped(&self, path: &Path) -> StampedRead {
        match self.buffer(path) {
            Some(text) => StampedRead {
                stamp: Some(self.buffer_stamp(path, &text)),
                contents: Ok(text.into_bytes()),
            },
            None => self.base.read_stamped(path),
        }
    }
}
