//! `once query evidence`: records written through `once_evidence` (as the build commands
//! write them), read back by the real binary; limits, filters, no database, a linked
//! `.once`, and writers in separate processes recording at once.

use expect_test::expect;
use once_evidence::{
    ActionEvidence, CacheOutcome, EvidenceRecord, EvidenceStatus, EvidenceStore, Sha256Digest,
    Subject,
};

use crate::support::{Once, Workspace, check};

fn demo() -> Workspace {
    Workspace::copy("demo")
}

fn target_record(id: &str, capability: &str, n: u64) -> EvidenceRecord {
    EvidenceRecord::new(
        ActionEvidence {
            subject: Subject::Target {
                id: id.into(),
                capability: capability.into(),
            },
            action: Some(format!("{id}#{capability}/{n}")),
            status: EvidenceStatus::Passed,
            action_digest: Sha256Digest::of(format!("{id}:{capability}:{n}").as_bytes()),
            input_digest: Some(Sha256Digest::of(b"static")),
            cache: CacheOutcome::Miss,
            exit_code: Some(0),
            stdout: Some(Sha256Digest::of(b"stdout")),
            stderr: None,
        },
        1_812_345_678_900 + n,
    )
}

fn record(workspace: &Workspace, records: &[EvidenceRecord]) {
    let mut store = EvidenceStore::open(workspace.root()).unwrap();
    assert_eq!(store.record_all(records).unwrap(), records.len());
}

fn subjects(outcome: &crate::support::Outcome) -> Vec<String> {
    outcome
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|record| {
            let subject = &record["subject"];
            format!(
                "{}:{}",
                subject["id"].as_str().unwrap(),
                subject["capability"].as_str().unwrap_or("-")
            )
        })
        .collect()
}

#[test]
fn without_a_database_there_is_no_evidence_and_nothing_is_made() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "evidence"]),
            Once::at(&demo, &["query", "evidence", "--subject", "cli:test"]),
            Once::at(&demo, &["query", "evidence", "--format", "json"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query evidence
            exit: 0
            --- stdout
            no evidence recorded
            --- stderr

            $ once -C $WORKSPACE query evidence --subject cli:test
            exit: 0
            --- stdout
            no evidence for `cli:test`
            --- stderr

            $ once -C $WORKSPACE query evidence --format json
            exit: 0
            --- stdout
            []
            --- stderr
        "#]],
    );
    assert!(!demo.root().join(".once/once.sqlite").exists());
}

#[test]
fn records_read_back_newest_first_in_both_formats() {
    let demo = demo();
    let command_digest = Sha256Digest::of(b"a command");
    let failed = EvidenceRecord::new(
        ActionEvidence {
            status: EvidenceStatus::Failed,
            exit_code: Some(2),
            cache: CacheOutcome::Bypass,
            stderr: Some(Sha256Digest::of(b"boom")),
            ..target_record("cli", "run", 0).evidence
        },
        1_812_345_678_950,
    );
    let command = EvidenceRecord::new(
        ActionEvidence {
            subject: Subject::Command {
                action_digest: command_digest,
            },
            action: None,
            action_digest: command_digest,
            input_digest: None,
            exit_code: None,
            ..target_record("", "", 0).evidence
        },
        1_812_345_678_960,
    );
    record(
        &demo,
        &[
            target_record("cli", "test", 1),
            target_record("cli", "build", 2),
            failed,
            command,
        ],
    );
    check(
        &[
            Once::at(&demo, &["query", "evidence", "--limit", "3"]),
            Once::at(
                &demo,
                &[
                    "query",
                    "evidence",
                    "--subject",
                    "cli:test",
                    "--format",
                    "json",
                ],
            ),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query evidence --limit 3
            exit: 0
            --- stdout
            2027-06-07T05:21:18.960Z b2ac90ec3c2edf86ae2072aa26a51b21cc81e8a4cf57b68fc5b8ca6197b0433c passed cache=miss exit=none action=b2ac90ec3c2edf86ae2072aa26a51b21cc81e8a4cf57b68fc5b8ca6197b0433c
            2027-06-07T05:21:18.950Z cli:run failed cache=bypass exit=2 action=9f0e0b468b4566ec01e4fd43fa1a5aa4c3079243f81cd593a050a3399d4c05c3 cli#run/0
            2027-06-07T05:21:18.902Z cli:build passed cache=miss exit=0 action=09e0d8fa44288ea88cb2e3fde440f714dd0d50de840b850c3667e95af17ec66f cli#build/2
            --- stderr

            $ once -C $WORKSPACE query evidence --subject cli:test --format json
            exit: 0
            --- stdout
            [
              {
                "schema": "once.evidence.v1",
                "id": "755d7d72ba8e68c23947f2dd0811743a9dd40b51f39a1347b3f82745f0cbb881",
                "kind": "action_result",
                "subject": {
                  "kind": "target",
                  "id": "cli",
                  "capability": "test"
                },
                "action": "cli#test/1",
                "status": "passed",
                "action_digest": "53f58c6a947f73d5100b2ed6c717d877dbdfaf33efe21ed5f2fd1c1514e0dc67",
                "input_digest": "2053dbbf6ec7135c4e994d3464c478db6f48d3ca21052c8f44915edc96e02c39",
                "cache": "miss",
                "exit_code": 0,
                "stdout": "63d42d26156fcc761e57da4128e9881d5bdf3bf933f0f6e9c93d6e26b9b90ae7",
                "created_at_unix_ms": 1812345678901
              }
            ]
            --- stderr
        "#]],
    );
}

#[test]
fn the_limit_defaults_to_five_and_the_subject_filters() {
    let demo = demo();
    let records: Vec<EvidenceRecord> = (0..4)
        .map(|n| target_record("cli", "test", n))
        .chain((4..8).map(|n| target_record("cli", "build", n)))
        .chain([target_record("lib", "test", 8)])
        .collect();
    record(&demo, &records);
    let json = |args: &[&str]| {
        let mut all = vec!["query", "evidence", "--format", "json"];
        all.extend_from_slice(args);
        let outcome = Once::at(&demo, &all).run();
        assert_eq!(outcome.code, 0, "{}", outcome.render());
        subjects(&outcome)
    };
    assert_eq!(
        json(&[]),
        [
            "lib:test",
            "cli:build",
            "cli:build",
            "cli:build",
            "cli:build"
        ]
    );
    assert_eq!(json(&["--limit", "100"]).len(), 9);
    assert_eq!(json(&["--limit", "1"]), ["lib:test"]);
    assert_eq!(json(&["--subject", "cli", "--limit", "100"]).len(), 8);
    assert_eq!(
        json(&["--subject", "cli:test", "--limit", "100"]),
        ["cli:test"; 4]
    );
    assert_eq!(json(&["--subject", "lib:build"]), Vec::<String>::new());
    let digest = records[2].evidence.action_digest.to_hex();
    let by_digest = Once::at(
        &demo,
        &[
            "query",
            "evidence",
            "--subject",
            &digest,
            "--format",
            "json",
        ],
    )
    .run();
    assert_eq!(by_digest.json()[0]["action"], "cli#test/2");
    assert_eq!(by_digest.json().as_array().unwrap().len(), 1);
}

#[test]
fn a_limit_outside_one_to_a_hundred_is_a_usage_error() {
    let demo = demo();
    check(
        &[
            Once::at(&demo, &["query", "evidence", "--limit", "0"]),
            Once::at(&demo, &["query", "evidence", "--limit", "101"]),
        ],
        &expect![[r#"
            $ once -C $WORKSPACE query evidence --limit 0
            exit: 2
            --- stdout
            --- stderr
            error: invalid value '0' for '--limit <N>': 0 is not in 1..=100

            For more information, try '--help'.

            $ once -C $WORKSPACE query evidence --limit 101
            exit: 2
            --- stdout
            --- stderr
            error: invalid value '101' for '--limit <N>': 101 is not in 1..=100

            For more information, try '--help'.
        "#]],
    );
}

#[test]
fn a_linked_state_directory_is_refused() {
    let demo = demo();
    let elsewhere = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), demo.root().join(".once")).unwrap();
    let outcome = Once::at(&demo, &["query", "evidence"]).run();
    assert_eq!(outcome.code, 2, "{}", outcome.render());
    assert!(
        outcome
            .stderr
            .contains("`.once` is a symbolic link; once does not write through links"),
        "{}",
        outcome.render()
    );
}

/// The environment variable that turns [`evidence_writer_process`] into a writer.
const WRITER_ROOT: &str = "ONCE_TEST_EVIDENCE_WRITER_ROOT";
const WRITER_TARGET: &str = "ONCE_TEST_EVIDENCE_WRITER_TARGET";
const RECORDS_PER_WRITER: u64 = 100;

/// Not a test on its own: [`writers_in_separate_processes_never_fail_on_a_lock`] runs
/// this test binary again with [`WRITER_ROOT`] set, and each such process records
/// [`RECORDS_PER_WRITER`] records one transaction at a time, each opening the database
/// anew (as separate `once` commands would).
#[test]
#[ignore = "a child process of writers_in_separate_processes_never_fail_on_a_lock, which runs it"]
fn evidence_writer_process() {
    let (Some(root), Some(target)) = (
        std::env::var_os(WRITER_ROOT),
        std::env::var(WRITER_TARGET).ok(),
    ) else {
        panic!("run by writers_in_separate_processes_never_fail_on_a_lock, with {WRITER_ROOT}");
    };
    for n in 0..RECORDS_PER_WRITER {
        let mut store = EvidenceStore::open(std::path::Path::new(&root)).unwrap();
        assert!(store.record(&target_record(&target, "build", n)).unwrap());
    }
}

#[test]
fn writers_in_separate_processes_never_fail_on_a_lock() {
    let demo = demo();
    let writers: Vec<std::process::Child> = ["a", "b"]
        .iter()
        .map(|target| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "--ignored",
                    "evidence::evidence_writer_process",
                    "--nocapture",
                ])
                .env(WRITER_ROOT, demo.root())
                .env(WRITER_TARGET, target)
                .stdout(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    // Readers run while the writers write.
    for _ in 0..3 {
        let reader = Once::at(&demo, &["query", "evidence", "--format", "json"]).run();
        assert_eq!(reader.code, 0, "{}", reader.render());
    }
    for mut writer in writers {
        assert!(writer.wait().unwrap().success(), "a writer failed");
    }
    for target in ["a", "b"] {
        let outcome = Once::at(
            &demo,
            &[
                "query",
                "evidence",
                "--subject",
                target,
                "--limit",
                "100",
                "--format",
                "json",
            ],
        )
        .run();
        assert_eq!(
            outcome.json().as_array().unwrap().len() as u64,
            RECORDS_PER_WRITER,
            "{}",
            outcome.render()
        );
    }
}

#[test]
fn a_file_that_is_not_a_database_is_an_error_naming_it() {
    let demo = demo();
    demo.write(
        ".once/once.sqlite",
        "not a database, just text long enough to be read",
    );
    let outcome = Once::at(&demo, &["query", "evidence", "--format", "json"]).run();
    assert_eq!(outcome.code, 2, "{}", outcome.render());
    let error: serde_json::Value = serde_json::from_str(&outcome.stderr).unwrap();
    let message = error["error"]["message"].as_str().unwrap();
    assert!(
        message.starts_with(
            "evidence database `$WORKSPACE/.once/once.sqlite`: file is not a database"
        ),
        "{message}"
    );
}
