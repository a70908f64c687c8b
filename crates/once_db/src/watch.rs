//! Watching the workspace for changes, for long-running servers.
//!
//! [`WorkspaceWatcher`] watches every walked directory (not recursively, so ignored trees
//! such as `target/` cost nothing) and turns file-system events into [`ChangeEvent`]s.
//! [`WorkspaceWatcher::sync`] is a fence: it writes a private marker file and collects
//! events until the marker's own event arrives. Events of one watcher are delivered in
//! order, so every change made before `sync` was called is in its answer. When the
//! watcher is unavailable or the fence times out, `sync` answers [`ChangeEvent::Rescan`],
//! which is always correct, only slower.
//!
//! On Linux the watches are inotify's, added directly ([`inotify`]); elsewhere they are
//! `notify`'s recommended watcher's.

#[cfg(target_os = "linux")]
mod inotify;

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{Event, EventKind};

use crate::changes::ChangeEvent;
use crate::system::{DirectoryHook, SKIPPED_DIRECTORIES, walk_directories};

/// How long `sync` waits for its own marker before falling back to a rescan.
const FENCE_TIMEOUT: Duration = Duration::from_secs(2);

/// What delivers the events of watched directories into one channel.
enum Backend {
    #[cfg(target_os = "linux")]
    Inotify(inotify::InotifyWatcher),
    #[cfg(not(target_os = "linux"))]
    Notify(notify::RecommendedWatcher),
}

impl Backend {
    fn new(sender: std::sync::mpsc::Sender<notify::Result<Event>>) -> Option<Backend> {
        #[cfg(target_os = "linux")]
        {
            inotify::InotifyWatcher::new(sender)
                .ok()
                .map(Backend::Inotify)
        }
        #[cfg(not(target_os = "linux"))]
        {
            notify::recommended_watcher(move |event| {
                let _ = sender.send(event);
            })
            .ok()
            .map(Backend::Notify)
        }
    }

    /// Watches one directory, not recursively.
    fn watch(&mut self, dir: &Path) -> bool {
        match self {
            #[cfg(target_os = "linux")]
            Backend::Inotify(watcher) => watcher.watch(dir).is_ok(),
            #[cfg(not(target_os = "linux"))]
            Backend::Notify(watcher) => {
                use notify::Watcher as _;
                watcher
                    .watch(dir, notify::RecursiveMode::NonRecursive)
                    .is_ok()
            }
        }
    }
}

/// A watcher over the workspace's directories.
pub struct WorkspaceWatcher {
    root: PathBuf,
    watcher: Option<Backend>,
    /// Declared before `fence_dir`, so it is dropped first: removing the fence directory
    /// then wakes the Linux reader thread, which finds nobody listening and ends.
    events: Receiver<notify::Result<Event>>,
    watched: BTreeSet<PathBuf>,
    fence_dir: Option<tempfile::TempDir>,
    fence_count: u64,
}

impl WorkspaceWatcher {
    /// Walks `root` like [`crate::OsSystem`]'s walk and watches every directory of it,
    /// each before the walk reads it, so that no change made during or after the walk is
    /// missed; returns the watcher and the walk's files (one walk instead of a walk to
    /// find the directories and another to load). Without a working watcher, every
    /// `sync` is a rescan.
    pub fn watch_and_walk(root: &Path) -> (WorkspaceWatcher, io::Result<Vec<String>>) {
        let (sender, events) = channel();
        let backend = Backend::new(sender).map(Mutex::new).map(Arc::new);
        let watched = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(AtomicBool::new(false));
        let hook: Option<DirectoryHook> = backend.clone().map(|backend| {
            let watched = watched.clone();
            let failed = failed.clone();
            Arc::new(move |dir: &Path| {
                let added = backend.lock().is_ok_and(|mut backend| backend.watch(dir));
                if !added {
                    failed.store(true, Ordering::Relaxed);
                } else if let Ok(mut watched) = watched.lock() {
                    watched.push(dir.to_path_buf());
                }
            }) as DirectoryHook
        });
        let files = walk_directories(root, hook);
        // The walk's threads are done: the hook's clones are gone.
        let watcher = backend
            .and_then(Arc::into_inner)
            .and_then(|backend| backend.into_inner().ok())
            .filter(|_| !failed.load(Ordering::Relaxed));
        let watched = std::mem::take(&mut *watched.lock().unwrap_or_else(|p| p.into_inner()));
        let mut this = WorkspaceWatcher {
            root: root.to_path_buf(),
            watcher,
            events,
            watched: watched.into_iter().collect(),
            fence_dir: new_fence_dir(),
            fence_count: 0,
        };
        if let Some(fence) = this.fence_dir.as_ref().map(|d| d.path().to_path_buf()) {
            this.watch(&fence);
        }
        (this, files)
    }

    /// Whether events are being delivered (false means every sync is a rescan).
    pub fn is_active(&self) -> bool {
        self.watcher.is_some() && self.fence_dir.is_some()
    }

    fn watch(&mut self, dir: &Path) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        if self.watched.contains(dir) {
            return;
        }
        if watcher.watch(dir) {
            self.watched.insert(dir.to_path_buf());
        } else {
            self.watcher = None;
        }
    }

    /// Every change made before this call, as change events.
    pub fn sync(&mut self) -> Vec<ChangeEvent> {
        let Some(fence_dir) = self.fence_dir.as_ref().map(|d| d.path().to_path_buf()) else {
            return vec![ChangeEvent::Rescan];
        };
        if self.watcher.is_none() {
            return vec![ChangeEvent::Rescan];
        }
        // A new marker file each time: events of earlier markers (their modification,
        // close and removal arrive late) must not end this fence early.
        let previous = fence_dir.join(format!("fence-{}", self.fence_count));
        self.fence_count += 1;
        let fence = fence_dir.join(format!("fence-{}", self.fence_count));
        let _ = std::fs::remove_file(&previous);
        if std::fs::write(&fence, b"").is_err() {
            return vec![ChangeEvent::Rescan];
        }
        let deadline = Instant::now() + FENCE_TIMEOUT;
        let mut changes = Vec::new();
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
                    self.translate(event, &mut changes);
                }
                Ok(Err(_)) => changes.push(ChangeEvent::Rescan),
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    changes.push(ChangeEvent::Rescan);
                    break;
                }
            }
        }
        if changes.contains(&ChangeEvent::Rescan) {
            return vec![ChangeEvent::Rescan];
        }
        changes.dedup();
        changes
    }

    fn translate(&mut self, event: Event, changes: &mut Vec<ChangeEvent>) {
        if event.need_rescan() {
            changes.push(ChangeEvent::Rescan);
            return;
        }
        for path in event.paths.clone() {
            if self.is_skipped(&path) {
                continue;
            }
            match event.kind {
                EventKind::Create(CreateKind::Folder) => {
                    self.watch_tree(&path);
                    changes.push(ChangeEvent::Rescan);
                }
                EventKind::Create(_) => {
                    if path.is_dir() {
                        self.watch_tree(&path);
                        changes.push(ChangeEvent::Rescan);
                    } else {
                        changes.push(ChangeEvent::Created(path));
                    }
                }
                EventKind::Remove(RemoveKind::Folder) => changes.push(ChangeEvent::Rescan),
                EventKind::Remove(_) => {
                    if self.watched.contains(&path) {
                        changes.push(ChangeEvent::Rescan);
                    } else {
                        changes.push(ChangeEvent::Deleted(path));
                    }
                }
                EventKind::Modify(ModifyKind::Name(_)) => {
                    if path.is_dir() || self.watched.contains(&path) {
                        self.watch_tree(&path);
                        changes.push(ChangeEvent::Rescan);
                    } else if path.exists() {
                        changes.push(ChangeEvent::Created(path));
                    } else {
                        changes.push(ChangeEvent::Deleted(path));
                    }
                }
                EventKind::Modify(ModifyKind::Metadata(_)) | EventKind::Access(_) => {}
                EventKind::Modify(_) | EventKind::Any | EventKind::Other => {
                    changes.push(ChangeEvent::Changed(path));
                }
            }
        }
    }

    /// Watches a new directory and every directory below it.
    fn watch_tree(&mut self, dir: &Path) {
        let mut pending = vec![dir.to_path_buf()];
        while let Some(dir) = pending.pop() {
            if !dir.is_dir() || self.is_skipped(&dir) {
                continue;
            }
            self.watch(&dir);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                pending.extend(entries.flatten().map(|e| e.path()).filter(|p| p.is_dir()));
            }
        }
    }

    /// Paths below hidden or skipped directories, or outside the root.
    fn is_skipped(&self, path: &Path) -> bool {
        let Ok(relative) = path.strip_prefix(&self.root) else {
            return true;
        };
        relative.components().any(|c| {
            let name = c.as_os_str().to_string_lossy();
            name.starts_with('.') || SKIPPED_DIRECTORIES.contains(&name.as_ref())
        })
    }
}

/// The private directory the fence's marker files are written in.
fn new_fence_dir() -> Option<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("once-watch-")
        .tempdir()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sorted, root-relative descriptions of the changes `sync` reports.
    fn check(watcher: &mut WorkspaceWatcher, root: &Path, expected: &[&str]) {
        let mut actual: Vec<String> = watcher
            .sync()
            .into_iter()
            .map(|change| match change {
                ChangeEvent::Changed(p) => {
                    format!("changed {}", p.strip_prefix(root).unwrap_or(&p).display())
                }
                ChangeEvent::Created(p) => {
                    format!("created {}", p.strip_prefix(root).unwrap_or(&p).display())
                }
                ChangeEvent::Deleted(p) => {
                    format!("deleted {}", p.strip_prefix(root).unwrap_or(&p).display())
                }
                ChangeEvent::Rescan => "rescan".to_owned(),
            })
            .collect();
        actual.sort();
        actual.dedup();
        assert_eq!(actual, expected);
    }

    #[test]
    fn sync_reports_every_change_made_before_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("a")).unwrap();
        std::fs::write(root.join("a/once.toml"), "").unwrap();
        let (mut watcher, _) = WorkspaceWatcher::watch_and_walk(&root);
        if !watcher.is_active() {
            // No inotify here: every sync is a rescan, which is correct too.
            check(&mut watcher, &root, &["rescan"]);
            return;
        }
        check(&mut watcher, &root, &[]);
        for round in 0..5 {
            std::fs::write(root.join("a/once.toml"), format!("# {round}\n")).unwrap();
            check(&mut watcher, &root, &["changed a/once.toml"]);
            check(&mut watcher, &root, &[]);
        }
        std::fs::write(root.join("a/new.txt"), "x").unwrap();
        std::fs::remove_file(root.join("a/new.txt")).unwrap();
        let changes = watcher.sync();
        assert!(
            changes.contains(&ChangeEvent::Deleted(root.join("a/new.txt"))),
            "{changes:?}"
        );
        std::fs::create_dir(root.join("b")).unwrap();
        check(&mut watcher, &root, &["rescan"]);
        std::fs::write(root.join("b/once.toml"), "").unwrap();
        check(&mut watcher, &root, &["created b/once.toml"]);
        std::fs::create_dir_all(root.join("target/debug")).unwrap();
        std::fs::write(root.join("target/debug/x"), "").unwrap();
        check(&mut watcher, &root, &[]);
        // A rename is the old name deleted and the new one created.
        std::fs::rename(root.join("b/once.toml"), root.join("b/renamed.toml")).unwrap();
        check(
            &mut watcher,
            &root,
            &["created b/renamed.toml", "deleted b/once.toml"],
        );
        // Directories made in one go are watched all the way down.
        std::fs::create_dir_all(root.join("c/d/e")).unwrap();
        check(&mut watcher, &root, &["rescan"]);
        std::fs::write(root.join("c/d/e/once.toml"), "").unwrap();
        check(&mut watcher, &root, &["created c/d/e/once.toml"]);
        // A removed directory is a rescan.
        std::fs::remove_dir_all(root.join("c")).unwrap();
        check(&mut watcher, &root, &["rescan"]);
        check(&mut watcher, &root, &[]);
    }

    /// The watching walk returns what the plain walk returns and watches every directory
    /// it read, empty ones included, and none it skipped.
    #[test]
    fn watch_and_walk_finds_the_files_and_watches_every_walked_directory() {
        use crate::system::{OsSystem, System};
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        for (path, text) in [
            ("once.toml", "[workspace]\n"),
            ("a/once.toml", ""),
            ("a/src/lib.rs", ""),
            (".hidden/x.txt", ""),
            ("target/debug/y", ""),
        ] {
            std::fs::create_dir_all(root.join(path).parent().unwrap()).unwrap();
            std::fs::write(root.join(path), text).unwrap();
        }
        std::fs::create_dir_all(root.join("a/empty")).unwrap();
        let (mut watcher, files) = WorkspaceWatcher::watch_and_walk(&root);
        assert_eq!(files.unwrap(), OsSystem.walk(&root).unwrap());
        if !watcher.is_active() {
            check(&mut watcher, &root, &["rescan"]);
            return;
        }
        check(&mut watcher, &root, &[]);
        std::fs::write(root.join("a/empty/new.rs"), "").unwrap();
        check(&mut watcher, &root, &["created a/empty/new.rs"]);
        std::fs::write(root.join("a/src/lib.rs"), "fn f() {}\n").unwrap();
        check(&mut watcher, &root, &["changed a/src/lib.rs"]);
        std::fs::write(root.join("target/debug/z"), "").unwrap();
        std::fs::write(root.join(".hidden/z"), "").unwrap();
        check(&mut watcher, &root, &[]);
    }

    /// Dropping a watcher releases its inotify instance and reader thread.
    #[cfg(target_os = "linux")]
    #[test]
    fn dropped_watchers_release_their_instance() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let open_files = || std::fs::read_dir("/proc/self/fd").map(|d| d.count()).ok();
        let before = open_files();
        for _ in 0..20 {
            let (mut watcher, _) = WorkspaceWatcher::watch_and_walk(&root);
            assert!(watcher.sync().is_empty());
        }
        // A backend dropped while its channel still has a receiver (a watcher that fell
        // back to rescans keeps the receiver) stops as well.
        let (sender, receiver) = channel();
        for _ in 0..20 {
            let mut backend = inotify::InotifyWatcher::new(sender.clone()).unwrap();
            backend.watch(&root).unwrap();
        }
        // The readers close their instances asynchronously, right after the drop.
        let deadline = Instant::now() + Duration::from_secs(5);
        while open_files() > before.map(|n| n + 2) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert!(
            open_files() <= before.map(|n| n + 2),
            "{before:?} -> {:?}",
            open_files()
        );
        drop(receiver);
    }
}
