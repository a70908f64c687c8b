//! Watching the workspace for changes, for long-running servers.
//!
//! This crate is the file watcher kept apart from `once_db`: it reads the disk, the clock
//! and the kernel's notifications directly, which the core crates never do (they go
//! through `once_db::System`). It shares the walk and its exclusion rules with `once_db`
//! and answers in `once_db`'s [`ChangeEvent`]s.
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
//!
//! Churn stays bounded: events wait in a channel of at most [`EVENT_QUEUE_CAPACITY`]
//! (past it the kernel's own queue overflows, which is a rescan); once a sync knows it
//! must rescan, the remaining events are only drained; new directories are watched once
//! per sync however many events name them; and like the walk, the watcher never follows
//! a symbolic link, so swapping a directory with a link to a large tree costs nothing.

#[cfg(target_os = "linux")]
mod inotify;
mod trees;

pub use trees::TreeWatcher;

use std::collections::BTreeSet;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{Event, EventKind};

use once_db::ChangeEvent;
use once_db::system::{DirectoryHook, SKIPPED_DIRECTORIES, Walked, walk_directories};

/// How long `sync` waits for its own marker before falling back to a rescan.
const FENCE_TIMEOUT: Duration = Duration::from_secs(2);

/// Events waiting for the next `sync`. When the queue is full the backend waits, the
/// kernel's queue overflows and the next `sync` rescans: memory stays bounded whatever
/// the rate of changes between two syncs.
pub const EVENT_QUEUE_CAPACITY: usize = 16 * 1024;

/// What delivers the events of watched directories into one channel.
enum Backend {
    #[cfg(target_os = "linux")]
    Inotify(inotify::InotifyWatcher),
    #[cfg(not(target_os = "linux"))]
    Notify(notify::RecommendedWatcher),
}

impl Backend {
    fn new(sender: SyncSender<notify::Result<Event>>) -> Option<Backend> {
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
    fn watch(&mut self, dir: &Path) -> Watched {
        #[cfg(target_os = "linux")]
        let outcome = match self {
            Backend::Inotify(watcher) => watcher.watch(dir),
        };
        #[cfg(not(target_os = "linux"))]
        let outcome = match self {
            Backend::Notify(watcher) => {
                use notify::Watcher as _;
                watcher
                    .watch(dir, notify::RecursiveMode::NonRecursive)
                    .map_err(|e| match e.kind {
                        notify::ErrorKind::Io(io) => io,
                        notify::ErrorKind::PathNotFound => io::ErrorKind::NotFound.into(),
                        _ => io::Error::other(e),
                    })
            }
        };
        match outcome {
            Ok(()) => Watched::Yes,
            // The directory went away (or was replaced) since the event naming it: there is
            // nothing to watch, and the change itself is a rescan.
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                Watched::Gone
            }
            Err(_) => Watched::Failed,
        }
    }
}

/// What adding one watch did.
enum Watched {
    Yes,
    Gone,
    /// The backend cannot watch (out of watches, say): fall back to rescans.
    Failed,
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
    /// Walks `root` like [`once_db::OsSystem`]'s walk and watches every directory of it,
    /// each before the walk reads it, so that no change made during or after the walk is
    /// missed; returns the watcher and the walk's files (one walk instead of a walk to
    /// find the directories and another to load). Without a working watcher, every
    /// `sync` is a rescan.
    pub fn watch_and_walk(root: &Path) -> (WorkspaceWatcher, io::Result<Walked>) {
        let (sender, events) = sync_channel(EVENT_QUEUE_CAPACITY);
        let backend = Backend::new(sender).map(Mutex::new).map(Arc::new);
        let watched = Arc::new(Mutex::new(Vec::new()));
        let failed = Arc::new(AtomicBool::new(false));
        let hook: Option<DirectoryHook> = backend.clone().map(|backend| {
            let watched = watched.clone();
            let failed = failed.clone();
            Arc::new(move |dir: &Path| {
                let added = backend
                    .lock()
                    .is_ok_and(|mut backend| !matches!(backend.watch(dir), Watched::Failed));
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
            this.watch(&fence, false);
        }
        (this, files)
    }

    /// Whether events are being delivered (false means every sync is a rescan).
    pub fn is_active(&self) -> bool {
        self.watcher.is_some() && self.fence_dir.is_some()
    }

    /// Watches `dir` unless it is watched already; `again` adds the watch anyway, so that
    /// a directory renamed onto a watched path has its events reported under that path.
    fn watch(&mut self, dir: &Path, again: bool) {
        let Some(watcher) = self.watcher.as_mut() else {
            return;
        };
        if !again && self.watched.contains(dir) {
            return;
        }
        match watcher.watch(dir) {
            Watched::Yes => {
                self.watched.insert(dir.to_path_buf());
            }
            Watched::Gone => {}
            Watched::Failed => self.watcher = None,
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
        let _ = std::fs::remove_file(&previous);
        let Some(mut fence) = self.write_fence(&fence_dir) else {
            return vec![ChangeEvent::Rescan];
        };
        let deadline = Instant::now() + FENCE_TIMEOUT;
        let mut batch = Batch::default();
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
                        // Events were lost, perhaps the marker's own: write another one
                        // (the kernel's queue has room again) and wait for that.
                        batch.rescan = true;
                        match self.write_fence(&fence_dir) {
                            Some(next) => fence = next,
                            None => break,
                        }
                        continue;
                    }
                    self.translate(event, &mut batch);
                }
                Ok(Err(_)) => batch.rescan = true,
                Err(RecvTimeoutError::Timeout) | Err(RecvTimeoutError::Disconnected) => {
                    batch.rescan = true;
                    break;
                }
            }
        }
        // Each directory an event named is watched once, however many events named it.
        for (dir, renamed) in std::mem::take(&mut batch.directories) {
            self.watch_tree(&dir, renamed);
        }
        if batch.rescan {
            return vec![ChangeEvent::Rescan];
        }
        batch.changes.dedup();
        batch.changes
    }

    /// Writes the next fence marker; `None` when it cannot be written.
    fn write_fence(&mut self, fence_dir: &Path) -> Option<PathBuf> {
        self.fence_count += 1;
        let fence = fence_dir.join(format!("fence-{}", self.fence_count));
        std::fs::write(&fence, b"").ok().map(|()| fence)
    }

    fn translate(&mut self, event: Event, batch: &mut Batch) {
        for path in event.paths {
            if self.is_skipped(&path) {
                continue;
            }
            // After a rescan is decided only new directories still matter (to be watched).
            let changes = &mut batch.changes;
            match event.kind {
                EventKind::Create(CreateKind::Folder) => {
                    batch.directories.insert(path, false);
                    batch.rescan = true;
                }
                EventKind::Create(_) => match entry(&path) {
                    Entry::Directory => {
                        batch.directories.insert(path, false);
                        batch.rescan = true;
                    }
                    // The walk does not follow links: let it decide what one means.
                    Entry::Link => batch.rescan = true,
                    Entry::File | Entry::Missing if batch.rescan => {}
                    Entry::File | Entry::Missing => changes.push(ChangeEvent::Created(path)),
                },
                EventKind::Remove(RemoveKind::Folder) => batch.rescan = true,
                EventKind::Remove(_) => {
                    if self.watched.contains(&path) {
                        batch.rescan = true;
                    } else if !batch.rescan {
                        changes.push(ChangeEvent::Deleted(path));
                    }
                }
                EventKind::Modify(ModifyKind::Name(_)) => match entry(&path) {
                    Entry::Directory => {
                        batch.directories.insert(path, true);
                        batch.rescan = true;
                    }
                    _ if self.watched.contains(&path) => batch.rescan = true,
                    Entry::Link => batch.rescan = true,
                    _ if batch.rescan => {}
                    Entry::File => changes.push(ChangeEvent::Created(path)),
                    Entry::Missing => changes.push(ChangeEvent::Deleted(path)),
                },
                // A file's permission bits are in the keys of the actions reading it.
                EventKind::Modify(ModifyKind::Metadata(_)) => {
                    if !batch.rescan && entry(&path) == Entry::File {
                        changes.push(ChangeEvent::Changed(path));
                    }
                }
                EventKind::Access(_) => {}
                EventKind::Modify(_) | EventKind::Any | EventKind::Other => {
                    if !batch.rescan {
                        changes.push(ChangeEvent::Changed(path));
                    }
                }
            }
        }
    }

    /// Watches a new (or renamed) directory and every directory below it, never through a
    /// symbolic link (the walk does not follow them either).
    fn watch_tree(&mut self, dir: &Path, renamed: bool) {
        let mut pending = vec![(dir.to_path_buf(), renamed)];
        while let Some((dir, again)) = pending.pop() {
            if entry(&dir) != Entry::Directory || self.is_skipped(&dir) {
                continue;
            }
            self.watch(&dir, again);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                pending.extend(
                    entries
                        .flatten()
                        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                        .map(|e| (e.path(), again)),
                );
            }
        }
    }

    /// Whether a change to `path` (a file or directory) reaches the next [`sync`]: it is
    /// not below a hidden or skipped directory, its directory is watched and, when it is
    /// a directory, so is it. (A file ignored by `.gitignore` in a watched directory is
    /// reported like any other.)
    ///
    /// [`sync`]: WorkspaceWatcher::sync
    pub fn covers(&self, path: &Path) -> bool {
        if self.watcher.is_none() || self.is_skipped(path) {
            return false;
        }
        let parent_watched = path.parent().is_some_and(|dir| self.watched.contains(dir));
        parent_watched && (entry(path) != Entry::Directory || self.watched.contains(path))
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

/// What one `sync` collected.
#[derive(Default)]
struct Batch {
    changes: Vec<ChangeEvent>,
    /// Only a rescan is correct: `changes` stops growing.
    rescan: bool,
    /// Directories to watch after the fence, each with whether it was renamed.
    directories: std::collections::BTreeMap<PathBuf, bool>,
}

/// What is at a path, without following a symbolic link.
#[derive(PartialEq)]
enum Entry {
    Directory,
    Link,
    File,
    Missing,
}

fn entry(path: &Path) -> Entry {
    match path.symlink_metadata() {
        Ok(m) if m.is_dir() => Entry::Directory,
        Ok(m) if m.file_type().is_symlink() => Entry::Link,
        Ok(_) => Entry::File,
        Err(_) => Entry::Missing,
    }
}

/// The prefix of fence directories in the system's temporary directory; the process id
/// follows, so a later process can tell the directories of dead ones.
const FENCE_PREFIX: &str = "once-watch-";

/// The fence directories of this process, so an exit that skips destructors (a signal
/// handler calling `exit`) can still remove them ([`remove_fence_dirs`]).
static LIVE_FENCE_DIRS: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// The private directory the fence's marker files are written in. Directories left by
/// processes that died without removing theirs (killed) are removed first.
fn new_fence_dir() -> Option<tempfile::TempDir> {
    remove_dead_fence_dirs(&std::env::temp_dir());
    let dir = tempfile::Builder::new()
        .prefix(&format!("{FENCE_PREFIX}{}-", std::process::id()))
        .tempdir()
        .ok()?;
    if let Ok(mut live) = LIVE_FENCE_DIRS.lock() {
        live.push(dir.path().to_path_buf());
    }
    Some(dir)
}

/// Removes this process's fence directories; for exits that skip destructors.
pub fn remove_fence_dirs() {
    if let Ok(mut live) = LIVE_FENCE_DIRS.lock() {
        for dir in live.drain(..) {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// Removes the fence directories in `temp` whose process no longer exists.
fn remove_dead_fence_dirs(temp: &Path) {
    let Ok(entries) = std::fs::read_dir(temp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|name| name.strip_prefix(FENCE_PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let alive = Path::new("/proc").join(pid.to_string()).exists();
        // Only directories, never followed through a link.
        let is_directory = entry.file_type().is_ok_and(|t| t.is_dir());
        if !alive && is_directory && pid != std::process::id() {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
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
        // A `chmod` is a change: permission bits are in action keys.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            let permissions = std::fs::Permissions::from_mode(0o755);
            std::fs::set_permissions(root.join("a/once.toml"), permissions).unwrap();
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
        use once_db::{OsSystem, System};
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
        assert_eq!(files.unwrap(), OsSystem.walk_entries(&root).unwrap());
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

    /// A directory swapped with a symbolic link to a large outside tree, thousands of
    /// times between two syncs: the watcher never walks or watches through the link, the
    /// next sync answers promptly with a rescan, and the watcher keeps working.
    #[cfg(unix)]
    #[test]
    fn churn_through_a_symbolic_link_stays_cheap() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().canonicalize().unwrap();
        let root = base.join("ws");
        let outside = base.join("outside");
        for i in 0..1000 {
            std::fs::create_dir_all(outside.join(format!("d{i}"))).unwrap();
        }
        std::fs::create_dir_all(root.join("pkg/src")).unwrap();
        std::fs::write(root.join("pkg/once.toml"), "").unwrap();
        std::os::unix::fs::symlink(&outside, root.join("link")).unwrap();
        let (mut watcher, _) = WorkspaceWatcher::watch_and_walk(&root);
        if !watcher.is_active() {
            check(&mut watcher, &root, &["rescan"]);
            return;
        }
        check(&mut watcher, &root, &[]);
        let watched_before = watcher.watched.len();

        // `pkg` and `link` trade places (three renames) until the deadline, ending where
        // they started.
        let churn = |rounds_until: Instant| {
            let (pkg, link, swap) = (root.join("pkg"), root.join("link"), root.join("swap"));
            let mut rounds = 0;
            while Instant::now() < rounds_until {
                for _ in 0..100 {
                    std::fs::rename(&pkg, &swap).unwrap();
                    std::fs::rename(&link, &pkg).unwrap();
                    std::fs::rename(&swap, &link).unwrap();
                    std::fs::rename(&link, &swap).unwrap();
                    std::fs::rename(&pkg, &link).unwrap();
                    std::fs::rename(&swap, &pkg).unwrap();
                    rounds += 1;
                }
            }
            rounds
        };
        let rounds = churn(Instant::now() + Duration::from_secs(3));
        let started = Instant::now();
        let changes = watcher.sync();
        let took = started.elapsed();
        assert_eq!(changes, [ChangeEvent::Rescan]);
        assert!(
            took < Duration::from_secs(5),
            "the sync after {rounds} swaps took {took:?}"
        );
        assert!(
            watcher.is_active(),
            "a vanished directory is no watch failure"
        );
        assert!(
            watcher.watched.len() <= watched_before + 2,
            "nothing is watched through the link: {} watches, {watched_before} before",
            watcher.watched.len()
        );
        // Settled: no change, and changes inside the directory are seen again.
        check(&mut watcher, &root, &[]);
        std::fs::write(root.join("pkg/src/lib.rs"), "").unwrap();
        check(&mut watcher, &root, &["created pkg/src/lib.rs"]);
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
        let (sender, receiver) = sync_channel(EVENT_QUEUE_CAPACITY);
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

    /// A fence directory whose process is gone is removed by the next watcher; a live
    /// process's and other names are left alone.
    #[test]
    fn fence_directories_of_dead_processes_are_swept() {
        let temp = tempfile::tempdir().unwrap();
        let dead = temp
            .path()
            .join(format!("{FENCE_PREFIX}{}-abc", u32::MAX - 7));
        let live = temp
            .path()
            .join(format!("{FENCE_PREFIX}{}-def", std::process::id()));
        let other = temp.path().join(format!("{FENCE_PREFIX}old-format"));
        for dir in [&dead, &live, &other] {
            std::fs::create_dir(dir).unwrap();
            std::fs::write(dir.join("fence-1"), "").unwrap();
        }
        remove_dead_fence_dirs(temp.path());
        assert!(!dead.exists());
        assert!(live.exists() && other.exists());
    }
}
