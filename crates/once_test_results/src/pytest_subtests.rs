//! pytest's subtests (pytest 9's `subtests` fixture, `unittest`'s `subTest` run by
//! pytest), which its JUnit XML cannot carry: it folds each failing subtest into its
//! test's case as one more `<failure>` (a test whose only failure is a subtest's reads as
//! failed although pytest reports it passed) and drops the passing ones, so the counts
//! differ from pytest's own summary. The `pytest_test` kind loads a small plugin of
//! once's that writes them to a second report, one JSON line each, as they finish:
//!
//! ```json
//! {"test": "tests/test_a.py::test_x", "outcome": "failed", "message": "contains 1 failed subtest"}
//! {"test": "tests/test_a.py::test_x", "subtest": "[odd] (i=1)", "outcome": "failed",
//!  "duration": 0.001, "message": "AssertionError: 1 is odd\n\n…"}
//! ```
//!
//! The first line of a test is its own outcome, as pytest reports it (its setup, call and
//! teardown, its subtests aside). [`parse`] reads the JUnit XML with both: the test's case
//! takes its own outcome, and each subtest becomes a case whose id is the test's node id,
//! a space and pytest's description of the subtest (`tests/test_a.py::test_x [odd]
//! (i=1)`, as `pytest -v` prints it and as `unittest` names a subtest), in the test's
//! suite and file, placed at the line of the test file where it failed.

use std::collections::HashMap;

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Parsed;
use crate::junit::{Dialect, failure_line, parse_overriding};
use crate::record::{AttemptStatus, Case, bounded, millis};

#[derive(Deserialize)]
struct Line {
    test: String,
    #[serde(default)]
    subtest: Option<String>,
    outcome: String,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    message: Option<String>,
}

/// One subtest of the report.
struct Subtest {
    test: String,
    description: String,
    status: AttemptStatus,
    duration_ms: Option<u64>,
    message: Option<String>,
}

/// pytest's JUnit XML `junit` (`junit_family=xunit1`) with the subtests report `report` of
/// the same run.
pub fn parse(junit: &str, report: &str) -> Parsed {
    let mut problems = Vec::new();
    let mut outcomes = HashMap::new();
    let mut subtests = Vec::new();
    for (index, text) in report.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = match serde_json::from_str(text) {
            Ok(line) => line,
            Err(error) => {
                problems.push(format!(
                    "line {} of the subtests report: {error}",
                    index + 1
                ));
                continue;
            }
        };
        let status = match line.outcome.as_str() {
            "passed" => AttemptStatus::Passed,
            "failed" => AttemptStatus::Failed,
            "skipped" => AttemptStatus::Skipped,
            other => {
                problems.push(format!(
                    "line {} of the subtests report: unknown outcome `{other}`",
                    index + 1
                ));
                continue;
            }
        };
        let message = line.message.filter(|m| !m.is_empty()).map(bounded);
        match line.subtest {
            None => {
                outcomes.insert(line.test, (status, message));
            }
            Some(description) => subtests.push(Subtest {
                test: line.test,
                description,
                status,
                duration_ms: line.duration.and_then(millis),
                message,
            }),
        }
    }
    let mut parsed = parse_overriding(junit, Dialect::Pytest, &outcomes);
    parsed.problems.extend(problems);
    for subtest in subtests {
        let case = subtest_case(&parsed, subtest);
        parsed.push(case);
    }
    parsed
}

/// The case of `subtest`, in its test's suite and file (the test's case from `parsed`).
fn subtest_case(parsed: &Parsed, subtest: Subtest) -> Case {
    let Subtest {
        test,
        description,
        status,
        duration_ms,
        message,
    } = subtest;
    let (name, suite, file, line) = match parsed.cases.iter().find(|case| case.id == test) {
        Some(parent) => (
            format!("{} {description}", parent.name),
            parent.suite.clone(),
            parent.file.clone(),
            parent.line,
        ),
        None => {
            let name = test.rsplit("::").next().unwrap_or(&test);
            let file = test.split_once("::").map(|(file, _)| file.to_owned());
            (format!("{name} {description}"), String::new(), file, None)
        }
    };
    let line = match (status, file.as_deref(), message.as_deref()) {
        (AttemptStatus::Failed, Some(file), Some(body)) => failure_line(body, file).or(line),
        _ => line,
    };
    let mut case = Case::single(
        format!("{test} {description}"),
        name,
        suite,
        status,
        duration_ms,
        message,
    );
    case.file = file;
    case.line = line;
    let mut metadata = Map::new();
    metadata.insert("subtest_of".to_owned(), Value::String(test));
    case.runner_metadata = metadata;
    case
}
