//! `unittest`'s outcomes as the `unittest_test` kind's runner writes them: `python3 -m
//! unittest` (its `unittest.main`, discovery and `load_tests` included) with a result
//! that also writes one JSON line per outcome to a report, as it happens:
//!
//! ```json
//! {"id": "tests.test_a.Calc.test_add", "name": "test_add", "suite": "tests.test_a.Calc",
//!  "outcome": "failure", "duration": 0.002, "message": "AssertionError: …",
//!  "file": "/ws/pkg/tests/test_a.py", "line": 12, "subtest_of": null}
//! ```
//!
//! `outcome` is unittest's own word: `success`, `failure`, `error`, `skip`,
//! `expected_failure`, `unexpected_success`. A subtest (`self.subTest(...)`) is a case of
//! its own, its id unittest's (`tests.test_a.Calc.test_add (n=2)`: the test's id, a
//! space, the subtest's description) with `subtest_of` naming its test. A test whose
//! subtests failed while its own body did not is passed, as pytest reports it: its
//! failures are its subtests' cases.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::Parsed;
use crate::record::{AttemptStatus, Case, bounded, millis};

#[derive(Deserialize)]
struct Line {
    id: String,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    suite: Option<String>,
    outcome: String,
    #[serde(default)]
    duration: Option<f64>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    file: Option<String>,
    #[serde(default)]
    line: Option<u32>,
    #[serde(default)]
    subtest_of: Option<String>,
}

pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    for (index, text) in text.lines().enumerate() {
        if text.trim().is_empty() {
            continue;
        }
        let line: Line = match serde_json::from_str(text) {
            Ok(line) => line,
            Err(error) => {
                parsed.problem(format!(
                    "line {} of the unittest report: {error}",
                    index + 1
                ));
                continue;
            }
        };
        let status = match line.outcome.as_str() {
            "success" => AttemptStatus::Passed,
            "failure" | "error" | "unexpected_success" => AttemptStatus::Failed,
            "skip" | "expected_failure" => AttemptStatus::Skipped,
            other => {
                parsed.problem(format!(
                    "line {} of the unittest report: unknown outcome `{other}`",
                    index + 1
                ));
                continue;
            }
        };
        let duration_ms = line.duration.and_then(millis);
        let name = line
            .name
            .filter(|name| !name.is_empty())
            .unwrap_or_else(|| line.id.clone());
        let mut case = Case::single(
            line.id,
            name,
            line.suite.unwrap_or_default(),
            status,
            duration_ms,
            line.message
                .filter(|message| !message.is_empty())
                .map(bounded),
        );
        case.file = line.file.filter(|file| !file.is_empty());
        case.line = line.line.filter(|line| *line > 0);
        let mut metadata = Map::new();
        if !matches!(line.outcome.as_str(), "success" | "failure" | "skip") {
            metadata.insert("outcome".to_owned(), Value::String(line.outcome));
        }
        if let Some(parent) = line.subtest_of {
            metadata.insert("subtest_of".to_owned(), Value::String(parent));
        }
        case.runner_metadata = metadata;
        parsed.push(case);
    }
    parsed
}
