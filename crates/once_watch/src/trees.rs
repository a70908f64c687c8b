//! Watching whole directory trees for any change at all: the workspace server's proof
//! that a build's outputs (`.once/out`) and its store's records and blobs are as a
//! build left them, so that it may answer the next identical no-op build from memory.
//!
//! [`TreeWatcher`] watches every directory below its roots (never through a symbolic
//! link), and [`TreeWatcher::changed`] is a fence like [`crate::WorkspaceWatcher::sync`]:
//! it writes a private marker and reads events until the marker's own arrives, so every
//! change made before the call is seen. It does not say what changed, only whether
//! anything did. Directories created below a root are watched as they appear. When it
//! cannot be sure it sees everything from now on (a root or a watched directory removed
//! or renamed, the kernel's queue overflowing, a fence timing out, watches running out)
//! it is *broken*: every later call answers `true`, and its owner makes a new one.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{Receiver, RecvTimeoutError, sync_channel};
use std::time::Instant;

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{Event, EventKind};

use crate::{Backend, EVENT_QUEUE_CAPACITY, Entry, FENCE_TIMEOUT, Watched, entry, new_fence_dir};

/// A watcher over every directory below some roots.
pub struct TreeWatcher {
    roots: Vec<PathBuf>,
    watcher: Option<Backend>,
    /// Declared before `fence_dir`: see [`crate::WorkspaceWatcher`].
    events: Receiver<notify::Result<Event>>,
    watched: BTreeSet<PathBuf>,
    fence_dir: Option<tempfile::TempDir>,
    fence_count: u64,
    broken: bool,
}

impl TreeWatcher {
    /// Watches every directory below each of `roots` (each must be a directory, not a
    /// link); `None` when one is not, or when the watches cannot be added.
    pub fn watch(roots: &[PathBuf]) -> Option<TreeWatcher> {
        let (sender, events) = sync_channel(EVENT_QUEUE_CAPACITY);
        let watcher = Backend::new(sender)?;
        let mut this = TreeWatcher {
            roots: roots.to_vec(),
            watcher: Some(watcher),
            events,
            watched: BTreeSet::new(),
            fence_dir: new_fence_dir(),
            fence_count: 0,
            broken: false,
        };
        let fence = this.fence_dir.as_ref()?.path().to_path_buf();
        this.watch_one(&fence);
        for root in roots {
            if entry(root) != Entry::Directory {
                return None;
            }
            this.watch_tree(root);
        }
        (!this.broken).then_some(this)
    }

    /// The roots watched.
    pub fn roots(&self) -> &[PathBuf] {
        &self.roots
    }

    /// Whether it can no longer tell (every [`TreeWatcher::changed`] answers `true`).
    pub fn is_broken(&self) -> bool {
        self.broken
    }

    /// Whether anything below the roots changed since the previous call (or since it
    /// started watching): every change made before this call counts. `true` whenever it
    /// cannot tell.
    pub fn changed(&mut self) -> bool {
        if self.broken {
            return true;
        }
        let Some(fence_dir) = self.fence_dir.as_ref().map(|d| d.path().to_path_buf()) else {
            self.broken = true;
            return true;
        };
        let previous = fence_dir.join(format!("fence-{}", self.fence_count));
        let _ = std::fs::remove_file(&previous);
        self.fence_count += 1;
        let fence = fence_dir.join(format!("fence-{}", self.fence_count));
        if std::fs::write(&fence, b"").is_err() {
            self.broken = true;
            return true;
        }
        let deadline = Instant::now() + FENCE_TIMEOUT;
        let mut changed = false;
        let mut created = Vec::new();
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            match self.events.recv_timeout(remaining) {
                Ok(Ok(event)) => {
                    if event.paths.contains(&fence) {
                        break;
                    }
                    if event.paths.iter().any(|p| p.starts_with(&fence_dir)) {
                        continue;
                    }
                    if event.need_rescan() {
                        self.broken = true;
                        return true;
                    }
                    changed = true;
                    match event.kind {
                        EventKind::Create(CreateKind::Folder) => created.extend(event.paths),
                        EventKind::Create(_) => created.extend(
                            event
                                .paths
                                .into_iter()
                                .filter(|p| entry(p) == Entry::Directory),
                        ),
                        // A directory gone or renamed: its watches are stale.
                        EventKind::Remove(RemoveKind::Folder) => self.broken = true,
                        EventKind::Modify(ModifyKind::Name(_))
                            if event.paths.iter().any(|p| {
                                self.watched.contains(p) || entry(p) == Entry::Directory
                            }) =>
                        {
                            self.broken = true;
                        }
                        _ => {}
                    }
                }
                Ok(Err(_))
                | Err(RecvTimeoutError::Timeout)
                | Err(RecvTimeoutError::Disconnected) => {
                    self.broken = true;
                    return true;
                }
            }
        }
        for dir in created {
            self.watch_tree(&dir);
        }
        changed || self.broken
    }

    fn watch_one(&mut self, dir: &Path) {
        let Some(watcher) = self.watcher.as_mut() else {
            self.broken = true;
            return;
        };
        match watcher.watch(dir) {
            Watched::Yes => {
                self.watched.insert(dir.to_path_buf());
            }
            Watched::Gone => {}
            Watched::Failed => {
                self.watcher = None;
                self.broken = true;
            }
        }
    }

    /// Watches `dir` and every directory below it, never through a link.
    fn watch_tree(&mut self, dir: &Path) {
        let mut pending = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            if self.broken {
                return;
            }
            if entry(&dir) != Entry::Directory || self.watched.contains(&dir) {
                continue;
            }
            self.watch_one(&dir);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                pending.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| e.path()),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_below_the_roots_is_seen_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let out = root.join("out");
        let store = root.join("store");
        std::fs::create_dir_all(out.join("p/t")).unwrap();
        std::fs::create_dir_all(store.join("ab")).unwrap();
        std::fs::write(out.join("p/t/file"), "x").unwrap();
        assert!(TreeWatcher::watch(&[root.join("missing")]).is_none());
        let Some(mut watcher) = TreeWatcher::watch(&[out.clone(), store.clone()]) else {
            // No inotify here: the server never answers from memory.
            return;
        };
        assert!(!watcher.changed());
        // Outside the roots: nothing.
        std::fs::write(root.join("elsewhere"), "x").unwrap();
        assert!(!watcher.changed());
        // A file written, deleted, given other permissions: a change, once.
        std::fs::write(out.join("p/t/file"), "y").unwrap();
        assert!(watcher.changed());
        assert!(!watcher.changed());
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(out.join("p/t/file"), std::fs::Permissions::from_mode(0o600))
            .unwrap();
        assert!(watcher.changed());
        std::fs::remove_file(out.join("p/t/file")).unwrap();
        assert!(watcher.changed());
        // A new directory is watched from then on.
        std::fs::create_dir_all(store.join("cd/ef")).unwrap();
        assert!(watcher.changed());
        assert!(!watcher.changed());
        std::fs::write(store.join("cd/ef/blob"), "z").unwrap();
        assert!(watcher.changed());
        assert!(!watcher.broken);
        // A directory removed: broken for good.
        std::fs::remove_dir_all(out.join("p")).unwrap();
        assert!(watcher.changed());
        assert!(watcher.is_broken());
        assert!(watcher.changed());
    }
}
