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
