//! Combining records: the retry of a target's failing cases into the first attempt's
//! record, and the batches of one target run in parallel into one record.

use std::collections::HashMap;

use crate::record::{Artifacts, AttemptStatus, Case, CaseStatus, TargetStatus, TestResults};

/// `first` with the attempts of `retry` appended to the cases it ran again. A case that
/// failed and then passed is `flaky`; one that fails in its last attempt stays `failed`;
/// a case only the retry reports is added. The target timed out only if the retry did.
///
/// When `first` left cases out (`omitted`), their counts stay as the first run gave
/// them, and a case only the retry reports is not added (it may be one of them): the
/// counts stay exact for the first run's cases.
pub fn retry(first: TestResults, retry: TestResults) -> TestResults {
    let mut retried: HashMap<String, Case> = retry
        .cases
        .into_iter()
        .map(|case| (case.id.clone(), case))
        .collect();
    let mut cases = Vec::with_capacity(first.cases.len());
    for mut case in first.cases {
        if let Some(again) = retried.remove(&case.id) {
            case.attempts.extend(again.attempts);
            case.status = final_status(&case);
        }
        cases.push(case);
    }
    // A synthetic failure of the first run (the runner's exit, a timeout) that the retry
    // did not repeat is over: the retry's own outcome is what counts.
    let synthetic = |case: &Case| case.id.starts_with('(');
    cases.retain(|case| !(synthetic(case) && case.attempts.len() == 1));
    if first.omitted.is_none() {
        cases.extend(retried.into_values());
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    let mut artifacts = first.artifacts;
    union(&mut artifacts, retry.artifacts);
    let mut runner = first.runner;
    for (key, value) in retry.runner.metadata {
        runner.metadata.insert(key, value);
    }
    let mut merged = TestResults::new(
        first.target,
        runner,
        cases,
        artifacts,
        retry.status == TargetStatus::TimedOut,
    );
    merged.omitted = first.omitted;
    merged.within_limits()
}

/// One record from the records of a target's batches, as one unsplit run would give:
/// the cases of all batches (sorted by id), artifacts in batch order, the cases they
/// left out counted together; timed out if any batch was.
pub fn batches(target: &str, parts: Vec<TestResults>) -> Option<TestResults> {
    let mut parts = parts.into_iter();
    let first = parts.next()?;
    let timed_out_any = |r: &TestResults| r.status == TargetStatus::TimedOut;
    let mut timed_out = timed_out_any(&first);
    let runner = first.runner;
    let mut cases = first.cases;
    let mut artifacts = first.artifacts;
    let mut omitted = first.omitted;
    for part in parts {
        timed_out |= timed_out_any(&part);
        cases.extend(part.cases);
        union(&mut artifacts, part.artifacts);
        if let Some(more) = part.omitted {
            omitted = Some(omitted.unwrap_or_default() + more);
        }
    }
    cases.sort_by(|a, b| a.id.cmp(&b.id));
    let mut merged = TestResults::new(target, runner, cases, artifacts, timed_out);
    merged.omitted = omitted;
    Some(merged.within_limits())
}

fn final_status(case: &Case) -> CaseStatus {
    let Some(last) = case.attempts.last() else {
        return case.status;
    };
    match last.status {
        AttemptStatus::Skipped => CaseStatus::Skipped,
        AttemptStatus::Failed => CaseStatus::Failed,
        AttemptStatus::Passed
            if case
                .attempts
                .iter()
                .any(|attempt| attempt.status == AttemptStatus::Failed) =>
        {
            CaseStatus::Flaky
        }
        AttemptStatus::Passed => CaseStatus::Passed,
    }
}

fn union(into: &mut Artifacts, from: Artifacts) {
    for log in from.logs {
        if !into.logs.contains(&log) {
            into.logs.push(log);
        }
    }
    for native in from.native_results {
        if !into.native_results.contains(&native) {
            into.native_results.push(native);
        }
    }
}
