//! The `store_formats` target: the input as the content of each file `once` keeps in its
//! store (`.once/cache`) and in `.once/`, read by the code that reads it in a build.
//!
//! Every decoder gets the same bytes; a seed of one format exercises its decoder and is
//! refused by the others. Properties:
//! - no input makes a read panic: an action record (`ActionRecord::decode`, what
//!   `Store::read_record` applies), a workspace's record index (`RecordIndex::load`), the
//!   plan memo (`PlanMemoFile::from_bytes`) and a memo value
//!   (`decode_target_actions`), a last plan (`LastPlan::load`, and the plan inside it,
//!   `once_build::plan_cache::last_plan::Stored::load`), the digest index (`.once/digests`, loaded by
//!   a workspace's database before its first digest) and the evidence journal (ingested
//!   by `once_evidence::query_workspace`);
//! - what decodes re-encodes to the same value: an action record, a memo value;
//! - **integrity** where the format has a check: the store's files of keyed entries
//!   (the plan memo, record indexes, last plans) end with the SHA-256 of their content, so
//!   a file that is read at all is refused after any one-bit change; the harness also
//!   writes such a file around the input (as a memo value) and checks it reads back as
//!   written and is refused with any bit changed.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use once_analysis::{AnalysisHost, MemorySystem};
use once_build::plan_cache::last_plan_file::LastPlan;
use once_build::plan_cache::memo::MAX_MEMO_BYTES;
use once_build::plan_cache::memo::PlanMemoFile;
use once_db::{PlanMemo as _, Sha256Digest};
use once_exec::Store;
use once_exec::record::ActionRecord;
use once_exec::record_index::{INDEX_PREFIX, RecordIndex};
use once_model::codec::{decode_target_actions, encode_target_actions};

use crate::scratch;

/// The workspace root the per-workspace store files belong to.
const ROOT: &str = "/ws";
/// The request a last plan is kept for.
const REQUEST: &str = "build app/...";

pub fn store_formats(data: &[u8]) {
    action_record(data);
    memo_value(data);
    memo_file(data);
    let dir = scratch::fresh("store");
    let store = Store::open(&dir.join("cache")).expect("cannot open a scratch store");
    record_index(&store, data);
    last_plan(&store, data);
    digest_index(data);
    if data.first() == Some(&b'[') {
        evidence_journal(&dir, data);
    }
}

fn action_record(data: &[u8]) {
    // A record is framed with a checksum bound to its key: decoded under a fixed key, a
    // record that decodes re-encodes to itself, and a one-bit change of an encoded
    // record is refused.
    let key = Sha256Digest::of(b"once.fuzz.record.key");
    if let Ok(record) = ActionRecord::decode(&key, data) {
        let encoded = record.encode(&key);
        assert_eq!(
            ActionRecord::decode(&key, &encoded).ok().as_ref(),
            Some(&record),
            "an action record does not read back as itself after encoding"
        );
        let mut flipped = encoded.clone();
        let at = data.len() % flipped.len().max(1);
        if let Some(byte) = flipped.get_mut(at) {
            *byte ^= 1 << (data.len() % 8);
            assert!(
                ActionRecord::decode(&key, &flipped).is_err(),
                "a record with a flipped bit was accepted"
            );
        }
    }
}

fn memo_value(data: &[u8]) {
    if let Some(actions) = decode_target_actions(data) {
        assert_eq!(
            decode_target_actions(&encode_target_actions(&actions)).as_ref(),
            Some(&actions),
            "a memo value does not read back as itself after encoding"
        );
    }
}

/// The salt of the memo files this harness writes (a program identity).
fn salt() -> Sha256Digest {
    Sha256Digest::of(b"once-fuzz")
}

fn memo_file(data: &[u8]) {
    let read = PlanMemoFile::from_bytes(salt(), Some(data));
    if read.stored_len() > 0 {
        each_flip(data, |changed| {
            PlanMemoFile::from_bytes(salt(), Some(changed)).stored_len() == 0
        });
    }
    // A memo file holding the input as a value.
    let key = Sha256Digest::of(data);
    let memo = PlanMemoFile::from_bytes(salt(), None);
    memo.record(key, data.to_vec());
    let now = SystemTime::now();
    let bytes = memo
        .rewritten(now, MAX_MEMO_BYTES)
        .expect("a memo that recorded a plan has a file to write");
    let read = PlanMemoFile::from_bytes(salt(), Some(&bytes));
    assert_eq!(read.stored_len(), 1, "a memo file does not read back");
    assert_eq!(
        read.lookup(&key).as_deref(),
        Some(data),
        "a memo file does not read back the value written"
    );
    each_flip(&bytes, |changed| {
        PlanMemoFile::from_bytes(salt(), Some(changed)).stored_len() == 0
    });
}

fn record_index(store: &Store, data: &[u8]) {
    let name = format!(
        "{INDEX_PREFIX}{}",
        Sha256Digest::of(Path::new(ROOT).as_os_str().as_encoded_bytes())
    );
    store
        .write_derived(&name, data)
        .expect("cannot write a scratch store file");
    let index = RecordIndex::load(store, Path::new(ROOT));
    // Whatever it holds, a lookup decodes the record text it keeps.
    let _ = index.recent(&Sha256Digest::of(data), SystemTime::now());
}

fn last_plan(store: &Store, data: &[u8]) {
    // The input as a whole last-plan file (at the name `LastPlan::save` gives it).
    if let Some(path) = last_plan_file(store) {
        std::fs::write(&path, data).expect("cannot write a scratch store file");
        if LastPlan::load(store, Path::new(ROOT), REQUEST).is_some() {
            each_flip(data, |changed| {
                std::fs::write(&path, changed).expect("cannot write a scratch store file");
                LastPlan::load(store, Path::new(ROOT), REQUEST).is_none()
            });
        }
    }
    // The input as the plan a valid last-plan file holds.
    let key = Sha256Digest::of(data);
    if LastPlan::save(store, Path::new(ROOT), REQUEST, &key, data).is_ok() {
        let _ = once_build::plan_cache::last_plan::Stored::load(store, Path::new(ROOT), REQUEST);
        if let Some(saved) = LastPlan::load(store, Path::new(ROOT), REQUEST) {
            assert!(saved.saved_under(&key), "a last plan lost its key");
            assert_eq!(saved.value(), data, "a last plan does not read back");
        }
    }
}

/// The path of [`REQUEST`]'s last-plan file, made by saving an empty plan (`None` when
/// this process has no program identity, so nothing is saved).
fn last_plan_file(store: &Store) -> Option<PathBuf> {
    let key = Sha256Digest::of(b"seed");
    LastPlan::save(store, Path::new(ROOT), REQUEST, &key, b"").ok()?;
    let entries = std::fs::read_dir(store.derived_path()).ok()?;
    entries.flatten().map(|e| e.path()).find(|path| {
        path.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
            n.starts_with(once_build::plan_cache::last_plan_file::LAST_PLAN_PREFIX)
        })
    })
}

/// The input as `.once/digests` of a workspace whose database then hashes its files.
fn digest_index(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let _ = once_db::digests::is_valid_index(&text);
    let system = MemorySystem::default();
    system.write("/ws/once.toml", "[workspace]\n");
    system.write("/ws/a.txt", "a\n");
    system.write("/ws/dir a/b.txt", "b\n");
    system.write("/ws/.once/digests", text.as_ref());
    let host = AnalysisHost::load(Arc::new(system), PathBuf::from(ROOT));
    let analysis = host.analysis();
    analysis.prepare_digest_index();
    for path in ["a.txt", "dir a/b.txt", "once.toml", "missing.txt"] {
        let _ = analysis.file_digest(path);
    }
}

/// The input as `.once/evidence.journal`, ingested by a query.
fn evidence_journal(dir: &Path, data: &[u8]) {
    let root = dir.join("ws");
    scratch::write(&root, once_evidence::JOURNAL_PATH, data);
    let first = once_evidence::query_workspace(&root, None, once_evidence::MAX_LIMIT);
    if let Ok(records) = &first {
        assert!(records.len() <= once_evidence::MAX_LIMIT);
    }
    // The journal was ingested: reading again reads the same.
    let again = once_evidence::query_workspace(&root, None, once_evidence::MAX_LIMIT);
    if let (Ok(first), Ok(again)) = (first, again) {
        assert_eq!(first, again, "the evidence read twice differs");
    }
}

/// Checks that `refused` holds for `bytes` with each of a spread of single bits flipped:
/// every byte of a short file, and for a long one 64 bytes spread over it plus its last 48
/// (the count and the checksum).
fn each_flip(bytes: &[u8], refused: impl Fn(&[u8]) -> bool) {
    let len = bytes.len();
    let positions: Vec<usize> = if len <= 112 {
        (0..len).collect()
    } else {
        (0..64)
            .map(|i| i * (len - 48) / 64)
            .chain(len - 48..len)
            .collect()
    };
    let mut changed = bytes.to_vec();
    for at in positions {
        let bit = 1u8 << (at % 8);
        changed[at] ^= bit;
        assert!(
            refused(&changed),
            "a file with bit {} of byte {at} changed is still read",
            at % 8
        );
        changed[at] ^= bit;
    }
}
