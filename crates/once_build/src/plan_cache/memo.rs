//! The planning memo of one-shot commands, kept in the store's `plans` file: the
//! [`once_model::PlanMemo`] that `once build`, `once test` and `once run` lend planning, so
//! that a new process re-plans only the targets whose plan inputs changed (the key and
//! the value's encoding are `once_graph::plan_memo`'s).
//!
//! **The running program is part of every key.** A plan depends on the kind's code (the
//! prelude is embedded in the binary, and so are the native Starlark helpers), so every
//! key is salted with [`program_identity`]: the device, inode, size, modification and
//! change times and mode of `/proc/self/exe`. A rebuilt or replaced binary is a new file
//! or a changed one (writing a file moves its change time, which no one can set back), so
//! it never reuses what an older binary planned; without an identity there is no memo.
//!
//! **The file** is read once per process and rewritten only when this process planned
//! something new: framed ([`once_model::framed`]: a header line, the entries, a checksum
//! line), per entry its salted key (32 bytes), when it was last used (seconds since the
//! epoch, little-endian `u64`), the value's length (little-endian `u32`) and the value.
//! A file of another version is ignored as a whole (every plan is a miss and the next
//! rewrite replaces it); so is a damaged one (truncated, any byte changed), which is
//! removed with a warning ([`Store::read_framed`]). Rewriting merges what was read with what this process planned,
//! stamps the entries this process used, drops those unused for a week and the least
//! recently used beyond [`MAX_MEMO_BYTES`], and renames a complete temporary file over the old one: readers
//! see the old or the new file, and of two processes writing at once the last rename
//! wins (the other's new plans are only planned again later). `once cache clean` removes
//! the file.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format, Unframed};
use rustc_hash::FxHashMap;

use once_exec::Store;
use once_exec::store::keyed::{
    MAX_ENTRY_AGE_SECONDS, decode_entries, encode_entries, program_identity, salted, unix_seconds,
};

/// The file at the store's `derived/` directory that holds the memo.
pub const PLANS_FILE: &str = "plans";

/// The memo file's framing.
const FORMAT: Format = Format {
    name: "once-plan-memo",
    version: 2,
};

/// The most bytes of values a rewrite keeps (the least recently used go first).
pub const MAX_MEMO_BYTES: usize = 64 << 20;

/// An entry read from the file.
struct Stored {
    value: Arc<[u8]>,
    last_used: u64,
    /// Whether this process looked it up (a flag per entry: planning threads look up
    /// thousands of entries at once, and a shared set took a lock for each).
    used: AtomicBool,
}

/// The memo of one process: what it read from the store's `plans` file and what it
/// planned since.
pub struct PlanMemoFile {
    /// Mixed into every key: [`program_identity`].
    salt: Sha256Digest,
    stored: FxHashMap<Sha256Digest, Stored>,
    recorded: Mutex<FxHashMap<Sha256Digest, Arc<[u8]>>>,
}

impl PlanMemoFile {
    /// The memo of `store` for the running program; `None` without a
    /// [`program_identity`].
    pub fn load(store: &Store) -> Option<PlanMemoFile> {
        let salt = program_identity()?;
        let body = store.read_framed(PLANS_FILE, FORMAT);
        let stored = body.as_deref().and_then(parse);
        if body.is_some() && stored.is_none() {
            store.remove_damaged_derived(PLANS_FILE, Damage::Unparsable);
        }
        Some(PlanMemoFile {
            salt,
            stored: stored.unwrap_or_default(),
            recorded: Mutex::default(),
        })
    }

    /// The memo `bytes` (a `plans` file's content) hold, for a program identified by
    /// `salt`; empty unless they are a complete, intact file of this version.
    pub fn from_bytes(salt: Sha256Digest, bytes: Option<&[u8]>) -> PlanMemoFile {
        let body = bytes.and_then(|bytes| match FORMAT.unframe(PLANS_FILE.as_bytes(), bytes) {
            Unframed::Intact(body) => Some(body),
            Unframed::OtherVersion | Unframed::Damaged(_) => None,
        });
        PlanMemoFile {
            salt,
            stored: body.and_then(parse).unwrap_or_default(),
            recorded: Mutex::default(),
        }
    }

    /// How many entries were read from the file.
    pub fn stored_len(&self) -> usize {
        self.stored.len()
    }

    /// How many entries this process recorded.
    pub fn recorded_len(&self) -> usize {
        lock(&self.recorded).len()
    }

    /// The file's new content when this process recorded anything: the stored entries
    /// merged with the recorded ones, those used or recorded now stamped `now`, those
    /// unused for [`MAX_ENTRY_AGE_SECONDS`] dropped, and the least recently used dropped
    /// beyond `max_bytes` of values.
    pub fn rewritten(&self, now: SystemTime, max_bytes: usize) -> Option<Vec<u8>> {
        let recorded = lock(&self.recorded);
        if recorded.is_empty() {
            return None;
        }
        let now = unix_seconds(now);
        let mut entries: Vec<(Sha256Digest, u64, &[u8])> = self
            .stored
            .iter()
            .filter(|(key, _)| !recorded.contains_key(key))
            .map(|(key, stored)| {
                let last_used = if stored.used.load(Ordering::Relaxed) {
                    now
                } else {
                    stored.last_used
                };
                (*key, last_used, &stored.value[..])
            })
            .chain(recorded.iter().map(|(key, value)| (*key, now, &value[..])))
            .filter(|(_, last_used, value)| {
                u32::try_from(value.len()).is_ok()
                    && last_used.saturating_add(MAX_ENTRY_AGE_SECONDS) >= now
            })
            .collect();
        // The most recently used first; ties by key, so the file is deterministic.
        entries.sort_unstable_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut total = 0usize;
        entries.retain(|(_, _, value)| {
            total = total.saturating_add(value.len());
            total <= max_bytes
        });
        Some(FORMAT.frame(PLANS_FILE.as_bytes(), &encode_entries(&entries)))
    }

    /// Rewrites the store's `plans` file when this process recorded anything (see the
    /// module documentation). Returns whether it wrote.
    pub fn save(&self, store: &Store) -> io::Result<bool> {
        let Some(bytes) = self.rewritten(SystemTime::now(), MAX_MEMO_BYTES) else {
            return Ok(false);
        };
        // Shared use: `once cache clean` and `gc` wait for the rename to finish.
        let _in_use = store.start_use()?;
        store.write_derived(PLANS_FILE, &bytes)?;
        Ok(true)
    }

    fn salted(&self, key: &Sha256Digest) -> Sha256Digest {
        salted(&self.salt, key)
    }
}

impl once_model::PlanMemo for PlanMemoFile {
    fn lookup(&self, key: &Sha256Digest) -> Option<Arc<[u8]>> {
        let key = self.salted(key);
        if let Some(stored) = self.stored.get(&key) {
            stored.used.store(true, Ordering::Relaxed);
            return Some(stored.value.clone());
        }
        lock(&self.recorded).get(&key).cloned()
    }

    fn record(&self, key: Sha256Digest, value: Vec<u8>) {
        let key = self.salted(&key);
        lock(&self.recorded).insert(key, value.into());
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The entries of an intact memo file's body.
fn parse(body: &[u8]) -> Option<FxHashMap<Sha256Digest, Stored>> {
    Some(
        decode_entries(body)?
            .into_iter()
            .map(|(key, last_used, value)| {
                let stored = Stored {
                    value: value.into(),
                    last_used,
                    used: AtomicBool::new(false),
                };
                (key, stored)
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_model::PlanMemo as _;
    use std::time::Duration;

    fn at(seconds: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(seconds)
    }

    fn key(name: &str) -> Sha256Digest {
        Sha256Digest::of(name.as_bytes())
    }

    /// A file written by one process is read by the next with the same salt; another
    /// salt (another binary) finds nothing in it.
    #[test]
    fn entries_round_trip_for_the_same_program_only() {
        let salt = key("program");
        let first = PlanMemoFile::from_bytes(salt, None);
        assert_eq!(first.lookup(&key("a")), None);
        assert_eq!(first.rewritten(at(10), MAX_MEMO_BYTES), None, "nothing new");
        first.record(key("a"), b"plan a".to_vec());
        first.record(key("b"), Vec::new());
        assert_eq!(first.lookup(&key("a")).as_deref(), Some(&b"plan a"[..]));
        let bytes = first
            .rewritten(at(10), MAX_MEMO_BYTES)
            .expect("new entries");

        let second = PlanMemoFile::from_bytes(salt, Some(&bytes));
        assert_eq!(second.stored_len(), 2);
        assert_eq!(second.lookup(&key("a")).as_deref(), Some(&b"plan a"[..]));
        assert_eq!(second.lookup(&key("b")).as_deref(), Some(&b""[..]));
        assert_eq!(second.lookup(&key("c")), None);
        assert_eq!(second.rewritten(at(20), MAX_MEMO_BYTES), None, "only hits");

        let other_program = PlanMemoFile::from_bytes(key("rebuilt"), Some(&bytes));
        assert_eq!(other_program.stored_len(), 2);
        assert_eq!(other_program.lookup(&key("a")), None);
    }

    /// Any truncation, extension or changed byte makes the whole file a miss.
    #[test]
    fn a_damaged_file_is_ignored_as_a_whole() {
        let salt = key("program");
        let memo = PlanMemoFile::from_bytes(salt, None);
        memo.record(key("a"), b"plan a".to_vec());
        memo.record(key("b"), b"plan b".to_vec());
        let bytes = memo.rewritten(at(10), MAX_MEMO_BYTES).unwrap();
        assert_eq!(PlanMemoFile::from_bytes(salt, Some(&bytes)).stored_len(), 2);
        for length in 0..bytes.len() {
            let memo = PlanMemoFile::from_bytes(salt, Some(&bytes[..length]));
            assert_eq!(memo.stored_len(), 0, "truncated to {length}");
        }
        for index in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[index] ^= 1;
            let memo = PlanMemoFile::from_bytes(salt, Some(&changed));
            assert_eq!(memo.stored_len(), 0, "byte {index} changed");
            assert_eq!(memo.lookup(&key("a")), None);
        }
        let mut longer = bytes;
        longer.push(0);
        assert_eq!(
            PlanMemoFile::from_bytes(salt, Some(&longer)).stored_len(),
            0
        );
        for garbage in [&b""[..], b"once-plan-memo 2\n", &[0u8; 100]] {
            assert_eq!(
                PlanMemoFile::from_bytes(salt, Some(garbage)).stored_len(),
                0
            );
        }
    }

    /// Beyond the size limit the least recently used entries go: those this process
    /// neither used nor recorded keep their old stamps.
    #[test]
    fn rewrites_keep_the_most_recently_used_within_the_limit() {
        let salt = key("program");
        let value = vec![7u8; 100];
        let first = PlanMemoFile::from_bytes(salt, None);
        for name in ["old", "used"] {
            first.record(key(name), value.clone());
        }
        let bytes = first.rewritten(at(10), 1000).unwrap();

        let second = PlanMemoFile::from_bytes(salt, Some(&bytes));
        assert!(second.lookup(&key("used")).is_some());
        second.record(key("new"), value.clone());
        let bytes = second.rewritten(at(20), 200).unwrap();

        let third = PlanMemoFile::from_bytes(salt, Some(&bytes));
        assert_eq!(third.stored_len(), 2);
        assert!(third.lookup(&key("used")).is_some());
        assert!(third.lookup(&key("new")).is_some());
        assert_eq!(
            third.lookup(&key("old")),
            None,
            "the least recently used went"
        );

        // More than a week later, an entry no process used since goes whatever the size.
        let fourth = PlanMemoFile::from_bytes(salt, Some(&bytes));
        assert!(fourth.lookup(&key("used")).is_some());
        fourth.record(key("newer"), value.clone());
        let later = at(20 + MAX_ENTRY_AGE_SECONDS + 1);
        let fifth = PlanMemoFile::from_bytes(salt, fourth.rewritten(later, 1000).as_deref());
        assert_eq!(fifth.stored_len(), 2, "`new` expired");
        assert!(fifth.lookup(&key("used")).is_some());
        assert!(fifth.lookup(&key("newer")).is_some());
    }

    /// The store's file: saved only when something was recorded, read back by a new
    /// memo, removed by `clean`.
    #[test]
    fn the_store_keeps_the_file_until_clean() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let memo = PlanMemoFile::load(&store).expect("the test binary has an identity");
        assert!(
            !memo.save(&store).unwrap(),
            "nothing recorded, nothing written"
        );
        assert_eq!(store.read_derived(PLANS_FILE).unwrap(), None);
        memo.record(key("a"), b"plan".to_vec());
        assert!(memo.save(&store).unwrap());
        let again = PlanMemoFile::load(&store).unwrap();
        assert_eq!(again.lookup(&key("a")).as_deref(), Some(&b"plan"[..]));

        store
            .write_derived(PLANS_FILE, b"once-plan-memo 2\ngarbage")
            .unwrap();
        assert_eq!(PlanMemoFile::load(&store).unwrap().stored_len(), 0);
        let warnings = store.take_warnings();
        assert!(
            warnings.len() == 1 && warnings[0].contains("plans") && warnings[0].contains("removed"),
            "{warnings:?}"
        );
        assert_eq!(store.read_derived(PLANS_FILE).unwrap(), None, "removed");
        store
            .write_derived(PLANS_FILE, b"once-plan-memo 1\nan older version")
            .unwrap();
        assert_eq!(PlanMemoFile::load(&store).unwrap().stored_len(), 0);
        assert!(store.take_warnings().is_empty(), "not damage");
        assert!(memo.save(&store).unwrap());
        assert_eq!(PlanMemoFile::load(&store).unwrap().stored_len(), 1);

        store.clean().unwrap();
        assert_eq!(store.read_derived(PLANS_FILE).unwrap(), None);
        assert_eq!(PlanMemoFile::load(&store).unwrap().stored_len(), 0);
    }
}
