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
//! Running a step takes one of `jobs` *slots* ([`Executor::take_slot`]), by priority.
//! With a remote cache there are twice as many workers as slots: a remote lookup waits on
//! the network, so the extra workers look the next actions up while `jobs` steps run.
//!
//! A failed action stops its dependents (they are *skipped*); without `keep_going`
//! nothing new starts after a failure, with it every action not depending on the failure
//! still runs. Cancelling kills the running process groups and starts nothing new.

//!
//! The parts: [`report`] (what an execution reports), [`graph`] (the plan's edges,
//! checked before anything runs), [`schedule`] (the workers and the front end's
//! callbacks), [`lookup`] (keys and cache hits) and [`steps`] (running a miss).

mod graph;
mod lookup;
mod report;
mod schedule;
mod steps;

use graph::*;
pub use graph::{OutputScope, PlanError};
use lookup::*;
pub use report::{
    ActionResult, ActionStatus, CacheState, CapturedStream, DeclaredOutput, ExecutionReport,
    Progress,
};
use schedule::*;
pub(crate) use steps::absolute;
use steps::*;

use once_model::paths::is_under;
use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant, SystemTime};

use once_model::Sha256Digest;
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
    /// How many actions' steps run at once (at least 1; with a remote cache as many more
    /// are looked up meanwhile); `None`: as many as the machine runs
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
    /// Whether programs run sandboxed ([`crate::sandbox`]).
    pub sandbox: crate::sandbox::SandboxMode,
    /// Validation (`once query validate-actions`): every action runs (nothing is reused
    /// or recorded) sandboxed and traced, and its result lists every access the sandbox
    /// denied ([`ActionResult::findings`]).
    pub validate: bool,
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
            sandbox: crate::sandbox::SandboxMode::default(),
            validate: false,
        }
    }
}

/// How many actions this machine runs at once by default.
pub use once_host::machine_parallelism;

static SYSTEM_RUNNER: SystemRunner = SystemRunner;

type ProgressCallback<'a> = &'a (dyn Fn(&Progress<'_>) + Sync);
/// Told an action's id: when a worker takes it up, when its step starts, when it ends.
type IdCallback<'a> = &'a (dyn Fn(&str) + Sync);

/// Runs plans against a workspace and a store.
pub struct Executor<'a> {
    workspace_root: PathBuf,
    store: &'a Store,
    runner: &'a dyn ProcessRunner,
    options: ExecOptions,
    cancel: CancelHandle,
    progress: Option<ProgressCallback<'a>>,
    started: Option<IdCallback<'a>>,
    step_started: Option<IdCallback<'a>>,
    step_ended: Option<IdCallback<'a>>,
    /// A panic of the progress callback, re-raised once every process is gone.
    callback_panic: Mutex<Option<Box<dyn std::any::Any + Send>>>,
    scope: OutputScope,
    /// `(before, after)` action ids beyond the edges outputs make.
    order: Vec<(String, String)>,
    /// The stamps the source files' digests in the static keys were read with.
    source_stamps: SourceStamps,
    /// The sandboxed actions' scratch directories, reused between them.
    scratch: crate::sandbox::ScratchPool,
    /// The shared cache looked up after the local store, and given sandboxed results.
    remote: Option<&'a dyn crate::remote::RemoteCache>,
    /// The actions whose outputs must be in the workspace when the execution ends;
    /// `None`: all. The outputs of the others, when their result comes from the remote
    /// cache, are downloaded only if an action that runs needs them.
    required: Option<rustc_hash::FxHashSet<String>>,
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
            step_started: None,
            step_ended: None,
            callback_panic: Mutex::new(None),
            scope: OutputScope::BuildDirectory,
            scratch: crate::sandbox::ScratchPool::default(),
            order: Vec::new(),
            source_stamps: SourceStamps::default(),
            remote: None,
            required: None,
        }
    }

    /// Only the outputs of the actions `ids` must be in the workspace at the end (the
    /// requested targets' own actions); see [`Executor::required`].
    pub fn with_required_outputs(mut self, ids: impl IntoIterator<Item = String>) -> Self {
        self.required = Some(ids.into_iter().collect());
        self
    }

    /// Whether a remote hit of `action` may leave its outputs in the remote cache until
    /// an action that runs needs them: it is shared and not required.
    pub(super) fn deferrable(&self, action: &Action) -> bool {
        self.remote_for(action).is_some()
            && self
                .required
                .as_ref()
                .is_some_and(|required| !required.contains(&action.id))
    }

    /// Looks results up in `remote` after the local store, and uploads the results of
    /// sandboxed actions to it ([`crate::remote`]).
    pub fn with_remote(mut self, remote: Option<&'a dyn crate::remote::RemoteCache>) -> Self {
        self.remote = remote;
        self
    }

    /// The remote cache, for an action whose result may be shared: cacheable, run
    /// sandboxed, not validating.
    pub(super) fn remote_for(&self, action: &Action) -> Option<&'a dyn crate::remote::RemoteCache> {
        self.remote
            .filter(|_| action.cacheable && self.shares_results())
    }

    /// Whether cacheable results are looked up in, and uploaded to, a remote cache: one
    /// is given, actions run sandboxed, and this is not a validation.
    pub(super) fn shares_results(&self) -> bool {
        self.remote.is_some()
            && !self.options.validate
            && self.options.sandbox == crate::sandbox::SandboxMode::On
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
    pub fn on_start(mut self, started: IdCallback<'a>) -> Self {
        self.started = Some(started);
        self
    }

    /// Calls `step_started` with an action's id when its step starts: the action was not
    /// a hit and has one of the `--jobs` slots, so its command runs now. With a remote
    /// cache more actions are taken up ([`Executor::on_start`]) than run, because the
    /// next ones are looked up while the steps run; this tells the two apart. Called from
    /// the worker, without the scheduler's lock; a panic is handled as
    /// [`Executor::on_progress`]'s.
    pub fn on_step_start(mut self, step_started: IdCallback<'a>) -> Self {
        self.step_started = Some(step_started);
        self
    }

    /// Calls `step_ended` with an action's id when its step ended (its processes are
    /// gone and its result is stored), before its slot goes to the next step: a front
    /// end that adds on [`Executor::on_step_start`] and removes here never holds more
    /// than `--jobs` ids. Called from the worker; a panic is handled as
    /// [`Executor::on_progress`]'s.
    pub fn on_step_end(mut self, step_ended: IdCallback<'a>) -> Self {
        self.step_ended = Some(step_ended);
        self
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
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
