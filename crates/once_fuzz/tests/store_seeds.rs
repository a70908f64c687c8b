//! The seeds of the `store_formats` target are files the real writers wrote: this test
//! checks that each still reads as a valid file of its format (so the seeds keep
//! exercising the decoders' accepting paths after a format changes), and
//! `UPDATE_SEEDS=1 cargo test -p once_fuzz --test store_seeds` writes them again with the
//! writers of the day.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use once_analysis::{AnalysisHost, MemorySystem};
use once_build::plan_cache::last_plan_file::LastPlan;
use once_build::plan_cache::memo::PlanMemoFile;
use once_db::{PlanMemo as _, Sha256Digest};
use once_evidence::{ActionEvidence, CacheOutcome, EvidenceRecord, EvidenceStatus, Subject};
use once_exec::Store;
use once_exec::record::{ActionRecord, OutputEntry, OutputKind, StreamDigest};
use once_exec::record_index::RecordIndex;
use once_model::action::TargetActions;
use once_model::codec::{decode_target_actions, encode_target_actions};

fn corpus() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus/store_formats")
}

/// A fixed time, so the written files do not depend on the day.
fn at() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_780_000_000)
}

fn record() -> ActionRecord {
    let digest = |text: &str| Sha256Digest::of(text.as_bytes());
    ActionRecord {
        exit_code: 0,
        duration: Duration::from_millis(40),
        stdout: StreamDigest {
            digest: digest("out"),
            size: 3,
        },
        stderr: StreamDigest {
            digest: digest(""),
            size: 0,
        },
        outputs: vec![
            OutputEntry {
                path: ".once/out/app/Gen/build/o.txt".to_owned(),
                kind: OutputKind::File {
                    mode: 0o644,
                    size: 3,
                    digest: digest("ok\n"),
                },
            },
            OutputEntry {
                path: ".once/out/app/Gen/build/dir".to_owned(),
                kind: OutputKind::Directory,
            },
            OutputEntry {
                path: ".once/out/app/Gen/build/dir/run".to_owned(),
                kind: OutputKind::File {
                    mode: 0o755,
                    size: 10,
                    digest: digest("#!/bin/sh\n"),
                },
            },
            OutputEntry {
                path: ".once/out/app/Gen/build/dir/link with space".to_owned(),
                kind: OutputKind::Symlink {
                    target: "../o.txt".to_owned(),
                },
            },
        ],
    }
}

/// The plan of a small workspace, as `once build` makes it.
fn workspace() -> AnalysisHost {
    let system = MemorySystem::default();
    system.write("/ws/once.toml", "[workspace]\n");
    system.write(
        "/ws/app/once.toml",
        "[[target]]\nname = \"Gen\"\nkind = \"command\"\nsrcs = [\"in.txt\"]\n\n\
         [target.attrs]\ncmd = \"cat in.txt > $OUT/o.txt\"\noutputs = [\"o.txt\"]\n\n\
         [[target]]\nname = \"App\"\nkind = \"sh_binary\"\nsrcs = [\"run.sh\"]\n",
    );
    system.write("/ws/app/in.txt", "in\n");
    system.write("/ws/app/run.sh", "#!/bin/sh\necho run\n");
    AnalysisHost::load(Arc::new(system), PathBuf::from("/ws"))
}

fn target_actions(host: &AnalysisHost) -> TargetActions {
    let plan = host
        .analysis()
        .action_plan("app/Gen", "build")
        .unwrap()
        .expect("the target exists");
    let step = plan.steps.last().expect("the target's own step");
    TargetActions {
        actions: step.actions.iter().map(|a| a.action.clone()).collect(),
        default_outputs: step.default_outputs.clone(),
    }
}

/// Every seed, written by today's writers: (file name, bytes).
fn written_seeds() -> Vec<(&'static str, Vec<u8>)> {
    let mut seeds = Vec::new();
    seeds.push((
        "action-record.txt",
        record().encode(&once_db::Sha256Digest::of(b"once.fuzz.record.key")),
    ));
    let host = workspace();
    let value = encode_target_actions(&target_actions(&host));
    seeds.push(("memo-value.bin", value.clone()));
    let memo = PlanMemoFile::from_bytes(Sha256Digest::of(b"once-fuzz"), None);
    memo.record(Sha256Digest::of(b"app/Gen build"), value);
    memo.record(Sha256Digest::of(b"empty"), Vec::new());
    seeds.push((
        "plan-memo.bin",
        memo.rewritten(at(), usize::MAX).expect("a memo with plans"),
    ));
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("cache")).unwrap();
    let index = RecordIndex::load(&store, Path::new("/ws"));
    index.remember(&Sha256Digest::of(b"key"), &record(), at());
    index.save(&store, at()).unwrap();
    let index_file = std::fs::read_dir(store.derived_path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("index-"))
        .expect("the index was written");
    seeds.push((
        "record-index.bin",
        std::fs::read(index_file.path()).unwrap(),
    ));
    // A last plan's value: the plan `once build app/...` keeps.
    let analysis = host.analysis();
    let plan = once_build::plan(&analysis, &["app/Gen".to_owned()], "build")
        .unwrap()
        .unwrap();
    let key = Sha256Digest::of(b"last");
    once_build::plan_cache::last_plan::remember(
        &analysis,
        &store,
        Path::new("/ws"),
        "build",
        &key,
        &plan,
        None,
    )
    .unwrap();
    let last = LastPlan::load(&store, Path::new("/ws"), "build").expect("a last plan");
    seeds.push(("last-plan-value.bin", last.value().to_vec()));
    let last_file = std::fs::read_dir(store.derived_path())
        .unwrap()
        .flatten()
        .find(|e| e.file_name().to_string_lossy().starts_with("last-plan-"))
        .expect("the last plan was written");
    seeds.push(("last-plan.bin", std::fs::read(last_file.path()).unwrap()));
    seeds.push(("digests.txt", digest_index()));
    seeds.push(("evidence.journal", journal()));
    seeds
}

/// `.once/digests` of the workspace the target's harness makes (the same files written
/// in the same order, so the entries' stamps are those the harness's files have).
fn digest_index() -> Vec<u8> {
    let system = MemorySystem::default();
    system.write("/ws/once.toml", "[workspace]\n");
    system.write("/ws/a.txt", "a\n");
    system.write("/ws/dir a/b.txt", "b\n");
    let host = AnalysisHost::load(Arc::new(system.clone()), PathBuf::from("/ws"));
    let analysis = host.analysis();
    analysis.prepare_digest_index();
    for path in ["a.txt", "dir a/b.txt", "once.toml"] {
        analysis.file_digest(path).unwrap().unwrap();
    }
    assert!(analysis.save_digest_index().unwrap());
    use once_db::System as _;
    system
        .read_bytes(Path::new("/ws/.once/digests"))
        .expect("the index was written")
}

fn journal() -> Vec<u8> {
    let dir = tempfile::tempdir().unwrap();
    let digest = |text: &str| Sha256Digest::of(text.as_bytes());
    let records = [
        EvidenceRecord::new(
            ActionEvidence {
                subject: Subject::Target {
                    id: "app/Gen".to_owned(),
                    capability: "build".to_owned(),
                },
                action: Some("app/Gen#build/cmd".to_owned()),
                status: EvidenceStatus::Passed,
                action_digest: digest("action"),
                input_digest: Some(digest("inputs")),
                cache: CacheOutcome::Miss,
                exit_code: Some(0),
                stdout: Some(digest("out")),
                stderr: None,
            },
            1_780_000_000_000,
        ),
        EvidenceRecord::new(
            ActionEvidence {
                subject: Subject::Command {
                    action_digest: digest("command"),
                },
                action: None,
                status: EvidenceStatus::Failed,
                action_digest: digest("command"),
                input_digest: None,
                cache: CacheOutcome::Bypass,
                exit_code: None,
                stdout: None,
                stderr: Some(digest("err")),
            },
            1_780_000_000_001,
        ),
    ];
    once_evidence::append_to_journal(dir.path(), &records).unwrap();
    std::fs::read(dir.path().join(once_evidence::JOURNAL_PATH)).unwrap()
}

/// Whether `bytes` read as a valid file of the format `name` holds.
fn accepted(name: &str, bytes: &[u8]) -> bool {
    let salt = Sha256Digest::of(b"once-fuzz");
    match name {
        "action-record.txt" => {
            ActionRecord::decode(&once_db::Sha256Digest::of(b"once.fuzz.record.key"), bytes).is_ok()
        }
        "memo-value.bin" => decode_target_actions(bytes).is_some(),
        "plan-memo.bin" => PlanMemoFile::from_bytes(salt, Some(bytes)).stored_len() == 2,
        "record-index.bin" => {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            let name = format!(
                "{}{}",
                once_exec::record_index::INDEX_PREFIX,
                Sha256Digest::of(b"/ws")
            );
            store.write_derived(&name, bytes).unwrap();
            RecordIndex::load(&store, Path::new("/ws"))
                .recent(&Sha256Digest::of(b"key"), at())
                .is_some_and(|(read, _)| read == record())
        }
        "last-plan.bin" => {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            let key = Sha256Digest::of(b"other");
            // Written under this program's name for the request; then replaced.
            LastPlan::save(&store, Path::new("/ws"), "build", &key, b"").unwrap();
            let file = std::fs::read_dir(store.derived_path())
                .unwrap()
                .flatten()
                .find(|e| e.file_name().to_string_lossy().starts_with("last-plan-"))
                .expect("the last plan was written");
            std::fs::write(file.path(), bytes).unwrap();
            LastPlan::load(&store, Path::new("/ws"), "build").is_some()
        }
        "last-plan-value.bin" => {
            let dir = tempfile::tempdir().unwrap();
            let store = Store::open(dir.path()).unwrap();
            let key = Sha256Digest::of(b"value");
            LastPlan::save(&store, Path::new("/ws"), "build", &key, bytes).unwrap();
            once_build::plan_cache::last_plan::Stored::load(&store, Path::new("/ws"), "build")
                .is_some()
        }
        "digests.txt" => std::str::from_utf8(bytes).is_ok_and(once_db::digests::is_valid_index),
        "evidence.journal" => {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join(once_evidence::JOURNAL_PATH);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, bytes).unwrap();
            once_evidence::query_workspace(dir.path(), None, once_evidence::MAX_LIMIT)
                .is_ok_and(|records| records.len() == 2)
        }
        other => panic!("no format is known for the seed `{other}`"),
    }
}

#[test]
fn store_seeds_are_valid_files_of_their_formats() {
    let update = std::env::var_os("UPDATE_SEEDS").is_some();
    let dir = corpus();
    for (name, bytes) in written_seeds() {
        assert!(
            accepted(name, &bytes),
            "today's writer of `{name}` wrote a file its reader refuses"
        );
        let path = dir.join(name);
        if update {
            std::fs::write(&path, &bytes).unwrap();
        }
        let seed = std::fs::read(&path).unwrap_or_else(|e| {
            panic!(
                "the seed {} is missing ({e}); UPDATE_SEEDS=1 writes it",
                path.display()
            )
        });
        assert!(
            accepted(name, &seed),
            "the seed {} is no longer a valid file of its format; UPDATE_SEEDS=1 writes it again",
            path.display()
        );
    }
}
