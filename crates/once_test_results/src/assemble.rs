//! A record from a parse and the way the runner's process ended.
//!
//! The process has the last word where the parse cannot speak: no case read (an
//! unparsable or missing output, a crash before the first test, or a run of no test at
//! all, which fails unless [`Outcome::allow_no_cases`]) gives one case carrying the exit
//! status, the problems and the log's path; a runner that failed, or ran out of
//! time, while every case passed gets a failed case saying so. Cases are sorted by id,
//! so a record does not depend on the order parallel tests finished in. The record is
//! returned as it is written ([`crate::write`]: every case named and distinct, bounded).

use serde_json::Value;

use crate::Parsed;
use crate::record::{Artifacts, AttemptStatus, Case, CaseStatus, Runner, TestResults, bounded};

/// How the runner's process ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// `None` when a signal ended it.
    pub exit_code: Option<i32>,
    /// Killed at its time limit.
    pub timed_out: bool,
    /// The workspace-relative path of its captured output.
    pub log: String,
    /// The workspace-relative directory it ran in: a relative file path a runner prints
    /// (`calc_test.go`, `src/lib.rs`) is taken relative to it.
    pub cwd: String,
    /// Whether a successful run that reports no case passes: a format without cases
    /// (`exit_code`), or a target that allows having none (`allow_no_tests`). Otherwise
    /// it fails, as a wrong selection or an empty test file would pass unnoticed.
    pub allow_no_cases: bool,
}

impl Outcome {
    fn describe(&self) -> String {
        if self.timed_out {
            return "was killed at its time limit".to_owned();
        }
        match self.exit_code {
            Some(code) => format!("exited with status {code}"),
            None => "was ended by a signal".to_owned(),
        }
    }
}

/// The record of `target`'s run. `root` is the workspace root as the runner printed
/// absolute paths; files below it become workspace-relative.
pub fn assemble(
    target: &str,
    mut runner: Runner,
    parsed: Parsed,
    outcome: &Outcome,
    artifacts: Artifacts,
    root: &str,
) -> TestResults {
    let Parsed {
        mut cases,
        problems,
    } = parsed;
    let prefix = format!("{}/", root.trim_end_matches('/'));
    for case in &mut cases {
        if let Some(file) = case.file.as_mut() {
            *file = workspace_relative(file, &prefix, &outcome.cwd);
        }
    }
    let succeeded = outcome.exit_code == Some(0) && !outcome.timed_out;
    let name = target.rsplit('/').next().unwrap_or(target).to_owned();
    let explain = |what: String| {
        let mut message = what;
        for problem in &problems {
            message.push_str("\n- ");
            message.push_str(problem);
        }
        message.push_str(&format!("\nThe whole output is in {}.", outcome.log));
        bounded(message)
    };
    if cases.is_empty() {
        let (status, message) = if succeeded && problems.is_empty() && outcome.allow_no_cases {
            (AttemptStatus::Passed, None)
        } else if succeeded && problems.is_empty() {
            (
                AttemptStatus::Failed,
                Some(explain(
                    "The test ran no test case (the runner succeeded and reported none): \
                     check what the target selects, or set `allow_no_tests = true` if it \
                     may have none."
                        .to_owned(),
                )),
            )
        } else {
            (
                AttemptStatus::Failed,
                Some(explain(format!(
                    "The test {} and reported no case that could be read.",
                    outcome.describe()
                ))),
            )
        };
        cases.push(Case::single(
            target.to_owned(),
            name,
            String::new(),
            status,
            None,
            message,
        ));
    } else if outcome.timed_out {
        cases.push(Case::single(
            "(timed out)".to_owned(),
            "(timed out)".to_owned(),
            String::new(),
            AttemptStatus::Failed,
            None,
            Some(explain(
                "The test was killed at its time limit; cases that had not finished are missing."
                    .to_owned(),
            )),
        ));
    } else if !succeeded && !cases.iter().any(|case| case.status == CaseStatus::Failed) {
        cases.push(Case::single(
            "(runner)".to_owned(),
            "(runner)".to_owned(),
            String::new(),
            AttemptStatus::Failed,
            None,
            Some(explain(format!(
                "The test {} although no case failed.",
                outcome.describe()
            ))),
        ));
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    if let Some(code) = outcome.exit_code {
        runner.metadata.insert("exit_code".to_owned(), code.into());
    }
    if !problems.is_empty() {
        runner.metadata.insert(
            "problems".to_owned(),
            Value::Array(problems.into_iter().map(Value::String).collect()),
        );
    }
    TestResults::new(target, runner, cases, artifacts, outcome.timed_out).within_limits()
}

/// `file` as a workspace path: absolute below the root (`prefix`, ending in `/`), or
/// relative to `cwd`; `.` and `..` resolved. Anything else is left as printed.
fn workspace_relative(file: &str, prefix: &str, cwd: &str) -> String {
    let joined = if let Some(relative) = file.strip_prefix(prefix) {
        relative.to_owned()
    } else if file.starts_with('/') {
        return file.to_owned();
    } else if cwd.is_empty() || cwd == "." {
        file.to_owned()
    } else {
        format!("{}/{file}", cwd.trim_end_matches('/'))
    };
    let mut parts: Vec<&str> = Vec::new();
    for part in joined.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.pop().is_none() {
                    return file.to_owned();
                }
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}
