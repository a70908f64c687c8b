//! The exit codes of every executing command, for every front end: what `once build`,
//! `once run`, `once test`, `once exec` and `once runtime start` exit with, and what the
//! MCP tools report as `exit_code`. One table, decided here:
//!
//! | case | code |
//! |---|---|
//! | everything succeeded | 0 |
//! | an action or a test failed, or what a program needs failed to build | 1 |
//! | the plan had problems (an error in a manifest, an implementation that failed, a cycle): nothing ran | 1 |
//! | a program ran (`run`, `exec`): its own exit code (its low 8 bits) | the program's |
//! | a program exited 0 but its action failed (a declared output missing) | 1 |
//! | a program killed by signal N | 128 + N |
//! | cancelled (a signal to `once`, an MCP cancellation) | 130 |
//!
//! A front end that was stopped by signal N exits 128 + N instead (the CLI knows which
//! signal it got).

use once_exec::{ActionResult, ActionStatus, ExecutionReport};

use crate::Plan;

pub const SUCCESS: i32 = 0;
pub const FAILED: i32 = 1;
pub const REFUSED: i32 = 1;
/// 128 + SIGINT, as a shell reports a command interrupted with ^C.
pub const CANCELLED: i32 = 130;

/// The exit code one action's result stands for when its program is what the user
/// ran (a script, a `run` command): the program's (its low 8 bits), 128 + N when signal
/// N killed it, [`CANCELLED`] when it was cancelled, and 1 when it did not get as far as
/// running or failed after its program succeeded (a declared output it did not write).
pub fn of_action(result: &ActionResult) -> i32 {
    match (result.status, result.exit_code, result.signal) {
        (ActionStatus::Cancelled, _, _) => CANCELLED,
        (_, _, Some(signal)) => 128 + signal.clamp(0, 127),
        (ActionStatus::Failed, Some(0), None) => FAILED,
        (_, Some(code), None) => code & 0xff,
        (ActionStatus::Succeeded, None, None) => SUCCESS,
        (_, None, None) => FAILED,
    }
}

/// What a build exits with: 0 when every action succeeded, [`CANCELLED`] when it was
/// cancelled, else 1.
pub fn of_build(report: &ExecutionReport) -> i32 {
    if report.succeeded() {
        SUCCESS
    } else if cancelled(report) {
        CANCELLED
    } else {
        FAILED
    }
}

/// What a run exits with: a build's code until the program ran, then the program's
/// ([`of_action`] of the last of the target's own actions that ran).
pub fn of_run(plan: &Plan, report: &ExecutionReport) -> i32 {
    if cancelled(report) {
        return CANCELLED;
    }
    let own: &[String] = plan.targets.first().map_or(&[], |t| t.actions.as_slice());
    let program = own
        .iter()
        .filter_map(|id| report.result(id))
        .rfind(|result| result.status != ActionStatus::Skipped);
    match program {
        Some(result) => {
            let code = of_action(result);
            // A program that succeeded after a failure elsewhere (`keep_going`) does not
            // hide it.
            if code == SUCCESS && !report.succeeded() {
                FAILED
            } else {
                code
            }
        }
        None => of_build(report),
    }
}

fn cancelled(report: &ExecutionReport) -> bool {
    report
        .results
        .iter()
        .any(|r| r.status == ActionStatus::Cancelled)
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_exec::CacheState;

    fn result(
        id: &str,
        status: ActionStatus,
        code: Option<i32>,
        signal: Option<i32>,
    ) -> ActionResult {
        let mut result = ActionResult::new(id, status);
        result.cache = Some(CacheState::Miss);
        result.exit_code = code;
        result.signal = signal;
        result
    }

    fn run_plan() -> Plan {
        Plan {
            capability: "run".to_owned(),
            targets: vec![crate::PlannedTarget {
                id: "a/A".to_owned(),
                kind: "command".to_owned(),
                actions: vec!["a/A#run/0".to_owned()],
                default_outputs: Vec::new(),
                output_groups: Vec::new(),
                required_outputs: Vec::new(),
                implemented: true,
                test_attempts: None,
            }],
            actions: Vec::new(),
            problems: Vec::new(),
            kinds: Default::default(),
            source_stamps: Default::default(),
            sandbox: None,
            remote_cache: None,
        }
    }

    fn check(results: Vec<ActionResult>) -> (i32, i32, i32) {
        let report = ExecutionReport {
            results,
            warnings: Vec::new(),
        };
        let action = report.results.last().map_or(-1, of_action);
        (of_build(&report), of_run(&run_plan(), &report), action)
    }

    /// Each row of the table, for a build, a run whose program is the last action, and
    /// the action alone (a script).
    #[test]
    fn the_table() {
        use ActionStatus::*;
        let dep = |status| result("d/D#build/0", status, Some(0), None);
        let program = |status, code, signal| result("a/A#run/0", status, code, signal);
        let cases = [
            (
                "all ok",
                vec![dep(Succeeded), program(Succeeded, Some(0), None)],
                (0, 0, 0),
            ),
            (
                "program exits 3",
                vec![dep(Succeeded), program(Failed, Some(3), None)],
                (1, 3, 3),
            ),
            (
                "program exits 256+4",
                vec![program(Failed, Some(260), None)],
                (1, 4, 4),
            ),
            (
                "program ok, action failed",
                vec![program(Failed, Some(0), None)],
                (1, 1, 1),
            ),
            (
                "program killed by 9",
                vec![program(Failed, None, Some(9))],
                (1, 137, 137),
            ),
            (
                "program did not start",
                vec![program(Failed, None, None)],
                (1, 1, 1),
            ),
            (
                "cancelled",
                vec![dep(Succeeded), program(Cancelled, None, None)],
                (130, 130, 130),
            ),
            (
                "dependency failed, program skipped",
                vec![
                    result("d/D#build/0", Failed, Some(2), None),
                    program(Skipped, None, None),
                ],
                (1, 1, 1),
            ),
            (
                "dependency failed, program ran (keep going)",
                vec![
                    result("d/D#build/0", Failed, Some(2), None),
                    program(Succeeded, Some(0), None),
                ],
                (1, 1, 0),
            ),
        ];
        for (case, results, expected) in cases {
            assert_eq!(check(results), expected, "{case}");
        }
    }
}
