//! Source inputs checked again after an action ran (the fake runner plays the program):
//! a source the program rewrites while it runs, or one that changed between planning and
//! the run (its stamp is not the one its digest was keyed with), leaves the result
//! unrecorded with a warning naming it; an unchanged source, or one missing then and
//! now, is recorded as usual.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up real files"
)]

use std::collections::HashMap;
use std::path::Path;

use once_exec::{
    ActionStatus, CacheState, Executor, FakeOutcome, FakeRunner, PlannedAction, SourceStamps, Store,
};
use once_host::FileStamp;
use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep, Command};

/// `true NAME` reading `src/in.txt` and `src/gone.txt`, writing `.once/out/T/o`.
fn reader(name: &str) -> PlannedAction {
    PlannedAction {
        action: Action {
            id: format!("T#build/{name}"),
            target: "T".to_owned(),
            capability: "build".to_owned(),
            step: ActionStep::Run(Command::new(vec!["true".to_owned(), name.to_owned()])),
            inputs: vec!["src/in.txt".to_owned(), "src/gone.txt".to_owned()],
            outputs: vec![".once/out/T/o".to_owned()],
            cacheable: true,
        },
        static_key: Sha256Digest::of(b"the key of src/in.txt holding v1"),
    }
}

/// A program writing its output and, for `edit`, rewriting its source as it runs.
fn program() -> FakeRunner {
    FakeRunner::new(|argv| {
        let mut outcome = FakeOutcome::writes(".once/out/T/o", b"out");
        if argv[1] == "edit" {
            outcome
                .writes
                .push(("src/in.txt".to_owned(), b"v2\n".to_vec()));
        }
        outcome
    })
}

/// What the analysis stamps a source with (`once_db::OsSystem::stamp`).
fn stamp(root: &Path, path: &str) -> Option<FileStamp> {
    std::fs::metadata(root.join(path))
        .ok()
        .map(|metadata| FileStamp::of_metadata(&metadata))
}

/// The stamps a plan's digests were read with now: `src/in.txt` as it is, `src/gone.txt`
/// missing.
fn stamps_now(root: &Path) -> SourceStamps {
    SourceStamps::new(HashMap::from([
        ("src/in.txt".to_owned(), stamp(root, "src/in.txt")),
        ("src/gone.txt".to_owned(), None),
    ]))
}

#[test]
fn a_result_is_recorded_only_when_its_sources_are_what_its_key_describes() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir(root.join("src")).unwrap();
    std::fs::write(root.join("src/in.txt"), "v1\n").unwrap();
    let store = Store::open(&Store::default_path(root)).unwrap();
    let runner = program();
    let run = |planned: &PlannedAction, stamps: SourceStamps| {
        let report = Executor::new(root, &store)
            .with_runner(&runner)
            .with_source_stamps(stamps)
            .run(std::slice::from_ref(planned))
            .unwrap();
        report.results[0].clone()
    };

    // The program rewrites its source while it runs: succeeded, not recorded.
    let edited = run(&reader("edit"), stamps_now(root));
    assert_eq!(edited.status, ActionStatus::Succeeded);
    assert_eq!(edited.cache, Some(CacheState::Miss));
    assert_eq!(edited.warnings.len(), 1, "{:?}", edited.warnings);
    assert!(
        edited.warnings[0].starts_with("`src/in.txt` changed while the action ran"),
        "{:?}",
        edited.warnings
    );
    assert_eq!(store.read_record(&edited.key.unwrap()), None);

    // The source changed after planning (its stamp then is not its stamp now): the run
    // reads what the key does not describe.
    let planned = stamps_now(root);
    std::fs::write(root.join("src/in.txt"), "v3\n").unwrap();
    let stale = run(&reader("plain"), planned);
    assert_eq!(stale.status, ActionStatus::Succeeded);
    assert!(
        stale.warnings[0].starts_with("`src/in.txt` changed"),
        "{:?}",
        stale.warnings
    );
    assert_eq!(store.read_record(&stale.key.unwrap()), None);
    // A file missing when keyed that exists when the action ends.
    std::fs::write(root.join("src/gone.txt"), "here\n").unwrap();
    let appeared = run(&reader("plain"), stamps_now(root));
    assert!(
        appeared.warnings[0].starts_with("`src/gone.txt` changed"),
        "{:?}",
        appeared.warnings
    );
    std::fs::remove_file(root.join("src/gone.txt")).unwrap();

    // Unchanged sources (the missing one still missing): recorded, then a hit.
    let recorded = run(&reader("plain"), stamps_now(root));
    assert!(recorded.warnings.is_empty(), "{:?}", recorded.warnings);
    assert_eq!(recorded.cache, Some(CacheState::Miss));
    assert!(store.read_record(&recorded.key.unwrap()).is_some());
    let hit = run(&reader("plain"), stamps_now(root));
    assert_eq!(hit.cache, Some(CacheState::Hit));

    // Without stamps from the front end, the executor stamps the sources before the run.
    let unknown = run(&reader("edit"), SourceStamps::default());
    assert!(
        unknown.warnings[0].starts_with("`src/in.txt` changed while the action ran"),
        "{:?}",
        unknown.warnings
    );
}
