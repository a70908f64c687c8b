//! Retries turn fail-then-pass cases into flaky ones; batches merge into the record an
//! unsplit run gives.

use expect_test::{Expect, expect};
use once_test_results::merge;
use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, TestResults, assemble};

fn outcome(exit_code: i32, log: &str) -> Outcome {
    Outcome {
        exit_code: Some(exit_code),
        timed_out: false,
        log: log.to_owned(),
        cwd: "pkg".to_owned(),
        allow_no_cases: false,
    }
}

fn libtest(text: &str, exit_code: i32, log: &str) -> TestResults {
    assemble(
        "pkg/Test",
        Runner::named("libtest"),
        NativeFormat::Libtest.parse(text),
        &outcome(exit_code, log),
        Artifacts {
            logs: vec![log.to_owned()],
            native_results: Vec::new(),
        },
        "/ws",
    )
}

/// The status, summary and each case's attempts, one line each.
fn check(record: &TestResults, expected: Expect) {
    let mut lines = vec![format!(
        "{:?} {:?} logs={:?}",
        record.status, record.summary, record.artifacts.logs
    )];
    for case in &record.cases {
        let attempts: Vec<String> = case
            .attempts
            .iter()
            .map(|a| format!("{:?}", a.status))
            .collect();
        lines.push(format!(
            "{} {:?} [{}]",
            case.id,
            case.status,
            attempts.join(", ")
        ));
    }
    expected.assert_eq(&(lines.join("\n") + "\n"));
}

const FIRST: &str = "\
running 3 tests
test a::one ... ok
test a::two ... FAILED
test a::three ... FAILED

failures:

---- a::two stdout ----
thread 'a::two' (1) panicked at src/lib.rs:2:1:
first failure

failures:
    a::two
    a::three

test result: FAILED. 1 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.00s
";

#[test]
fn a_case_that_fails_then_passes_is_flaky_and_one_failing_twice_stays_failed() {
    let first = libtest(FIRST, 101, "log-1.txt");
    let second = libtest(
        "test a::two ... ok\ntest a::three ... FAILED\n",
        101,
        "log-2.txt",
    );
    let merged = merge::retry(first, second);
    check(
        &merged,
        expect![[r#"
            Failed Summary { total: 3, passed: 2, failed: 1, skipped: 0, flaky: 1 } logs=["log-1.txt", "log-2.txt"]
            a::one Passed [Passed]
            a::three Failed [Failed, Failed]
            a::two Flaky [Failed, Passed]
        "#]],
    );
    let third = libtest("test a::three ... ok\n", 0, "log-3.txt");
    check(
        &merge::retry(merged, third),
        expect![[r#"
            Flaky Summary { total: 3, passed: 3, failed: 0, skipped: 0, flaky: 2 } logs=["log-1.txt", "log-2.txt", "log-3.txt"]
            a::one Passed [Passed]
            a::three Flaky [Failed, Failed, Passed]
            a::two Flaky [Failed, Passed]
        "#]],
    );
}

#[test]
fn a_runner_failure_without_a_failing_case_is_replaced_by_the_retry() {
    let first = libtest("test a::one ... ok\n", 139, "log-1.txt");
    check(
        &first,
        expect![[r#"
            Failed Summary { total: 2, passed: 1, failed: 1, skipped: 0, flaky: 0 } logs=["log-1.txt"]
            (runner) Failed [Failed]
            a::one Passed [Passed]
        "#]],
    );
    let retried = merge::retry(first, libtest("test a::one ... ok\n", 0, "log-2.txt"));
    check(
        &retried,
        expect![[r#"
            Passed Summary { total: 1, passed: 1, failed: 0, skipped: 0, flaky: 0 } logs=["log-1.txt", "log-2.txt"]
            a::one Passed [Passed, Passed]
        "#]],
    );
}

#[test]
fn batches_merge_into_the_unsplit_record() {
    let path = format!("{}/tests/fixtures/pytest.xml", env!("CARGO_MANIFEST_DIR"));
    let xml = std::fs::read_to_string(path).unwrap();
    let parsed = NativeFormat::PytestJunit.parse(&xml);
    let record = |cases: Vec<once_test_results::Case>, log: &str| {
        assemble(
            "pkg/Test",
            Runner::named("pytest"),
            once_test_results::Parsed {
                cases,
                problems: Vec::new(),
            },
            &outcome(1, log),
            Artifacts {
                logs: vec![log.to_owned()],
                native_results: Vec::new(),
            },
            "/ws",
        )
    };
    let unsplit = record(parsed.cases.clone(), "log.txt");
    // Batches by file position, as a split by case would give them, in reverse order.
    let (left, right) = parsed.cases.split_at(3);
    let merged = merge::batches(
        "pkg/Test",
        vec![
            record(right.to_vec(), "log.txt"),
            record(left.to_vec(), "log.txt"),
        ],
    )
    .unwrap();
    assert_eq!(merged, unsplit);
}
