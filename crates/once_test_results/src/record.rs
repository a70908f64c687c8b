//! The `once.test_results.v1` record: one test target's run, normalized across runners.
//!
//! A record is plain data: which runner produced it, the target's status, counts, every
//! case with its attempts, and the paths of the logs and native result files it came
//! from. [`TestResults::new`] derives the summary and the status from the cases, so the
//! three can never disagree.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The schema name every record carries.
pub const SCHEMA: &str = "once.test_results.v1";

/// One test target's normalized results.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TestResults {
    #[schemars(extend("enum" = ["once.test_results.v1"]))]
    pub schema: String,
    pub target: String,
    pub runner: Runner,
    pub status: TargetStatus,
    pub summary: Summary,
    pub cases: Vec<Case>,
    pub artifacts: Artifacts,
    /// The counts, by final status, of the cases this record leaves out to stay within
    /// its size limits (`docs/testing.md`); present only when it leaves some out.
    /// `summary` counts them too: it is the counts of `cases` plus these.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub omitted: Option<Summary>,
}

/// The runner that produced the results (`libtest`, `pytest`, `go`, `node`, `tap`,
/// `exit_code`, or a project kind's own name) and what it reported about itself.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Runner {
    #[serde(rename = "type")]
    pub kind: String,
    pub metadata: Map<String, Value>,
}

/// How the target as a whole ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetStatus {
    /// Every case passed or was skipped, at the first attempt.
    Passed,
    /// Every case passed or was skipped in the end, some only after a retry.
    Flaky,
    /// A case failed in its last attempt, or the runner failed without a failing case.
    Failed,
    /// The run was killed at its time limit.
    TimedOut,
}

/// How one case ended, over all its attempts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum CaseStatus {
    Passed,
    Failed,
    Skipped,
    /// Failed, then passed on a retry.
    Flaky,
}

/// The status of one attempt of a case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum AttemptStatus {
    Passed,
    Failed,
    Skipped,
}

/// Counts of cases by final status. `passed` includes flaky cases (they passed in the
/// end); `total` is the number of cases.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Summary {
    pub total: u64,
    pub passed: u64,
    pub failed: u64,
    pub skipped: u64,
    pub flaky: u64,
}

/// One test case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Case {
    /// Unique within the target; what a retry passes back to the runner to select the
    /// case (a libtest path, `executable::path` when a target runs several test
    /// executables, a pytest node id `file::name`, `package::TestName/sub` for go,
    /// `file::suite > name` for node, a TAP path).
    pub id: String,
    pub name: String,
    /// The group the case belongs to (module, class, file, describe block); empty when
    /// the runner has none.
    pub suite: String,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub file: Option<String>,
    /// 1-based.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub line: Option<u32>,
    pub status: CaseStatus,
    /// Oldest first; never empty.
    pub attempts: Vec<Attempt>,
    pub runner_metadata: Map<String, Value>,
}

/// One execution of a case.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Attempt {
    pub status: AttemptStatus,
    /// `null` when the runner does not report per-case durations (libtest, TAP without
    /// diagnostics).
    pub duration_ms: Option<u64>,
    /// The failure or skip message, as the runner printed it (bounded).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub message: Option<String>,
}

/// Files that belong to the run: workspace-relative paths that stay inside the
/// workspace (never absolute, never through `..`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Artifacts {
    pub logs: Vec<String>,
    pub native_results: Vec<String>,
}

impl TestResults {
    /// A record whose summary and status are derived from `cases`; `timed_out` wins over
    /// everything, then `runner_failed` (the process failed although no case did) makes
    /// the target failed.
    pub fn new(
        target: impl Into<String>,
        runner: Runner,
        cases: Vec<Case>,
        artifacts: Artifacts,
        timed_out: bool,
    ) -> TestResults {
        let summary = Summary::of(&cases);
        let status = if timed_out {
            TargetStatus::TimedOut
        } else {
            TargetStatus::of(&summary)
        };
        TestResults {
            schema: SCHEMA.to_owned(),
            target: target.into(),
            runner,
            status,
            summary,
            cases,
            artifacts,
            omitted: None,
        }
    }

    /// Whether the target counts as a success (passed or flaky).
    pub fn succeeded(&self) -> bool {
        matches!(self.status, TargetStatus::Passed | TargetStatus::Flaky)
    }

    /// The cases whose final status is `failed`.
    pub fn failed_cases(&self) -> impl Iterator<Item = &Case> {
        self.cases
            .iter()
            .filter(|case| case.status == CaseStatus::Failed)
    }
}

impl Summary {
    pub fn of(cases: &[Case]) -> Summary {
        let mut summary = Summary {
            total: cases.len() as u64,
            ..Summary::default()
        };
        for case in cases {
            match case.status {
                CaseStatus::Passed => summary.passed += 1,
                CaseStatus::Flaky => {
                    summary.passed += 1;
                    summary.flaky += 1;
                }
                CaseStatus::Failed => summary.failed += 1,
                CaseStatus::Skipped => summary.skipped += 1,
            }
        }
        summary
    }
}

impl std::ops::Add for Summary {
    type Output = Summary;

    fn add(self, other: Summary) -> Summary {
        Summary {
            total: self.total.saturating_add(other.total),
            passed: self.passed.saturating_add(other.passed),
            failed: self.failed.saturating_add(other.failed),
            skipped: self.skipped.saturating_add(other.skipped),
            flaky: self.flaky.saturating_add(other.flaky),
        }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} total, {} passed, {} failed, {} skipped, {} flaky",
            self.total, self.passed, self.failed, self.skipped, self.flaky
        )
    }
}

impl Runner {
    pub fn named(kind: &str) -> Runner {
        Runner {
            kind: kind.to_owned(),
            metadata: Map::new(),
        }
    }
}

impl Case {
    /// A case with one attempt.
    pub fn single(
        id: String,
        name: String,
        suite: String,
        status: AttemptStatus,
        duration_ms: Option<u64>,
        message: Option<String>,
    ) -> Case {
        Case {
            id,
            name,
            suite,
            file: None,
            line: None,
            status: match status {
                AttemptStatus::Passed => CaseStatus::Passed,
                AttemptStatus::Failed => CaseStatus::Failed,
                AttemptStatus::Skipped => CaseStatus::Skipped,
            },
            attempts: vec![Attempt {
                status,
                duration_ms,
                message: message.map(bounded),
            }],
            runner_metadata: Map::new(),
        }
    }

    /// The message of the last attempt, if any.
    pub fn last_message(&self) -> Option<&str> {
        self.attempts.last()?.message.as_deref()
    }
}

/// The largest message kept per attempt; the whole output stays in the log.
pub const MESSAGE_LIMIT: usize = 16 * 1024;

/// What a message cut by [`bounded`] ends with.
const CUT_MARKER: &str = "\n… (cut; the whole output is in the log)";

/// `message` cut to [`MESSAGE_LIMIT`] bytes at a character boundary, with a marker; a
/// message it already cut is left as it is.
pub fn bounded(message: String) -> String {
    if message.len() <= MESSAGE_LIMIT
        || (message.len() <= MESSAGE_LIMIT + CUT_MARKER.len() && message.ends_with(CUT_MARKER))
    {
        return message;
    }
    let mut end = MESSAGE_LIMIT;
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{CUT_MARKER}", &message[..end])
}

/// Milliseconds from seconds as runners print them (`0.0123`), rounded; `None` for
/// anything that is not a finite non-negative number.
pub fn millis_from_seconds(seconds: &str) -> Option<u64> {
    millis(seconds.trim().parse().ok()?)
}

/// Milliseconds from a number of seconds, rounded; `None` unless it is finite and not
/// negative.
pub fn millis(seconds: f64) -> Option<u64> {
    (seconds.is_finite() && seconds >= 0.0).then(|| (seconds * 1000.0).round() as u64)
}

impl TestResults {
    /// Reads a record written to a file (by `once test`, or by a project kind's action
    /// itself) and checks it is sound for `target`: the schema, the target, the summary
    /// and the status agreeing with the cases (and the cases it leaves out), ids and
    /// names present and ids distinct, every case with an attempt, every artifact a path
    /// inside the workspace. The error names each problem.
    pub fn from_json(bytes: &[u8], target: &str) -> Result<TestResults, String> {
        let record: TestResults = serde_json::from_slice(bytes)
            .map_err(|error| format!("not a `{SCHEMA}` record: {error}"))?;
        let problems = record.problems(target);
        if problems.is_empty() {
            Ok(record)
        } else {
            Err(format!(
                "the `{SCHEMA}` record is inconsistent:\n- {}",
                problems.join("\n- ")
            ))
        }
    }

    /// What is wrong with this record as the results of `target`; empty when sound.
    pub fn problems(&self, target: &str) -> Vec<String> {
        let mut problems = Vec::new();
        if self.schema != SCHEMA {
            problems.push(format!("`schema` is `{}`, not `{SCHEMA}`", self.schema));
        }
        if self.target != target {
            problems.push(format!("`target` is `{}`, not `{target}`", self.target));
        }
        if self.runner.kind.is_empty() {
            problems.push("`runner.type` is empty".to_owned());
        }
        let mut ids = std::collections::HashSet::new();
        for (index, case) in self.cases.iter().enumerate() {
            if case.id.is_empty() {
                problems.push(format!("case {index} has an empty `id`"));
            } else if !ids.insert(case.id.as_str()) {
                problems.push(format!("the case id `{}` appears twice", case.id));
            }
            if case.name.is_empty() {
                problems.push(format!("case `{}` has an empty `name`", case.id));
            }
            if case.attempts.is_empty() {
                problems.push(format!("case `{}` has no attempt", case.id));
            }
        }
        for (list, paths) in [
            ("logs", &self.artifacts.logs),
            ("native_results", &self.artifacts.native_results),
        ] {
            for (index, path) in paths.iter().enumerate() {
                if let Err(why) = workspace_path(path) {
                    problems.push(format!("`artifacts.{list}[{index}]` `{path}` {why}"));
                }
            }
        }
        let summary = Summary::of(&self.cases) + self.omitted.unwrap_or_default();
        if self.summary != summary {
            problems.push(format!(
                "`summary` says {} while the cases give {summary}",
                self.summary
            ));
        }
        let expected = TargetStatus::of(&summary);
        if self.status != TargetStatus::TimedOut && self.status != expected {
            problems.push(format!(
                "`status` is `{}` while the cases make it `{}`",
                self.status.as_str(),
                expected.as_str()
            ));
        }
        problems
    }
}

/// Whether `path` is a workspace-relative path that stays inside the workspace; why
/// not when it is not. Only the text is judged (no file is looked at): readers of
/// artifacts read them below the workspace root without following links.
pub fn workspace_path(path: &str) -> Result<(), &'static str> {
    if path.is_empty() {
        Err("is empty")
    } else if path.starts_with('/') {
        Err("is absolute: artifacts are paths inside the workspace, relative to its root")
    } else if path.contains('\0') {
        Err("holds a NUL character")
    } else if path.split('/').any(|part| part == "..") {
        Err("goes through `..`: artifacts are paths inside the workspace, relative to its root")
    } else {
        Ok(())
    }
}

impl TargetStatus {
    /// The status the counts of a run that was not killed give.
    pub fn of(summary: &Summary) -> TargetStatus {
        if summary.failed > 0 {
            TargetStatus::Failed
        } else if summary.flaky > 0 {
            TargetStatus::Flaky
        } else {
            TargetStatus::Passed
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            TargetStatus::Passed => "passed",
            TargetStatus::Flaky => "flaky",
            TargetStatus::Failed => "failed",
            TargetStatus::TimedOut => "timed_out",
        }
    }
}

/// The schema name of [`ResultsSummary`].
pub const SUMMARY_SCHEMA: &str = "once.test_results_summary.v1";

/// A record without its cases (`once query test-results --summary-only`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ResultsSummary {
    #[schemars(extend("enum" = ["once.test_results_summary.v1"]))]
    pub schema: String,
    #[schemars(extend("enum" = ["once.test_results.v1"]))]
    pub source_schema: String,
    pub target: String,
    pub runner: Runner,
    pub status: TargetStatus,
    pub summary: Summary,
    pub artifacts: Artifacts,
    /// The counts of the cases the record leaves out (see [`TestResults::omitted`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub omitted: Option<Summary>,
}

impl TestResults {
    pub fn summary_only(&self) -> ResultsSummary {
        ResultsSummary {
            schema: SUMMARY_SCHEMA.to_owned(),
            source_schema: self.schema.clone(),
            target: self.target.clone(),
            runner: self.runner.clone(),
            status: self.status,
            summary: self.summary,
            artifacts: self.artifacts.clone(),
            omitted: self.omitted,
        }
    }
}
