//! Writing a record: [`TestResults::within_limits`] makes any record one the validator
//! ([`TestResults::from_json`]) accepts and one small enough to read back
//! (`once_db`'s 64 MiB read limit), and [`TestResults::to_json`] writes that. Every
//! record `once` writes goes through here (the test adapter's, a timed-out test's,
//! merged retries and batches), so the reader always reads what the writer wrote.
//!
//! What it settles, in order:
//! - every case has a name (`(unnamed)` when the runner printed none), an id (its suite
//!   and name when the runner gave none), distinct ids (` #2`, ` #3`… on repeats) and an
//!   attempt; names, ids, suites and files are cut to [`FIELD_LIMIT`] bytes;
//! - the runner has a type, and the problems it reported are bounded
//!   ([`PROBLEM_LIMIT`] of them, each cut like a message);
//! - an artifact path that is not inside the workspace (absolute, through `..`) is left
//!   out, and a problem names it;
//! - beyond [`CASE_LIMIT`] cases, or [`CASES_BYTE_LIMIT`] bytes of them, the rest are
//!   left out: failed cases are kept first, then flaky, skipped and passed ones (by id
//!   within each), and `omitted` counts what was left out by status, so `summary` stays
//!   exact;
//! - the summary and the status are derived from the cases and `omitted` (a time-out
//!   stays one).
//!
//! Applying it twice changes nothing.

use std::collections::HashSet;

use serde_json::Value;

use crate::record::{
    Attempt, AttemptStatus, Case, CaseStatus, MESSAGE_LIMIT, Summary, TargetStatus, TestResults,
    bounded, workspace_path,
};

/// The most cases a record lists.
pub const CASE_LIMIT: usize = 100_000;

/// The most bytes the listed cases take in the written record (well below the 64 MiB a
/// reader reads, with room for the rest of the record).
pub const CASES_BYTE_LIMIT: usize = 32 << 20;

/// The longest case name, id, suite or file kept, in bytes.
pub const FIELD_LIMIT: usize = 4096;

/// The most problems kept in `runner.metadata.problems`.
pub const PROBLEM_LIMIT: usize = 100;

/// The name of a case whose runner printed none.
pub const UNNAMED: &str = "(unnamed)";

impl TestResults {
    /// This record as it is written: sound and bounded (see the module's documentation).
    pub fn within_limits(mut self) -> TestResults {
        if self.runner.kind.trim().is_empty() {
            self.runner.kind = "unknown".to_owned();
        }
        bound_metadata(&mut self.runner.metadata);
        confine_artifacts(&mut self);
        for case in &mut self.cases {
            sound_case(case);
        }
        distinct_ids(&mut self.cases);
        self.cases.sort_by(|a, b| a.id.cmp(&b.id));
        limit_cases(&mut self);
        let summary = Summary::of(&self.cases) + self.omitted.unwrap_or_default();
        self.summary = summary;
        if self.status != TargetStatus::TimedOut {
            self.status = TargetStatus::of(&summary);
        }
        self
    }

    /// The record written as JSON, [`TestResults::within_limits`] first.
    pub fn to_json(&self) -> Vec<u8> {
        let record = self.clone().within_limits();
        // Plain data with string keys: serializing cannot fail.
        serde_json::to_vec_pretty(&record).unwrap_or_default()
    }
}

/// `text` cut to `limit` bytes at a character boundary, with `…` marking the cut.
fn cut(text: &mut String, limit: usize) {
    if text.len() <= limit {
        return;
    }
    let mut end = limit.saturating_sub('…'.len_utf8());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push('…');
}

fn sound_case(case: &mut Case) {
    cut(&mut case.name, FIELD_LIMIT);
    cut(&mut case.suite, FIELD_LIMIT);
    cut(&mut case.id, FIELD_LIMIT);
    if let Some(file) = case.file.as_mut() {
        cut(file, FIELD_LIMIT);
    }
    if case.name.trim().is_empty() {
        case.name = UNNAMED.to_owned();
    }
    if case.id.trim().is_empty() {
        case.id = if case.suite.trim().is_empty() {
            case.name.clone()
        } else {
            format!("{} > {}", case.suite, case.name)
        };
        cut(&mut case.id, FIELD_LIMIT);
    }
    for attempt in &mut case.attempts {
        if let Some(message) = attempt.message.take() {
            attempt.message = Some(bounded(message));
        }
    }
    if case.attempts.is_empty() {
        case.attempts.push(Attempt {
            status: match case.status {
                CaseStatus::Passed | CaseStatus::Flaky => AttemptStatus::Passed,
                CaseStatus::Failed => AttemptStatus::Failed,
                CaseStatus::Skipped => AttemptStatus::Skipped,
            },
            duration_ms: None,
            message: None,
        });
    }
}

/// Gives repeated ids a ` #2`, ` #3`… suffix (one no other case has), in order, so
/// every case stays addressable.
pub(crate) fn distinct_ids(cases: &mut [Case]) {
    let mut taken: HashSet<String> = HashSet::with_capacity(cases.len());
    let originals: HashSet<String> = cases.iter().map(|case| case.id.clone()).collect();
    for case in cases {
        if taken.insert(case.id.clone()) {
            continue;
        }
        let mut count = 2;
        let id = loop {
            let suffix = format!(" #{count}");
            let mut base = case.id.clone();
            cut(&mut base, FIELD_LIMIT - suffix.len());
            let candidate = format!("{base}{suffix}");
            if !taken.contains(&candidate) && !originals.contains(&candidate) {
                break candidate;
            }
            count += 1;
        };
        taken.insert(id.clone());
        case.id = id;
    }
}

/// String values of the runner's metadata cut like messages; `problems` bounded.
fn bound_metadata(metadata: &mut serde_json::Map<String, Value>) {
    if let Some(Value::Array(problems)) = metadata.get_mut("problems")
        && problems.len() > PROBLEM_LIMIT
    {
        // The last place says how many more there were (so that writing again keeps it).
        let more = problems.len() - (PROBLEM_LIMIT - 1);
        problems.truncate(PROBLEM_LIMIT - 1);
        problems.push(Value::String(format!("… {more} more problem(s)")));
    }
    for value in metadata.values_mut() {
        match value {
            Value::String(text) if text.len() > MESSAGE_LIMIT => {
                *text = bounded(std::mem::take(text));
            }
            Value::Array(items) => {
                for item in items {
                    if let Value::String(text) = item
                        && text.len() > MESSAGE_LIMIT
                    {
                        *text = bounded(std::mem::take(text));
                    }
                }
            }
            _ => {}
        }
    }
}

/// Leaves out artifact paths outside the workspace, each named in a problem.
fn confine_artifacts(record: &mut TestResults) {
    let mut dropped = Vec::new();
    for (list, paths) in [
        ("log", &mut record.artifacts.logs),
        ("native results file", &mut record.artifacts.native_results),
    ] {
        paths.retain(|path| match workspace_path(path) {
            Ok(()) => true,
            Err(why) => {
                let mut shown = path.clone();
                cut(&mut shown, FIELD_LIMIT);
                dropped.push(format!("the {list} `{shown}` {why}; it is not listed"));
                false
            }
        });
    }
    if dropped.is_empty() {
        return;
    }
    let problems = record
        .runner
        .metadata
        .entry("problems")
        .or_insert_with(|| Value::Array(Vec::new()));
    if !problems.is_array() {
        *problems = Value::Array(vec![problems.take()]);
    }
    if let Value::Array(items) = problems {
        items.extend(dropped.into_iter().map(Value::String));
    }
    bound_metadata(&mut record.runner.metadata);
}

/// How the cases are ranked for keeping: failures first.
fn rank(status: CaseStatus) -> u8 {
    match status {
        CaseStatus::Failed => 0,
        CaseStatus::Flaky => 1,
        CaseStatus::Skipped => 2,
        CaseStatus::Passed => 3,
    }
}

/// The bytes `case` takes among a written record's cases (pretty JSON, three levels
/// in, with its separator).
fn written_size(case: &Case) -> usize {
    /// Counts the bytes and lines written to it.
    #[derive(Default)]
    struct Count {
        bytes: usize,
        lines: usize,
    }
    impl std::io::Write for Count {
        fn write(&mut self, buffer: &[u8]) -> std::io::Result<usize> {
            self.bytes += buffer.len();
            self.lines += buffer.iter().filter(|byte| **byte == b'\n').count();
            Ok(buffer.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count::default();
    // Writing into a counter cannot fail.
    let _ = serde_json::to_writer_pretty(&mut count, case);
    count.bytes + 4 * (count.lines + 1) + 2
}

/// At least the bytes `case` takes among a written record's cases, cheaply: each byte
/// of text escapes to at most six (`\u001f`), and the rest is a bounded frame.
fn size_bound(case: &Case) -> usize {
    let text = case.id.len()
        + case.name.len()
        + case.suite.len()
        + case.file.as_ref().map_or(0, String::len)
        + case
            .attempts
            .iter()
            .map(|attempt| attempt.message.as_ref().map_or(0, String::len))
            .sum::<usize>();
    let metadata = if case.runner_metadata.is_empty() {
        0
    } else {
        written_size(case)
    };
    6 * text + metadata + 400 + 200 * case.attempts.len()
}

/// Leaves out the cases beyond [`CASE_LIMIT`] or [`CASES_BYTE_LIMIT`] (the cases are
/// sorted by id), counting them in `omitted`.
fn limit_cases(record: &mut TestResults) {
    if record.cases.len() <= CASE_LIMIT
        && record.cases.iter().map(size_bound).sum::<usize>() <= CASES_BYTE_LIMIT
    {
        return;
    }
    let sizes: Vec<usize> = record.cases.iter().map(written_size).collect();
    if record.cases.len() <= CASE_LIMIT && sizes.iter().sum::<usize>() <= CASES_BYTE_LIMIT {
        return;
    }
    let mut order: Vec<usize> = (0..record.cases.len()).collect();
    // Stable: by id within a rank, as the cases are sorted.
    order.sort_by_key(|index| rank(record.cases[*index].status));
    let mut keep = vec![false; record.cases.len()];
    let (mut count, mut bytes) = (0, 0);
    for index in order {
        if count == CASE_LIMIT {
            break;
        }
        // A case too large for what room is left is left out; smaller ones may still fit.
        if bytes + sizes[index] > CASES_BYTE_LIMIT {
            continue;
        }
        keep[index] = true;
        count += 1;
        bytes += sizes[index];
    }
    let mut left_out = Vec::new();
    let mut kept = Vec::with_capacity(count);
    for (case, keep) in std::mem::take(&mut record.cases).into_iter().zip(keep) {
        if keep {
            kept.push(case);
        } else {
            left_out.push(case);
        }
    }
    record.cases = kept;
    let omitted = record.omitted.unwrap_or_default() + Summary::of(&left_out);
    record.omitted = Some(omitted);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Artifacts, Runner};

    fn case(id: &str, status: AttemptStatus) -> Case {
        Case::single(
            id.to_owned(),
            id.to_owned(),
            String::new(),
            status,
            None,
            None,
        )
    }

    fn record(cases: Vec<Case>) -> TestResults {
        TestResults::new(
            "p/T",
            Runner::named("tap"),
            cases,
            Artifacts::default(),
            false,
        )
    }

    #[test]
    fn repeated_ids_get_a_suffix_no_other_case_has() {
        let written = record(vec![
            case("a", AttemptStatus::Passed),
            case("a", AttemptStatus::Passed),
            case("a #2", AttemptStatus::Passed),
            case("a", AttemptStatus::Passed),
        ])
        .within_limits();
        let ids: Vec<&str> = written.cases.iter().map(|c| c.id.as_str()).collect();
        assert_eq!(ids, ["a", "a #2", "a #3", "a #4"]);
    }

    #[test]
    fn cases_beyond_the_limit_are_counted_not_listed_failures_first() {
        let mut cases: Vec<Case> = (0..CASE_LIMIT + 10)
            .map(|n| case(&format!("p{n:06}"), AttemptStatus::Passed))
            .collect();
        cases.push(case("zz failing", AttemptStatus::Failed));
        cases.push(case("zz skipped", AttemptStatus::Skipped));
        let written = record(cases).within_limits();
        assert_eq!(written.cases.len(), CASE_LIMIT);
        assert_eq!(written.summary.total, CASE_LIMIT as u64 + 12);
        assert_eq!(written.summary.failed, 1);
        assert_eq!(written.status, TargetStatus::Failed);
        let omitted = written.omitted.expect("some left out");
        assert_eq!((omitted.total, omitted.passed), (12, 12));
        assert!(written.cases.iter().any(|c| c.id == "zz failing"));
        assert!(written.cases.iter().any(|c| c.id == "zz skipped"));
        // Writing again changes nothing.
        assert_eq!(written.clone().within_limits(), written);
    }

    #[test]
    fn huge_fields_and_too_many_bytes_are_cut() {
        let long = "x".repeat(1 << 20);
        let mut cases: Vec<Case> = (0..40)
            .map(|n| {
                let mut case = case(&format!("{n}{long}"), AttemptStatus::Failed);
                case.attempts[0].message = Some(long.clone());
                case
            })
            .collect();
        cases.push(case("", AttemptStatus::Passed));
        let written = record(cases).within_limits();
        assert!(written.cases.iter().all(|c| c.id.len() <= FIELD_LIMIT));
        assert!(written.cases.iter().any(|c| c.name == UNNAMED));
        assert!(written.to_json().len() < 2 * CASES_BYTE_LIMIT);
        assert_eq!(written.summary.total, 41);
    }

    #[test]
    fn artifacts_outside_the_workspace_are_left_out_with_a_problem() {
        let mut results = record(vec![case("a", AttemptStatus::Passed)]);
        results.artifacts.logs = vec![
            ".once/out/p/T/test/log.txt".to_owned(),
            "/etc/shadow".to_owned(),
            "../../../etc/passwd".to_owned(),
        ];
        results.artifacts.native_results = vec!["a/../../b".to_owned()];
        let written = results.within_limits();
        assert_eq!(written.artifacts.logs, [".once/out/p/T/test/log.txt"]);
        assert!(written.artifacts.native_results.is_empty());
        let problems = written.runner.metadata["problems"].as_array().unwrap();
        assert_eq!(problems.len(), 3, "{problems:?}");
        assert!(TestResults::from_json(&written.to_json(), "p/T").is_ok());
    }
}
