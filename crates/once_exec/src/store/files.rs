//! The store's files other than blobs: the action records by key, and the small files
//! its clients keep in `derived/` (`tools`, `probes`, `plans`, record indexes, last plans), framed and
//! checked on read ([`once_model::framed`]): a damaged one is removed, and a warning kept
//! for the front end ([`Store::take_warnings`]).

use std::io::{self, Read as _};
use std::time::{Duration, SystemTime};

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format, Unframed};
use rustix::fs::{AtFlags, FileType, fstat, unlinkat};
use rustix::io::Errno;

use super::{Store, fan_out, modification_time, timestamps_now, used_recently};
use crate::handles;
use crate::record::{ActionRecord, RecordDamage};

/// What the record file of a key turned out to be ([`Store::read_record_used`]).
#[derive(Debug)]
pub enum RecordRead {
    /// An intact record, and when it was last used.
    Found(ActionRecord, SystemTime),
    /// No record (or one of another version of `once`): a miss.
    Absent,
    /// A damaged record, now removed: a miss to report.
    Damaged(Damage),
}

/// The body of an intact framed file read whole ([`Store::read_framed`]).
pub struct FramedBody {
    bytes: Vec<u8>,
    body: std::ops::Range<usize>,
}

impl std::ops::Deref for FramedBody {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        &self.bytes[self.body.clone()]
    }
}

impl Store {
    /// The record of `key`, or `None` (no record, or none intact: a damaged one is
    /// removed).
    pub fn read_record(&self, key: &Sha256Digest) -> Option<ActionRecord> {
        match self.read_record_used(key) {
            RecordRead::Found(record, _) => Some(record),
            RecordRead::Absent | RecordRead::Damaged(_) => None,
        }
    }

    /// The record of `key` and when it was last used (its modification time: written or
    /// touched by [`Store::touch_record_if_stale`]); a damaged record (not intact, or not
    /// a regular file) is removed and answered as such, for the caller to report.
    ///
    /// A record is never written in place (it reaches its name by `renameat`), so the size
    /// its open handle reports is the size of what can be read from it: it is read with
    /// one `read` into a buffer of exactly that size instead of growing a buffer until
    /// the end of the file.
    pub fn read_record_used(&self, key: &Sha256Digest) -> RecordRead {
        let (directory, name) = fan_out(key);
        let relative = format!("{directory}/{name}");
        let mut file = match handles::open_file(&self.actions, &relative) {
            Ok(Some(file)) => file,
            Ok(None) => return RecordRead::Absent,
            Err(e) if e.raw_os_error() == Some(Errno::LOOP.raw_os_error()) => {
                self.forget_record(key);
                return RecordRead::Damaged(Damage::NotAFile);
            }
            Err(_) => return RecordRead::Absent,
        };
        let Ok(stat) = fstat(&file) else {
            return RecordRead::Absent;
        };
        if handles::file_type(&stat) != FileType::RegularFile {
            drop(file);
            if let Some(fan) = handles::open_directory(&self.actions, &directory)
                .ok()
                .flatten()
            {
                let _ = handles::remove_entry(&fan, &name);
            }
            return RecordRead::Damaged(Damage::NotAFile);
        }
        let Ok(size) = usize::try_from(stat.st_size) else {
            return RecordRead::Absent;
        };
        let mut bytes = vec![0u8; size];
        // A short read (not expected from a regular file) is completed; a file that ends
        // early is not a complete record.
        if file.read_exact(&mut bytes).is_err() {
            return RecordRead::Absent;
        }
        match ActionRecord::decode(key, &bytes) {
            Ok(record) => RecordRead::Found(record, modification_time(&stat)),
            Err(RecordDamage::OtherVersion) => RecordRead::Absent,
            Err(RecordDamage::Damaged(damage)) => {
                self.forget_record(key);
                RecordRead::Damaged(damage)
            }
        }
    }

    pub fn write_record(&self, key: &Sha256Digest, record: &ActionRecord) -> io::Result<()> {
        let (directory, name) = fan_out(key);
        let fan = handles::make_directory(&self.actions, &directory)?;
        handles::write_atomically(&fan, &name, &record.encode(key), 0o644)
    }

    /// Removes the record of `key` (what used it will run again).
    pub fn forget_record(&self, key: &Sha256Digest) {
        let (directory, name) = fan_out(key);
        let _ = unlinkat(
            &self.actions,
            format!("{directory}/{name}"),
            AtFlags::empty(),
        );
    }

    /// Marks the record of `key`, last used at `used` ([`Store::read_record_used`]), as
    /// used now, unless `used` is less than [`TOUCH_GRANULARITY`](crate::store::TOUCH_GRANULARITY) ago: `gc` evicts the
    /// least recently used records first, and knowing their use to the hour is enough for
    /// that, while a touch on every hit costs a system call per action of a no-op build.
    /// The modification time only orders records for `gc`; no cache decision reads it.
    /// Answers when the record counts as last used now.
    pub fn touch_record_if_stale(&self, key: &Sha256Digest, used: SystemTime) -> SystemTime {
        let now = SystemTime::now();
        if used_recently(used, now) {
            used
        } else {
            self.touch_record(key);
            now
        }
    }

    /// Marks the record of `key` as used now (`gc` evicts the least recently used first).
    pub fn touch_record(&self, key: &Sha256Digest) {
        let (directory, name) = fan_out(key);
        let now = timestamps_now();
        let _ = rustix::fs::utimensat(
            &self.actions,
            format!("{directory}/{name}"),
            &now,
            AtFlags::SYMLINK_NOFOLLOW,
        );
    }

    /// Reads a small file in the store's `derived/` directory (e.g. `tools`).
    pub fn read_derived(&self, name: &str) -> io::Result<Option<Vec<u8>>> {
        handles::read_file(&self.derived, name)
    }

    /// The body of the framed file `name` in the store's `derived/` directory ([`once_model::framed`],
    /// bound to its name), or `None`: missing, another version's (left to be replaced),
    /// or damaged, which is removed with a warning ([`Store::take_warnings`]).
    pub fn read_framed(&self, name: &str, format: Format) -> Option<FramedBody> {
        let bytes = match handles::read_file(&self.derived, name) {
            Ok(Some(bytes)) => bytes,
            Ok(None) => return None,
            Err(e) => {
                let damage = match e.raw_os_error() {
                    Some(code) if code == Errno::LOOP.raw_os_error() => Damage::NotAFile,
                    Some(code) if code == Errno::ISDIR.raw_os_error() => Damage::NotAFile,
                    _ => return None,
                };
                self.remove_damaged_derived(name, damage);
                return None;
            }
        };
        match format.unframe(name.as_bytes(), &bytes) {
            Unframed::Intact(body) => {
                let start = body.as_ptr() as usize - bytes.as_ptr() as usize;
                let body = start..start + body.len();
                Some(FramedBody { bytes, body })
            }
            Unframed::OtherVersion => None,
            Unframed::Damaged(damage) => {
                self.remove_damaged_derived(name, damage);
                None
            }
        }
    }

    /// Removes the damaged derived file `name` (whatever is there) and says so.
    pub fn remove_damaged_derived(&self, name: &str, damage: Damage) {
        let _ = handles::remove_entry(&self.derived, name);
        self.warn(format!(
            "the store file `{}` was damaged ({damage}); it was removed, and what it held \
             is worked out again",
            self.path.join(super::DERIVED).join(name).display()
        ));
    }

    /// Replaces the framed file `name` in the store's `derived/` directory with `body` atomically.
    pub fn write_framed(&self, name: &str, format: Format, body: &[u8]) -> io::Result<()> {
        self.write_derived(name, &format.frame(name.as_bytes(), body))
    }

    /// Replaces a small file in the store's `derived/` directory atomically.
    pub fn write_derived(&self, name: &str, contents: &[u8]) -> io::Result<()> {
        handles::write_atomically(&self.derived, name, contents, 0o644)
    }

    /// When the file `name` in the store's `derived/` directory was last modified (`None` when it
    /// is missing or not a regular file).
    pub fn derived_modified(&self, name: &str) -> Option<SystemTime> {
        let stat = handles::stat_entry(&self.derived, name).ok().flatten()?;
        (handles::file_type(&stat) == FileType::RegularFile).then(|| modification_time(&stat))
    }

    /// Marks the file `name` in the store's `derived/` directory as modified now, unless it was
    /// less than [`TOUCH_GRANULARITY`](crate::store::TOUCH_GRANULARITY) before `now` (files kept per workspace are removed
    /// when unused for a while: [`Store::remove_unused_derived`]).
    pub fn touch_derived_if_stale(&self, name: &str, modified: SystemTime, now: SystemTime) {
        if used_recently(modified, now) {
            return;
        }
        let now = timestamps_now();
        let _ = rustix::fs::utimensat(&self.derived, name, &now, AtFlags::SYMLINK_NOFOLLOW);
    }

    /// Removes the files in the store's `derived/` directory whose names start with `prefix` and
    /// that were not modified in the `max_age` before `now` (the per-workspace files of
    /// workspaces no longer built: their next build only plans or reads again). Answers
    /// how many it removed.
    pub fn remove_unused_derived(&self, prefix: &str, max_age: Duration, now: SystemTime) -> usize {
        let Ok(names) = handles::entry_names(&self.derived) else {
            return 0;
        };
        names
            .iter()
            .filter(|name| name.starts_with(prefix))
            .filter(|name| {
                self.derived_modified(name).is_some_and(|modified| {
                    now.duration_since(modified).is_ok_and(|age| age > max_age)
                })
            })
            .filter(|name| unlinkat(&self.derived, name.as_str(), AtFlags::empty()).is_ok())
            .count()
    }
}
