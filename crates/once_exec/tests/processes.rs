//! The executor with real processes (`sh`, `sleep`): scrubbed environments, process
//! groups that die with their action or on cancel (checked with `ps`), two executors
//! sharing one store, a corrupt blob, a writer killed mid-write, and the speed of a full
//! hit.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};

use once_exec::record::OutputKind;
use once_exec::{
    ActionStatus, CacheState, CancelHandle, ExecOptions, ExecutionReport, Executor,
    HostEnvironment, PlannedAction, Store,
};
use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep, Command};

/// An action of target `T` running `sh -c script` from the workspace root.
fn shell(name: &str, script: &str, inputs: &[&str], outputs: &[&str]) -> PlannedAction {
    let mut command = Command::new(vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()]);
    command
        .env
        .insert("OUT".to_owned(), ".once/out/T".to_owned());
    PlannedAction {
        action: Action {
            id: format!("T#build/{name}"),
            target: "T".to_owned(),
            capability: "build".to_owned(),
            step: ActionStep::Run(command),
            inputs: inputs
                .iter()
                .map(|input| format!(".once/out/T/{input}"))
                .collect(),
            outputs: outputs
                .iter()
                .map(|output| format!(".once/out/T/{output}"))
                .collect(),
            cacheable: true,
        },
        static_key: Sha256Digest::of(name.as_bytes()),
    }
}

fn options() -> ExecOptions {
    ExecOptions {
        jobs: Some(2),
        keep_going: false,
        host_env: HostEnvironment::from_pairs([
            ("PATH", "/usr/bin:/bin"),
            ("HOME", "/nonexistent"),
        ]),
        stream_memory_limit: 4096,
        once_program: None,
        sandbox: once_exec::SandboxMode::Off,
        validate: false,
    }
}

fn run(root: &Path, store: &Store, plan: &[PlannedAction]) -> ExecutionReport {
    Executor::new(root, store)
        .with_options(options())
        .run(plan)
        .unwrap()
}

/// The command lines of running processes that contain `needle`.
fn processes_with(needle: &str) -> Vec<String> {
    let listing = std::process::Command::new("ps")
        .args(["-eo", "pid,args"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&listing.stdout)
        .lines()
        .filter(|line| line.contains(needle) && !line.contains("ps -eo"))
        .map(str::to_owned)
        .collect()
}

fn wait_for(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn actions_see_only_the_allowlist_and_their_declared_variables() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let mut plan = shell(
        "env",
        "mkdir -p $OUT && env > $OUT/env; echo to-stderr >&2",
        &[],
        &["env"],
    );
    if let ActionStep::Run(command) = &mut plan.action.step {
        command.env.insert("DECLARED".to_owned(), "yes".to_owned());
    }
    let report = run(workspace.path(), &store, &[plan]);
    assert!(report.succeeded(), "{:?}", report.results);
    let env = std::fs::read_to_string(workspace.path().join(".once/out/T/env")).unwrap();
    let mut names: Vec<&str> = env
        .lines()
        .filter_map(|line| line.split_once('=').map(|(name, _)| name))
        .collect();
    names.sort();
    // `sh` itself adds PWD; nothing of the test's own environment (CARGO_*, RUST_*) leaks.
    names.retain(|name| *name != "PWD");
    // The locale is the fixed default, never the caller's.
    assert_eq!(names, ["DECLARED", "HOME", "LANG", "OUT", "PATH", "TZ"]);
    assert!(
        env.contains("LANG=C.UTF-8\n") && env.contains("TZ=UTC\n"),
        "{env}"
    );
    assert_eq!(report.results[0].stderr.tail, b"to-stderr\n");
}

#[test]
fn a_second_executor_hits_and_replays_the_streams() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    let plan = [shell(
        "hello",
        "echo hello; mkdir -p $OUT; echo built > $OUT/hello",
        &[],
        &["hello"],
    )];
    let first = run(workspace.path(), &Store::open(&store_path).unwrap(), &plan);
    let second = run(workspace.path(), &Store::open(&store_path).unwrap(), &plan);
    assert_eq!(first.results[0].cache, Some(CacheState::Miss));
    assert_eq!(second.results[0].cache, Some(CacheState::Hit));
    assert_eq!(second.results[0].stdout.tail, b"hello\n");
    assert_eq!(second.results[0].exit_code, Some(0));
}

/// A toolchain behind a proxy (here: a version file the probe reads, as `rustc -vV`
/// reads rustup's settings) keys the action although the program and the inputs are the
/// same: switching it is a miss, switching back a hit; a failing probe fails the action.
#[test]
fn a_probe_keys_the_toolchain_a_proxy_dispatches_to() {
    let workspace = tempfile::tempdir().unwrap();
    let toolchain = workspace.path().join("toolchain-version");
    std::fs::write(&toolchain, "1.95.0\n").unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let mut planned = shell(
        "tool",
        "mkdir -p $OUT; echo built > $OUT/out",
        &[],
        &["out"],
    );
    if let ActionStep::Run(command) = &mut planned.action.step {
        command.probes.push(vec![
            "sh".to_owned(),
            "-c".to_owned(),
            format!("cat '{}'", toolchain.display()),
        ]);
    }
    let plan = [planned];
    let cache = |report: &ExecutionReport| report.results[0].cache;
    assert_eq!(
        cache(&run(workspace.path(), &store, &plan)),
        Some(CacheState::Miss)
    );
    assert_eq!(
        cache(&run(workspace.path(), &store, &plan)),
        Some(CacheState::Hit)
    );
    std::fs::write(&toolchain, "1.96.0\n").unwrap();
    assert_eq!(
        cache(&run(workspace.path(), &store, &plan)),
        Some(CacheState::Miss)
    );
    std::fs::write(&toolchain, "1.95.0\n").unwrap();
    assert_eq!(
        cache(&run(workspace.path(), &store, &plan)),
        Some(CacheState::Hit)
    );
    std::fs::remove_file(&toolchain).unwrap();
    let report = run(workspace.path(), &store, &plan);
    assert!(!report.succeeded());
    let error = report.results[0].message.clone().unwrap_or_default();
    assert!(error.contains("toolchain probe"), "{error}");
}

/// A dependency file naming a workspace file the action does not declare fails it (the
/// file would be outside its key); declared files, files below a declared directory and
/// files outside the workspace pass; nothing failed is cached.
#[test]
fn a_dependency_file_naming_an_undeclared_workspace_file_fails_the_action() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path();
    std::fs::create_dir_all(root.join("src/include")).unwrap();
    for file in ["src/main.c", "src/util.h", "src/include/a.h"] {
        std::fs::write(root.join(file), "x\n").unwrap();
    }
    let store = Store::open(&Store::default_path(root)).unwrap();
    let planned = |inputs: &[&str]| {
        let mut planned = shell(
            "compile",
            "mkdir -p $OUT; echo obj > $OUT/main.o; \
             printf '%s\\n' '.once/out/T/main.o: src/main.c src/util.h \\' \
               ' src/include/a.h /usr/include/stdio.h' > $OUT/main.d",
            &[],
            &["main.o", "main.d"],
        );
        planned.action.inputs = inputs.iter().map(|i| (*i).to_owned()).collect();
        if let ActionStep::Run(command) = &mut planned.action.step {
            command.depfile = Some(".once/out/T/main.d".to_owned());
        }
        planned
    };
    let report = run(root, &store, &[planned(&["src/main.c", "src/include"])]);
    assert!(!report.succeeded());
    let message = report.results[0].message.clone().unwrap_or_default();
    assert!(
        message.contains("does not declare") && message.contains("src/util.h"),
        "{message}"
    );
    let listed = message.split("rebuild it: ").nth(1).unwrap_or_default();
    assert!(listed.starts_with("src/util.h. "), "{message}");
    let report = run(
        root,
        &store,
        &[planned(&["src/main.c", "src/util.h", "src/include"])],
    );
    assert!(report.succeeded(), "{:?}", report.results[0].message);
    assert_eq!(report.results[0].cache, Some(CacheState::Miss));
}

#[test]
fn a_background_process_dies_with_its_action() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let plan = [shell(
        "daemon",
        "sleep 6141 & mkdir -p $OUT; echo ok > $OUT/daemon",
        &[],
        &["daemon"],
    )];
    let report = run(workspace.path(), &store, &plan);
    assert!(report.succeeded(), "{:?}", report.results);
    wait_for("the background sleep to be gone", || {
        processes_with("sleep 6141").is_empty()
    });
}

#[test]
fn cancelling_kills_every_running_process_group_within_a_second() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let plan = [
        shell(
            "long",
            "sleep 6142 & sleep 6142; mkdir -p $OUT; echo > $OUT/long",
            &[],
            &["long"],
        ),
        shell(
            "other",
            "sleep 6142; mkdir -p $OUT; echo > $OUT/other",
            &[],
            &["other"],
        ),
        shell(
            "after",
            "mkdir -p $OUT; echo > $OUT/after",
            &["long"],
            &["after"],
        ),
    ];
    let cancel = CancelHandle::new();
    let report = std::thread::scope(|scope| {
        let executing = scope.spawn(|| {
            Executor::new(workspace.path(), &store)
                .with_options(options())
                .with_cancel(cancel.clone())
                .run(&plan)
                .unwrap()
        });
        wait_for("three sleeps to run", || {
            processes_with("sleep 6142").len() >= 3
        });
        let cancelled_at = Instant::now();
        cancel.cancel();
        let report = executing.join().unwrap();
        assert!(
            cancelled_at.elapsed() < Duration::from_secs(1),
            "the executor returned {:?} after the cancel",
            cancelled_at.elapsed()
        );
        // A killed process in the background (not the one the executor waits for) may
        // take a moment to be scheduled and die: give it the rest of the second.
        while !processes_with("sleep 6142").is_empty()
            && cancelled_at.elapsed() < Duration::from_secs(1)
        {
            std::thread::sleep(Duration::from_millis(5));
        }
        report
    });
    let statuses: Vec<ActionStatus> = report.results.iter().map(|result| result.status).collect();
    assert_eq!(
        statuses,
        [
            ActionStatus::Cancelled,
            ActionStatus::Cancelled,
            ActionStatus::Skipped
        ]
    );
    assert_eq!(processes_with("sleep 6142"), Vec::<String>::new());
}

#[test]
fn a_panicking_progress_callback_cancels_the_execution_before_the_panic_goes_on() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let plan = [
        shell(
            "quick",
            "sleep 0.2; mkdir -p $OUT; echo > $OUT/quick",
            &[],
            &["quick"],
        ),
        shell(
            "long",
            "sleep 6144; mkdir -p $OUT; echo > $OUT/long",
            &[],
            &["long"],
        ),
    ];
    let buggy = |_: &once_exec::Progress<'_>| panic!("a bug in the front end");
    let started = Instant::now();
    let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        Executor::new(workspace.path(), &store)
            .with_options(options())
            .on_progress(&buggy)
            .run(&plan)
    }));
    let panic = outcome.expect_err("the callback's panic goes on");
    assert_eq!(
        panic.downcast_ref::<&str>(),
        Some(&"a bug in the front end")
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    wait_for("the long sleep to be gone", || {
        processes_with("sleep 6144").is_empty()
    });
}

#[test]
fn a_cancel_before_start_runs_nothing() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let cancel = CancelHandle::new();
    cancel.cancel();
    let plan = [shell("never", "sleep 6143", &[], &["never"])];
    let report = Executor::new(workspace.path(), &store)
        .with_options(options())
        .with_cancel(cancel)
        .run(&plan)
        .unwrap();
    assert_eq!(report.results[0].status, ActionStatus::Cancelled);
    assert!(processes_with("sleep 6143").is_empty());
}

#[test]
fn two_executors_on_one_store_run_each_action_once_and_both_succeed() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    // Each run appends to a log outside the outputs, then takes a while.
    let plan = [
        shell(
            "slow",
            "echo run >> runs.log; sleep 0.3; mkdir -p $OUT; echo slow > $OUT/slow",
            &[],
            &["slow"],
        ),
        shell(
            "next",
            "echo run >> runs.log; cat $OUT/slow > $OUT/next",
            &["slow"],
            &["next"],
        ),
    ];
    let reports: Vec<ExecutionReport> = std::thread::scope(|scope| {
        let executors: Vec<_> = (0..2)
            .map(|_| {
                scope.spawn(|| {
                    let store = Store::open(&store_path).unwrap();
                    run(workspace.path(), &store, &plan)
                })
            })
            .collect();
        executors.into_iter().map(|e| e.join().unwrap()).collect()
    });
    for report in &reports {
        assert!(report.succeeded(), "{:?}", report.results);
    }
    let log = std::fs::read_to_string(workspace.path().join("runs.log")).unwrap();
    assert_eq!(log, "run\nrun\n", "each action ran once");
    let mut caches: Vec<CacheState> = reports
        .iter()
        .flat_map(|report| report.results.iter().filter_map(|result| result.cache))
        .collect();
    caches.sort_by_key(|cache| cache.as_str());
    assert_eq!(
        caches,
        [
            CacheState::Hit,
            CacheState::Hit,
            CacheState::Miss,
            CacheState::Miss
        ]
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".once/out/T/next")).unwrap(),
        "slow\n"
    );
}

#[test]
fn a_corrupt_blob_is_detected_removed_reported_and_rebuilt() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    let store = Store::open(&store_path).unwrap();
    let plan = [shell(
        "a",
        "echo run >> runs.log; mkdir -p $OUT; echo content > $OUT/a",
        &[],
        &["a"],
    )];
    let first = run(workspace.path(), &store, &plan);
    let OutputKind::File { digest, .. } = first.results[0].entries[0].kind else {
        panic!("a file output")
    };
    let hex = digest.to_hex();
    let blob = store_path.join("blobs").join(&hex[..2]).join(&hex[2..]);
    std::fs::write(&blob, "tampered\n").unwrap();
    std::fs::remove_file(workspace.path().join(".once/out/T/a")).unwrap();
    let second = run(workspace.path(), &store, &plan);
    let result = &second.results[0];
    assert_eq!(result.status, ActionStatus::Succeeded);
    assert_eq!(
        result.cache,
        Some(CacheState::Miss),
        "the corrupt blob made it a miss"
    );
    assert_eq!(
        result.warnings,
        [format!(
            "the stored output {hex} could not be used (the blob's content does not match its digest; it was removed); running the action again"
        )]
    );
    assert_eq!(
        std::fs::read_to_string(&blob).unwrap(),
        "content\n",
        "stored again"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".once/out/T/a")).unwrap(),
        "content\n"
    );
    assert_eq!(
        std::fs::read_to_string(workspace.path().join("runs.log")).unwrap(),
        "run\nrun\n"
    );
}

/// Run as a child by the next test (only when `ONCE_EXEC_CHILD_STORE` is set): writes
/// blobs and records into a store until it is killed.
#[test]
#[ignore = "a child process of a_writer_killed_mid_write_leaves_a_usable_store, which runs it"]
fn child_writer_killed_mid_write() {
    let path = std::env::var_os("ONCE_EXEC_CHILD_STORE")
        .expect("run by a_writer_killed_mid_write_leaves_a_usable_store, with its store");
    let store = Store::open(Path::new(&path)).unwrap();
    let _in_use = store.start_use().unwrap();
    let big = vec![7u8; 8 << 20];
    for round in 0u64.. {
        let mut bytes = big.clone();
        bytes[..8].copy_from_slice(&round.to_le_bytes());
        let digest = store.put_blob(&bytes).unwrap();
        let stream = once_exec::record::StreamDigest {
            digest,
            size: bytes.len() as u64,
        };
        let record = once_exec::record::ActionRecord {
            exit_code: 0,
            duration: Duration::ZERO,
            stdout: stream,
            stderr: stream,
            outputs: Vec::new(),
        };
        store
            .write_record(&Sha256Digest::of(&round.to_le_bytes()), &record)
            .unwrap();
    }
}

#[test]
fn a_writer_killed_mid_write_leaves_a_usable_store() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "--ignored",
            "child_writer_killed_mid_write",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("ONCE_EXEC_CHILD_STORE", &store_path)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // Kill it once it has written some records, in the middle of writing more.
    wait_for("the child to write two records", || {
        Store::open(&store_path)
            .is_ok_and(|store| store.stats().is_ok_and(|stats| stats.actions >= 2))
    });
    child.kill().unwrap();
    child.wait().unwrap();

    let store = Store::open(&store_path).unwrap();
    let leftovers = || std::fs::read_dir(store_path.join("tmp")).unwrap().count();
    let _in_use = store.start_use().unwrap();
    assert_eq!(
        leftovers(),
        0,
        "temporary files of the dead writer are removed"
    );
    // Every record that is there is complete, and the blobs it names are sound.
    let stats = store.stats().unwrap();
    assert!(stats.actions >= 2);
    for round in 0..stats.actions {
        let key = Sha256Digest::of(&round.to_le_bytes());
        if let Some(record) = store.read_record(&key) {
            let blob = store.read_blob(&record.stdout.digest).unwrap();
            assert_eq!(blob.len() as u64, record.stdout.size);
        }
    }
    drop(_in_use);
    // And it still works: an action runs, stores and hits.
    let plan = [shell("a", "mkdir -p $OUT; echo a > $OUT/a", &[], &["a"])];
    assert_eq!(
        run(workspace.path(), &store, &plan).results[0].cache,
        Some(CacheState::Miss)
    );
    assert_eq!(
        run(workspace.path(), &store, &plan).results[0].cache,
        Some(CacheState::Hit)
    );
    let report = store.gc(0).unwrap();
    assert_eq!(report.bytes_after, 0);
}

/// A graph of 15 actions in layers, like the benchmark of the original (each action
/// reads the previous layer and writes a file of 64 KiB to 1 MiB).
fn fifteen_actions() -> Vec<PlannedAction> {
    let mut plan = Vec::new();
    for index in 0..15usize {
        let name = format!("n{index:02}");
        let inputs: Vec<String> = if index < 5 {
            Vec::new()
        } else {
            vec![
                format!("n{:02}", index - 5),
                format!("n{:02}", (index + 1) % 5 + (index / 5 - 1) * 5),
            ]
        };
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let kib = 64 << (index % 5);
        let script =
            format!("mkdir -p $OUT; head -c {kib}K /dev/zero | tr '\\0' '{index}' > $OUT/{name}");
        plan.push(shell(&name, &script, &inputs, &[&name]));
    }
    plan
}

#[test]
#[allow(clippy::print_stderr, reason = "the test reports its measurement")]
fn a_full_hit_with_outputs_in_place_takes_milliseconds() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    let plan = fifteen_actions();
    let first = run(workspace.path(), &Store::open(&store_path).unwrap(), &plan);
    assert!(first.succeeded(), "{:?}", first.results);
    // The stamps of outputs written in the same clock tick as the stamp file are not
    // trusted; a second run hashes those once and records them for good.
    let second = run(workspace.path(), &Store::open(&store_path).unwrap(), &plan);
    assert!(
        second
            .results
            .iter()
            .all(|result| result.cache == Some(CacheState::Hit))
    );
    let mut timings = Vec::new();
    for _ in 0..5 {
        let started = Instant::now();
        let store = Store::open(&store_path).unwrap();
        let report = run(workspace.path(), &store, &plan);
        timings.push(started.elapsed());
        assert!(
            report
                .results
                .iter()
                .all(|result| result.cache == Some(CacheState::Hit))
        );
    }
    timings.sort();
    eprintln!("full hit of 15 actions (store opened anew each time): {timings:?}");
    assert!(
        timings[2] < Duration::from_millis(250),
        "median {:?}",
        timings[2]
    );
    let keys: BTreeMap<_, _> = first
        .results
        .iter()
        .map(|result| (result.id.clone(), result.key))
        .collect();
    assert_eq!(keys.len(), 15);
}

#[test]
fn two_revisions_of_one_action_in_one_workspace_never_write_its_outputs_at_once() {
    let workspace = tempfile::tempdir().unwrap();
    let store_path = Store::default_path(workspace.path());
    let script = "echo start >> runs.log; mkdir -p $OUT; echo one > $OUT/a; sleep 0.2; \
                  echo two >> $OUT/a; echo end >> runs.log";
    let old = shell("a", script, &[], &["a"]);
    let mut new = old.clone();
    new.static_key = Sha256Digest::of(b"a, after an edit");
    let reports: Vec<ExecutionReport> = std::thread::scope(|scope| {
        let executors: Vec<_> = [old, new]
            .into_iter()
            .map(|planned| {
                let store_path = &store_path;
                let root = workspace.path();
                scope.spawn(move || run(root, &Store::open(store_path).unwrap(), &[planned]))
            })
            .collect();
        executors.into_iter().map(|e| e.join().unwrap()).collect()
    });
    for report in &reports {
        assert!(report.succeeded(), "{:?}", report.results);
        assert_eq!(report.results[0].cache, Some(CacheState::Miss));
    }
    let log = std::fs::read_to_string(workspace.path().join("runs.log")).unwrap();
    assert_eq!(log, "start\nend\nstart\nend\n", "the runs did not overlap");
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".once/out/T/a")).unwrap(),
        "one\ntwo\n"
    );
}

/// The plan of the two-process test: a slow action and one consuming it, each logging
/// its runs outside the outputs.
fn logged_plan() -> Vec<PlannedAction> {
    vec![
        shell(
            "slow",
            "echo slow >> runs.log; sleep 0.3; mkdir -p $OUT; echo slow > $OUT/slow",
            &[],
            &["slow"],
        ),
        shell(
            "next",
            "echo next >> runs.log; cat $OUT/slow > $OUT/next",
            &["slow"],
            &["next"],
        ),
    ]
}

/// Run as a child by the next test (only when `ONCE_EXEC_CHILD_WORKSPACE` is set): runs
/// `logged_plan` in that workspace and prints each action's cache state.
#[test]
#[ignore = "a child process of two_processes_on_one_workspace_run_each_action_once_and_both_succeed, which runs it"]
#[allow(clippy::print_stdout, reason = "the parent test reads the answer")]
fn child_executor() {
    let root = std::env::var_os("ONCE_EXEC_CHILD_WORKSPACE")
        .expect("run by two_processes_on_one_workspace_run_each_action_once_and_both_succeed");
    let root = Path::new(&root);
    let store = Store::open(&Store::default_path(root)).unwrap();
    let report = run(root, &store, &logged_plan());
    assert!(report.succeeded(), "{:?}", report.results);
    for result in &report.results {
        println!("cache={}", result.cache.map_or("-", |cache| cache.as_str()));
    }
}

#[test]
fn two_processes_on_one_workspace_run_each_action_once_and_both_succeed() {
    let workspace = tempfile::tempdir().unwrap();
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "--ignored",
                    "child_executor",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env("ONCE_EXEC_CHILD_WORKSPACE", workspace.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap()
        })
        .collect();
    let mut caches = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert!(output.status.success(), "a child executor failed");
        let stdout = String::from_utf8(output.stdout).unwrap();
        caches.extend(
            stdout
                .lines()
                // libtest may print its `test child_executor ... ` on the same line.
                .filter_map(|line| line.split_once("cache=").map(|(_, rest)| rest))
                .filter_map(|rest| rest.split_whitespace().next())
                .map(str::to_owned),
        );
    }
    caches.sort();
    assert_eq!(caches, ["hit", "hit", "miss", "miss"]);
    let log = std::fs::read_to_string(workspace.path().join("runs.log")).unwrap();
    assert_eq!(log, "slow\nnext\n", "each action ran once");
}

#[test]
fn two_checkouts_at_different_places_share_results_through_one_store() {
    let store_directory = tempfile::tempdir().unwrap();
    let store = Store::open(store_directory.path()).unwrap();
    let mut reports = Vec::new();
    for _ in 0..2 {
        let checkout = tempfile::tempdir().unwrap();
        std::fs::create_dir(checkout.path().join("tools")).unwrap();
        std::fs::write(
            checkout.path().join("tools/gen.sh"),
            "#!/bin/sh\nmkdir -p .once/out/T && echo generated > .once/out/T/gen\n",
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            checkout.path().join("tools/gen.sh"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let mut planned = shell("gen", "", &[], &["gen"]);
        if let ActionStep::Run(command) = &mut planned.action.step {
            command.argv = vec!["tools/gen.sh".to_owned()];
        }
        reports.push(run(checkout.path(), &store, &[planned]));
        assert_eq!(
            std::fs::read_to_string(checkout.path().join(".once/out/T/gen")).unwrap(),
            "generated\n"
        );
    }
    assert_eq!(reports[0].results[0].cache, Some(CacheState::Miss));
    assert_eq!(reports[1].results[0].cache, Some(CacheState::Hit));
}

#[test]
fn changing_the_program_an_action_runs_changes_its_key() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let tool = workspace.path().join("gen.sh");
    let write_tool = |text: &str| {
        std::fs::write(
            &tool,
            format!("#!/bin/sh\nmkdir -p .once/out/T && echo {text} > .once/out/T/gen\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&tool, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let mut planned = shell("gen", "", &[], &["gen"]);
    if let ActionStep::Run(command) = &mut planned.action.step {
        command.argv = vec!["./gen.sh".to_owned()];
    }
    let plan = [planned];
    write_tool("one");
    let caches: Vec<_> = (0..2)
        .map(|_| run(workspace.path(), &store, &plan).results[0].cache)
        .collect();
    assert_eq!(caches, [Some(CacheState::Miss), Some(CacheState::Hit)]);
    write_tool("two");
    let report = run(workspace.path(), &store, &plan);
    assert_eq!(report.results[0].cache, Some(CacheState::Miss));
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".once/out/T/gen")).unwrap(),
        "two\n"
    );
}

#[test]
fn argv0_once_runs_the_once_program_and_its_content_is_in_the_key() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    // A stand-in for the running `once` executable, outside the workspace and off PATH.
    let elsewhere = tempfile::tempdir().unwrap();
    let once = elsewhere.path().join("the-once-executable");
    let write_once = |text: &str| {
        std::fs::write(
            &once,
            format!("#!/bin/sh\nmkdir -p .once/out/T && echo {text} \"$@\" > .once/out/T/said\n"),
        )
        .unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(&once, std::fs::Permissions::from_mode(0o755)).unwrap();
    };
    let mut planned = shell("said", "", &[], &["said"]);
    if let ActionStep::Run(command) = &mut planned.action.step {
        command.argv = vec!["once".to_owned(), "__test-adapter".to_owned()];
    }
    let plan = [planned];
    let run_with_once = || {
        Executor::new(workspace.path(), &store)
            .with_options(ExecOptions {
                once_program: Some(once.clone()),
                ..options()
            })
            .run(&plan)
            .unwrap()
    };
    write_once("one");
    let first = run_with_once();
    assert!(first.succeeded(), "{:?}", first.results);
    assert_eq!(
        std::fs::read_to_string(workspace.path().join(".once/out/T/said")).unwrap(),
        "one __test-adapter\n"
    );
    assert_eq!(run_with_once().results[0].cache, Some(CacheState::Hit));
    // A different `once` is a different tool: the action runs again.
    write_once("two");
    let third = run_with_once();
    assert_eq!(third.results[0].cache, Some(CacheState::Miss));
    assert_ne!(third.results[0].key, first.results[0].key);
    // Without a `once` program, `once` is looked up on PATH like any other name (and
    // /usr/bin:/bin has none).
    let report = run(workspace.path(), &store, &plan);
    assert_eq!(report.results[0].status, ActionStatus::Failed);
}

#[test]
fn a_program_past_its_time_limit_is_killed_with_its_group_and_the_action_times_out() {
    let workspace = tempfile::tempdir().unwrap();
    let store = Store::open(&Store::default_path(workspace.path())).unwrap();
    let mut planned = shell("slow", "sleep 6143 & sleep 6142", &[], &[]);
    if let ActionStep::Run(command) = &mut planned.action.step {
        command.timeout_seconds = Some(1);
    }
    let started = Instant::now();
    let report = run(workspace.path(), &store, &[planned]);
    let elapsed = started.elapsed();
    let result = &report.results[0];
    assert_eq!(result.status, ActionStatus::Failed);
    assert!(result.timed_out);
    assert_eq!(result.exit_code, None);
    assert!(
        result
            .message
            .as_deref()
            .is_some_and(|m| m.contains("killed at its time limit of 1 s")),
        "{:?}",
        result.message
    );
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    wait_for("both sleeps to be gone", || {
        processes_with("sleep 614").is_empty()
    });
    // A program that ends in time is not marked.
    let mut quick = shell("quick", "true", &[], &[]);
    if let ActionStep::Run(command) = &mut quick.action.step {
        command.timeout_seconds = Some(30);
    }
    let report = run(workspace.path(), &store, &[quick]);
    assert!(report.succeeded(), "{:?}", report.results);
    assert!(!report.results[0].timed_out);
}
