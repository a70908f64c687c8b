//! The `test_results` target: the input as a runner's native output in every format
//! `once_test_results` reads (libtest, pytest's and generic JUnit XML, `go test -json`,
//! TAP, the unittest runner's report), through what the test adapter (`once
//! __test-adapter`) does with it: parse, assemble the `once.test_results.v1` record with
//! the process's outcome, write it as JSON; and through what `once test` does with
//! records: merge a retry into the first run, merge the batches of one target.
//!
//! Properties:
//! - no parser panics, and what it reads is deterministic;
//! - **every record written validates**: the JSON the adapter writes (for a run that
//!   passed, failed, was killed at its limit or by a signal) is accepted by
//!   `TestResults::from_json`, the reader `once test` and `once query test-results`
//!   apply, and reads back as the same record; so are the records of a retry merged
//!   into a first run, and of two batches whose runs reported different cases merged
//!   into one.

use once_test_results::{
    Artifacts, NativeFormat, Outcome, Parsed, Runner, TestResults, assemble, merge,
};

const TARGET: &str = "pkg/Tests";

const FORMATS: &[(NativeFormat, &str)] = &[
    (NativeFormat::Libtest, "libtest"),
    (NativeFormat::PytestJunit, "pytest"),
    (NativeFormat::Junit, "junit"),
    (NativeFormat::GoTestJson, "go"),
    (NativeFormat::Tap, "tap"),
    (NativeFormat::Unittest, "unittest"),
    (NativeFormat::ExitCode, "exit_code"),
];

pub fn test_results(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    // The second batch or the retry: the second half of the lines.
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let (first, second) = lines.split_at(lines.len() / 2);
    let (first, second) = (first.concat(), second.concat());
    for &(format, runner) in FORMATS {
        let parsed = format.parse(&text);
        assert_eq!(parsed, format.parse(&text), "parsing is not deterministic");
        let (a, b) = (format.parse(&first), format.parse(&second));
        let distinct = disjoint(&a, &b);
        for outcome in outcomes() {
            let record = written(runner, parsed.clone(), &outcome);
            let (a, b) = (
                written(runner, a.clone(), &outcome),
                written(runner, b.clone(), &outcome),
            );
            check_written(
                &merge::retry(record.clone(), b.clone()),
                "a retry merged into the first run",
            );
            if distinct {
                check_written(
                    &merge::batches(TARGET, vec![a, b]).expect("two batches merge"),
                    "two batches merged",
                );
            }
        }
    }
}

/// The ways a runner's process ends.
fn outcomes() -> [Outcome; 4] {
    let outcome = |exit_code, timed_out| Outcome {
        exit_code,
        timed_out,
        log: "pkg/test.log".to_owned(),
        cwd: "pkg".to_owned(),
        allow_no_cases: false,
    };
    [
        outcome(Some(0), false),
        outcome(Some(1), false),
        outcome(None, false),
        outcome(Some(137), true),
    ]
}

/// Whether two parses reported no case id in common (batches run different cases).
fn disjoint(a: &Parsed, b: &Parsed) -> bool {
    let ids: std::collections::HashSet<&str> = a.cases.iter().map(|c| c.id.as_str()).collect();
    b.cases.iter().all(|c| !ids.contains(c.id.as_str()))
}

/// The record the adapter writes for `parsed`, checked as the reader checks it.
fn written(runner: &str, parsed: Parsed, outcome: &Outcome) -> TestResults {
    let artifacts = Artifacts {
        logs: vec![outcome.log.clone()],
        native_results: vec!["pkg/results.xml".to_owned()],
    };
    let record = assemble(
        TARGET,
        Runner::named(runner),
        parsed,
        outcome,
        artifacts,
        "/ws",
    );
    check_written(&record, "the adapter's record");
    record
}

/// Writes `record` as the adapter does and reads it back as `once test` does.
fn check_written(record: &TestResults, what: &str) {
    let bytes = serde_json::to_vec_pretty(record).expect("a record serialises");
    match TestResults::from_json(&bytes, TARGET) {
        Ok(read) => assert_eq!(
            serde_json::to_vec_pretty(&read).expect("a record serialises"),
            bytes,
            "{what} does not read back as itself"
        ),
        Err(error) => panic!(
            "{what} does not validate: {error}\n{}",
            String::from_utf8_lossy(&bytes)
        ),
    }
}
