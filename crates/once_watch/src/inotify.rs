//! Linux: inotify directly, so that watching a directory is one system call.
//!
//! `notify`'s inotify watcher hands every `watch` call to its event-loop thread and waits
//! for the reply; for the one non-recursive watch per directory [`super::WorkspaceWatcher`]
//! keeps, that round trip made a 12,600-directory workspace take 870 ms to watch (about
//! 70 µs a directory). Here the caller adds the watch itself and a reader thread turns
//! the kernel's events into the same [`notify::Event`]s, on the same channel, so the
//! fence and the translation into change events are shared with the other platforms.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::SyncSender;
use std::sync::{Arc, Mutex, MutexGuard};

use inotify::{EventMask, Inotify, WatchDescriptor, WatchMask, Watches};
use notify::event::{
    CreateKind, DataChange, Flag, MetadataKind, ModifyKind, RemoveKind, RenameMode,
};
use notify::{Event, EventKind};

/// What a directory watch reports: entries created, deleted, written, renamed or given
/// other metadata (a `chmod`: permission bits are in action keys), and the directory
/// itself going away.
const WATCH_MASK: WatchMask = WatchMask::CREATE
    .union(WatchMask::DELETE)
    .union(WatchMask::MODIFY)
    .union(WatchMask::ATTRIB)
    .union(WatchMask::MOVED_FROM)
    .union(WatchMask::MOVED_TO)
    .union(WatchMask::DELETE_SELF)
    .union(WatchMask::MOVE_SELF);

type Directories = Arc<Mutex<HashMap<WatchDescriptor, PathBuf>>>;

/// An inotify instance whose events a thread of its own forwards.
///
/// The reader ends at its first event after this is dropped or after the receiving side
/// of the channel is gone, and closes the instance (and with it every watch) on its way
/// out; dropping this removes one watch, which is such an event.
pub(super) struct InotifyWatcher {
    watches: Watches,
    directories: Directories,
    stop: Arc<AtomicBool>,
}

impl InotifyWatcher {
    pub(super) fn new(sender: SyncSender<notify::Result<Event>>) -> io::Result<InotifyWatcher> {
        let inotify = Inotify::init()?;
        let watches = inotify.watches();
        let directories = Directories::default();
        let stop = Arc::new(AtomicBool::new(false));
        let reader = Reader {
            inotify,
            directories: directories.clone(),
            stop: stop.clone(),
            sender,
        };
        std::thread::Builder::new()
            .name("once-inotify".into())
            .spawn(move || reader.run())?;
        Ok(InotifyWatcher {
            watches,
            directories,
            stop,
        })
    }

    /// Watches one directory (not what is below it).
    pub(super) fn watch(&mut self, dir: &Path) -> io::Result<()> {
        // Hold the table while adding, so the reader cannot see an event of the new watch
        // before it knows which directory the watch is on.
        let mut directories = lock(&self.directories);
        let descriptor = self.watches.add(dir, WATCH_MASK)?;
        directories.insert(descriptor, dir.to_path_buf());
        Ok(())
    }
}

impl Drop for InotifyWatcher {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        // Wake the reader: removing a watch queues an event for it. (Without any watch
        // there is nothing to wake it, and nothing it could ever forward either.)
        let any = lock(&self.directories).keys().next().cloned();
        if let Some(descriptor) = any {
            let _ = self.watches.remove(descriptor);
        }
    }
}

struct Reader {
    inotify: Inotify,
    directories: Directories,
    stop: Arc<AtomicBool>,
    sender: SyncSender<notify::Result<Event>>,
}

impl Reader {
    fn run(mut self) {
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let events = match self.inotify.read_events_blocking(&mut buffer) {
                Ok(events) => events,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let _ = self.sender.send(Err(notify::Error::io(e)));
                    return;
                }
            };
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            for event in events {
                let Some(event) = self.convert(event.wd, event.mask, event.name) else {
                    continue;
                };
                if self.sender.send(Ok(event)).is_err() {
                    return;
                }
            }
        }
    }

    /// The `notify` event of one inotify event; `None` for bookkeeping events.
    fn convert(&self, wd: WatchDescriptor, mask: EventMask, name: Option<&OsStr>) -> Option<Event> {
        if mask.contains(EventMask::Q_OVERFLOW) {
            // Events were lost: only a rescan is correct now.
            return Some(Event::new(EventKind::Other).set_flag(Flag::Rescan));
        }
        let mut directories = lock(&self.directories);
        if mask.contains(EventMask::IGNORED) {
            directories.remove(&wd);
            return None;
        }
        let dir = directories.get(&wd)?;
        let path = match name {
            Some(name) => dir.join(name),
            None => dir.clone(),
        };
        drop(directories);
        let is_dir = mask.contains(EventMask::ISDIR);
        let kind = if mask.contains(EventMask::CREATE) {
            EventKind::Create(if is_dir {
                CreateKind::Folder
            } else {
                CreateKind::File
            })
        } else if mask.contains(EventMask::DELETE) {
            EventKind::Remove(if is_dir {
                RemoveKind::Folder
            } else {
                RemoveKind::File
            })
        } else if mask.intersects(EventMask::DELETE_SELF | EventMask::MOVE_SELF) {
            EventKind::Remove(RemoveKind::Folder)
        } else if mask.contains(EventMask::MOVED_FROM) {
            EventKind::Modify(ModifyKind::Name(RenameMode::From))
        } else if mask.contains(EventMask::MOVED_TO) {
            EventKind::Modify(ModifyKind::Name(RenameMode::To))
        } else if mask.contains(EventMask::MODIFY) {
            EventKind::Modify(ModifyKind::Data(DataChange::Content))
        } else if mask.contains(EventMask::ATTRIB) && !is_dir {
            EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any))
        } else {
            return None;
        };
        Some(Event::new(kind).add_path(path))
    }
}

fn lock(directories: &Directories) -> MutexGuard<'_, HashMap<WatchDescriptor, PathBuf>> {
    directories
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}
