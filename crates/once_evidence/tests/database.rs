//! The evidence database on disk: creation, WAL, queries and their filters, schema
//! versions, links, retention, concurrent writers, and the journal builds append to.

use std::path::Path;

use once_evidence::{
    ActionEvidence, CacheOutcome, DATABASE_PATH, EvidenceError, EvidenceRecord, EvidenceStatus,
    EvidenceStore, JOURNAL_PATH, RETAINED_RECORDS, Subject, append_to_journal, query_workspace,
};
use once_model::Sha256Digest;

fn target_evidence(id: &str, capability: &str, key: &str) -> ActionEvidence {
    ActionEvidence {
        subject: Subject::Target {
            id: id.into(),
            capability: capability.into(),
        },
        action: Some(format!("{id}#{capability}/0")),
        status: EvidenceStatus::Passed,
        action_digest: Sha256Digest::of(key.as_bytes()),
        input_digest: Some(Sha256Digest::of(b"static")),
        cache: CacheOutcome::Miss,
        exit_code: Some(0),
        stdout: Some(Sha256Digest::of(b"stdout")),
        stderr: None,
    }
}

fn subjects(records: &[EvidenceRecord]) -> Vec<String> {
    records
        .iter()
        .map(|record| record.evidence.subject.to_string())
        .collect()
}

fn sqlite(root: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(root.join(DATABASE_PATH)).unwrap()
}

#[test]
fn no_database_is_no_records_and_makes_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    assert_eq!(query_workspace(workspace.path(), None, 5).unwrap(), vec![]);
    assert!(!workspace.path().join(".once").exists());
    std::fs::create_dir(workspace.path().join(".once")).unwrap();
    assert_eq!(
        query_workspace(workspace.path(), Some("cli"), 5).unwrap(),
        vec![]
    );
    assert!(!workspace.path().join(DATABASE_PATH).exists());
}

#[test]
fn records_come_back_newest_first_filtered_by_subject() {
    let workspace = tempfile::tempdir().unwrap();
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    let command_digest = Sha256Digest::of(b"command");
    let records = vec![
        EvidenceRecord::new(target_evidence("cli", "build", "k1"), 1_000),
        EvidenceRecord::new(target_evidence("cli", "test", "k2"), 2_000),
        EvidenceRecord::new(target_evidence("lib", "build", "k3"), 3_000),
        EvidenceRecord::new(
            ActionEvidence {
                subject: Subject::Command {
                    action_digest: command_digest,
                },
                action: None,
                action_digest: command_digest,
                ..target_evidence("", "", "")
            },
            4_000,
        ),
        // The same millisecond as the one before: insertion order breaks the tie.
        EvidenceRecord::new(target_evidence("cli", "test", "k4"), 4_000),
    ];
    assert_eq!(store.record_all(&records).unwrap(), 5);
    drop(store);

    let root = workspace.path();
    let all = query_workspace(root, None, 5).unwrap();
    assert_eq!(
        subjects(&all),
        [
            "cli:test",
            &command_digest.to_hex(),
            "lib:build",
            "cli:test",
            "cli:build"
        ]
    );
    assert_eq!(all[0], records[4], "a record reads back as written");
    assert_eq!(subjects(&query_workspace(root, None, 2).unwrap()).len(), 2);
    assert_eq!(
        subjects(&query_workspace(root, Some("cli"), 5).unwrap()),
        ["cli:test", "cli:test", "cli:build"]
    );
    let cli_test = query_workspace(root, Some("cli:test"), 5).unwrap();
    assert_eq!(cli_test, vec![records[4].clone(), records[1].clone()]);
    assert_eq!(
        query_workspace(root, Some(&Sha256Digest::of(b"k3").to_hex()), 5).unwrap(),
        vec![records[2].clone()],
        "an action digest selects that action's records"
    );
    assert_eq!(
        query_workspace(root, Some(&command_digest.to_hex()), 5).unwrap(),
        vec![records[3].clone()]
    );
    assert_eq!(query_workspace(root, Some("cli:run"), 5).unwrap(), vec![]);
    assert_eq!(query_workspace(root, Some("cl"), 5).unwrap(), vec![]);
}

#[test]
fn the_database_is_in_wal_mode_with_a_schema_version() {
    let workspace = tempfile::tempdir().unwrap();
    EvidenceStore::open(workspace.path()).unwrap();
    let connection = sqlite(workspace.path());
    let mode: String = connection
        .query_row("PRAGMA journal_mode", [], |row| row.get(0))
        .unwrap();
    assert_eq!(mode, "wal");
    let version: i64 = connection
        .query_row(
            "SELECT version FROM once_schema WHERE component = 'evidence'",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(version, once_evidence::SCHEMA_VERSION);
}

#[test]
fn an_identical_record_is_stored_once() {
    let workspace = tempfile::tempdir().unwrap();
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    let record = EvidenceRecord::new(target_evidence("cli", "build", "k"), 7);
    assert!(store.record(&record).unwrap());
    assert!(!store.record(&record).unwrap());
    assert_eq!(store.query(None, 100).unwrap(), vec![record]);
}

#[test]
fn limits_outside_one_to_a_hundred_are_refused() {
    let workspace = tempfile::tempdir().unwrap();
    for limit in [0, 101] {
        let error = query_workspace(workspace.path(), None, limit).unwrap_err();
        assert!(matches!(error, EvidenceError::InvalidLimit(l) if l == limit));
        assert_eq!(
            error.to_string(),
            format!("the limit must be from 1 through 100, not {limit}")
        );
    }
}

#[test]
fn a_newer_schema_is_an_error_and_left_alone() {
    let workspace = tempfile::tempdir().unwrap();
    EvidenceStore::open(workspace.path()).unwrap();
    sqlite(workspace.path())
        .execute("UPDATE once_schema SET version = 9", [])
        .unwrap();
    for error in [
        EvidenceStore::open(workspace.path()).unwrap_err(),
        query_workspace(workspace.path(), None, 5).unwrap_err(),
    ] {
        assert!(matches!(
            error,
            EvidenceError::NewerSchema { version: 9, .. }
        ));
        assert!(
            error.to_string().contains(
                "has schema version 9, written by a newer once; this once reads version 1"
            ),
            "{error}"
        );
    }
}

#[test]
fn an_older_schema_is_rebuilt() {
    let workspace = tempfile::tempdir().unwrap();
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    store
        .record(&EvidenceRecord::new(
            target_evidence("cli", "build", "k"),
            1,
        ))
        .unwrap();
    drop(store);
    sqlite(workspace.path())
        .execute_batch(
            "UPDATE once_schema SET version = 0; DROP TABLE evidence_records; CREATE TABLE evidence_records (x);",
        )
        .unwrap();
    assert_eq!(query_workspace(workspace.path(), None, 5).unwrap(), vec![]);
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    let record = EvidenceRecord::new(target_evidence("cli", "build", "k"), 2);
    assert!(store.record(&record).unwrap());
    assert_eq!(store.query(None, 5).unwrap(), vec![record]);
}

#[test]
fn a_foreign_database_is_an_error_naming_its_tables() {
    let workspace = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join(".once")).unwrap();
    sqlite(workspace.path())
        .execute_batch("CREATE TABLE notes (text);")
        .unwrap();
    let error = query_workspace(workspace.path(), None, 5).unwrap_err();
    assert!(matches!(error, EvidenceError::Foreign { .. }));
    assert!(
        error
            .to_string()
            .contains("is not a once evidence database (it has the tables notes"),
        "{error}"
    );
}

#[test]
fn a_linked_state_directory_is_never_followed() {
    let workspace = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), workspace.path().join(".once")).unwrap();
    let error = EvidenceStore::open(workspace.path()).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    let error = query_workspace(workspace.path(), None, 5).unwrap_err();
    assert!(error.to_string().contains("symbolic link"), "{error}");
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn a_linked_database_file_is_never_followed() {
    let workspace = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join(".once")).unwrap();
    std::os::unix::fs::symlink(
        elsewhere.path().join("db"),
        workspace.path().join(DATABASE_PATH),
    )
    .unwrap();
    for error in [
        EvidenceStore::open(workspace.path()).unwrap_err(),
        query_workspace(workspace.path(), None, 5).unwrap_err(),
    ] {
        assert!(
            error
                .to_string()
                .contains("`.once/once.sqlite` is a symbolic link"),
            "{error}"
        );
    }
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

#[test]
fn only_the_newest_records_are_retained() {
    let workspace = tempfile::tempdir().unwrap();
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    let total = RETAINED_RECORDS + 3;
    let records: Vec<EvidenceRecord> = (0..total)
        .map(|n| EvidenceRecord::new(target_evidence("cli", "build", &n.to_string()), n))
        .collect();
    store.record_all(&records).unwrap();
    let count: i64 = sqlite(workspace.path())
        .query_row("SELECT count(*) FROM evidence_records", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(count as u64, RETAINED_RECORDS);
    let newest = store.query(None, 1).unwrap();
    assert_eq!(newest, vec![records[total as usize - 1].clone()]);
}

#[test]
fn concurrent_writers_all_succeed() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().to_path_buf();
    let writers: Vec<_> = (0..4)
        .map(|writer| {
            let root = root.clone();
            std::thread::spawn(move || {
                // Each writer opens its own connection, the first ones racing to create
                // the file and switch it to WAL.
                let mut store = EvidenceStore::open(&root).unwrap();
                for n in 0..50 {
                    let key = format!("{writer}-{n}");
                    store
                        .record(&EvidenceRecord::new(
                            target_evidence("cli", "build", &key),
                            n,
                        ))
                        .unwrap();
                }
            })
        })
        .collect();
    for writer in writers {
        writer.join().unwrap();
    }
    let count: i64 = sqlite(&root)
        .query_row("SELECT count(*) FROM evidence_records", [], |row| {
            row.get(0)
        })
        .unwrap();
    assert_eq!(count, 200);
}

#[test]
fn linked_journal_files_are_never_written_through() {
    let workspace = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let mut store = EvidenceStore::open(workspace.path()).unwrap();
    store
        .record(&EvidenceRecord::new(
            target_evidence("cli", "build", "k"),
            1,
        ))
        .unwrap();
    drop(store);
    for suffix in ["-wal", "-shm"] {
        let journal = workspace.path().join(format!("{DATABASE_PATH}{suffix}"));
        let _ = std::fs::remove_file(&journal);
        let outside = elsewhere.path().join(suffix);
        std::fs::write(&outside, b"outside").unwrap();
        std::os::unix::fs::symlink(&outside, &journal).unwrap();
    }
    // SQLite opens its journal files without following links: refused, not followed.
    let written = EvidenceStore::open(workspace.path()).and_then(|mut store| {
        store.record(&EvidenceRecord::new(
            target_evidence("cli", "build", "k"),
            2,
        ))
    });
    assert!(written.is_err(), "{written:?}");
    for suffix in ["-wal", "-shm"] {
        assert_eq!(
            std::fs::read(elsewhere.path().join(suffix)).unwrap(),
            b"outside",
            "{suffix} was written through its link"
        );
    }
}

#[test]
fn journaled_records_are_ingested_by_the_next_reader_once() {
    let workspace = tempfile::tempdir().unwrap();
    let records = vec![
        EvidenceRecord::new(target_evidence("cli", "build", "k1"), 1_000),
        EvidenceRecord::new(target_evidence("lib", "build", "k2"), 2_000),
    ];
    assert_eq!(append_to_journal(workspace.path(), &records).unwrap(), 2);
    // No database yet: the build did not open SQLite.
    assert!(!workspace.path().join(DATABASE_PATH).exists());
    let journal = workspace.path().join(JOURNAL_PATH);
    assert_eq!(
        std::fs::read_to_string(&journal).unwrap().lines().count(),
        2
    );
    // The same records again (a crash between ingesting and emptying) and a torn line
    // of a writer that died mid-write.
    append_to_journal(workspace.path(), &records[..1]).unwrap();
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(b"[\"torn");
    std::fs::write(&journal, text).unwrap();

    let read = query_workspace(workspace.path(), None, 5).unwrap();
    assert_eq!(read, vec![records[1].clone(), records[0].clone()]);
    assert_eq!(std::fs::read(&journal).unwrap(), b"");
    // Nothing is ingested twice.
    append_to_journal(workspace.path(), &records).unwrap();
    assert_eq!(query_workspace(workspace.path(), None, 5).unwrap().len(), 2);
}

#[test]
fn a_line_that_is_not_a_record_is_not_stored() {
    let workspace = tempfile::tempdir().unwrap();
    let record = EvidenceRecord::new(target_evidence("cli", "build", "k1"), 1_000);
    append_to_journal(workspace.path(), std::slice::from_ref(&record)).unwrap();
    let journal = workspace.path().join(JOURNAL_PATH);
    let mut text = std::fs::read(&journal).unwrap();
    text.extend_from_slice(b"[\"not a digest\"]\n{}\n");
    std::fs::write(&journal, text).unwrap();
    assert_eq!(
        query_workspace(workspace.path(), None, 5).unwrap(),
        vec![record]
    );
}

#[test]
fn a_linked_evidence_journal_is_never_written_through() {
    let workspace = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    std::fs::create_dir(workspace.path().join(".once")).unwrap();
    let outside = elsewhere.path().join("journal");
    std::fs::write(&outside, b"outside").unwrap();
    std::os::unix::fs::symlink(&outside, workspace.path().join(JOURNAL_PATH)).unwrap();
    let record = EvidenceRecord::new(target_evidence("cli", "build", "k1"), 1_000);
    assert!(append_to_journal(workspace.path(), &[record]).is_err());
    assert_eq!(std::fs::read(&outside).unwrap(), b"outside");
}
