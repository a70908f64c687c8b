//! The executor: runs a plan's actions in dependency order, longest path first, up to
//! `jobs` at a time, reusing results from the action cache.
//!
//! For each action, once the actions producing its inputs have succeeded:
//!
//! 1. its key is completed ([`crate::key::action_key`]) with the identity of the program
//!    it runs and the output digests of those producers;
//! 2. a cacheable action whose record is in the store is a **hit**: its outputs are put in
//!    place (those already there are left alone) and its streams are read back;
//! 3. otherwise the executor takes the key's lock (waiting for another thread or process
//!    running the same key, whose result it then reuses), clears the declared outputs,
//!    runs the step, checks the exit code and that every declared output exists, replaces
//!    output links leading out of their output with copies when the command asks for it
//!    ([`crate::materialize`]), stores the outputs and streams and writes the record: a
//!    **miss**. An action that is not
//!    cacheable always runs and writes no record: a **bypass**.
//!
//! A failed action stops its dependents (they are *skipped*); without `keep_going`
//! nothing new starts after a failure, with it every action not depending on the failure
//! still runs. Cancelling kills the running process groups and starts nothing new.

use once_model::paths::is_under;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use once_db::Sha256Digest;
use once_model::action::{Action, ActionStep, OUT_DIR, OutputSymlinks, build_dir};
use once_model::label::TargetLabel;
use rustc_hash::FxHashMap;

use crate::environment::{DEFAULT_PATH, HostEnvironment, KEYED_VARIABLES};
use crate::inputs::SourceStamps;
use crate::key::{KeyParts, ToolIdentity, action_key};
use crate::outputs::{OutputStamps, RestoreError, WorkspaceRoot};
use crate::record::{ActionRecord, OutputEntry, StreamDigest, output_digests};
use crate::record_index::RecordIndex;
use crate::runner::{CancelHandle, ProcessExit, ProcessRequest, ProcessRunner, SystemRunner};
use crate::store::{RecordRead, Store};
use crate::tools::{Fingerprint, ToolDigests, resolve_program};

/// An action as the planner hands it over: the declaration and its static key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PlannedAction {
    pub action: Action,
    /// The SHA-256 the planner computed over everything known before execution (the
    /// declaration, the digests of its source inputs, the implementation).
    pub static_key: Sha256Digest,
}

/// How an execution behaves.
#[derive(Debug, Clone)]
pub struct ExecOptions {
    /// How many actions run at once (at least 1); `None`: as many as the machine runs
    /// ([`machine_parallelism`], asked only when the plan has more than one action: the
    /// answer reads several files under `/proc` and `/sys`).
    pub jobs: Option<usize>,
    /// Whether actions not depending on a failed one still run after it.
    pub keep_going: bool,
    /// The allowlisted variables actions see.
    pub host_env: HostEnvironment,
    /// How many bytes of each captured stream a result keeps in memory (its end); the
    /// whole stream is in the store.
    pub stream_memory_limit: usize,
    /// The program an action's `argv[0]` of [`ONCE_PROGRAM`] runs: the running `once`
    /// executable (`std::env::current_exe`) by default. Its identity enters the key like
    /// any tool's.
    pub once_program: Option<PathBuf>,
}

/// The `argv[0]` that names `once` itself (test actions run `once __test-adapter`).
pub const ONCE_PROGRAM: &str = "once";

impl Default for ExecOptions {
    fn default() -> Self {
        ExecOptions {
            jobs: None,
            keep_going: false,
            host_env: HostEnvironment::from_process(),
            stream_memory_limit: 64 * 1024,
            once_program: std::env::current_exe().ok(),
        }
    }
}

/// How many actions this machine runs at once by default.
pub use once_db::system::machine_parallelism;

/// Where an action's result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheState {
    /// Reused from the action cache.
    Hit,
    /// Run, and its result stored.
    Miss,
    /// Run because it is not cacheable; nothing stored but its streams.
    Bypass,
}

impl CacheState {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheState::Hit => "hit",
            CacheState::Miss => "miss",
            CacheState::Bypass => "bypass",
        }
    }
}

/// How an action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActionStatus {
    Succeeded,
    Failed,
    /// Not run: an action it depends on failed, or (without `keep_going`) another one did.
    Skipped,
    Cancelled,
}

/// A captured stream: its digest in the store, its size, and its last bytes.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CapturedStream {
    /// `None` when the action did not run.
    pub digest: Option<Sha256Digest>,
    pub size: u64,
    /// The end of the stream, at most [`ExecOptions::stream_memory_limit`] bytes.
    pub tail: Vec<u8>,
}

/// A declared output and the digest dependents see of it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct DeclaredOutput {
    pub path: String,
    pub digest: Sha256Digest,
}

/// The result of one action.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionResult {
    pub id: String,
    pub status: ActionStatus,
    /// `None` when the action did not get as far as looking.
    pub cache: Option<CacheState>,
    pub key: Option<Sha256Digest>,
    pub exit_code: Option<i32>,
    /// Time spent on the action in this execution (a hit's restore time).
    pub duration: Duration,
    pub outputs: Vec<DeclaredOutput>,
    /// Every output entry (files under declared directories included).
    pub entries: Vec<OutputEntry>,
    pub stdout: CapturedStream,
    pub stderr: CapturedStream,
    /// Why it failed or was skipped.
    pub message: Option<String>,
    /// For a skipped action, the id of the failed action that kept it from running (a
    /// dependency, or without `keep_going` the first action that failed).
    pub cause: Option<String>,
    /// Problems met on the way that did not fail it (a corrupt blob, rebuilt).
    pub warnings: Vec<String>,
    /// Its program was killed at its time limit (`timeout_seconds`).
    pub timed_out: bool,
    /// The signal that killed its program, when one did.
    pub signal: Option<i32>,
}

impl ActionResult {
    fn new(id: &str, status: ActionStatus) -> ActionResult {
        ActionResult {
            id: id.to_owned(),
            status,
            cache: None,
            key: None,
            exit_code: None,
            duration: Duration::ZERO,
            outputs: Vec::new(),
            entries: Vec::new(),
            stdout: CapturedStream::default(),
            stderr: CapturedStream::default(),
            message: None,
            cause: None,
            warnings: Vec::new(),
            timed_out: false,
            signal: None,
        }
    }
}

/// Every action's result, in plan order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecutionReport {
    pub results: Vec<ActionResult>,
    /// Damaged files of the store or the workspace met on the way (ignored, removed or
    /// rewritten; see [`Store::take_warnings`]), for the front end to show.
    pub warnings: Vec<String>,
}

impl ExecutionReport {
    /// Whether every action succeeded.
    pub fn succeeded(&self) -> bool {
        self.results
            .iter()
            .all(|result| result.status == ActionStatus::Succeeded)
    }

    pub fn result(&self, id: &str) -> Option<&ActionResult> {
        self.results.iter().find(|result| result.id == id)
    }
}

/// A plan the executor refuses before running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    DuplicateId(String),
    /// A path that is not a plain workspace-relative path.
    InvalidPath {
        action: String,
        path: String,
    },
    /// An output outside the target's build directory.
    OutputOutsideBuildDir {
        action: String,
        output: String,
        build_dir: String,
    },
    /// Two actions declare the same output.
    DuplicateOutput {
        output: String,
        first: String,
        second: String,
    },
    /// An output inside another declared output (of the same action or another one).
    NestedOutput {
        output: String,
        action: String,
        outer: String,
        outer_action: String,
    },
    /// A step writes a path its action does not declare as an output.
    UndeclaredStepOutput {
        action: String,
        path: String,
    },
    EmptyCommand {
        action: String,
    },
    /// The actions (some of them) depend on each other in a cycle.
    Cycle {
        actions: Vec<String>,
    },
    /// A workspace-scoped output inside `.once`, which holds once's own state.
    OutputInsideState {
        action: String,
        output: String,
    },
    /// A workspace-scoped output that is, contains or lies inside one of the action's own
    /// inputs (a run would clear what it reads).
    OutputOverlapsInput {
        action: String,
        output: String,
        input: String,
    },
    /// An ordering edge names an action the plan does not have.
    UnknownOrdering {
        action: String,
    },
}

/// Where a plan's actions may declare outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputScope {
    /// Under the target's build directory in `.once/out` (targets' actions).
    #[default]
    BuildDirectory,
    /// Anywhere in the workspace except `.once`, never overlapping the action's own
    /// inputs (annotated scripts: `# once output "dist/app.js"`).
    Workspace,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::DuplicateId(id) => write!(f, "two actions have the id `{id}`"),
            PlanError::InvalidPath { action, path } => write!(
                f,
                "action `{action}` names `{path}`, which is not a relative path inside the workspace"
            ),
            PlanError::OutputOutsideBuildDir {
                action,
                output,
                build_dir,
            } => write!(
                f,
                "action `{action}` declares the output `{output}` outside its target's build directory `{build_dir}`"
            ),
            PlanError::DuplicateOutput {
                output,
                first,
                second,
            } if first == second => {
                write!(f, "action `{first}` declares the output `{output}` twice")
            }
            PlanError::DuplicateOutput {
                output,
                first,
                second,
            } => write!(
                f,
                "actions `{first}` and `{second}` both declare the output `{output}`"
            ),
            PlanError::NestedOutput {
                output,
                action,
                outer,
                outer_action,
            } => write!(
                f,
                "action `{action}` declares the output `{output}` inside `{outer}`, an output of `{outer_action}`"
            ),
            PlanError::UndeclaredStepOutput { action, path } => write!(
                f,
                "action `{action}` writes `{path}`, which it does not declare as an output"
            ),
            PlanError::EmptyCommand { action } => {
                write!(f, "action `{action}` runs an empty command line")
            }
            PlanError::Cycle { actions } => write!(
                f,
                "these actions depend on each other's outputs in a cycle: {}",
                actions.join(", ")
            ),
            PlanError::OutputInsideState { action, output } => write!(
                f,
                "action `{action}` declares the output `{output}` inside `.once`, which holds once's own state"
            ),
            PlanError::OutputOverlapsInput {
                action,
                output,
                input,
            } => write!(
                f,
                "action `{action}` declares the output `{output}`, which overlaps its own input `{input}` (a run clears its outputs first)"
            ),
            PlanError::UnknownOrdering { action } => write!(
                f,
                "an ordering edge names `{action}`, which is not an action of the plan"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// Reported after each action ends.
pub struct Progress<'a> {
    pub done: usize,
    pub total: usize,
    /// One line: `hit <id>`, `miss <id>`, `failed <id>: <why>`, …
    pub message: String,
    pub result: &'a ActionResult,
}

/// The edges and priorities of a plan.
struct Graph {
    /// Per action: (producer, the producer's output it consumes).
    dependencies: Vec<Vec<(usize, String)>>,
    dependents: Vec<Vec<usize>>,
    /// The number of actions on the longest chain from it to the end (itself included).
    priority: Vec<u64>,
    /// Per action: how many distinct actions it waits for.
    waiting_for: Vec<usize>,
}

fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// The edges of `plan`: from outputs consumed as inputs, plus `order` (`(before, after)`
/// action ids: `after` waits for `before` without consuming an output of it).
fn plan_graph(
    plan: &[PlannedAction],
    scope: OutputScope,
    order: &[(String, String)],
) -> Result<Graph, PlanError> {
    // Fx-hashed: a no-op build of 10,000 targets looks up every input and each of its
    // parent directories here (SipHash took it 10 ms).
    let mut ids = FxHashMap::with_capacity_and_hasher(plan.len(), Default::default());
    let mut producers: FxHashMap<&str, usize> =
        FxHashMap::with_capacity_and_hasher(plan.len(), Default::default());
    for (index, planned) in plan.iter().enumerate() {
        let action = &planned.action;
        if ids.insert(action.id.as_str(), index).is_some() {
            return Err(PlanError::DuplicateId(action.id.clone()));
        }
        let label = TargetLabel::from_id(&action.target);
        let directory = build_dir(&label.package, &label.name);
        for path in action.inputs.iter().chain(&action.outputs) {
            if !is_plain_relative(path) {
                return Err(PlanError::InvalidPath {
                    action: action.id.clone(),
                    path: path.clone(),
                });
            }
        }
        for output in &action.outputs {
            match scope {
                OutputScope::BuildDirectory => {
                    if !is_under(output, &directory) || !is_under(output, OUT_DIR) {
                        return Err(PlanError::OutputOutsideBuildDir {
                            action: action.id.clone(),
                            output: output.clone(),
                            build_dir: directory.clone(),
                        });
                    }
                }
                OutputScope::Workspace => {
                    if is_under(output, ".once") {
                        return Err(PlanError::OutputInsideState {
                            action: action.id.clone(),
                            output: output.clone(),
                        });
                    }
                    if let Some(input) = action
                        .inputs
                        .iter()
                        .find(|input| is_under(input, output) || is_under(output, input))
                    {
                        return Err(PlanError::OutputOverlapsInput {
                            action: action.id.clone(),
                            output: output.clone(),
                            input: input.clone(),
                        });
                    }
                }
            }
            if let Some(first) = producers.insert(output, index) {
                return Err(PlanError::DuplicateOutput {
                    output: output.clone(),
                    first: plan[first].action.id.clone(),
                    second: action.id.clone(),
                });
            }
        }
        let written = match &action.step {
            ActionStep::Run(command) => {
                if command.argv.is_empty() {
                    return Err(PlanError::EmptyCommand {
                        action: action.id.clone(),
                    });
                }
                if !command.cwd.is_empty() && !is_plain_relative(&command.cwd) {
                    return Err(PlanError::InvalidPath {
                        action: action.id.clone(),
                        path: command.cwd.clone(),
                    });
                }
                None
            }
            ActionStep::WriteFile { path, .. } => Some(path),
            ActionStep::Copy { to, .. } => Some(to),
            ActionStep::Symlink { link, .. } => Some(link),
            ActionStep::MakeDir { path } => Some(path),
        };
        if let Some(path) = written
            && !action.outputs.iter().any(|output| output == path)
        {
            return Err(PlanError::UndeclaredStepOutput {
                action: action.id.clone(),
                path: path.clone(),
            });
        }
        if let ActionStep::Copy { from, .. } = &action.step
            && !is_plain_relative(from)
        {
            return Err(PlanError::InvalidPath {
                action: action.id.clone(),
                path: from.clone(),
            });
        }
    }
    for (output, &index) in &producers {
        let mut ancestor = *output;
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            if let Some(&outer) = producers.get(parent) {
                return Err(PlanError::NestedOutput {
                    output: (*output).to_owned(),
                    action: plan[index].action.id.clone(),
                    outer: parent.to_owned(),
                    outer_action: plan[outer].action.id.clone(),
                });
            }
            ancestor = parent;
        }
    }
    let mut dependencies = vec![Vec::new(); plan.len()];
    let mut dependents = vec![Vec::new(); plan.len()];
    for (index, planned) in plan.iter().enumerate() {
        for input in &planned.action.inputs {
            let mut candidate = input.as_str();
            loop {
                if let Some(&producer) = producers.get(candidate) {
                    if producer != index
                        && !dependencies[index]
                            .iter()
                            .any(|(p, path): &(usize, String)| *p == producer && path == candidate)
                    {
                        dependencies[index].push((producer, candidate.to_owned()));
                        if !dependents[producer].contains(&index) {
                            dependents[producer].push(index);
                        }
                    }
                    break;
                }
                match candidate.rsplit_once('/') {
                    Some((parent, _)) => candidate = parent,
                    None => break,
                }
            }
        }
    }
    for (before, after) in order {
        let index_of = |id: &String| {
            ids.get(id.as_str())
                .copied()
                .ok_or_else(|| PlanError::UnknownOrdering { action: id.clone() })
        };
        let (producer, index) = (index_of(before)?, index_of(after)?);
        // An empty path: the dependent waits for it and consumes no output of it.
        dependencies[index].push((producer, String::new()));
        if !dependents[producer].contains(&index) {
            dependents[producer].push(index);
        }
    }
    // An action may consume several outputs of one producer: it waits for the producer once.
    let producers_of: Vec<Vec<usize>> = dependencies
        .iter()
        .map(|edges| {
            let mut producers: Vec<usize> = edges.iter().map(|(producer, _)| *producer).collect();
            producers.sort_unstable();
            producers.dedup();
            producers
        })
        .collect();
    // Kahn's algorithm from the sinks: priorities, and whatever is left is in a cycle.
    let mut remaining: Vec<usize> = dependents.iter().map(Vec::len).collect();
    let mut priority = vec![0u64; plan.len()];
    let mut queue: Vec<usize> = (0..plan.len()).filter(|&i| remaining[i] == 0).collect();
    let mut visited = 0;
    while let Some(index) = queue.pop() {
        visited += 1;
        priority[index] = 1 + dependents[index]
            .iter()
            .map(|&d| priority[d])
            .max()
            .unwrap_or(0);
        for &producer in &producers_of[index] {
            remaining[producer] -= 1;
            if remaining[producer] == 0 {
                queue.push(producer);
            }
        }
    }
    if visited != plan.len() {
        let actions = (0..plan.len())
            .filter(|&i| remaining[i] != 0)
            .map(|i| plan[i].action.id.clone())
            .collect();
        return Err(PlanError::Cycle { actions });
    }
    Ok(Graph {
        waiting_for: producers_of.iter().map(Vec::len).collect(),
        dependencies,
        dependents,
        priority,
    })
}

static SYSTEM_RUNNER: SystemRunner = SystemRunner;

type ProgressCallback<'a> = &'a (dyn Fn(&Progress<'_>) + Sync);
/// Told the id of each action a worker takes up.
type StartCallback<'a> = &'a (dyn Fn(&str) + Sync);

/// Runs plans against a workspace and a store.
pub struct Executor<'a> {
    workspace_root: PathBuf,
    store: &'a Store,
    runner: &'a dyn ProcessRunner,
    options: ExecOptions,
    cancel: CancelHandle,
    progress: Option<ProgressCallback<'a>>,
    started: Option<StartCallback<'a>>,
    /// A panic of the progress callback, re-raised once every process is gone.
    callback_panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    scope: OutputScope,
    /// `(before, after)` action ids beyond the edges outputs make.
    order: Vec<(String, String)>,
    /// The stamps the source files' digests in the static keys were read with.
    source_stamps: SourceStamps,
}

struct Scheduler {
    ready: BinaryHeap<(u64, Reverse<usize>)>,
    waiting_for: Vec<usize>,
    results: Vec<Option<ActionResult>>,
    /// The declared outputs' digests of each succeeded action.
    digests: Vec<Vec<DeclaredOutput>>,
    running: usize,
    done: usize,
    stop: bool,
    /// Workers waiting for `wake` (notifying none is a system call per action saved).
    waiting: usize,
}

/// What one execution shares between its workers.
struct Run<'r> {
    plan: &'r [PlannedAction],
    graph: Graph,
    workspace: WorkspaceRoot,
    stamps: OutputStamps,
    index: RecordIndex,
    tools: ToolDigests,
    probes: crate::probes::Probes,
    /// Programs found on a `PATH` outside the workspace, by `PATH` and name.
    programs: Mutex<HashMap<String, HashMap<String, PathBuf>>>,
    /// The identities of programs outside the workspace, read at their first use in the
    /// execution (nothing the plan builds can change them; an action that ran one is
    /// recorded only if the file is still the one identified).
    identities: Mutex<HashMap<PathBuf, (ToolIdentity, Fingerprint)>>,
    scheduler: Mutex<Scheduler>,
    wake: Condvar,
}

impl<'a> Executor<'a> {
    /// An executor for the workspace at `workspace_root` using `store`, running real
    /// processes with the default options.
    pub fn new(workspace_root: &Path, store: &'a Store) -> Executor<'a> {
        Executor {
            workspace_root: workspace_root.to_path_buf(),
            store,
            runner: &SYSTEM_RUNNER,
            options: ExecOptions::default(),
            cancel: CancelHandle::new(),
            progress: None,
            started: None,
            callback_panic: Mutex::new(None),
            scope: OutputScope::BuildDirectory,
            order: Vec::new(),
            source_stamps: SourceStamps::default(),
        }
    }

    /// The stamps the digests of the plan's source files were read with (what analysis
    /// answers with each source input's digest): an action whose source input no longer
    /// has its stamp when it has run is not recorded ([`crate::inputs`]). An input
    /// without one here is stamped just before its action runs.
    pub fn with_source_stamps(mut self, stamps: SourceStamps) -> Self {
        self.source_stamps = stamps;
        self
    }

    /// Where the plan's actions may declare outputs ([`OutputScope::BuildDirectory`] by
    /// default).
    pub fn with_output_scope(mut self, scope: OutputScope) -> Self {
        self.scope = scope;
        self
    }

    /// Adds ordering edges `(before, after)` by action id: `after` starts once `before`
    /// succeeded (and is skipped when it did not), although it reads no output of it.
    pub fn with_order(mut self, order: Vec<(String, String)>) -> Self {
        self.order = order;
        self
    }

    pub fn with_runner(mut self, runner: &'a dyn ProcessRunner) -> Self {
        self.runner = runner;
        self
    }

    pub fn with_options(mut self, options: ExecOptions) -> Self {
        self.options = options;
        self
    }

    /// Uses `cancel` (a clone kept elsewhere cancels this executor).
    pub fn with_cancel(mut self, cancel: CancelHandle) -> Self {
        self.cancel = cancel;
        self
    }

    /// Calls `progress` after each action ends, from the worker that ran it and with the
    /// scheduler's lock held (calls are ordered by `done`): keep it short, e.g. send the
    /// message to a channel. If it panics, the execution is cancelled (every process
    /// killed) and [`Executor::run`] re-raises the panic once nothing runs any more.
    pub fn on_progress(mut self, progress: ProgressCallback<'a>) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Calls `started` with an action's id when a worker takes it up (before its cache
    /// is looked up; a hit ends soon after), from that worker and without the
    /// scheduler's lock, so a front end knows what runs without guessing from the plan.
    /// A panic is handled as [`Executor::on_progress`]'s.
    pub fn on_start(mut self, started: StartCallback<'a>) -> Self {
        self.started = Some(started);
        self
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Runs `plan` to its end; a plan it cannot run is refused before anything starts.
    /// Problems of single actions (a failure, a missing output, an unwritable output) are
    /// in their results.
    pub fn run(&self, plan: &[PlannedAction]) -> Result<ExecutionReport, ExecError> {
        let graph = plan_graph(plan, self.scope, &self.order).map_err(ExecError::Plan)?;
        let _in_use = self.store.start_use().map_err(ExecError::Store)?;
        let workspace = WorkspaceRoot::open(&self.workspace_root).map_err(ExecError::Workspace)?;
        // Both files are read before the first action; for a large plan (each holds an
        // entry per output or action) at once.
        let (stamps, index) = if plan.len() < PARALLEL_LOAD_ACTIONS {
            (
                OutputStamps::load(&workspace),
                RecordIndex::load(self.store, &self.workspace_root),
            )
        } else {
            std::thread::scope(|scope| {
                let index = scope.spawn(|| RecordIndex::load(self.store, &self.workspace_root));
                let stamps = OutputStamps::load(&workspace);
                let index = index
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (stamps, index)
            })
        };
        let waiting_for = graph.waiting_for.clone();
        let ready = (0..plan.len())
            .filter(|&i| waiting_for[i] == 0)
            .map(|i| (graph.priority[i], Reverse(i)))
            .collect();
        let run = Run {
            plan,
            workspace,
            stamps,
            index,
            tools: ToolDigests::default(),
            probes: crate::probes::Probes::default(),
            programs: Mutex::new(HashMap::new()),
            identities: Mutex::new(HashMap::new()),
            scheduler: Mutex::new(Scheduler {
                ready,
                waiting_for,
                results: vec![None; plan.len()],
                digests: vec![Vec::new(); plan.len()],
                running: 0,
                done: 0,
                stop: false,
                waiting: 0,
            }),
            wake: Condvar::new(),
            graph,
        };
        let workers = match plan.len() {
            0 | 1 => 1,
            many => self
                .options
                .jobs
                .unwrap_or_else(machine_parallelism)
                .clamp(1, many),
        };
        self.prefetch_probes(&run);
        if workers == 1 {
            // One at a time (a single script, `-j 1`): on this thread, no pool to start.
            self.work(&run);
        } else {
            // This thread is one of the workers: one thread fewer to start per execution.
            std::thread::scope(|scope| {
                for _ in 1..workers {
                    scope.spawn(|| self.work(&run));
                }
                self.work(&run);
            });
        }
        let mut scheduler = run
            .scheduler
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let cancelled = self.cancel.is_cancelled();
        let first_failure = scheduler
            .results
            .iter()
            .flatten()
            .find(|r| r.status == ActionStatus::Failed)
            .map(|r| r.id.clone());
        for index in 0..plan.len() {
            if scheduler.results[index].is_none() {
                let (status, message) = if cancelled {
                    (ActionStatus::Cancelled, "cancelled before it started")
                } else {
                    (ActionStatus::Skipped, "not started: another action failed")
                };
                let mut result = ActionResult::new(&plan[index].action.id, status);
                result.message = Some(message.to_owned());
                if status == ActionStatus::Skipped {
                    result.cause.clone_from(&first_failure);
                }
                scheduler.done += 1;
                self.report(&scheduler, plan.len(), &result);
                scheduler.results[index] = Some(result);
            }
        }
        // Both files are caches: failing to save them costs time, never correctness.
        let _ = run.stamps.save(&run.workspace);
        let _ = run.index.save(self.store, SystemTime::now());
        let _ = run.tools.save(self.store);
        let _ = run.probes.save(self.store);
        let panic = self
            .callback_panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
        if let Some(warning) = run.stamps.damage() {
            self.store.warn(warning);
        }
        Ok(ExecutionReport {
            results: scheduler.results.into_iter().flatten().collect(),
            warnings: self.store.take_warnings(),
        })
    }

    fn report(&self, scheduler: &Scheduler, total: usize, result: &ActionResult) {
        let Some(progress) = self.progress else {
            return;
        };
        let message = match (result.status, result.cache) {
            (ActionStatus::Succeeded, Some(cache)) => format!("{} {}", cache.as_str(), result.id),
            (ActionStatus::Succeeded, None) => format!("done {}", result.id),
            (ActionStatus::Failed, _) => format!(
                "failed {}: {}",
                result.id,
                result.message.as_deref().unwrap_or("failed")
            ),
            (ActionStatus::Skipped, _) => format!("skipped {}", result.id),
            (ActionStatus::Cancelled, _) => format!("cancelled {}", result.id),
        };
        self.call_front_end(|| {
            progress(&Progress {
                done: scheduler.done,
                total,
                message,
                result,
            });
        });
    }

    /// Tells the front end an action was taken up.
    fn announce_start(&self, id: &str) {
        if let Some(started) = self.started {
            self.call_front_end(|| started(id));
        }
    }

    /// Calls a front end's callback. Its bug must not leave processes running: a panic
    /// cancels everything, and is re-raised when they are gone.
    fn call_front_end(&self, callback: impl FnOnce()) {
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback));
        if let Err(panic) = called {
            self.cancel.cancel();
            let mut slot = self
                .callback_panic
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(panic);
        }
    }

    fn work(&self, run: &Run<'_>) {
        loop {
            let (index, dependency_outputs) = {
                let mut scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
                let index = loop {
                    let stopping = scheduler.stop || self.cancel.is_cancelled();
                    if !stopping && let Some((_, Reverse(index))) = scheduler.ready.pop() {
                        scheduler.running += 1;
                        break Some(index);
                    }
                    if scheduler.running == 0 && (stopping || scheduler.ready.is_empty()) {
                        break None;
                    }
                    scheduler.waiting += 1;
                    scheduler = run
                        .wake
                        .wait_timeout(scheduler, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    scheduler.waiting -= 1;
                };
                let Some(index) = index else {
                    if scheduler.waiting > 0 {
                        run.wake.notify_all();
                    }
                    return;
                };
                let dependency_outputs: Vec<(String, Sha256Digest)> = run.graph.dependencies[index]
                    .iter()
                    .filter_map(|(producer, path)| {
                        scheduler.digests[*producer]
                            .iter()
                            .find(|output| output.path == *path)
                            .map(|output| (path.clone(), output.digest))
                    })
                    .collect();
                (index, dependency_outputs)
            };
            self.announce_start(&run.plan[index].action.id);
            // A bug in one action must not leave the others waiting for it forever.
            let processed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.process(run, &run.plan[index], &dependency_outputs)
            }));
            let result = processed.unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let mut failed =
                    ActionResult::new(&run.plan[index].action.id, ActionStatus::Failed);
                failed.message = Some(format!("internal error (a bug in once): {why}"));
                failed
            });
            let mut scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
            scheduler.running -= 1;
            scheduler.done += 1;
            self.report(&scheduler, run.plan.len(), &result);
            if result.status == ActionStatus::Succeeded {
                scheduler.digests[index] = result.outputs.clone();
                for &dependent in &run.graph.dependents[index] {
                    scheduler.waiting_for[dependent] -= 1;
                    if scheduler.waiting_for[dependent] == 0 {
                        scheduler
                            .ready
                            .push((run.graph.priority[dependent], Reverse(dependent)));
                    }
                }
            } else {
                if !self.options.keep_going {
                    scheduler.stop = true;
                }
                let mut stack = run.graph.dependents[index].clone();
                while let Some(dependent) = stack.pop() {
                    if scheduler.results[dependent].is_some() {
                        continue;
                    }
                    let mut skipped =
                        ActionResult::new(&run.plan[dependent].action.id, ActionStatus::Skipped);
                    skipped.message = Some(format!(
                        "not run: it depends on `{}`, which did not succeed",
                        result.id
                    ));
                    skipped.cause = Some(result.cause.clone().unwrap_or(result.id.clone()));
                    scheduler.done += 1;
                    self.report(&scheduler, run.plan.len(), &skipped);
                    scheduler.results[dependent] = Some(skipped);
                    stack.extend(run.graph.dependents[dependent].iter().copied());
                }
            }
            scheduler.results[index] = Some(result);
            if scheduler.waiting > 0 {
                run.wake.notify_all();
            }
        }
    }

    fn process(
        &self,
        run: &Run<'_>,
        planned: &PlannedAction,
        dependency_outputs: &[(String, Sha256Digest)],
    ) -> ActionResult {
        let started = Instant::now();
        let mut result = ActionResult::new(&planned.action.id, ActionStatus::Failed);
        if let Err(message) = self.process_action(run, planned, dependency_outputs, &mut result) {
            result.status = ActionStatus::Failed;
            result.message = Some(message);
        }
        if result.status == ActionStatus::Failed && self.cancel.is_cancelled() {
            result.status = ActionStatus::Cancelled;
            result.message = Some("cancelled".to_owned());
        }
        result.duration = started.elapsed();
        result
    }

    fn process_action(
        &self,
        run: &Run<'_>,
        planned: &PlannedAction,
        dependency_outputs: &[(String, Sha256Digest)],
        result: &mut ActionResult,
    ) -> Result<(), String> {
        let action = &planned.action;
        let host = &self.options.host_env;
        let mut program = None;
        let mut environment = None;
        let mut keyed_variables = Vec::new();
        let mut tool: Option<ToolIdentity> = None;
        let mut tool_fingerprint = None;
        let mut probe_results = Vec::new();
        if let ActionStep::Run(command) = &action.step {
            // The variables the key and the program's lookup need, without the complete
            // environment: only running the action (or a probe) needs that.
            let variable = |name| host.action_variable(&command.env, name, &self.workspace_root);
            keyed_variables = KEYED_VARIABLES
                .iter()
                .filter_map(|name| variable(name).map(|value| (*name, value)))
                .collect();
            let path_variable = variable("PATH").unwrap_or(Cow::Borrowed(DEFAULT_PATH));
            let cwd = absolute(&self.workspace_root, &command.cwd);
            let argv0 = command.argv.first().map_or("", String::as_str);
            let found = match (&self.options.once_program, argv0) {
                (Some(once), ONCE_PROGRAM) => once.clone(),
                _ => self.resolve(run, argv0, &path_variable, &cwd)?,
            };
            let (identity, fingerprint) = self.identify(run, &found)?;
            tool = Some(identity);
            tool_fingerprint = Some(fingerprint);
            program = Some(found);
            if !command.probes.is_empty() {
                let env = host.action_environment(&command.env, &self.workspace_root);
                for probe in &command.probes {
                    probe_results.push(run.probes.result(self.store, probe, &env, &cwd)?);
                }
                environment = Some(env);
            }
        }
        let key = action_key(
            action,
            &planned.static_key,
            &KeyParts {
                host_env: keyed_variables
                    .iter()
                    .map(|(name, value)| (*name, value.as_ref()))
                    .collect(),
                tool: tool.as_ref(),
                dependency_outputs: dependency_outputs
                    .iter()
                    .map(|(path, digest)| (path.as_str(), *digest))
                    .collect(),
                probe_results,
            },
        );
        result.key = Some(key);
        let give_up = || self.cancel.is_cancelled();
        // The common hit (a no-op build) first, without the output lock: see
        // `hit_in_place`. Anything it is not sure of takes the locked path below.
        let mut recorded = true;
        if action.cacheable {
            match self.hit_in_place(run, action, &key, result)? {
                InPlace::Hit => return Ok(()),
                InPlace::NoRecord => recorded = false,
                InPlace::NotSure => {}
            }
        }
        if let (ActionStep::Run(command), None) = (&action.step, &environment) {
            environment = Some(host.action_environment(&command.env, &self.workspace_root));
        }
        let produced: Vec<&str> = dependency_outputs
            .iter()
            .map(|(path, _)| path.as_str())
            .collect();
        let prepared = Prepared {
            program: program.as_deref(),
            fingerprint: tool_fingerprint.as_ref(),
            environment: environment.as_ref(),
            produced: &produced,
        };
        // An action without outputs writes nothing another could clash with: taking the
        // lock of the empty set would serialise every such action in the workspace.
        let _outputs_lock = if action.outputs.is_empty() {
            None
        } else {
            let Some(lock) = run
                .workspace
                .lock_outputs(&action.outputs, give_up)
                .map_err(|e| format!("cannot lock the action's outputs: {e}"))?
            else {
                return Err("cancelled".to_owned());
            };
            Some(lock)
        };
        if !action.cacheable {
            return self.execute(run, action, &prepared, None, result);
        }
        // Without a record a moment ago, the look under the key's lock below is the one
        // that matters (a record written meanwhile is found there).
        if recorded && self.try_hit(run, action, &key, result)? {
            return Ok(());
        }
        let Some(_lock) = self
            .store
            .lock_key(&key, give_up)
            .map_err(|e| format!("cannot lock the action's key in the store: {e}"))?
        else {
            return Err("cancelled".to_owned());
        };
        // Another thread or process may have run it while this one waited.
        if self.try_hit(run, action, &key, result)? {
            return Ok(());
        }
        self.execute(run, action, &prepared, Some(&key), result)
    }

    /// The identity of the program at `found` for an action's key, with the fingerprint
    /// of the file it was read from. A program outside the workspace is identified once
    /// per execution; one of the workspace (the plan may build it) for every action, and
    /// named relative to the workspace, so checkouts at different places share results.
    fn identify(&self, run: &Run<'_>, found: &Path) -> Result<(ToolIdentity, Fingerprint), String> {
        let outside = !found.starts_with(&self.workspace_root);
        if outside
            && let Some(known) = run
                .identities
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(found)
        {
            return Ok(known.clone());
        }
        let (mut identity, fingerprint) = run
            .tools
            .identity(self.store, found)
            .map_err(|e| format!("cannot read the program `{}`: {e}", found.display()))?;
        if let Ok(relative) = found.strip_prefix(&self.workspace_root) {
            identity.path = format!("$WORKSPACE/{}", relative.to_string_lossy());
        }
        if outside {
            run.identities
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(found.to_path_buf(), (identity.clone(), fingerprint));
        }
        Ok((identity, fingerprint))
    }

    /// Finds the program `argv0` runs ([`resolve_program`]). A name looked up on a `PATH`
    /// with no directory in the workspace is found once per execution (nothing the plan
    /// builds can appear there), and so is its identity ([`Executor::identify`]).
    fn resolve(
        &self,
        run: &Run<'_>,
        argv0: &str,
        path_variable: &str,
        cwd: &Path,
    ) -> Result<PathBuf, String> {
        // Only names found outside the workspace are remembered: one remembered is found.
        if let Some(found) = run
            .programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path_variable)
            .and_then(|programs| programs.get(argv0))
        {
            return Ok(found.clone());
        }
        let outside = !argv0.contains('/')
            && path_variable
                .split(':')
                .all(|directory| !Path::new(directory).starts_with(&self.workspace_root));
        let found = resolve_program(argv0, path_variable, cwd)?;
        if outside {
            run.programs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(path_variable.to_owned())
                .or_default()
                .insert(argv0.to_owned(), found.clone());
        }
        Ok(found)
    }

    /// A hit whose outputs are all in place already, decided without taking the output
    /// lock ([`WorkspaceRoot::in_place`]: metadata only, nothing written). It writes no
    /// output, so it cannot disturb an executor holding the lock; and what it accepts
    /// is exactly what the locked path's restore would leave untouched. Anything else
    /// (no complete record, an output missing, changed or only provable by hashing it)
    /// is [`InPlace::NotSure`], and the caller takes the locked path, which looks again.
    fn hit_in_place(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        result: &mut ActionResult,
    ) -> Result<InPlace, String> {
        // The workspace's index first: one file for the whole execution instead of one
        // per action (`crate::record_index`); what it does not hold recently, the file.
        let (record, used, indexed) = match run.index.recent(key, SystemTime::now()) {
            Some((record, used)) => (record, used, true),
            None => match self.store.read_record_used(key) {
                RecordRead::Found(record, used) => (record, used, false),
                RecordRead::Absent => return Ok(InPlace::NoRecord),
                RecordRead::Damaged(damage) => {
                    warn_damaged_record(result, damage);
                    return Ok(InPlace::NoRecord);
                }
            },
        };
        if !covers(action, &record)
            || !run
                .workspace
                .in_place(&record.outputs, self.store, &run.stamps)
        {
            return Ok(InPlace::NotSure);
        }
        let found = Found {
            record,
            used,
            indexed,
        };
        Ok(if self.finish_hit(run, action, key, found, result) {
            InPlace::Hit
        } else {
            InPlace::NotSure
        })
    }

    /// Reuses the record of `key` when there is one whose blobs are all sound.
    fn try_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        result: &mut ActionResult,
    ) -> Result<bool, String> {
        let (record, used) = match self.store.read_record_used(key) {
            RecordRead::Found(record, used) => (record, used),
            RecordRead::Absent => return Ok(false),
            RecordRead::Damaged(damage) => {
                warn_damaged_record(result, damage);
                return Ok(false);
            }
        };
        if !covers(action, &record) {
            return Ok(false);
        }
        match run
            .workspace
            .restore(&record.outputs, self.store, &run.stamps)
        {
            Ok(_) => {}
            Err(RestoreError::Blob(digest, error)) => {
                warn(
                    result,
                    format!(
                        "the stored output {digest} could not be used ({error}); running the action again"
                    ),
                );
                return Ok(false);
            }
            Err(RestoreError::Io(error)) => {
                return Err(format!("cannot restore the action's outputs: {error}"));
            }
        }
        let found = Found {
            record,
            used,
            indexed: false,
        };
        Ok(self.finish_hit(run, action, key, found, result))
    }

    /// Replays the streams of the record `found` (whose outputs are in place) into
    /// `result` and makes it a hit; `false` (with a warning) when a stream's blob cannot
    /// be used.
    fn finish_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        found: Found,
        result: &mut ActionResult,
    ) -> bool {
        let Found {
            record,
            used,
            indexed,
        } = found;
        let limit = self.options.stream_memory_limit;
        let mut streams = Vec::new();
        for stream in [&record.stdout, &record.stderr] {
            // An empty stream has nothing to read back or check.
            if stream.size == 0 && stream.digest == Sha256Digest::of(b"") {
                streams.push(CapturedStream {
                    digest: Some(stream.digest),
                    size: 0,
                    tail: Vec::new(),
                });
                continue;
            }
            let mut tail = crate::capture::TailWriter::new(limit);
            match self.store.copy_blob_to(&stream.digest, &mut tail) {
                Ok(_) => streams.push(CapturedStream {
                    digest: Some(stream.digest),
                    size: stream.size,
                    tail: tail.into_bytes(),
                }),
                Err(error) => {
                    warn(
                        result,
                        format!(
                            "the stored stream {} could not be used ({error}); running the action again",
                            stream.digest
                        ),
                    );
                    return false;
                }
            }
        }
        let now_used = self.store.touch_record_if_stale(key, used);
        if !indexed || now_used != used {
            run.index.remember(key, &record, now_used);
        }
        result.stderr = streams.pop().unwrap_or_default();
        result.stdout = streams.pop().unwrap_or_default();
        result.status = ActionStatus::Succeeded;
        result.cache = Some(CacheState::Hit);
        result.exit_code = Some(record.exit_code);
        result.outputs = declared_outputs(action, &record.outputs);
        result.entries = record.outputs;
        true
    }

    /// Runs every distinct toolchain probe of the plan at once, in parallel (a probe such
    /// as `rustc -vV` takes tens of milliseconds; one after the other they would add up),
    /// so the actions find their results memoised. A probe's failure is memoised too and
    /// reported by the action that needs it.
    fn prefetch_probes(&self, run: &Run<'_>) {
        let mut distinct = std::collections::BTreeSet::new();
        for planned in run.plan {
            let ActionStep::Run(command) = &planned.action.step else {
                continue;
            };
            if command.probes.is_empty() {
                continue;
            }
            let env = self
                .options
                .host_env
                .action_environment(&command.env, &self.workspace_root);
            let cwd = absolute(&self.workspace_root, &command.cwd);
            for probe in &command.probes {
                distinct.insert((probe.clone(), env.clone(), cwd.clone()));
            }
        }
        // A probe whose stored answer holds costs a few `stat`s: only the rest are worth
        // a thread (a cached build would otherwise start one per probe to read a file).
        let resolve = |argv0: &str, path_variable: &str, cwd: &Path| {
            self.resolve(run, argv0, path_variable, cwd)
        };
        distinct.retain(|(probe, env, cwd)| {
            !run.probes
                .is_answered(self.store, probe, env, cwd, &resolve)
        });
        if distinct.len() < 2 {
            return;
        }
        std::thread::scope(|scope| {
            for (probe, env, cwd) in &distinct {
                scope.spawn(move || {
                    let _ = run.probes.result(self.store, probe, env, cwd);
                });
            }
        });
    }

    /// Fails the action when its dependency file lists a workspace file it does not
    /// declare (see [`crate::depfile`]).
    fn check_depfile(
        &self,
        workspace: &WorkspaceRoot,
        action: &Action,
        cwd: &str,
        depfile: &str,
    ) -> Result<(), String> {
        let (bytes, _mode) = workspace.read_file(depfile).map_err(|e| {
            format!(
                "{} did not leave its dependency file `{depfile}`: {e}",
                describe(action)
            )
        })?;
        let listed = crate::depfile::prerequisites(&String::from_utf8_lossy(&bytes));
        let undeclared = crate::depfile::undeclared(
            &listed,
            &self.workspace_root.to_string_lossy(),
            cwd,
            &action.inputs,
            &action.outputs,
        );
        if undeclared.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} read {} it does not declare, so a change to {} would not rebuild it: {}. \
             Declare {} (for a C or C++ target: list the headers in its `srcs`, or depend on \
             the library that has them)",
            describe(action),
            if undeclared.len() == 1 {
                "a file"
            } else {
                "files"
            },
            if undeclared.len() == 1 { "it" } else { "them" },
            undeclared.join(", "),
            if undeclared.len() == 1 { "it" } else { "them" },
        ))
    }

    fn execute(
        &self,
        run: &Run<'_>,
        action: &Action,
        prepared: &Prepared<'_>,
        key: Option<&Sha256Digest>,
        result: &mut ActionResult,
    ) -> Result<(), String> {
        let started = Instant::now();
        result.cache = Some(if key.is_some() {
            CacheState::Miss
        } else {
            CacheState::Bypass
        });
        let workspace = &run.workspace;
        for output in &action.outputs {
            workspace
                .remove(output)
                .and_then(|()| workspace.make_parent(output))
                .map_err(|e| format!("cannot prepare the output `{output}`: {e}"))?;
        }
        // What the key says of the sources, to compare with once the action has run (only
        // a result that would be recorded needs it).
        let sources = key.map(|_| {
            crate::inputs::baseline(
                workspace.handle(),
                &action.inputs,
                prepared.produced,
                &self.source_stamps,
            )
        });
        let stream_error =
            |e: io::Error| format!("cannot capture the action's output streams: {e}");
        let (ran, streams) = if matches!(action.step, ActionStep::Run(_)) {
            let (ends, drain, ended) = crate::capture::pipes().map_err(stream_error)?;
            let limit = self.options.stream_memory_limit;
            std::thread::scope(|scope| {
                let reader = scope.spawn(|| drain.run(self.store, limit));
                // `ends` moves into the program's request and is closed when it ends.
                let ran = self.run_step(workspace, action, prepared, ends);
                ended.mark();
                let streams = reader
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the stream reader panicked")));
                (ran, streams)
            })
        } else {
            let empty = Sha256Digest::of(b"");
            let silent = self.store.put_hashed_blob(b"", &empty).map(|()| {
                let stream = CapturedStream {
                    digest: Some(empty),
                    size: 0,
                    tail: Vec::new(),
                };
                (stream.clone(), stream)
            });
            (self.run_step_in_process(workspace, action), silent)
        };
        let (stdout, stderr) = streams.map_err(stream_error)?;
        result.stdout = stdout;
        result.stderr = stderr;
        let exit = ran?;
        let success_codes: &[i32] = match &action.step {
            ActionStep::Run(command) => &command.success_exit_codes,
            _ => &[0],
        };
        match exit {
            ProcessExit::Code(code) => {
                result.exit_code = Some(code);
                if !success_codes.contains(&code) {
                    return Err(format!("{} exited with code {code}", describe(action)));
                }
            }
            ProcessExit::Signal(signal) => {
                result.signal = Some(signal);
                return Err(format!(
                    "{} was killed by signal {signal}",
                    describe(action)
                ));
            }
            ProcessExit::TimedOut => {
                result.timed_out = true;
                let seconds = match &action.step {
                    ActionStep::Run(command) => command.timeout_seconds.unwrap_or(0),
                    _ => 0,
                };
                return Err(format!(
                    "{} was killed at its time limit of {seconds} s",
                    describe(action)
                ));
            }
        }
        if self.cancel.is_cancelled() {
            result.status = ActionStatus::Cancelled;
            result.message = Some("cancelled".to_owned());
            return Ok(());
        }
        if let ActionStep::Run(command) = &action.step
            && let Some(depfile) = &command.depfile
        {
            self.check_depfile(workspace, action, &command.cwd, depfile)?;
        }
        if let ActionStep::Run(command) = &action.step
            && command.output_symlinks == OutputSymlinks::MaterializeExternal
        {
            for output in &action.outputs {
                workspace
                    .materialize_external_links(output)
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut entries = Vec::new();
        for output in &action.outputs {
            let captured = workspace
                .capture(output, key.map(|_| self.store), &run.stamps)
                .map_err(|e| e.to_string())?;
            entries.extend(captured);
        }
        // A program replaced since it was identified (an upgrade during the build) ran
        // under a key naming the old one: its result is not recorded.
        let changed_program = match (prepared.program, prepared.fingerprint) {
            (Some(program), Some(fingerprint)) if !ToolDigests::unchanged(program, fingerprint) => {
                Some(program)
            }
            _ => None,
        };
        if let Some(program) = changed_program {
            warn(
                result,
                format!(
                    "the program `{}` changed while the build ran: the result is not cached",
                    program.display()
                ),
            );
        }
        // A source edited since its digest was keyed: the outputs stay for this build, but
        // the result is not recorded under a key that does not describe what was read.
        let changed_sources = sources
            .as_ref()
            .map(|sources| crate::inputs::changed(workspace.handle(), sources))
            .unwrap_or_default();
        if !changed_sources.is_empty() {
            warn(result, crate::inputs::changed_warning(&changed_sources));
        }
        if let Some(key) = key.filter(|_| changed_program.is_none() && changed_sources.is_empty()) {
            let record = ActionRecord {
                exit_code: result.exit_code.unwrap_or(0),
                duration: started.elapsed(),
                stdout: stream_digest(&result.stdout),
                stderr: stream_digest(&result.stderr),
                outputs: entries.clone(),
            };
            self.store
                .write_record(key, &record)
                .map_err(|e| format!("cannot write the action's record to the store: {e}"))?;
            run.index.remember(key, &record, SystemTime::now());
        }
        result.outputs = declared_outputs(action, &entries);
        result.entries = entries;
        result.status = ActionStatus::Succeeded;
        Ok(())
    }

    /// Runs the program of a [`ActionStep::Run`] action with `streams` as its stdout and
    /// stderr.
    fn run_step(
        &self,
        workspace: &WorkspaceRoot,
        action: &Action,
        prepared: &Prepared<'_>,
        streams: crate::capture::PipeEnds,
    ) -> Result<ProcessExit, String> {
        let ActionStep::Run(command) = &action.step else {
            return self.run_step_in_process(workspace, action);
        };
        let (Some(program), Some(environment)) = (prepared.program, prepared.environment) else {
            return Err("the program was not resolved".to_owned());
        };
        let cwd = absolute(&self.workspace_root, &command.cwd);
        self.runner
            .run(ProcessRequest {
                program,
                argv: &command.argv,
                env: environment,
                cwd: &cwd,
                stdout: streams.stdout,
                stderr: streams.stderr,
                cancel: &self.cancel,
                timeout: command.timeout_seconds.map(Duration::from_secs),
            })
            .map_err(|e| {
                format!(
                    "cannot start `{}` in `{}`: {e}",
                    program.display(),
                    cwd.display()
                )
            })
    }

    /// Performs a step that runs no program (writing, copying, linking, making a
    /// directory).
    fn run_step_in_process(
        &self,
        workspace: &WorkspaceRoot,
        action: &Action,
    ) -> Result<ProcessExit, String> {
        let done = |written: io::Result<()>| {
            written
                .map(|()| ProcessExit::Code(0))
                .map_err(|e| format!("{} failed: {e}", describe(action)))
        };
        match &action.step {
            ActionStep::Run(_) => Err(format!(
                "{} runs a program: it cannot be performed in process",
                describe(action)
            )),
            ActionStep::WriteFile {
                path,
                content,
                executable,
            } => {
                let mode = if *executable { 0o755 } else { 0o644 };
                done(workspace.write_file(path, content.as_bytes(), mode))
            }
            ActionStep::Copy { from, to } => {
                // Links staged as links must lead inside the staging target's build
                // directory (or, outside one, inside the copy's own directory).
                let label = TargetLabel::from_id(&action.target);
                let directory = build_dir(&label.package, &label.name);
                let boundary = if is_under(to, &directory) {
                    directory.as_str()
                } else {
                    crate::outputs::split(to).0
                };
                done(crate::stage::stage(workspace, from, to, boundary))
            }
            ActionStep::Symlink { to, link } => done(workspace.symlink(to, link)),
            ActionStep::MakeDir { path } => done(workspace.make_directory(path)),
        }
    }
}

impl Drop for Executor<'_> {
    fn drop(&mut self) {
        self.cancel.kill_registered();
    }
}

/// Why an execution could not start.
#[derive(Debug)]
pub enum ExecError {
    Plan(PlanError),
    Store(io::Error),
    Workspace(io::Error),
}

impl std::fmt::Display for ExecError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ExecError::Plan(e) => write!(f, "{e}"),
            ExecError::Store(e) => write!(f, "cannot use the store: {e}"),
            ExecError::Workspace(e) => write!(f, "cannot open the workspace: {e}"),
        }
    }
}

impl std::error::Error for ExecError {}

struct Prepared<'p> {
    program: Option<&'p Path>,
    /// The fingerprint of `program` its identity in the key was read with.
    fingerprint: Option<&'p Fingerprint>,
    environment: Option<&'p std::collections::BTreeMap<String, String>>,
    /// The outputs of other actions the action consumes (keyed by their digests).
    produced: &'p [&'p str],
}

/// A record found for a key: when it was last used, and whether it came from the
/// workspace's index (`crate::record_index`) rather than its record file.
struct Found {
    record: ActionRecord,
    used: SystemTime,
    indexed: bool,
}

/// From how many actions a plan's output stamps and record index are read on two
/// threads.
const PARALLEL_LOAD_ACTIONS: usize = 1000;

/// What [`Executor::hit_in_place`] found.
enum InPlace {
    Hit,
    /// No complete record of the key.
    NoRecord,
    /// A record, but a hit is not proved without the lock.
    NotSure,
}

/// Whether `record` lists every output `action` declares (a search per output in a small
/// record, a set of the record's paths in a large one: thousands of declared outputs
/// over a directory of many files would be quadratic).
fn covers(action: &Action, record: &ActionRecord) -> bool {
    if action.outputs.len().saturating_mul(record.outputs.len()) <= 256 {
        return action
            .outputs
            .iter()
            .all(|output| record.outputs.iter().any(|entry| entry.path == *output));
    }
    let listed: rustc_hash::FxHashSet<&str> = record
        .outputs
        .iter()
        .map(|entry| entry.path.as_str())
        .collect();
    action
        .outputs
        .iter()
        .all(|output| listed.contains(output.as_str()))
}

fn absolute(root: &Path, relative: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    for part in relative.split('/').filter(|part| !part.is_empty()) {
        path.push(part);
    }
    path
}

/// Says that the record of the action's key was damaged (and removed by the store).
fn warn_damaged_record(result: &mut ActionResult, damage: once_db::framed::Damage) {
    warn(
        result,
        format!(
            "the stored result of the action was damaged ({damage}); it was removed and the action runs again"
        ),
    );
}

/// Adds a warning once (the second look under the key's lock meets the same problem).
fn warn(result: &mut ActionResult, warning: String) {
    let known = result.warnings.iter().any(|w| {
        w.split(" could not be used").next() == warning.split(" could not be used").next()
    });
    if !known {
        result.warnings.push(warning);
    }
}

fn describe(action: &Action) -> String {
    match &action.step {
        ActionStep::Run(command) => format!("`{}`", command.argv.join(" ")),
        ActionStep::WriteFile { path, .. } => format!("writing `{path}`"),
        ActionStep::Copy { from, to } => format!("copying `{from}` to `{to}`"),
        ActionStep::Symlink { link, .. } => format!("linking `{link}`"),
        ActionStep::MakeDir { path } => format!("making the directory `{path}`"),
    }
}

fn declared_outputs(action: &Action, entries: &[OutputEntry]) -> Vec<DeclaredOutput> {
    action
        .outputs
        .iter()
        .zip(output_digests(entries, &action.outputs))
        .map(|(path, digest)| DeclaredOutput {
            path: path.clone(),
            digest,
        })
        .collect()
}

fn stream_digest(stream: &CapturedStream) -> StreamDigest {
    StreamDigest {
        digest: stream.digest.unwrap_or_else(|| Sha256Digest::of(b"")),
        size: stream.size,
    }
}
