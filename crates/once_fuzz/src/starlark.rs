//! The `starlark_module` target: the input as a project module (`modules/input.star`),
//! evaluated with the declaration helpers under small limits, with `load()` reading a
//! fixed helper module, the input itself (a cycle) and nothing else.
//!
//! Properties:
//! - no panic, in the harness or on the evaluation thread (a thread that dies is the
//!   "internal error in a builtin" the runner reports);
//! - **the evaluation ends within its limits**: it finishes by itself before the
//!   deadline (`evaluate_on_thread` gives up only after the deadline and its grace, and
//!   the in-process guards of steps, heap, call depth and the deadline must stop it
//!   first), with one diagnostic at most (evaluation stops at the first error);
//! - the result is well-formed: kinds sorted by name and unique, none with a prelude
//!   kind's name, a declaration site per kind among them, loads sorted, unique and
//!   normalised workspace paths, diagnostics with 1-based positions whose end does not
//!   precede their start.
//!
//! The limits are small so that each execution is fast: the harness, not the module,
//! decides how long a run takes.

use std::time::{Duration, Instant};

use once_starlark::{
    DEADLINE_GRACE, EvalLimits, EvaluationProgress, ModuleSource, evaluate_on_thread,
    reserved_kind_names,
};

const PATH: &str = "modules/input.star";

/// A module the input may load, with a helper and constants.
const BASE: &str = r#"
TEXT_ATTRS = {
    "output": attr.string("Name of the generated file.", required = True, configurable = False),
    "lines": attr.string_list("Lines to write.", required = True),
}

def text_kind(name, docs):
    target_kind(
        name = name,
        docs = docs,
        attrs = TEXT_ATTRS,
        providers = ["generated_file"],
        capabilities = [capability("build", "Writes the file.")],
    )
"#;

fn limits() -> EvalLimits {
    EvalLimits {
        max_steps: 100_000,
        // Small enough that no single operation the guards allow (a repetition, a
        // conversion) takes long even in a debug build: the deadline then only stops
        // what the guards cannot see.
        max_bytes: 4 << 20,
        max_call_depth: 64,
        deadline: Duration::from_secs(1),
    }
}

struct Modules<'a> {
    input: &'a str,
}

impl ModuleSource for Modules<'_> {
    fn read(&self, path: &str) -> Result<String, String> {
        match path {
            "modules/base.star" => Ok(BASE.to_owned()),
            PATH => Ok(self.input.to_owned()),
            _ => Err(format!("module `{path}` does not exist")),
        }
    }
}

pub fn starlark_module(data: &[u8]) {
    let source = String::from_utf8_lossy(data);
    let limits = limits();
    // The prelude (evaluated once per process) does not count against the deadline.
    let reserved = reserved_kind_names();
    let started = Instant::now();
    let evaluation = evaluate_on_thread(
        PATH,
        &source,
        &limits,
        &Modules { input: &source },
        &EvaluationProgress::default(),
    );
    let elapsed = started.elapsed();
    let evaluation = match evaluation {
        Ok(evaluation) => evaluation,
        Err(stopped) => panic!(
            "the evaluation did not end by itself within its limits ({elapsed:?}): {:?}",
            stopped.diagnostics.first().map(|d| &d.message)
        ),
    };
    assert!(
        elapsed <= limits.deadline + DEADLINE_GRACE,
        "the evaluation took {elapsed:?}, past its deadline"
    );
    assert!(
        evaluation.diagnostics.len() <= 1,
        "evaluation stops at the first error, yet reports {:?}",
        evaluation.diagnostics
    );
    for diagnostic in &evaluation.diagnostics {
        assert!(
            diagnostic.line >= 1 && diagnostic.column >= 1,
            "a diagnostic position is not 1-based: {diagnostic:?}"
        );
        assert!(
            (diagnostic.end_line, diagnostic.end_column) >= (diagnostic.line, diagnostic.column),
            "a diagnostic ends before it starts: {diagnostic:?}"
        );
        assert!(
            !diagnostic.message.is_empty(),
            "a diagnostic without a message"
        );
    }
    let names: Vec<&str> = evaluation.kinds.iter().map(|k| k.name.as_str()).collect();
    assert!(
        names.windows(2).all(|w| w[0] < w[1]),
        "kinds are not sorted and unique: {names:?}"
    );
    for name in &names {
        assert!(
            !reserved.contains(*name),
            "the module redeclared the prelude's kind `{name}`"
        );
    }
    for site in &evaluation.sites {
        assert!(
            names.contains(&site.kind.as_str()),
            "a declaration site of the undeclared kind `{}`",
            site.kind
        );
    }
    assert!(
        evaluation.loads.windows(2).all(|w| w[0] < w[1]),
        "loads are not sorted and unique: {:?}",
        evaluation.loads
    );
    for load in &evaluation.loads {
        assert!(
            !load.is_empty()
                && !load.starts_with('/')
                && load.split('/').all(|s| !matches!(s, "" | "." | "..")),
            "a load path that is not a normalised workspace path: `{load}`"
        );
    }
}
