//! Where a module evaluation runs: on its own thread with a large fixed stack, under a
//! wall-clock deadline, and (when the binary installed one) after an [`Isolation`]
//! check in a separate process.
//!
//! The thread makes deep recursion inside the interpreter (rendering or comparing a
//! value nested thousands of levels deep) fit, whatever the stack of the calling thread
//! (a server's worker). The caller's thread keeps answering `load()` requests (the
//! [`ModuleSource`] usually reads a database that must not leave its thread) and gives up
//! when the deadline has passed: a statement that never returns (`==` on a value sharing
//! itself 2^40 times) is reported as an `invalid_module` diagnostic at that statement,
//! and the thread is left to finish on its own. That is the in-process answer for tests
//! and library use; the `once` binary installs an [`Isolation`] that runs the same
//! evaluation first in a child process with memory and CPU limits, killed on timeout,
//! so nothing a module does can hang, exhaust or abort the process that asked.

#![allow(
    clippy::disallowed_methods,
    reason = "the evaluation deadline of project modules reads the clock: a resource limit, not a workspace fact"
)]

use std::collections::HashSet;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::{EvalLimits, ModuleDiagnostic, ModuleErrorKind, ModuleEvaluation, ModuleSource};

/// The stack of the evaluation thread. Only the pages a deep recursion touches are ever
/// committed.
pub const EVALUATION_STACK_BYTES: usize = 256 << 20;

/// How long after the deadline the caller waits for a statement that does not return.
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// A statement of the evaluated module: 1-based line and column range.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct StatementLocation {
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// Called with each statement location the first time evaluation reaches it.
pub type FirstSight = Arc<dyn Fn(StatementLocation) + Send + Sync>;

/// The statement of the evaluated module that is running, shared with whoever watches
/// the evaluation (the caller's deadline, an isolated evaluator's progress reports).
#[derive(Clone, Default)]
pub struct EvaluationProgress {
    current: Arc<Mutex<Option<StatementLocation>>>,
    /// Statements reached so far, and who hears of new ones at once.
    first_sight: Option<(Arc<Mutex<HashSet<StatementLocation>>>, FirstSight)>,
}

impl std::fmt::Debug for EvaluationProgress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EvaluationProgress")
            .field(&self.current())
            .finish()
    }
}

impl EvaluationProgress {
    /// Progress that also calls `first_sight` (on the evaluation thread) for every
    /// statement reached for the first time: a watcher that may lose the evaluation
    /// abruptly (a crashed process) still knows the statement that started last.
    pub fn with_first_sight(first_sight: FirstSight) -> EvaluationProgress {
        EvaluationProgress {
            current: Arc::default(),
            first_sight: Some((Arc::default(), first_sight)),
        }
    }

    /// The statement running now (or last), if one started.
    pub fn current(&self) -> Option<StatementLocation> {
        match self.current.lock() {
            Ok(location) => *location,
            Err(poisoned) => *poisoned.into_inner(),
        }
    }

    /// Records the statement running now.
    pub fn set(&self, location: StatementLocation) {
        match self.current.lock() {
            Ok(mut current) => *current = Some(location),
            Err(poisoned) => *poisoned.into_inner() = Some(location),
        }
        if let Some((seen, first_sight)) = &self.first_sight {
            let new = seen
                .lock()
                .map(|mut seen| seen.insert(location))
                .unwrap_or(false);
            if new {
                first_sight(location);
            }
        }
    }
}

/// A way to run an evaluation where it cannot harm the caller: the `once` binary runs it
/// in a child process with resource limits. Core crates never spawn processes; the
/// binary installs its implementation with [`install_isolation`].
pub trait Isolation: Send + Sync {
    /// Runs the evaluation of `source` as `path` in isolation, answering its `load()`
    /// requests from `modules`. `None` when it finished (with or without a Starlark
    /// error): the caller then evaluates in-process, with the same outcome. `Some` is the
    /// result to report instead: it timed out, ran out of memory or stack, or crashed.
    fn check(
        &self,
        path: &str,
        source: &str,
        limits: &EvalLimits,
        modules: &dyn ModuleSource,
    ) -> Option<ModuleEvaluation>;

    /// Like [`Isolation::check`], for planning `request` with a kind of the module
    /// (evaluating it and calling the implementation): `None` when planning finished,
    /// else the diagnostic to report instead. The default runs nothing in isolation.
    fn check_plan(
        &self,
        _path: &str,
        _source: &str,
        _limits: &EvalLimits,
        _modules: &dyn ModuleSource,
        _request: &crate::PlanRequest,
    ) -> Option<ModuleDiagnostic> {
        None
    }
}

/// The installed [`Isolation`], if any.
pub(crate) fn isolation() -> Option<&'static dyn Isolation> {
    ISOLATION.get().map(|isolation| &**isolation)
}

static ISOLATION: OnceLock<Box<dyn Isolation>> = OnceLock::new();

/// Installs the process-wide [`Isolation`] every later module evaluation goes through
/// first. Only the first call has an effect (returns `false` after that).
pub fn install_isolation(isolation: Box<dyn Isolation>) -> bool {
    ISOLATION.set(isolation).is_ok()
}

/// What the evaluation thread sends the caller.
enum FromEvaluation<T> {
    Load(String),
    Done(T),
}

/// A [`ModuleSource`] on the evaluation thread that asks the caller's thread.
struct ForwardedSource<T> {
    requests: mpsc::Sender<FromEvaluation<T>>,
    answers: Mutex<mpsc::Receiver<Result<String, String>>>,
}

impl<T: Send> ModuleSource for ForwardedSource<T> {
    fn read(&self, path: &str) -> Result<String, String> {
        self.requests
            .send(FromEvaluation::Load(path.to_owned()))
            .map_err(|_| "the evaluation was abandoned".to_owned())?;
        let answers = self
            .answers
            .lock()
            .map_err(|_| "the evaluation was abandoned".to_owned())?;
        answers
            .recv()
            .map_err(|_| "the evaluation was abandoned".to_owned())?
    }
}

/// Evaluates a module: through the installed [`Isolation`] first, if any, then on an
/// evaluation thread.
pub(crate) fn evaluate(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
) -> ModuleEvaluation {
    if let Some(isolation) = ISOLATION.get()
        && let Some(verdict) = isolation.check(path, source, limits, modules)
    {
        return verdict;
    }
    evaluate_on_thread(
        path,
        source,
        limits,
        modules,
        &EvaluationProgress::default(),
    )
    .unwrap_or_else(|stopped| stopped)
}

/// Evaluates a module on a fresh thread with [`EVALUATION_STACK_BYTES`] of stack,
/// serving its `load()`s from `modules` on this thread, and gives up (with a diagnostic
/// at the running statement) [`DEADLINE_GRACE`] after `limits.deadline`. `progress`
/// follows the statement being run.
///
/// `Err` when the evaluation did not end by itself (the thread still runs, or died): the
/// result is then one diagnostic at the statement that was running.
pub fn evaluate_on_thread(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
    progress: &EvaluationProgress,
) -> Result<ModuleEvaluation, ModuleEvaluation> {
    // The prelude (evaluated once per process, for the reserved kind names) does not
    // count against the module's deadline.
    crate::reserved_kind_names();
    let (thread_path, thread_source, thread_limits, thread_progress) = (
        path.to_owned(),
        source.to_owned(),
        limits.clone(),
        progress.clone(),
    );
    run_on_thread(limits, modules, move |forwarded| {
        crate::evaluate_here(
            &thread_path,
            &thread_source,
            &thread_limits,
            forwarded,
            Some(&thread_progress),
        )
    })
    .map_err(|(message, loaded)| {
        let mut evaluation = stopped(path, progress, message);
        evaluation.loads = loaded;
        evaluation
    })
}

/// Runs `job` on a fresh thread with [`EVALUATION_STACK_BYTES`] of stack, serving the
/// `load()`s of the [`ModuleSource`] it receives from `modules` on this thread, and gives
/// up [`DEADLINE_GRACE`] after `limits.deadline`. `Err` holds why it did not end by
/// itself, and the modules it had loaded (sorted) when it timed out.
pub(crate) fn run_on_thread<T: Send + 'static>(
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
    job: impl FnOnce(&dyn ModuleSource) -> T + Send + 'static,
) -> Result<T, (String, Vec<String>)> {
    let started = Instant::now();
    let (requests, from_evaluation) = mpsc::channel();
    let (answer, answers) = mpsc::channel();
    let forwarded = ForwardedSource {
        requests: requests.clone(),
        answers: Mutex::new(answers),
    };
    let spawned = std::thread::Builder::new()
        .name("module-evaluation".to_owned())
        .stack_size(EVALUATION_STACK_BYTES)
        .spawn(move || {
            let done = job(&forwarded);
            let _ = requests.send(FromEvaluation::Done(done));
        });
    if let Err(error) = spawned {
        return Err((
            format!("module evaluation could not start a thread: {error}"),
            Vec::new(),
        ));
    }
    let give_up = started.checked_add(limits.deadline.saturating_add(DEADLINE_GRACE));
    let mut loaded = Vec::new();
    loop {
        let left = give_up.map_or(Duration::MAX, |at| {
            at.saturating_duration_since(Instant::now())
        });
        match from_evaluation.recv_timeout(left) {
            Ok(FromEvaluation::Load(module)) => {
                let text = modules.read(&module);
                loaded.push(module);
                if answer.send(text).is_err() {
                    break;
                }
            }
            Ok(FromEvaluation::Done(done)) => return Ok(done),
            Err(RecvTimeoutError::Timeout) => {
                loaded.sort();
                loaded.dedup();
                return Err((over_deadline(limits), loaded));
            }
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    Err((
        "module evaluation failed inside the interpreter (an internal error in a builtin)"
            .to_owned(),
        Vec::new(),
    ))
}

/// The message of an evaluation stopped at its deadline.
pub fn over_deadline(limits: &EvalLimits) -> String {
    format!(
        "module evaluation did not finish within the time limit of {} ms; this statement \
         runs too long (a huge repetition, or comparing or converting a value that shares \
         itself many times)",
        limits.deadline.as_millis()
    )
}

/// An evaluation that ended abnormally: one `invalid_module` diagnostic at the statement
/// that was running (the module's first line if none had started).
pub fn stopped(path: &str, progress: &EvaluationProgress, message: String) -> ModuleEvaluation {
    let at = progress.current().unwrap_or(StatementLocation {
        line: 1,
        column: 1,
        end_line: 1,
        end_column: 1,
    });
    ModuleEvaluation {
        diagnostics: vec![ModuleDiagnostic {
            kind: ModuleErrorKind::Invalid,
            message,
            path: path.to_owned(),
            line: at.line,
            column: at.column,
            end_line: at.end_line,
            end_column: at.end_column,
        }],
        ..ModuleEvaluation::default()
    }
}
