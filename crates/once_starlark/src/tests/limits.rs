//! Evaluation limits: programs that would run forever, overflow the stack or exhaust
//! memory inside one statement end with one diagnostic at that statement, in bounded
//! time, in-process. (Operators that cannot be guarded in-process, `"x" * n` and `==` on a
//! value sharing itself, are covered through the binary's isolated evaluator in
//! `crates/once_cli/tests/module_limits.rs`.)

use std::time::{Duration, Instant};

use proptest::prelude::*;

use crate::{DEADLINE_GRACE, EvalLimits, ModuleErrorKind, evaluate_module};

/// For the guards: a deadline no loaded test machine reaches, so the guard under test
/// answers, not the clock.
fn limits() -> EvalLimits {
    EvalLimits {
        deadline: Duration::from_secs(120),
        ..EvalLimits::default()
    }
}

/// For what only the deadline stops.
fn tight() -> EvalLimits {
    EvalLimits {
        deadline: Duration::from_secs(2),
        ..EvalLimits::default()
    }
}

/// Evaluates `source` and returns `line: message` of its one `invalid_module` error,
/// checking it came within the deadline.
fn stopped_at(source: &str) -> String {
    stopped_within(source, &limits())
}

fn stopped_within(source: &str, limits: &EvalLimits) -> String {
    let started = Instant::now();
    let evaluation = evaluate_module("modules/limits.star", source, limits);
    let took = started.elapsed();
    assert!(
        took < limits.deadline + DEADLINE_GRACE + Duration::from_secs(2),
        "took {took:?}"
    );
    let [diagnostic] = evaluation.diagnostics.as_slice() else {
        panic!("expected one diagnostic, got {:?}", evaluation.diagnostics);
    };
    assert_eq!(diagnostic.kind, ModuleErrorKind::Invalid);
    format!("{}: {}", diagnostic.line, diagnostic.message)
}

/// Deeper than the rendering limit (1,000) and starlark's comparison recursion limit (200
/// in debug, 3,000 in release).
const DEEP: &str = "x = []\nfor i in range(3500):\n    x = [x]\n";
const SHARED: &str = "x = []\nfor i in range(28):\n    x = [x, x]\n";

#[test]
fn rendering_a_deep_value_is_refused_at_its_statement() {
    for (call, name) in [
        ("str(x)", "str()"),
        ("repr(x)", "repr()"),
        ("json.encode(x)", "json.encode()"),
    ] {
        let at = stopped_at(&format!("{DEEP}s = {call}\n"));
        assert_eq!(
            at,
            format!("4: {name}: the value nests more than 1000 levels deep")
        );
    }
}

#[test]
fn comparing_deep_values_stops_at_the_recursion_limit() {
    let at = stopped_at(&format!(
        "{DEEP}y = []\nfor i in range(3500):\n    y = [y]\nz = (x == y)\n"
    ));
    assert!(at.starts_with("7: "), "{at}");
}

/// `x == x` is true without looking inside, and a value nested 100,000 deep no longer
/// overflows the garbage collector's recursion (which aborted the process between
/// statements): the module evaluates.
#[test]
fn a_deep_value_compared_with_itself_evaluates() {
    let evaluation = evaluate_module(
        "modules/limits.star",
        "x = []\nfor i in range(100000):\n    x = [x]\nz = (x == x)\nw = x\n",
        &EvalLimits {
            deadline: Duration::from_secs(60),
            ..EvalLimits::default()
        },
    );
    assert_eq!(evaluation.diagnostics, []);
}

#[test]
fn rendering_a_shared_value_is_refused_by_its_size() {
    let at = stopped_at(&format!("{SHARED}s = str(x)\n"));
    assert_eq!(
        at,
        "4: str(): the text would exceed the heap limit of 67108864 bytes"
    );
}

#[test]
fn materialising_a_huge_range_is_refused() {
    for source in [
        "l = sorted(range(300000000))\n",
        "l = list(range(1000000000))\n",
        "t = tuple(range(5, 2000000000, 1))\n",
    ] {
        let at = stopped_at(source);
        assert!(
            at.starts_with("1: range of ") && at.contains("longer than the step limit"),
            "{at}"
        );
    }
    // Ranges within the limit work as before, in both directions.
    let evaluation = evaluate_module(
        "modules/limits.star",
        "a = list(range(10, 0, -3))\nb = len(range(-2000000, 0))\nc = sorted(range(1000))\n",
        &limits(),
    );
    assert_eq!(evaluation.diagnostics, []);
}

#[test]
fn rendering_within_the_limits_is_unchanged() {
    let evaluation = evaluate_module(
        "modules/limits.star",
        "x = [1, (\"a\", {\"k\": None})]\nx.append(x)\n\
         s = str(x)\nr = repr(\"q\")\nj = json.encode({\"a\": [1, 2]})\n\
         d = json.decode(j)\n\
         def f(v: str) -> str:\n    return v\n\
         t = f(str(1))\n",
        &limits(),
    );
    assert_eq!(evaluation.diagnostics, []);
}

/// One statement of a random program: nesting, sharing, repetition within the guarded
/// builtins, and conversions of whatever was built.
fn statement() -> impl Strategy<Value = String> {
    prop_oneof![
        (1u32..50_000).prop_map(|n| format!("for i in range({n}):\n    x = [x]")),
        (1u32..64).prop_map(|n| format!("for i in range({n}):\n    x = [x, x]")),
        (1u32..64).prop_map(|n| format!("for i in range({n}):\n    x = (x, {{\"k\": x}})")),
        (1u32..40).prop_map(|n| format!("for i in range({n}):\n    s = s + s")),
        (0u32..8).prop_map(|n| format!("s = s * {n}")),
        (0i64..i64::from(i32::MAX)).prop_map(|n| format!("l = list(range({n}))")),
        (0i64..i64::from(i32::MAX)).prop_map(|n| format!("l = sorted(range({n}), reverse = True)")),
        Just("y = str(x)".to_owned()),
        Just("y = repr(x)".to_owned()),
        Just("y = json.encode(x)".to_owned()),
        Just("y = \"%s\" % len(str(l))".to_owned()),
        Just("x = []".to_owned()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Random programs never abort the process and never outlive the deadline: each
    /// either evaluates or stops with one diagnostic.
    #[test]
    fn random_programs_stay_within_the_limits(
        statements in proptest::collection::vec(statement(), 1..6),
    ) {
        let source = format!("x = []\ns = \"ab\"\nl = []\n{}\n", statements.join("\n"));
        let limits = tight();
        let started = Instant::now();
        let evaluation = evaluate_module("modules/random.star", &source, &limits);
        let took = started.elapsed();
        prop_assert!(took < limits.deadline + DEADLINE_GRACE + Duration::from_secs(2), "took {:?}", took);
        prop_assert!(evaluation.diagnostics.len() <= 1);
    }
}

/// `==` on two values that share themselves 2^40 times never returns; the caller stops
/// waiting at the deadline and reports the statement (the evaluation thread is left to
/// spin: in the binary, the isolated evaluator process is killed instead).
#[test]
fn an_endless_comparison_is_reported_at_the_deadline() {
    let at = stopped_within(
        "x = []\ny = []\nfor i in range(40):\n    x = [x, x]\n    y = [y, y]\nz = (x == y)\n",
        &tight(),
    );
    assert!(
        at.starts_with("6: module evaluation did not finish within the time limit of 2000 ms"),
        "{at}"
    );
}
