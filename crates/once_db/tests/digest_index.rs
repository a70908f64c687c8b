//! The persistent digest index: a new process reuses the digests of files whose stamp is
//! unchanged (proven by the count of bytes hashed), re-hashes touched and racily clean
//! files (a racy entry is never written, so touching the index trusts none), keeps no
//! digest of a file that changed just before it was read, ignores, reports and rebuilds
//! a corrupted index, and stays valid under concurrent saves.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up and inspect real files and time real work"
)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use once_db::digests::{DIGEST_INDEX_PATH, is_valid_index};
use once_db::{Db, OsSystem, RootDatabase, file_digest};

const FILES: &[(&str, &str)] = &[
    ("once.toml", "[workspace]\n"),
    (
        "app/once.toml",
        "[[target]]\nname = \"App\"\nkind = \"filegroup\"\n",
    ),
    ("app/src/main.rs", "fn main() {}\n"),
    ("app/src/util.rs", "pub fn util() -> u32 { 42 }\n"),
    ("app/data.txt", "some data, some more data\n"),
];

/// A workspace on disk whose files were last modified a minute ago (older than any index
/// written by the test, so the racy rule trusts their entries) and last changed (their
/// change time, which cannot be set) more than the settling time ago.
fn workspace() -> tempfile::TempDir {
    let dir = unsettled_workspace();
    std::thread::sleep(SETTLED);
    dir
}

/// [`workspace`] without waiting: every file changed a moment ago.
fn unsettled_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("temporary directory");
    for (path, text) in FILES {
        let path = dir.path().join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("directory");
        std::fs::write(&path, text).expect("write");
        set_modified(&path, SystemTime::now() - Duration::from_secs(60));
    }
    dir
}

/// Longer than `once_db::digests::SETTLED_NS`.
const SETTLED: Duration = Duration::from_millis(2_100);

fn set_modified(path: &Path, time: SystemTime) {
    let file = std::fs::File::options()
        .write(true)
        .open(path)
        .expect("open");
    file.set_modified(time).expect("set the modification time");
}

/// A new "process": a fresh database with its own digest index.
fn process(root: &Path) -> RootDatabase {
    let mut db = RootDatabase::new(Arc::new(OsSystem));
    db.load(root.to_path_buf());
    db
}

/// Every file's digest, in `FILES` order.
fn digests(db: &RootDatabase) -> Vec<String> {
    FILES
        .iter()
        .map(|(path, _)| match file_digest(db, db.file_for_path(path)) {
            Ok(digest) => digest.to_hex(),
            Err(err) => err.to_string(),
        })
        .collect()
}

fn total_bytes() -> u64 {
    FILES.iter().map(|(_, text)| text.len() as u64).sum()
}

fn index_text(root: &Path) -> String {
    std::fs::read_to_string(root.join(DIGEST_INDEX_PATH)).unwrap_or_default()
}

#[test]
fn a_new_process_reuses_the_index_and_rehashes_only_touched_files() {
    let dir = workspace();
    let first = process(dir.path());
    let expected = digests(&first);
    assert_eq!(first.bytes_hashed(), total_bytes());
    assert_eq!(
        expected[2], "536e506bb90914c243a12b397b9a998f85ae2cbd9ba02dfd03a9e155ca5ca0f4",
        "the SHA-256 of `fn main() {{}}\\n`, as sha256sum prints it"
    );
    assert_eq!(first.save_digest_index().ok(), Some(true));
    assert!(is_valid_index(&index_text(dir.path())));

    let second = process(dir.path());
    assert_eq!(digests(&second), expected);
    assert_eq!(second.bytes_hashed(), 0, "every digest came from the index");
    assert_eq!(
        second.save_digest_index().ok(),
        Some(false),
        "nothing new to save"
    );

    // A metadata-only change (touch) is hashed again; the rest is reused.
    let touched = dir.path().join("app/src/util.rs");
    set_modified(&touched, SystemTime::now() - Duration::from_secs(30));
    let third = process(dir.path());
    assert_eq!(digests(&third), expected);
    assert_eq!(third.bytes_hashed(), FILES[3].1.len() as u64);
}

/// A digest read within the settling time of the file's last change (its change time:
/// a write in the same timestamp tick would not change the stamp) is not kept, so a later
/// process hashes the file again rather than trust a digest of what may have been
/// rewritten since.
#[test]
fn a_digest_read_just_after_the_file_changed_is_not_kept() {
    let dir = unsettled_workspace();
    let first = process(dir.path());
    let expected = digests(&first);
    assert_eq!(
        first.save_digest_index().ok(),
        Some(false),
        "nothing settled to keep"
    );
    let second = process(dir.path());
    assert_eq!(digests(&second), expected);
    assert_eq!(second.bytes_hashed(), total_bytes());
    std::thread::sleep(SETTLED);
    let third = process(dir.path());
    assert_eq!(digests(&third), expected);
    assert_eq!(third.save_digest_index().ok(), Some(true));
    let fourth = process(dir.path());
    assert_eq!(digests(&fourth), expected);
    assert_eq!(fourth.bytes_hashed(), 0);
}

#[test]
fn a_file_modified_in_the_index_tick_or_later_is_rehashed() {
    let dir = workspace();
    let future = dir.path().join("app/data.txt");
    // Modified "after" the index is written: its entry is racily clean.
    set_modified(&future, SystemTime::now() + Duration::from_secs(3600));
    let first = process(dir.path());
    let expected = digests(&first);
    assert_eq!(first.save_digest_index().ok(), Some(true));
    let second = process(dir.path());
    assert_eq!(digests(&second), expected);
    assert_eq!(second.bytes_hashed(), FILES[4].1.len() as u64);
    assert!(
        !index_text(dir.path()).contains("app/data.txt"),
        "a racy entry is left out of the file"
    );

    // The index file's time moved past the file's (a `touch`, a copy): the entry that
    // was racy when it was hashed is still not trusted, since it was never written (the
    // file changes "in the future", so its digest never settles: nothing new to save).
    assert_eq!(second.save_digest_index().ok(), Some(false));
    set_modified(
        &dir.path().join(DIGEST_INDEX_PATH),
        SystemTime::now() + Duration::from_secs(7200),
    );
    let third = process(dir.path());
    assert_eq!(digests(&third), expected);
    assert_eq!(third.bytes_hashed(), FILES[4].1.len() as u64);
}

#[test]
fn a_corrupted_or_foreign_index_is_ignored_and_rebuilt() {
    let dir = workspace();
    let expected = digests(&process(dir.path()));
    let index = dir.path().join(DIGEST_INDEX_PATH);
    std::fs::create_dir_all(index.parent().expect("parent")).expect(".once");
    for garbage in [
        b"\x00\xff garbage".to_vec(),
        b"once-digest-index 999\nend 0\n".to_vec(),
        format!(
            "once-digest-index 2\n{} f 1 2 3 4 5 app/src/main.rs\nchecksum {}\n",
            "00".repeat(32),
            "00".repeat(32)
        )
        .into_bytes(),
    ] {
        std::fs::write(&index, &garbage).expect("corrupt the index");
        let db = process(dir.path());
        assert_eq!(digests(&db), expected);
        assert_eq!(db.bytes_hashed(), total_bytes(), "nothing trusted");
        // Garbage and an index of this version with a wrong checksum are damage (a
        // warning); another version's index is only replaced.
        let damaged = !garbage.starts_with(b"once-digest-index 999");
        assert_eq!(db.digest_index().damage().is_some(), damaged);
        assert_eq!(db.save_digest_index().ok(), Some(true));
        assert!(is_valid_index(&index_text(dir.path())), "rebuilt");
        let after = process(dir.path());
        assert_eq!(digests(&after), expected);
        assert_eq!(after.bytes_hashed(), 0);
    }
}

#[test]
fn concurrent_saves_leave_a_valid_index() {
    let dir = workspace();
    let root: PathBuf = dir.path().to_path_buf();
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let root = root.clone();
            std::thread::spawn(move || {
                for _ in 0..25 {
                    // Each round a new "process" that computes and saves everything.
                    let mut db = RootDatabase::new(Arc::new(OsSystem));
                    db.load(root.clone());
                    let _ = digests(&db);
                    db.save_digest_index().expect("save");
                }
            })
        })
        .collect();
    // Meanwhile, every read of the index sees a complete one (or none yet).
    for _ in 0..200 {
        let text = index_text(&root);
        assert!(text.is_empty() || is_valid_index(&text), "{text:?}");
    }
    for writer in writers {
        writer.join().expect("writer");
    }
    assert!(is_valid_index(&index_text(&root)));
    let reader = process(&root);
    let _ = digests(&reader);
    assert_eq!(reader.bytes_hashed(), 0);
}
