//! `once __test-adapter`, the command test actions run: the runner's output passes
//! through and is logged whole, its exit status is the adapter's, and a sound
//! `once.test_results.v1` record is written in every case: TAP read, a plain exit
//! status, a runner that cannot start, a JUnit file that never appeared.

use expect_test::{Expect, expect};
use once_test_results::TestResults;

use crate::support::{Once, Outcome, Workspace};

const RESULTS: &str = "../.once/out/pkg/T/test/test_results.json";
const LOG: &str = "../.once/out/pkg/T/test/log.txt";

/// Runs the adapter in `pkg/` of a fresh workspace; returns the run's transcript and the
/// record it wrote, read back and checked.
fn adapt(
    format: &str,
    native: Option<&str>,
    command: &[&str],
) -> (Workspace, Outcome, TestResults) {
    let workspace = Workspace::copy("workspaces/valid");
    std::fs::create_dir_all(workspace.root().join("pkg")).unwrap();
    let mut args = vec![
        "__test-adapter",
        "--results-format",
        format,
        "--target",
        "pkg/T",
        "--runner",
        "sh",
        "--results",
        RESULTS,
        "--log",
        LOG,
        "--cwd",
        "pkg",
    ];
    if let Some(native) = native {
        args.extend(["--native", native]);
    }
    args.push("--");
    args.extend_from_slice(command);
    let outcome = Once::new(&args)
        .cwd(workspace.root().join("pkg"))
        .workspace(&workspace)
        .run();
    let bytes = std::fs::read(
        workspace
            .root()
            .join(".once/out/pkg/T/test/test_results.json"),
    )
    .expect("the adapter always writes the record");
    let record = TestResults::from_json(&bytes, "pkg/T").expect("a sound record");
    (workspace, outcome, record)
}

/// The transcript, then the record's status, counts and each case with its message.
fn check_adapter(format: &str, native: Option<&str>, command: &[&str], expected: Expect) {
    let (workspace, outcome, record) = adapt(format, native, command);
    let mut text = outcome.render();
    text.push_str(&format!(
        "--- record\n{} {}\n",
        record.status.as_str(),
        record.summary
    ));
    for case in &record.cases {
        text.push_str(&format!("{} {:?}", case.id, case.status));
        if let Some(message) = case.last_message() {
            text.push_str(&format!(": {message}"));
        }
        text.push('\n');
    }
    text.push_str(&format!("logs: {:?}\n", record.artifacts.logs));
    let log = std::fs::read_to_string(workspace.root().join(".once/out/pkg/T/test/log.txt"))
        .unwrap_or_default();
    text.push_str(&format!("--- log\n{log}"));
    expected.assert_eq(&text);
}

#[test]
fn tap_output_passes_through_and_becomes_cases() {
    check_adapter(
        "tap",
        None,
        &[
            "sh",
            "-c",
            "echo 1..2; echo 'ok 1 - adds'; echo 'not ok 2 - subtracts'; exit 1",
        ],
        expect![[r#"
            $ once __test-adapter --results-format tap --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg -- sh -c echo 1..2; echo 'ok 1 - adds'; echo 'not ok 2 - subtracts'; exit 1
            exit: 1
            --- stdout
            1..2
            ok 1 - adds
            not ok 2 - subtracts
            --- stderr
            --- record
            failed 2 total, 1 passed, 1 failed, 0 skipped, 0 flaky
            adds Passed
            subtracts Failed
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            1..2
            ok 1 - adds
            not ok 2 - subtracts
        "#]],
    );
}

#[test]
fn a_plain_exit_status_is_one_case() {
    check_adapter(
        "exit_code",
        None,
        &["sh", "-c", "echo checking; exit 0"],
        expect![[r#"
            $ once __test-adapter --results-format exit_code --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg -- sh -c echo checking; exit 0
            exit: 0
            --- stdout
            checking
            --- stderr
            --- record
            passed 1 total, 1 passed, 0 failed, 0 skipped, 0 flaky
            pkg/T Passed
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            checking
        "#]],
    );
    check_adapter(
        "exit_code",
        None,
        &["sh", "-c", "echo 'it broke' >&2; exit 3"],
        expect![[r#"
            $ once __test-adapter --results-format exit_code --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg -- sh -c echo 'it broke' >&2; exit 3
            exit: 3
            --- stdout
            --- stderr
            it broke
            --- record
            failed 1 total, 0 passed, 1 failed, 0 skipped, 0 flaky
            pkg/T Failed: The test exited with status 3 and reported no case that could be read.
            The whole output is in .once/out/pkg/T/test/log.txt.
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            it broke
        "#]],
    );
}

#[test]
fn a_runner_that_cannot_start_or_leaves_no_file_still_gets_a_record() {
    check_adapter(
        "libtest",
        None,
        &["./no-such-runner"],
        expect![[r#"
            $ once __test-adapter --results-format libtest --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg -- ./no-such-runner
            exit: 127
            --- stdout
            --- stderr
            once: cannot start `./no-such-runner`: No such file or directory (os error 2)
            --- record
            failed 1 total, 0 passed, 1 failed, 0 skipped, 0 flaky
            pkg/T Failed: The test exited with status 127 and reported no case that could be read.
            - cannot start `./no-such-runner`: No such file or directory (os error 2)
            The whole output is in .once/out/pkg/T/test/log.txt.
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            cannot start `./no-such-runner`: No such file or directory (os error 2)
        "#]],
    );
    check_adapter(
        "pytest_junit",
        Some("../.once/out/pkg/T/test/junit.xml"),
        &["sh", "-c", "echo 'collected nothing'; exit 5"],
        expect![[r#"
            $ once __test-adapter --results-format pytest_junit --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg --native ../.once/out/pkg/T/test/junit.xml -- sh -c echo 'collected nothing'; exit 5
            exit: 5
            --- stdout
            collected nothing
            --- stderr
            --- record
            failed 1 total, 0 passed, 1 failed, 0 skipped, 0 flaky
            pkg/T Failed: The test exited with status 5 and reported no case that could be read.
            - the runner's output ends with:
            collected nothing
            - no results file `../.once/out/pkg/T/test/junit.xml`: No such file or directory (os error 2)
            The whole output is in .once/out/pkg/T/test/log.txt.
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            collected nothing
        "#]],
    );
}

#[test]
fn a_signal_is_reported_as_128_plus_its_number() {
    let (_workspace, outcome, record) =
        adapt("tap", None, &["sh", "-c", "echo 'ok 1 - a'; kill -9 $$"]);
    assert_eq!(outcome.code, 128 + 9, "{}", outcome.render());
    assert_eq!(record.status.as_str(), "failed");
}

/// The adapter running `script` (in `pkg/` of a fresh workspace, in a process group of
/// its own so that whatever is left can be killed), killed with its group if it has not
/// finished within `limit`; how long it took, its exit code, and the processes still
/// working in `pkg/` afterwards.
fn adapt_within(
    format: &str,
    native: Option<&str>,
    script: &str,
    limit: std::time::Duration,
) -> (
    std::time::Duration,
    Option<i32>,
    Vec<u32>,
    Option<TestResults>,
) {
    use std::os::unix::process::CommandExt as _;
    let workspace = Workspace::copy("workspaces/valid");
    let package = workspace.root().join("pkg");
    std::fs::create_dir_all(&package).unwrap();
    let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_once"));
    command.args([
        "__test-adapter",
        "--results-format",
        format,
        "--target",
        "pkg/T",
        "--runner",
        "sh",
        "--results",
        RESULTS,
        "--log",
        LOG,
        "--cwd",
        "pkg",
    ]);
    if let Some(native) = native {
        command.args(["--native", native]);
    }
    command
        .args(["--", "sh", "-c", script])
        .current_dir(&package)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0);
    let started = std::time::Instant::now();
    let mut child = command.spawn().unwrap();
    let code = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status.code();
        }
        if started.elapsed() > limit {
            // The whole group: the adapter and whatever it started.
            let _ = std::process::Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let took = started.elapsed();
    // A killed process leaves `/proc` a moment after the signal.
    let mut left = crate::processes::processes_in(&package);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        left = crate::processes::processes_in(&package);
    }
    for pid in &left {
        let _ = std::process::Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    let record = std::fs::read(package.join(RESULTS))
        .ok()
        .and_then(|bytes| TestResults::from_json(&bytes, "pkg/T").ok());
    (took, code, left, record)
}

#[test]
fn a_runner_that_leaves_a_background_child_is_not_waited_for_and_its_group_is_killed() {
    let limit = std::time::Duration::from_secs(20);
    // Every format the adapter reads, each runner leaving `sleep 600` holding its pipes.
    let junit = "../.once/out/pkg/T/test/junit.xml";
    let runners: [(&str, Option<&str>, String); 5] = [
        ("exit_code", None, "echo fine".to_owned()),
        ("tap", None, "echo 1..1; echo 'ok 1 - adds'".to_owned()),
        (
            "libtest",
            None,
            "echo 'test adds ... ok'; echo 'test result: ok. 1 passed'".to_owned(),
        ),
        (
            "go_test_json",
            None,
            r#"echo '{"Action":"pass","Package":"p","Test":"TestAdds","Elapsed":0}'"#.to_owned(),
        ),
        (
            "junit",
            Some(junit),
            format!("echo '<testsuite name=\"s\"><testcase name=\"adds\"/></testsuite>' > {junit}"),
        ),
    ];
    for (format, native, report) in runners {
        let script = format!("{report}; sleep 600 & exit 0");
        let (took, code, left, record) = adapt_within(format, native, &script, limit);
        assert_eq!(
            code,
            Some(0),
            "{format}: the adapter did not finish in {took:?}"
        );
        assert!(
            took < std::time::Duration::from_secs(10),
            "{format}: {took:?}"
        );
        assert_eq!(
            left,
            Vec::<u32>::new(),
            "{format}: the background child survived"
        );
        let record = record.unwrap_or_else(|| panic!("{format}: no sound record"));
        assert_eq!(record.status.as_str(), "passed", "{format}");
        assert_eq!(record.summary.passed, 1, "{format}: {:?}", record.cases);
    }
}

#[test]
fn tap_points_without_descriptions_are_named_by_their_number() {
    check_adapter(
        "tap",
        None,
        &[
            "sh",
            "-c",
            "echo 1..4; echo 'ok 1'; echo 'not ok 2 - '; echo ok; echo 'ok 4 -'; exit 1",
        ],
        expect![[r#"
            $ once __test-adapter --results-format tap --target pkg/T --runner sh --results ../.once/out/pkg/T/test/test_results.json --log ../.once/out/pkg/T/test/log.txt --cwd pkg -- sh -c echo 1..4; echo 'ok 1'; echo 'not ok 2 - '; echo ok; echo 'ok 4 -'; exit 1
            exit: 1
            --- stdout
            1..4
            ok 1
            not ok 2 - 
            ok
            ok 4 -
            --- stderr
            --- record
            failed 4 total, 3 passed, 1 failed, 0 skipped, 0 flaky
            test 1 Passed
            test 2 Failed
            test 3 Passed
            test 4 Passed
            logs: [".once/out/pkg/T/test/log.txt"]
            --- log
            1..4
            ok 1
            not ok 2 - 
            ok
            ok 4 -
        "#]],
    );
}

#[test]
fn a_log_outside_the_workspace_is_not_listed_and_a_problem_says_why() {
    let outside = tempfile::tempdir().unwrap();
    let log = outside.path().join("log.txt");
    let workspace = Workspace::copy("workspaces/valid");
    std::fs::create_dir_all(workspace.root().join("pkg")).unwrap();
    let outcome = Once::new(&[
        "__test-adapter",
        "--results-format",
        "exit_code",
        "--target",
        "pkg/T",
        "--runner",
        "sh",
        "--results",
        RESULTS,
        "--log",
        log.to_str().unwrap(),
        "--cwd",
        "pkg",
        "--",
        "true",
    ])
    .cwd(workspace.root().join("pkg"))
    .run();
    assert_eq!(outcome.code, 0, "{}", outcome.render());
    let bytes = std::fs::read(
        workspace
            .root()
            .join(".once/out/pkg/T/test/test_results.json"),
    )
    .expect("the adapter always writes the record");
    let record = TestResults::from_json(&bytes, "pkg/T").expect("a sound record");
    assert_eq!(record.artifacts.logs, Vec::<String>::new());
    let problems = record.runner.metadata["problems"].to_string();
    assert!(
        problems.contains("is absolute") && problems.contains("log.txt"),
        "{problems}"
    );
}
