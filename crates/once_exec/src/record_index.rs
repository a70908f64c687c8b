//! The records a workspace's builds used, in one file per workspace in the store's `derived/`
//! directory (`index-<SHA-256 of the workspace root's path>`), so that a no-op build reads
//! one file instead of one record file per action (opening, reading and closing 10,000
//! record files was the largest part of the executor's work in a no-op build of 10,000
//! targets).
//!
//! **A copy of record files, never more.** An entry holds the bytes of the record file
//! of its key as a build read or wrote it, and when the record file was last used. The
//! executor takes an entry exactly where it would take the record file: in the look for
//! a hit whose outputs are all in place, which it then checks as for the file's record.
//! A record file replaced since (the same key run again elsewhere, after its blobs went)
//! is as valid a result of the key as the copy: both came from running it with the same
//! inputs, and the outputs in place are the copy's. An entry whose use is older than
//! [`TOUCH_GRANULARITY`] is not taken: the record file is read and its use renewed (it
//! orders `gc`), and the entry with it. `once cache clean` and `gc` remove every index:
//! afterwards nothing is a hit that the record files do not make one.
//!
//! **The file** is rewritten at the end of an execution that added or renewed entries
//! (in the store's format of keyed entries, see `store::keyed`, framed: [`once_model::framed`]),
//! keeping the entries used in the last week; the rewrite also removes the index files of
//! workspaces not built for a week. A file that is not intact is ignored as a whole (and
//! removed with a warning); each entry is a record file's bytes with the record's own
//! checksum, bound to its key, so an entry is taken only if it is exactly what was
//! written for that key. A record file found damaged is never copied into the index: it
//! is removed and its action runs again. Two
//! processes rewriting at once: the last rename wins, and what the other added is read
//! from record files again next time.

use std::io;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format};
use rustc_hash::FxHashMap;

use crate::record::ActionRecord;
use crate::store::keyed::{MAX_ENTRY_AGE_SECONDS, decode_entries, encode_entries, unix_seconds};
use crate::store::{Store, TOUCH_GRANULARITY};

/// The index files' framing.
const FORMAT: Format = Format {
    name: "once-record-index",
    version: 2,
};

/// The prefix of the index files' names at the store's `derived/` directory.
pub const INDEX_PREFIX: &str = "index-";

/// One workspace's index: what its file held and what this execution added.
pub struct RecordIndex {
    name: String,
    stored: FxHashMap<Sha256Digest, (u64, Box<[u8]>)>,
    added: Mutex<FxHashMap<Sha256Digest, (u64, Vec<u8>)>>,
}

impl RecordIndex {
    /// The index of the workspace at `workspace_root` in `store` (empty when there is
    /// none, or none intact).
    pub fn load(store: &Store, workspace_root: &Path) -> RecordIndex {
        let name = format!(
            "{INDEX_PREFIX}{}",
            Sha256Digest::of(workspace_root.as_os_str().as_encoded_bytes())
        );
        let body = store.read_framed(&name, FORMAT);
        let entries = body.as_deref().map(decode_entries);
        if let Some(None) = entries {
            store.remove_damaged_derived(&name, Damage::Unparsable);
        }
        let stored = entries
            .flatten()
            .map(|entries| {
                entries
                    .into_iter()
                    .map(|(key, used, value)| (key, (used, value.into())))
                    .collect()
            })
            .unwrap_or_default();
        RecordIndex {
            name,
            stored,
            added: Mutex::default(),
        }
    }

    /// The record of `key` and when it was last used, if the index holds it and that
    /// use is recent (less than [`TOUCH_GRANULARITY`] ago at `now`).
    pub fn recent(
        &self,
        key: &Sha256Digest,
        now: SystemTime,
    ) -> Option<(ActionRecord, SystemTime)> {
        let (used, bytes) = self.stored.get(key)?;
        let used = SystemTime::UNIX_EPOCH + Duration::from_secs(*used);
        let age = now.duration_since(used).ok()?;
        if age >= TOUCH_GRANULARITY {
            return None;
        }
        Some((ActionRecord::decode(key, bytes).ok()?, used))
    }

    /// Remembers the record of `key`, last used at `used`, as read from or written to
    /// its record file.
    pub fn remember(&self, key: &Sha256Digest, record: &ActionRecord, used: SystemTime) {
        let used = unix_seconds(used);
        self.added
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(*key, (used, record.encode(key)));
    }

    /// Rewrites the index file when this execution remembered anything, keeping the
    /// entries used in the last week. Answers whether it wrote.
    pub fn save(&self, store: &Store, now: SystemTime) -> io::Result<bool> {
        let added = self.added.lock().unwrap_or_else(|e| e.into_inner());
        if added.is_empty() {
            return Ok(false);
        }
        let now = unix_seconds(now);
        let mut entries: Vec<(Sha256Digest, u64, &[u8])> = self
            .stored
            .iter()
            .filter(|(key, _)| !added.contains_key(key))
            .map(|(key, (used, bytes))| (*key, *used, &bytes[..]))
            .chain(
                added
                    .iter()
                    .map(|(key, (used, bytes))| (*key, *used, &bytes[..])),
            )
            .filter(|(_, used, _)| used.saturating_add(MAX_ENTRY_AGE_SECONDS) >= now)
            .collect();
        entries.sort_unstable_by_key(|entry| entry.0);
        store.write_framed(&self.name, FORMAT, &encode_entries(&entries))?;
        // The indexes of workspaces no longer built (a workspace in use rewrites its
        // index at least once an hour of builds: its entries are renewed then).
        store.remove_unused_derived(
            INDEX_PREFIX,
            Duration::from_secs(MAX_ENTRY_AGE_SECONDS),
            SystemTime::UNIX_EPOCH + Duration::from_secs(now),
        );
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{OutputEntry, OutputKind, StreamDigest};

    fn record(exit_code: i32) -> ActionRecord {
        ActionRecord {
            exit_code,
            duration: Duration::from_millis(3),
            stdout: StreamDigest {
                digest: Sha256Digest::of(b""),
                size: 0,
            },
            stderr: StreamDigest {
                digest: Sha256Digest::of(b""),
                size: 0,
            },
            outputs: vec![OutputEntry {
                path: ".once/out/p/T/out.txt".to_owned(),
                kind: OutputKind::File {
                    mode: 0o644,
                    size: 3,
                    digest: Sha256Digest::of(b"abc"),
                },
            }],
        }
    }

    #[test]
    fn entries_come_back_while_recent_and_only_from_an_intact_file() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let workspace = Path::new("/src/ws");
        let now = SystemTime::now();
        let (fresh, old) = (Sha256Digest::of(b"fresh"), Sha256Digest::of(b"old"));
        let index = RecordIndex::load(&store, workspace);
        assert!(!index.save(&store, now).unwrap(), "nothing to write");
        index.remember(&fresh, &record(0), now);
        index.remember(&old, &record(1), now - TOUCH_GRANULARITY);
        assert!(index.save(&store, now).unwrap());

        let index = RecordIndex::load(&store, workspace);
        assert_eq!(index.recent(&fresh, now).map(|(r, _)| r), Some(record(0)));
        // Used too long ago: the record file is read (and its use renewed) instead.
        assert!(index.recent(&old, now).is_none());
        assert!(index.recent(&Sha256Digest::of(b"other"), now).is_none());
        // Another workspace has an index of its own.
        assert!(
            RecordIndex::load(&store, Path::new("/src/other"))
                .recent(&fresh, now)
                .is_none()
        );

        // A file with any byte changed is ignored as a whole.
        let name = format!("{INDEX_PREFIX}{}", Sha256Digest::of(b"/src/ws"));
        let mut bytes = store.read_derived(&name).unwrap().unwrap();
        let middle = bytes.len() / 2;
        bytes[middle] ^= 1;
        store.write_derived(&name, &bytes).unwrap();
        assert!(
            RecordIndex::load(&store, workspace)
                .recent(&fresh, now)
                .is_none()
        );
        let warnings = store.take_warnings();
        assert!(
            warnings.len() == 1 && warnings[0].contains(&name),
            "{warnings:?}"
        );
        assert_eq!(store.read_derived(&name).unwrap(), None, "removed");
    }

    /// Saving one workspace's index removes those of workspaces not built for a week.
    #[test]
    fn a_save_removes_the_indexes_of_workspaces_not_built_for_a_week() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let now = SystemTime::now();
        let file = |workspace: &str| {
            store.derived_path().join(format!(
                "{INDEX_PREFIX}{}",
                Sha256Digest::of(workspace.as_bytes())
            ))
        };
        for (workspace, days) in [("/src/gone", 8), ("/src/recent", 6)] {
            let index = RecordIndex::load(&store, Path::new(workspace));
            index.remember(&Sha256Digest::of(b"k"), &record(0), now);
            assert!(index.save(&store, now).unwrap());
            std::fs::File::options()
                .write(true)
                .open(file(workspace))
                .unwrap()
                .set_modified(now - Duration::from_secs(days * 24 * 60 * 60))
                .unwrap();
        }
        let index = RecordIndex::load(&store, Path::new("/src/ws"));
        index.remember(&Sha256Digest::of(b"k"), &record(0), now);
        assert!(index.save(&store, now).unwrap());
        assert!(!file("/src/gone").exists(), "not built for 8 days");
        assert!(file("/src/recent").exists());
        assert!(file("/src/ws").exists());
    }
}
