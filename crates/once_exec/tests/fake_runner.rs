//! The executor's scheduling and caching, with the in-memory fake runner: order and
//! parallelism, failure propagation and `keep_going`, early cutoff, hits and restores,
//! plan errors, progress, bounded streams and the in-process steps.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::Duration;

use once_exec::{
    ActionStatus, CacheState, ExecOptions, ExecutionReport, Executor, FakeOutcome, FakeRunner,
    HostEnvironment, OutputScope, PlanError, PlannedAction, Progress, Store,
};
use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep, Command};

/// An action of target `T` named `name` that runs `true <name>` (the fake decides what
/// that does), reading `inputs` and writing `outputs` (names under `.once/out/T`).
fn action(name: &str, inputs: &[&str], outputs: &[&str]) -> PlannedAction {
    PlannedAction {
        action: Action {
            id: format!("T#build/{name}"),
            target: "T".to_owned(),
            capability: "build".to_owned(),
            step: ActionStep::Run(Command::new(vec!["true".to_owned(), name.to_owned()])),
            inputs: inputs.iter().map(|input| out(input)).collect(),
            outputs: outputs.iter().map(|output| out(output)).collect(),
            cacheable: true,
        },
        static_key: Sha256Digest::of(name.as_bytes()),
    }
}

fn out(name: &str) -> String {
    if name.starts_with("src/") {
        name.to_owned()
    } else {
        format!(".once/out/T/{name}")
    }
}

/// A fake where `true <name>` writes `.once/out/T/<name>` with `<name>` in it, takes
/// 30 ms, and fails for the names in `failing`.
fn writer(failing: &'static [&'static str]) -> FakeRunner {
    FakeRunner::new(move |argv| {
        let name = argv[1].as_str();
        if failing.contains(&name) {
            return FakeOutcome::failing(2, "boom\n");
        }
        FakeOutcome::writes(&out(name), name.as_bytes()).taking(Duration::from_millis(30))
    })
}

struct Fixture {
    workspace: tempfile::TempDir,
    store: Store,
}

impl Fixture {
    fn new() -> Fixture {
        let workspace = tempfile::tempdir().unwrap();
        let store = Store::open(&Store::default_path(workspace.path())).unwrap();
        Fixture { workspace, store }
    }

    fn root(&self) -> &Path {
        self.workspace.path()
    }

    fn run(
        &self,
        runner: &FakeRunner,
        plan: &[PlannedAction],
        jobs: usize,
        keep_going: bool,
    ) -> ExecutionReport {
        Executor::new(self.root(), &self.store)
            .with_runner(runner)
            .with_options(options(jobs, keep_going))
            .run(plan)
            .unwrap()
    }
}

fn options(jobs: usize, keep_going: bool) -> ExecOptions {
    ExecOptions {
        jobs: Some(jobs),
        keep_going,
        host_env: HostEnvironment::from_pairs([("PATH", "/usr/bin:/bin")]),
        stream_memory_limit: 1024,
        once_program: None,
        sandbox: once_exec::SandboxMode::Off,
        validate: false,
    }
}

/// `count` actions `p0`, `p1`… that depend on nothing.
fn independent(count: usize) -> Vec<PlannedAction> {
    (0..count)
        .map(|i| {
            let name = format!("p{i}");
            action(&name, &[], &[&name])
        })
        .collect()
}

fn names(runner: &FakeRunner) -> Vec<String> {
    runner
        .ran()
        .into_iter()
        .map(|argv| argv[1].clone())
        .collect()
}

fn summary(report: &ExecutionReport) -> Vec<String> {
    report
        .results
        .iter()
        .map(|result| {
            let cache = result.cache.map_or("-", |cache| cache.as_str());
            format!("{} {:?} {cache}", result.id, result.status)
        })
        .collect()
}

#[test]
fn a_diamond_runs_in_dependency_order_with_its_middle_in_parallel() {
    let fixture = Fixture::new();
    let plan = [
        action("d", &["b", "c"], &["d"]),
        action("b", &["a"], &["b"]),
        action("c", &["a"], &["c"]),
        action("a", &["src/a.txt"], &["a"]),
    ];
    let runner = writer(&[]);
    let report = fixture.run(&runner, &plan, 4, false);
    assert!(report.succeeded(), "{:?}", summary(&report));
    let ran = names(&runner);
    assert_eq!(ran.first().map(String::as_str), Some("a"));
    assert_eq!(ran.last().map(String::as_str), Some("d"));
    assert_eq!(runner.peak_parallelism(), 2, "b and c ran at once");
    assert_eq!(
        std::fs::read_to_string(fixture.root().join(".once/out/T/d")).unwrap(),
        "d"
    );
}

#[test]
fn the_longest_chain_starts_first() {
    let fixture = Fixture::new();
    let plan = [
        action("single", &[], &["single"]),
        action("x3", &["x2"], &["x3"]),
        action("x2", &["x1"], &["x2"]),
        action("x1", &[], &["x1"]),
    ];
    let runner = writer(&[]);
    fixture.run(&runner, &plan, 1, false);
    // x1 and x2 head longer chains than `single`; then x3 and `single` are both one
    // action from the end, and ties go in plan order.
    assert_eq!(names(&runner), ["x1", "x2", "single", "x3"]);
}

#[test]
fn jobs_bound_the_parallelism() {
    let fixture = Fixture::new();
    let plan = independent(8);
    let runner = writer(&[]);
    let report = fixture.run(&runner, &plan, 3, false);
    assert!(report.succeeded());
    assert_eq!(runner.peak_parallelism(), 3);
}

#[test]
fn a_failure_skips_its_dependents_and_stops_new_work_unless_keep_going() {
    let plan = [
        action("bad", &[], &["bad"]),
        action("after", &["bad"], &["after"]),
        action("way_after", &["after"], &["way_after"]),
        action("independent", &[], &["independent"]),
    ];
    let fixture = Fixture::new();
    let runner = writer(&["bad"]);
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(
        summary(&report),
        [
            "T#build/bad Failed miss",
            "T#build/after Skipped -",
            "T#build/way_after Skipped -",
            "T#build/independent Skipped -",
        ]
    );
    let bad = report.result("T#build/bad").unwrap();
    assert_eq!(bad.exit_code, Some(2));
    assert_eq!(
        bad.message.as_deref(),
        Some("`true bad` exited with code 2")
    );
    assert_eq!(bad.stderr.tail, b"boom\n");
    assert_eq!(
        report.result("T#build/after").unwrap().message.as_deref(),
        Some("not run: it depends on `T#build/bad`, which did not succeed")
    );
    assert_eq!(
        report
            .result("T#build/independent")
            .unwrap()
            .message
            .as_deref(),
        Some("not started: another action failed")
    );

    let fixture = Fixture::new();
    let runner = writer(&["bad"]);
    let report = fixture.run(&runner, &plan, 1, true);
    assert_eq!(
        summary(&report),
        [
            "T#build/bad Failed miss",
            "T#build/after Skipped -",
            "T#build/way_after Skipped -",
            "T#build/independent Succeeded miss",
        ]
    );
    assert!(!report.succeeded());
}

#[test]
fn failures_are_not_cached() {
    let fixture = Fixture::new();
    let plan = [action("bad", &[], &["bad"])];
    let runner = writer(&["bad"]);
    fixture.run(&runner, &plan, 1, false);
    fixture.run(&runner, &plan, 1, false);
    assert_eq!(names(&runner), ["bad", "bad"]);
}

#[test]
fn a_second_run_is_all_hits_and_restores_deleted_outputs() {
    let fixture = Fixture::new();
    let plan = [action("b", &["a"], &["b"]), action("a", &[], &["a"])];
    let runner = writer(&[]);
    let first = fixture.run(&runner, &plan, 2, false);
    assert_eq!(
        summary(&first),
        ["T#build/b Succeeded miss", "T#build/a Succeeded miss"]
    );
    let second = fixture.run(&runner, &plan, 2, false);
    assert_eq!(
        summary(&second),
        ["T#build/b Succeeded hit", "T#build/a Succeeded hit"]
    );
    assert_eq!(first.results[0].key, second.results[0].key);
    assert_eq!(first.results[0].outputs, second.results[0].outputs);
    std::fs::remove_dir_all(fixture.root().join(".once/out")).unwrap();
    let third = fixture.run(&runner, &plan, 2, false);
    assert_eq!(
        summary(&third),
        ["T#build/b Succeeded hit", "T#build/a Succeeded hit"]
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join(".once/out/T/b")).unwrap(),
        "b"
    );
    assert_eq!(
        names(&runner),
        ["a", "b"],
        "nothing ran after the first time"
    );
}

#[test]
fn the_workspace_index_copies_record_files_until_clean_or_gc() {
    let fixture = Fixture::new();
    let plan = [action("a", &[], &["a"])];
    let runner = writer(&[]);
    let remove_record_files = || {
        let actions = fixture.store.path().join("actions");
        for fan in std::fs::read_dir(&actions).unwrap() {
            std::fs::remove_dir_all(fan.unwrap().path()).unwrap();
        }
    };
    let states =
        |report: &ExecutionReport| report.results.iter().map(|r| r.cache).collect::<Vec<_>>();
    fixture.run(&runner, &plan, 1, false);
    // The no-op build reads the workspace's index, not the record file (removed by hand
    // here): its copy of the record, with the output in place, is the hit.
    remove_record_files();
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(states(&report), [Some(CacheState::Hit)]);
    // `clean` removes the index with the records: the action runs again.
    fixture.store.clean().unwrap();
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(states(&report), [Some(CacheState::Miss)]);
    // So does `gc`, whatever it keeps.
    remove_record_files();
    fixture.store.gc(u64::MAX).unwrap();
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(states(&report), [Some(CacheState::Miss)]);
    assert_eq!(names(&runner), ["a", "a", "a"]);
}

#[test]
fn a_program_replaced_while_its_action_runs_leaves_the_result_unrecorded() {
    use std::os::unix::fs::PermissionsExt as _;
    let fixture = Fixture::new();
    // The program lives outside the workspace (identified once per execution); the fake
    // replaces it while its action runs, as an upgrade during a build would.
    let tools = tempfile::tempdir().unwrap();
    let program = tools.path().join("tool");
    std::fs::write(&program, "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(&program, std::fs::Permissions::from_mode(0o755)).unwrap();
    let upgrade = Mutex::new(Some(program.clone()));
    let runner = FakeRunner::new(move |_| {
        if let Some(program) = upgrade.lock().unwrap().take() {
            std::fs::write(&program, "#!/bin/sh\n# upgraded\n").unwrap();
        }
        FakeOutcome::writes(&out("a"), b"a")
    });
    let mut planned = action("a", &[], &["a"]);
    if let ActionStep::Run(command) = &mut planned.action.step {
        command.argv[0] = "tool".to_owned();
    }
    let plan = [planned];
    let run = || {
        let mut options = options(1, false);
        options.host_env = HostEnvironment::from_pairs([("PATH", tools.path().to_str().unwrap())]);
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .with_options(options)
            .run(&plan)
            .unwrap()
    };
    let first = run();
    assert_eq!(summary(&first), ["T#build/a Succeeded miss"]);
    assert!(
        first.results[0]
            .warnings
            .iter()
            .any(|w| w.contains("changed while the build ran")),
        "{:?}",
        first.results[0].warnings
    );
    assert_eq!(
        fixture.store.stats().unwrap().actions,
        0,
        "nothing recorded"
    );
    // The program stays as it is now: the action runs once more, then is a hit.
    assert_eq!(summary(&run()), ["T#build/a Succeeded miss"]);
    assert_eq!(summary(&run()), ["T#build/a Succeeded hit"]);
}

#[test]
fn a_hit_leaves_outputs_in_place_untouched() {
    use std::os::unix::fs::MetadataExt as _;
    let fixture = Fixture::new();
    let plan = [action("a", &[], &["a"])];
    let runner = writer(&[]);
    fixture.run(&runner, &plan, 1, false);
    let output = fixture.root().join(".once/out/T/a");
    let before = std::fs::metadata(&output).unwrap();
    for _ in 0..2 {
        let report = fixture.run(&runner, &plan, 1, false);
        assert_eq!(report.results[0].cache, Some(CacheState::Hit));
        let after = std::fs::metadata(&output).unwrap();
        assert_eq!(
            (after.ino(), after.mtime_nsec(), after.ctime_nsec()),
            (before.ino(), before.mtime_nsec(), before.ctime_nsec()),
            "the output was not rewritten"
        );
    }
}

#[test]
fn an_output_changed_in_place_is_rebuilt_since_it_changed_its_blob() {
    // The output is a hard link to its blob: the write broke the blob's seal, the blob
    // no longer matches its digest, so the action runs again (linked_outputs.rs has the
    // other ways of writing through a link).
    let fixture = Fixture::new();
    let plan = [action("a", &[], &["a"])];
    let runner = writer(&[]);
    fixture.run(&runner, &plan, 1, false);
    std::fs::write(fixture.root().join(".once/out/T/a"), "edited").unwrap();
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(report.results[0].cache, Some(CacheState::Miss));
    assert_eq!(
        std::fs::read_to_string(fixture.root().join(".once/out/T/a")).unwrap(),
        "a"
    );
    assert_eq!(names(&runner), ["a", "a"]);
}

#[test]
fn early_cutoff_a_dependency_rebuilt_into_identical_bytes_leaves_dependents_hits() {
    let fixture = Fixture::new();
    let content = std::sync::Arc::new(Mutex::new("v1".to_owned()));
    let shared = content.clone();
    let runner = FakeRunner::new(move |argv| {
        let name = argv[1].as_str();
        let bytes = if name == "lib" {
            shared.lock().unwrap().clone()
        } else {
            name.to_owned()
        };
        FakeOutcome::writes(&out(name), bytes.as_bytes())
    });
    let mut plan = vec![
        action("app", &["lib"], &["app"]),
        action("lib", &[], &["lib"]),
    ];
    fixture.run(&runner, &plan, 1, false);
    // A source of `lib` changed (its static key), but it builds the same bytes.
    plan[1].static_key = Sha256Digest::of(b"lib, edited comment");
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(
        summary(&report),
        ["T#build/app Succeeded hit", "T#build/lib Succeeded miss"]
    );
    // Now it builds different bytes: the dependent runs.
    *content.lock().unwrap() = "v2".to_owned();
    plan[1].static_key = Sha256Digest::of(b"lib, edited code");
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(
        summary(&report),
        ["T#build/app Succeeded miss", "T#build/lib Succeeded miss"]
    );
    assert_eq!(names(&runner), ["lib", "app", "lib", "lib", "app"]);
}

#[test]
fn a_missing_declared_output_fails_the_action_with_its_path() {
    let fixture = Fixture::new();
    let plan = [action("a", &[], &["a", "forgotten"])];
    let report = fixture.run(&writer(&[]), &plan, 1, false);
    let result = &report.results[0];
    assert_eq!(result.status, ActionStatus::Failed);
    assert_eq!(
        result.message.as_deref(),
        Some("the action did not write its declared output `.once/out/T/forgotten`")
    );
}

#[test]
fn uncacheable_actions_always_run() {
    let fixture = Fixture::new();
    let mut planned = action("a", &[], &["a"]);
    planned.action.cacheable = false;
    let runner = writer(&[]);
    let plan = [planned];
    fixture.run(&runner, &plan, 1, false);
    let report = fixture.run(&runner, &plan, 1, false);
    assert_eq!(report.results[0].cache, Some(CacheState::Bypass));
    assert_eq!(names(&runner), ["a", "a"]);
    assert_eq!(fixture.store.stats().unwrap().actions, 0, "no record");
}

#[test]
fn bad_plans_are_refused_before_anything_runs() {
    let fixture = Fixture::new();
    let runner = writer(&[]);
    let refusal = |plan: &[PlannedAction]| {
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .run(plan)
            .unwrap_err()
            .to_string()
    };
    let mut outside = action("a", &[], &["a"]);
    outside.action.outputs = vec!["src/generated.rs".to_owned()];
    let mut escaping = action("a", &[], &["a"]);
    escaping.action.outputs = vec![".once/out/T/../U/a".to_owned()];
    let mut other_target = action("a", &[], &["a"]);
    other_target.action.outputs = vec![".once/out/U/a".to_owned()];
    let mut duplicate = action("b", &[], &["a"]);
    duplicate.action.id = "T#build/b".to_owned();
    let reasons = [
        refusal(&[outside]),
        refusal(&[escaping]),
        refusal(&[other_target]),
        refusal(&[action("a", &[], &["a"]), duplicate]),
        refusal(&[action("a", &[], &["a", "a"])]),
        refusal(&[action("a", &["b"], &["a"]), action("b", &["a/x"], &["b"])]),
        refusal(&[action("a", &[], &["dir"]), action("b", &[], &["dir/x"])]),
    ];
    assert_eq!(
        reasons,
        [
            "action `T#build/a` declares the output `src/generated.rs` outside its target's build directory `.once/out/T`",
            "action `T#build/a` names `.once/out/T/../U/a`, which is not a relative path inside the workspace",
            "action `T#build/a` declares the output `.once/out/U/a` outside its target's build directory `.once/out/T`",
            "actions `T#build/a` and `T#build/b` both declare the output `.once/out/T/a`",
            "action `T#build/a` declares the output `.once/out/T/a` twice",
            "these actions depend on each other's outputs in a cycle: T#build/a, T#build/b",
            "action `T#build/b` declares the output `.once/out/T/dir/x` inside `.once/out/T/dir`, an output of `T#build/a`",
        ]
    );
    assert!(runner.ran().is_empty());
    assert!(matches!(
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .run(&[action("a", &[], &["a"]), action("a", &[], &["b"])]),
        Err(once_exec::ExecError::Plan(PlanError::DuplicateId(_)))
    ));
}

#[test]
fn progress_is_reported_once_per_action_with_done_and_total() {
    let fixture = Fixture::new();
    let plan = [
        action("bad", &[], &["bad"]),
        action("after", &["bad"], &["after"]),
        action("fine", &[], &["fine"]),
    ];
    let runner = writer(&["bad"]);
    let seen = Mutex::new(Vec::new());
    let record = |progress: &Progress<'_>| {
        seen.lock().unwrap().push(format!(
            "{}/{} {}",
            progress.done, progress.total, progress.message
        ));
    };
    Executor::new(fixture.root(), &fixture.store)
        .with_runner(&runner)
        .with_options(options(1, true))
        .on_progress(&record)
        .run(&plan)
        .unwrap();
    assert_eq!(
        seen.into_inner().unwrap(),
        [
            "1/3 failed T#build/bad: `true bad` exited with code 2",
            "2/3 skipped T#build/after",
            "3/3 miss T#build/fine",
        ]
    );
}

/// A start is announced for each action a worker takes up, before its end; a skipped
/// action never starts, and a hit starts too (its cache is looked up). A step's start
/// and end are announced only for an action whose command runs, between its start and
/// its end.
#[test]
fn each_action_taken_up_is_announced_before_it_ends() {
    let fixture = Fixture::new();
    let plan = [
        action("bad", &[], &["bad"]),
        action("after", &["bad"], &["after"]),
        action("fine", &[], &["fine"]),
    ];
    let runner = writer(&["bad"]);
    let seen = Mutex::new(Vec::new());
    let started = |id: &str| seen.lock().unwrap().push(format!("start {id}"));
    let step = |id: &str| seen.lock().unwrap().push(format!("step {id}"));
    let step_end = |id: &str| seen.lock().unwrap().push(format!("step end {id}"));
    let ended = |progress: &Progress<'_>| {
        seen.lock()
            .unwrap()
            .push(format!("end {}", progress.result.id));
    };
    let run = || {
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .with_options(options(1, true))
            .on_start(&started)
            .on_step_start(&step)
            .on_step_end(&step_end)
            .on_progress(&ended)
            .run(&plan)
            .unwrap()
    };
    // `bad` runs and fails each time; `after` is skipped without being taken up.
    let failing = [
        "start T#build/bad",
        "step T#build/bad",
        "step end T#build/bad",
        "end T#build/bad",
        "end T#build/after",
    ];
    run();
    let fine_runs = [
        "start T#build/fine",
        "step T#build/fine",
        "step end T#build/fine",
        "end T#build/fine",
    ];
    assert_eq!(
        std::mem::take(&mut *seen.lock().unwrap()),
        [&failing[..], &fine_runs].concat()
    );
    // Again: `fine` is a hit, still taken up and announced, but no step of it runs.
    let report = run();
    assert_eq!(
        report.result("T#build/fine").unwrap().cache,
        Some(CacheState::Hit)
    );
    let fine_hits = ["start T#build/fine", "end T#build/fine"];
    assert_eq!(
        seen.into_inner().unwrap(),
        [&failing[..], &fine_hits].concat()
    );
}

#[test]
fn streams_keep_their_end_in_memory_and_all_of_it_in_the_store() {
    let fixture = Fixture::new();
    let runner = FakeRunner::new(|_| FakeOutcome {
        stdout: b"0123456789".repeat(200),
        ..FakeOutcome::writes(&out("a"), b"a")
    });
    let plan = [action("a", &[], &["a"])];
    let mut options = options(1, false);
    options.stream_memory_limit = 15;
    let run = || {
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .with_options(options.clone())
            .run(&plan)
            .unwrap()
    };
    for expected in [CacheState::Miss, CacheState::Hit] {
        let report = run();
        let stdout = &report.results[0].stdout;
        assert_eq!(report.results[0].cache, Some(expected));
        assert_eq!(stdout.size, 2000);
        assert_eq!(stdout.tail, b"567890123456789");
        let whole = fixture.store.read_blob(&stdout.digest.unwrap()).unwrap();
        assert_eq!(whole, b"0123456789".repeat(200));
    }
}

#[test]
fn declared_success_codes_and_in_process_steps() {
    let fixture = Fixture::new();
    std::fs::create_dir(fixture.root().join("src")).unwrap();
    std::fs::write(fixture.root().join("src/input.txt"), "copied").unwrap();
    let mut lenient = action("lenient", &[], &["lenient"]);
    if let ActionStep::Run(command) = &mut lenient.action.step {
        command.success_exit_codes = vec![0, 1];
    }
    let in_process = |name: &str, step: ActionStep, inputs: &[&str], outputs: &[&str]| {
        let mut planned = action(name, inputs, outputs);
        planned.action.step = step;
        planned
    };
    let plan = [
        lenient,
        in_process(
            "write",
            ActionStep::WriteFile {
                path: out("script.sh"),
                content: "#!/bin/sh\n".to_owned(),
                executable: true,
            },
            &[],
            &["script.sh"],
        ),
        in_process(
            "copy",
            ActionStep::Copy {
                from: "src/input.txt".to_owned(),
                to: out("copy.txt"),
            },
            &["src/input.txt"],
            &["copy.txt"],
        ),
        in_process(
            "link",
            ActionStep::Symlink {
                to: "script.sh".to_owned(),
                link: out("link"),
            },
            &["script.sh"],
            &["link"],
        ),
        in_process(
            "mkdir",
            ActionStep::MakeDir { path: out("dir") },
            &[],
            &["dir"],
        ),
    ];
    let runner = FakeRunner::new(|argv| FakeOutcome {
        exit_code: 1,
        ..FakeOutcome::writes(&out(&argv[1]), b"x")
    });
    let report = fixture.run(&runner, &plan, 2, false);
    assert!(report.succeeded(), "{:?}", report.results);
    use std::os::unix::fs::PermissionsExt as _;
    let script = fixture.root().join(".once/out/T/script.sh");
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_eq!(
        std::fs::read_to_string(fixture.root().join(".once/out/T/copy.txt")).unwrap(),
        "copied"
    );
    assert_eq!(
        std::fs::read_link(fixture.root().join(".once/out/T/link")).unwrap(),
        Path::new("script.sh")
    );
    assert!(fixture.root().join(".once/out/T/dir").is_dir());
    std::fs::remove_dir_all(fixture.root().join(".once/out")).unwrap();
    let again = fixture.run(&runner, &plan, 2, false);
    let caches: BTreeMap<_, _> = again
        .results
        .iter()
        .map(|result| (result.id.as_str(), result.cache))
        .collect();
    assert!(
        caches.values().all(|cache| *cache == Some(CacheState::Hit)),
        "{caches:?}"
    );
    assert_eq!(
        std::fs::metadata(&script).unwrap().permissions().mode() & 0o777,
        0o755
    );
    assert_eq!(
        std::fs::read_link(fixture.root().join(".once/out/T/link")).unwrap(),
        Path::new("script.sh")
    );
}

#[test]
fn directory_outputs_are_captured_whole_and_restored_exactly() {
    let fixture = Fixture::new();
    let runner = FakeRunner::new(|argv| match argv[1].as_str() {
        "tree" => FakeOutcome {
            writes: vec![
                (out("tree/a"), b"a".to_vec()),
                (out("tree/sub/b"), b"b".to_vec()),
            ],
            ..FakeOutcome::default()
        },
        name => FakeOutcome::writes(&out(name), b"uses b"),
    });
    let plan = [
        action("user", &["tree/sub/b"], &["user"]),
        action("tree", &[], &["tree"]),
    ];
    let first = fixture.run(&runner, &plan, 2, false);
    assert!(first.succeeded(), "{:?}", first.results);
    let paths: Vec<&str> = first.results[1]
        .entries
        .iter()
        .map(|entry| entry.path.as_str())
        .collect();
    assert_eq!(
        paths,
        [
            ".once/out/T/tree",
            ".once/out/T/tree/a",
            ".once/out/T/tree/sub",
            ".once/out/T/tree/sub/b"
        ]
    );
    assert_eq!(
        names(&runner),
        ["tree", "user"],
        "the input under `tree` is an edge"
    );
    let tree = fixture.root().join(".once/out/T/tree");
    std::fs::remove_file(tree.join("a")).unwrap();
    std::fs::write(tree.join("stray"), "left over").unwrap();
    let second = fixture.run(&runner, &plan, 2, false);
    assert_eq!(
        summary(&second),
        ["T#build/user Succeeded hit", "T#build/tree Succeeded hit"]
    );
    assert_eq!(std::fs::read_to_string(tree.join("a")).unwrap(), "a");
    assert!(!tree.join("stray").exists());
}

#[test]
fn an_action_consuming_several_outputs_of_one_producer_waits_for_it_once() {
    let fixture = Fixture::new();
    let runner = FakeRunner::new(|argv| match argv[1].as_str() {
        "both" => FakeOutcome {
            writes: vec![(out("x"), b"x".to_vec()), (out("y"), b"y".to_vec())],
            ..FakeOutcome::default()
        },
        name => FakeOutcome::writes(&out(name), b"user"),
    });
    let plan = [
        action("user", &["x", "y"], &["user"]),
        action("both", &[], &["x", "y"]),
    ];
    let report = fixture.run(&runner, &plan, 2, false);
    assert_eq!(
        summary(&report),
        ["T#build/user Succeeded miss", "T#build/both Succeeded miss"]
    );
    assert_eq!(names(&runner), ["both", "user"]);
}

#[test]
fn a_build_directory_replaced_by_a_link_is_never_written_through() {
    let fixture = Fixture::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(fixture.root().join(".once/out")).unwrap();
    std::os::unix::fs::symlink(outside.path(), fixture.root().join(".once/out/T")).unwrap();
    let mut planned = action("write", &[], &["file"]);
    planned.action.step = ActionStep::WriteFile {
        path: out("file"),
        content: "content".to_owned(),
        executable: false,
    };
    let report = fixture.run(&writer(&[]), &[planned], 1, false);
    assert_eq!(report.results[0].status, ActionStatus::Failed);
    assert_eq!(
        report.results[0].message.as_deref(),
        Some(
            "cannot prepare the output `.once/out/T/file`: `.once/out/T` is a symbolic link; \
             once does not write through links, which may lead outside the workspace"
        )
    );
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
}

#[test]
fn a_report_becomes_evidence_of_each_action_that_ran_or_was_reused() {
    use once_evidence::{CacheOutcome, Subject};
    let fixture = Fixture::new();
    let plan = [
        action("a", &["src/a.txt"], &["a"]),
        action("b", &["a"], &["b"]),
        action("c", &["b"], &["c"]),
    ];
    let report = fixture.run(&writer(&["b"]), &plan, 1, false);
    let records = once_exec::evidence::evidence_records(&plan, &report, 42);
    let seen: Vec<String> = records
        .iter()
        .map(|record| {
            let evidence = &record.evidence;
            format!(
                "{} {} {} {} {:?}",
                evidence.subject,
                evidence.action.as_deref().unwrap_or("-"),
                evidence.status.as_str(),
                evidence.cache.as_str(),
                evidence.exit_code,
            )
        })
        .collect();
    assert_eq!(
        seen,
        [
            "T:build T#build/a passed miss Some(0)",
            "T:build T#build/b failed miss Some(2)",
        ],
        "the skipped `c` has no evidence"
    );
    let a = &records[0];
    let result = report.result("T#build/a").unwrap();
    assert_eq!(Some(a.evidence.action_digest), result.key);
    assert_eq!(a.evidence.input_digest, Some(plan[0].static_key));
    assert_eq!(a.evidence.stdout, result.stdout.digest);
    assert_eq!(a.created_at_unix_ms, 42);
    assert!(
        matches!(&a.evidence.subject, Subject::Target { id, capability } if id == "T" && capability == "build")
    );

    // Recorded in the workspace's database in one call, then read back; a second run's
    // hits are evidence too.
    let written = once_exec::evidence::record_evidence(fixture.root(), &plan, &report).unwrap();
    assert_eq!(written, 2);
    let succeeding = &plan[..1];
    let again = fixture.run(&writer(&[]), succeeding, 1, false);
    assert_eq!(
        once_exec::evidence::record_evidence(fixture.root(), succeeding, &again).unwrap(),
        1
    );
    let stored = once_evidence::query_workspace(fixture.root(), Some("T:build"), 5).unwrap();
    let caches: Vec<(&str, CacheOutcome)> = stored
        .iter()
        .map(|record| {
            (
                record.evidence.action.as_deref().unwrap_or(""),
                record.evidence.cache,
            )
        })
        .collect();
    assert_eq!(caches[0], ("T#build/a", CacheOutcome::Hit));
    assert_eq!(caches.len(), 3);
}

/// An action writing `outputs` anywhere in the workspace (a script's), after no one.
fn workspace_action(name: &str, inputs: &[&str], outputs: &[&str]) -> PlannedAction {
    let mut planned = action(name, &[], &[]);
    planned.action.inputs = inputs.iter().map(|p| (*p).to_owned()).collect();
    planned.action.outputs = outputs.iter().map(|p| (*p).to_owned()).collect();
    planned
}

#[test]
fn ordering_edges_order_actions_without_outputs_and_skip_after_a_failure() {
    let fixture = Fixture::new();
    let plan = [
        workspace_action("last", &[], &[]),
        workspace_action("first", &[], &[]),
    ];
    let order = vec![("T#build/first".to_owned(), "T#build/last".to_owned())];
    let runner = FakeRunner::new(|_| FakeOutcome::default().taking(Duration::from_millis(20)));
    let report = Executor::new(fixture.root(), &fixture.store)
        .with_runner(&runner)
        .with_options(options(4, false))
        .with_output_scope(OutputScope::Workspace)
        .with_order(order.clone())
        .run(&plan)
        .unwrap();
    assert!(report.succeeded(), "{:?}", summary(&report));
    assert_eq!(names(&runner), ["first", "last"]);
    assert_eq!(runner.peak_parallelism(), 1, "the edge keeps them apart");
    let failing = FakeRunner::new(|argv| {
        if argv[1] == "first" {
            FakeOutcome::failing(1, "no\n")
        } else {
            FakeOutcome::default()
        }
    });
    let store = Store::open(&fixture.root().join("other-store")).unwrap();
    let report = Executor::new(fixture.root(), &store)
        .with_runner(&failing)
        .with_options(options(4, true))
        .with_output_scope(OutputScope::Workspace)
        .with_order(order)
        .run(&plan)
        .unwrap();
    assert_eq!(
        summary(&report),
        ["T#build/last Skipped -", "T#build/first Failed miss"]
    );
}

#[test]
fn workspace_outputs_may_not_be_in_the_state_directory_nor_over_their_inputs() {
    let fixture = Fixture::new();
    let refused = |plan: &[PlannedAction], order: Vec<(String, String)>| {
        Executor::new(fixture.root(), &fixture.store)
            .with_output_scope(OutputScope::Workspace)
            .with_order(order)
            .run(plan)
            .map(|_| ())
            .unwrap_err()
            .to_string()
    };
    assert_eq!(
        refused(&[workspace_action("s", &[], &[".once/x"])], Vec::new()),
        "action `T#build/s` declares the output `.once/x` inside `.once`, which holds once's own state"
    );
    assert_eq!(
        refused(
            &[workspace_action("s", &["data/a.txt"], &["data"])],
            Vec::new()
        ),
        "action `T#build/s` declares the output `data`, which overlaps its own input `data/a.txt` (a run clears its outputs first)"
    );
    assert_eq!(
        refused(
            &[workspace_action("s", &[], &["dist"])],
            vec![("T#build/gone".to_owned(), "T#build/s".to_owned())]
        ),
        "an ordering edge names `T#build/gone`, which is not an action of the plan"
    );
    // The build-directory scope still refuses a workspace output.
    let outside = Executor::new(fixture.root(), &fixture.store)
        .run(&[workspace_action("s", &[], &["dist"])])
        .map(|_| ())
        .unwrap_err()
        .to_string();
    assert!(
        outside.contains("outside its target's build directory"),
        "{outside}"
    );
}

/// A remote cache with nothing in it whose lookups take `delay`: it counts them, and the
/// most in flight at once.
struct SlowEmptyRemote {
    delay: Duration,
    lookups: std::sync::atomic::AtomicUsize,
    in_flight: std::sync::atomic::AtomicUsize,
    peak: std::sync::atomic::AtomicUsize,
}

impl SlowEmptyRemote {
    fn new(delay: Duration) -> SlowEmptyRemote {
        SlowEmptyRemote {
            delay,
            lookups: Default::default(),
            in_flight: Default::default(),
            peak: Default::default(),
        }
    }
}

impl once_exec::RemoteCache for SlowEmptyRemote {
    fn lookup(&self, _: &Sha256Digest) -> Option<once_exec::record::ActionRecord> {
        use std::sync::atomic::Ordering::SeqCst;
        self.lookups.fetch_add(1, SeqCst);
        let now = self.in_flight.fetch_add(1, SeqCst) + 1;
        self.peak.fetch_max(now, SeqCst);
        std::thread::sleep(self.delay);
        self.in_flight.fetch_sub(1, SeqCst);
        None
    }

    fn fetch_blob(&self, _: &Store, _: &Sha256Digest, _: u64) -> Result<(), once_exec::FetchError> {
        Err(once_exec::FetchError::Missing)
    }

    fn upload(&self, _: &Sha256Digest, _: &once_exec::record::ActionRecord) {}
}

fn run_with_remote(
    fixture: &Fixture,
    runner: &FakeRunner,
    remote: &SlowEmptyRemote,
    plan: &[PlannedAction],
    jobs: usize,
) -> ExecutionReport {
    Executor::new(fixture.root(), &fixture.store)
        .with_runner(runner)
        .with_options(ExecOptions {
            sandbox: once_exec::SandboxMode::On,
            ..options(jobs, false)
        })
        .with_remote(Some(remote))
        .run(plan)
        .unwrap()
}

/// With lookups ahead, more actions are taken up than run: the step starts tell a front
/// end which `jobs` of them run (its progress line lists those).
#[test]
fn step_starts_name_only_the_steps_that_run() {
    let fixture = Fixture::new();
    let plan = independent(6);
    let runner = writer(&[]);
    let remote = SlowEmptyRemote::new(Duration::from_millis(40));
    // (taken up, not ended; steps started, not ended; the peaks of both)
    let counts = Mutex::new((0usize, 0usize, 0usize, 0usize, 0usize));
    let started = |_: &str| {
        let mut c = counts.lock().unwrap();
        c.0 += 1;
        c.2 = c.2.max(c.0);
    };
    let step = |_: &str| {
        let mut c = counts.lock().unwrap();
        c.1 += 1;
        c.3 = c.3.max(c.1);
        c.4 += 1;
    };
    let step_ended = |_: &str| counts.lock().unwrap().1 -= 1;
    let ended = |_: &Progress<'_>| counts.lock().unwrap().0 -= 1;
    let report = Executor::new(fixture.root(), &fixture.store)
        .with_runner(&runner)
        .with_options(ExecOptions {
            sandbox: once_exec::SandboxMode::On,
            ..options(1, false)
        })
        .with_remote(Some(&remote))
        .on_start(&started)
        .on_step_start(&step)
        .on_step_end(&step_ended)
        .on_progress(&ended)
        .run(&plan)
        .unwrap();
    assert!(report.succeeded(), "{:?}", summary(&report));
    let (taken, running, peak_taken, peak_running, steps) = counts.into_inner().unwrap();
    assert_eq!((taken, running), (0, 0), "every start ended");
    assert_eq!(steps, 6, "each of the six misses ran its step");
    assert_eq!(peak_running, 1, "one step at a time (`jobs` 1)");
    assert_eq!(
        peak_taken, 2,
        "a second action is taken up and looked up meanwhile"
    );
}

#[test]
fn remote_lookups_overlap_steps_while_jobs_still_bound_the_steps() {
    let fixture = Fixture::new();
    let plan = independent(6);
    let runner = writer(&[]);
    let remote = SlowEmptyRemote::new(Duration::from_millis(40));
    let report = run_with_remote(&fixture, &runner, &remote, &plan, 1);
    assert!(report.succeeded(), "{:?}", summary(&report));
    assert_eq!(
        runner.peak_parallelism(),
        1,
        "one step at a time (`jobs` 1)"
    );
    use std::sync::atomic::Ordering::SeqCst;
    assert_eq!(remote.lookups.load(SeqCst), 6);
    assert_eq!(
        remote.peak.load(SeqCst),
        2,
        "a second worker looks up while the first waits or runs"
    );
}

#[test]
fn a_step_waiting_for_its_slot_does_not_start_after_a_failure() {
    let fixture = Fixture::new();
    // `bad` is not cacheable: it takes the one slot at once, without a lookup, and fails
    // while `later`'s lookup is still on its way.
    let mut bad = action("bad", &[], &["bad"]);
    bad.action.cacheable = false;
    let plan = [bad, action("later", &[], &["later"])];
    let runner = FakeRunner::new(|argv| match argv[1].as_str() {
        "bad" => FakeOutcome::failing(2, "boom\n").taking(Duration::from_millis(20)),
        name => FakeOutcome::writes(&out(name), name.as_bytes()),
    });
    let remote = SlowEmptyRemote::new(Duration::from_millis(300));
    let report = run_with_remote(&fixture, &runner, &remote, &plan, 1);
    assert_eq!(
        summary(&report),
        ["T#build/bad Failed bypass", "T#build/later Skipped -"]
    );
    let later = report.result("T#build/later").unwrap();
    assert_eq!(
        later.message.as_deref(),
        Some("not started: another action failed")
    );
    assert_eq!(later.cause.as_deref(), Some("T#build/bad"));
    assert_eq!(names(&runner), ["bad"]);
}

#[test]
fn a_step_waiting_for_its_slot_is_cancelled_before_it_starts() {
    let fixture = Fixture::new();
    // `long` takes the one slot at once (not cacheable: no lookup); `later` is looked up
    // and waits for the slot until the cancel.
    let mut long = action("long", &[], &["long"]);
    long.action.cacheable = false;
    let plan = [long, action("later", &[], &["later"])];
    let runner = FakeRunner::new(|argv| {
        FakeOutcome::writes(&out(&argv[1]), b"x").taking(Duration::from_secs(30))
    });
    let remote = SlowEmptyRemote::new(Duration::from_millis(20));
    let cancel = once_exec::CancelHandle::new();
    let report = std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(300));
            cancel.cancel();
        });
        Executor::new(fixture.root(), &fixture.store)
            .with_runner(&runner)
            .with_options(ExecOptions {
                sandbox: once_exec::SandboxMode::On,
                ..options(1, true)
            })
            .with_remote(Some(&remote))
            .with_cancel(cancel.clone())
            .run(&plan)
            .unwrap()
    });
    assert_eq!(
        summary(&report),
        ["T#build/long Cancelled bypass", "T#build/later Cancelled -"]
    );
    assert_eq!(
        report.result("T#build/later").unwrap().message.as_deref(),
        Some("cancelled before it started")
    );
    assert_eq!(names(&runner), ["long"]);
}
