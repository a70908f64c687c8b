//! The one execution driver: every front end (the CLI's `build`, `run`, `test`, `exec`
//! and `runtime start`, the MCP tools that build, run, test, execute scripts and start
//! sessions) plans through [`crate::plan_cache::plan`] and executes through a [`Session`], then
//! only renders the typed outcome it gets back.
//!
//! A [`Session`] is a workspace root, its opened store ([`store_path`] is the one rule
//! for where the store is), the execution options and a cancel handle. Each method
//! takes what was planned and an [`Observer`], runs it with `once_exec`, records the
//! evidence, and returns an outcome with its records, its warnings and
//! `exit_code()`, so what each front end exits with (or reports as `exit_code`) is
//! decided here, once: see [`exit`] for the table.

pub mod exit;

use std::path::{Path, PathBuf};

use once_exec::{
    ActionStatus, CancelHandle, ExecOptions, ExecutionReport, Executor, PlannedAction, Progress,
    SandboxMode, Store,
};

use crate::scripts::ScriptJob;
use crate::testing::{TestOptions, TestProgress, TestRun};
use crate::{Plan, TargetRecord};

/// What a front end is told while a session runs: each action taken up and finished,
/// each finished test target. All default to nothing.
pub trait Observer: Sync {
    /// A worker took up an action (its cache is looked up next; a hit ends soon after).
    fn action_started(&self, _id: &str) {}
    /// An action's step started: it was not a hit, and its command runs now (at most
    /// `--jobs` at once, while more actions may be taken up and looked up).
    fn step_started(&self, _id: &str) {}
    /// An action's step ended (its processes are gone), told before the next step
    /// starts in its place.
    fn step_ended(&self, _id: &str) {}
    /// An action ended (ran, was a hit, failed, was skipped or cancelled).
    fn action_finished(&self, _progress: &Progress<'_>) {}
    /// Every test action of a test target ended.
    fn test_finished(&self, _progress: &TestProgress<'_>) {}
}

/// The observer that wants nothing.
pub struct Unobserved;

impl Observer for Unobserved {}

/// Where the store of the workspace at `root` is: the directory given (`--store`, on
/// every command that executes and on `once mcp`), else `.once/cache` in the workspace.
pub fn store_path(root: &Path, explicit: Option<&Path>) -> PathBuf {
    explicit.map_or_else(|| Store::default_path(root), Path::to_path_buf)
}

/// A workspace, its store and how to execute in it.
pub struct Session {
    root: PathBuf,
    store: Store,
    options: ExecOptions,
    cancel: CancelHandle,
    evidence: bool,
    /// `--sandbox`: wins over the workspace's `[workspace] sandbox`.
    sandbox: Option<SandboxMode>,
    /// `--remote-cache`, `--no-remote-cache`, `--remote-cache-read-only`: win over the
    /// environment and the workspace's `[cache]`.
    remote: once_remote::Overrides,
    /// A client connecting since before the plan was made
    /// ([`Session::connect_remote_early`]), for the first execution whose settings it has.
    early_remote: std::sync::Mutex<Option<once_remote::RemoteClient>>,
}

/// From how many actions a build records its evidence on a thread beside the records.
const PARALLEL_EVIDENCE_ACTIONS: usize = 64;

impl Session {
    /// Opens the store ([`store_path`]) of the workspace at `root`.
    pub fn open(
        root: &Path,
        store: Option<&Path>,
        options: ExecOptions,
    ) -> Result<Session, String> {
        let path = store_path(root, store);
        let store = Store::open(&path)
            .map_err(|e| format!("cannot open the store `{}`: {e}", path.display()))?;
        Ok(Session::with_store(root, store, options))
    }

    /// A session over a store opened already.
    pub fn with_store(root: &Path, store: Store, options: ExecOptions) -> Session {
        Session {
            root: root.to_path_buf(),
            store,
            options,
            cancel: CancelHandle::new(),
            evidence: true,
            sandbox: None,
            remote: once_remote::Overrides::default(),
            early_remote: std::sync::Mutex::new(None),
        }
    }

    /// The command line's say on the remote cache (see `once_remote::settings`).
    pub fn with_remote_cache(mut self, overrides: once_remote::Overrides) -> Session {
        self.remote = overrides;
        self
    }

    /// Starts connecting to the remote cache that the command line or the environment
    /// names, before the plan is made, so that the connection (for gRPC: TCP, HTTP/2, TLS,
    /// the capabilities' round trip) overlaps the planning instead of delaying the first
    /// lookups. The workspace's `[cache]` is known only with the plan: the first execution
    /// takes this client if its settings are the ones it resolves, and drops it unused
    /// otherwise. A server that cannot be reached is reported only if a lookup or an
    /// upload needs it, as always.
    pub fn connect_remote_early(&self) {
        if !self.evidence {
            return;
        }
        let env = |name: &str| std::env::var(name).ok();
        let Ok(Some(settings)) = once_remote::resolve(None, &self.remote, &env, &self.root) else {
            return;
        };
        if let Ok(client) = self.connecting_client(settings) {
            *self.early_remote.lock().unwrap_or_else(|e| e.into_inner()) = Some(client);
        }
    }

    /// The remote cache client for `plan`'s execution, if one is configured. A
    /// configuration that cannot be used (a bad URL in the environment, a credentials
    /// file inside the workspace) is a warning, and the build runs without it.
    fn remote_client(
        &self,
        plan: &Plan,
        warnings: &mut Vec<String>,
    ) -> Option<once_remote::RemoteClient> {
        if !self.evidence {
            // Throwaway stores (`--verify-reproducible` trials) share nothing.
            return None;
        }
        let env = |name: &str| std::env::var(name).ok();
        let settings = match once_remote::resolve(
            plan.remote_cache.as_ref(),
            &self.remote,
            &env,
            &self.root,
        ) {
            Ok(settings) => settings?,
            Err(why) => {
                warnings.push(format!("the remote cache is not used: {why}"));
                return None;
            }
        };
        let early = self
            .early_remote
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(client) = early.filter(|client| *client.settings() == settings) {
            return Some(client);
        }
        match self.connecting_client(settings) {
            Ok(client) => Some(client),
            Err(why) => {
                warnings.push(format!("the remote cache is not used: {why}"));
                None
            }
        }
    }

    /// A client of the server `settings` name on the session's store, connecting already
    /// (on a thread of its own: see `RemoteClient::connect_ahead`).
    fn connecting_client(
        &self,
        settings: once_remote::RemoteSettings,
    ) -> Result<once_remote::RemoteClient, String> {
        let client = once_remote::RemoteClient::new(settings, self.store.path())?;
        client.connect_ahead();
        Ok(client)
    }

    /// Whether `plan`'s execution would use a remote cache (or warn that it cannot):
    /// the workspace's `[cache]`, the environment or the command line configure one.
    pub fn uses_remote_cache(&self, plan: &Plan) -> bool {
        if !self.evidence {
            return false;
        }
        let env = |name: &str| std::env::var(name).ok();
        !matches!(
            once_remote::resolve(plan.remote_cache.as_ref(), &self.remote, &env, &self.root),
            Ok(None)
        )
    }

    /// Runs every action sandboxed or not whatever the workspace says (`--sandbox`);
    /// `None` leaves it to the workspace's `[workspace] sandbox`, else the default
    /// ([`SandboxMode::default`]).
    pub fn with_sandbox(mut self, sandbox: Option<SandboxMode>) -> Session {
        self.sandbox = sandbox;
        self
    }

    /// Whether `plan` runs sandboxed (`--sandbox`, else the workspace's setting, else on).
    pub fn sandbox_for(&self, plan: &Plan) -> SandboxMode {
        self.sandbox_mode(plan.sandbox)
    }

    /// The sandbox mode of a plan whose workspace says `workspace` (`Some(true)`: on).
    fn sandbox_mode(&self, workspace: Option<bool>) -> SandboxMode {
        self.sandbox.unwrap_or(match workspace {
            Some(true) => SandboxMode::On,
            Some(false) => SandboxMode::Off,
            None => SandboxMode::default(),
        })
    }

    /// A session that records no evidence (`once exec --verify-reproducible`'s trials,
    /// each in a throwaway store: their runs say nothing about the workspace's cache).
    pub fn without_evidence(mut self) -> Session {
        self.evidence = false;
        self
    }

    /// Cancels what the session runs from now on, when cancelled (every process group
    /// killed): a signal handler, an MCP cancellation.
    pub fn with_cancel(mut self, cancel: CancelHandle) -> Session {
        self.cancel = cancel;
        self
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn cancel_handle(&self) -> CancelHandle {
        self.cancel.clone()
    }

    /// Runs `actions` of `plan` with the session's options (no evidence recorded).
    fn execute(
        &self,
        plan: &Plan,
        actions: &[PlannedAction],
        observer: Option<&dyn Observer>,
    ) -> Result<ExecutionReport, String> {
        // Installed only when an observer is given (below).
        let told: &dyn Observer = observer.unwrap_or(&Unobserved);
        let callback = |progress: &Progress<'_>| told.action_finished(progress);
        let started = |id: &str| told.action_started(id);
        let step_started = |id: &str| told.step_started(id);
        let step_ended = |id: &str| told.step_ended(id);
        let mut remote_warnings = Vec::new();
        let remote = self.remote_client(plan, &mut remote_warnings);
        let mut executor = Executor::new(&self.root, &self.store)
            .with_options(ExecOptions {
                sandbox: self.sandbox_mode(plan.sandbox),
                ..self.options.clone()
            })
            .with_cancel(self.cancel.clone())
            .with_source_stamps(plan.source_stamps.clone())
            .with_remote(remote.as_ref().map(|r| r as &dyn once_exec::RemoteCache));
        if plan.capability == "build" {
            // A build needs the requested targets' outputs in the workspace; what only
            // feeds actions that are hits stays in the remote cache.
            executor = executor.with_required_outputs(required_actions(plan, actions));
        }
        if observer.is_some() {
            executor = executor
                .on_progress(&callback)
                .on_start(&started)
                .on_step_start(&step_started)
                .on_step_end(&step_ended);
        }
        let mut report = executor
            .run(actions)
            .map_err(|e| format!("cannot run the plan: {e}"))?;
        // Uploads finish before the command reports: their failures are part of it.
        let summary = remote.as_ref().map(once_remote::RemoteClient::finish);
        if let Some(summary) = &summary {
            remote_warnings.extend(summary.warnings());
        }
        report.warnings.extend(remote_warnings);
        self.count_cache_use(&report, summary.as_ref());
        Ok(report)
    }

    /// Adds this execution's hits, misses and remote transfers to the store's counters
    /// (`once cache stats`); failing to is not worth a warning.
    fn count_cache_use(
        &self,
        report: &ExecutionReport,
        remote: Option<&once_remote::RemoteSummary>,
    ) {
        let (mut local, mut from_remote, mut misses) = (0, 0, 0);
        for result in &report.results {
            match result.cache {
                Some(once_exec::CacheState::Hit) if result.remote_hit => from_remote += 1,
                Some(once_exec::CacheState::Hit) => local += 1,
                Some(once_exec::CacheState::Miss) => misses += 1,
                _ => {}
            }
        }
        let counts = once_remote::stats::CacheStats::of_command(local, from_remote, misses, remote);
        let _ = once_remote::stats::add(&self.store, &counts);
    }

    /// Builds (or runs, for a `run` plan whose program goes through the executor:
    /// captured, as MCP's `once_run_target` does) every action of `plan`, records the
    /// evidence and the records. `render` gets the records while the evidence is
    /// recorded (both only read), and its answer comes back with the outcome. A plan
    /// with problems is refused: nothing runs.
    pub fn build<R: Send>(
        &self,
        plan: &Plan,
        observer: Option<&dyn Observer>,
        render: impl FnOnce(&[TargetRecord], &ExecutionReport) -> R + Send,
    ) -> Result<(Built, R), String> {
        if !plan.problems.is_empty() {
            let records = crate::refused_records(plan);
            let report = ExecutionReport {
                results: Vec::new(),
                warnings: Vec::new(),
            };
            let rendered = render(&records, &report);
            return Ok((
                Built {
                    records,
                    report,
                    warnings: Vec::new(),
                    refused: true,
                    program: false,
                },
                rendered,
            ));
        }
        let report = self.execute(plan, &plan.actions, observer)?;
        let mut warnings = crate::execution_warnings(&report);
        let evidence = || {
            self.evidence
                .then(|| crate::record_evidence(&self.root, plan, &report))
                .flatten()
        };
        let (evidence, records, rendered) = std::thread::scope(|scope| {
            // A thread of its own pays only for large plans (a full hit of 10,000
            // actions); starting one costs a small plan's whole evidence.
            let beside =
                (plan.actions.len() >= PARALLEL_EVIDENCE_ACTIONS).then(|| scope.spawn(evidence));
            let records = crate::records(plan, &report);
            let rendered = render(&records, &report);
            let evidence = match beside {
                Some(thread) => thread.join().ok().flatten(),
                None => evidence(),
            };
            (evidence, records, rendered)
        });
        warnings.extend(evidence);
        Ok((
            Built {
                records,
                report,
                warnings,
                refused: false,
                program: plan.capability == "run",
            },
            rendered,
        ))
    }

    /// The first half of a `run` whose program the front end starts itself (`once run`
    /// attached to the terminal): builds everything but the target's own uncached `run`
    /// commands and records the evidence. When it succeeded, the front end runs
    /// [`Prepared::program`] and adds each command's result to the report, then
    /// [`Prepared::finish`]es.
    pub fn prepare_run(
        &self,
        plan: &Plan,
        observer: Option<&dyn Observer>,
    ) -> Result<Prepared, String> {
        let (before, program) = plan.split_program();
        let report = self.execute(plan, &before, observer)?;
        let mut warnings = crate::execution_warnings(&report);
        if self.evidence {
            warnings.extend(crate::record_evidence(&self.root, plan, &report));
        }
        Ok(Prepared {
            built: report.results.len(),
            report,
            program,
            warnings,
        })
    }

    /// Records the evidence of the program runs the front end added to `prepared`'s
    /// report (`once run` attached): subject the target's `run` capability, with the exit
    /// code (a terminal's streams are not captured, so no stream digests). Returns a
    /// warning when it cannot.
    pub fn record_program(&self, plan: &Plan, prepared: &Prepared) -> Option<String> {
        if !self.evidence {
            return None;
        }
        let report = ExecutionReport {
            results: prepared
                .report
                .results
                .get(prepared.built..)
                .unwrap_or_default()
                .to_vec(),
            warnings: Vec::new(),
        };
        crate::record_evidence(&self.root, plan, &report)
    }

    /// Validates `plan`'s actions (`once query validate-actions`): every action runs,
    /// sandboxed and traced, nothing reused or recorded, and keeps going past failures; a
    /// plan with problems runs nothing. `targets` are the targets asked for.
    pub fn validate_actions(
        &self,
        targets: &[String],
        plan: &Plan,
    ) -> Result<crate::validation::ActionsValidation, String> {
        let report = if plan.problems.is_empty() {
            Executor::new(&self.root, &self.store)
                .with_options(ExecOptions {
                    sandbox: SandboxMode::On,
                    validate: true,
                    keep_going: true,
                    ..self.options.clone()
                })
                .with_cancel(self.cancel.clone())
                .with_source_stamps(plan.source_stamps.clone())
                .run(&plan.actions)
                .map_err(|e| format!("cannot run the plan: {e}"))?
        } else {
            ExecutionReport {
                results: Vec::new(),
                warnings: Vec::new(),
            }
        };
        Ok(crate::validation::validation(targets, plan, &report))
    }

    /// Runs the tests `plan` plans (its `test` capability), reads their results and
    /// retries failing cases (`crate::testing::run`). A plan with problems is refused.
    pub fn test(
        &self,
        plan: &Plan,
        options: &TestOptions,
        observer: Option<&dyn Observer>,
    ) -> Result<Tested, String> {
        if !plan.problems.is_empty() {
            return Ok(Tested {
                runs: Vec::new(),
                warnings: Vec::new(),
                refused: true,
                cancelled: false,
            });
        }
        let progress = |progress: &TestProgress<'_>| {
            if let Some(observer) = observer {
                observer.test_finished(progress);
            }
        };
        let options = TestOptions {
            sandbox: self.sandbox_mode(plan.sandbox),
            ..options.clone()
        };
        let mut remote_warnings = Vec::new();
        let remote = self.remote_client(plan, &mut remote_warnings);
        let (runs, mut warnings) = crate::testing::run(
            &self.root,
            &self.store,
            plan,
            &options,
            &self.cancel,
            &progress,
            remote.as_ref().map(|r| r as &dyn once_exec::RemoteCache),
        )?;
        if let Some(remote) = &remote {
            remote_warnings.extend(remote.finish().warnings());
        }
        warnings.extend(remote_warnings);
        Ok(Tested {
            cancelled: self.cancel.is_cancelled(),
            runs,
            warnings,
            refused: false,
        })
    }

    /// Runs an annotated script (or a literal command) and the scripts it needs, with
    /// outputs in the workspace, and records the evidence.
    pub fn exec_script(
        &self,
        job: &ScriptJob,
        observer: Option<&dyn Observer>,
    ) -> Result<ScriptRun, String> {
        let callback = |progress: &Progress<'_>| {
            if let Some(observer) = observer {
                observer.action_finished(progress);
            }
        };
        let report = crate::scripts::run(
            &self.root,
            &self.store,
            job,
            self.cancel.clone(),
            self.sandbox_mode(None),
            observer.map(|_| &callback as &(dyn Fn(&Progress<'_>) + Sync)),
        )?;
        let evidence = crate::scripts::evidence_records(job, &report);
        let mut warnings = crate::execution_warnings(&report);
        if self.evidence {
            warnings.extend(crate::scripts::record_evidence(&self.root, &evidence));
        }
        Ok(ScriptRun {
            main: job.main.clone(),
            report,
            evidence,
            warnings,
        })
    }

    /// Builds what `target`'s `run` needs, then starts its program in a runtime session
    /// under a detached supervisor (`supervisor`: the `once` executable); the session
    /// outlives the call. An error says why nothing was built or started (plan
    /// problems, no program to start, the session not startable); a build that failed
    /// is [`Started::session`]'s error, with the records.
    pub fn start_runtime(
        &self,
        target: &str,
        plan: &Plan,
        extra_args: &[String],
        supervisor: &Path,
        observer: Option<&dyn Observer>,
    ) -> Result<Started, String> {
        if !plan.problems.is_empty() {
            return Err(format!(
                "cannot run `{target}`; nothing was started: {}",
                plan.problem_lines().join("; ")
            ));
        }
        if plan.split_program().1.is_empty() {
            return Err(format!(
                "`{target}`'s `run` capability declares no uncached command: there is no program to start in a session"
            ));
        }
        let prepared = self.prepare_run(plan, observer)?;
        let records = crate::records(plan, &prepared.report);
        if !prepared.report.succeeded() {
            let failure = records
                .iter()
                .find_map(|record| record.failure.as_ref())
                .map_or_else(String::new, |f| {
                    format!(
                        ": `{}` failed ({}){}",
                        f.action,
                        f.message,
                        if f.stderr_tail.is_empty() {
                            String::new()
                        } else {
                            format!("\n{}", f.stderr_tail)
                        }
                    )
                });
            return Ok(Started {
                session: Err(format!(
                    "not started: what `{target}` needs failed to build{failure}"
                )),
                records,
                warnings: prepared.warnings,
            });
        }
        let host = once_exec::HostEnvironment::from_process();
        let mut specs =
            once_runtime::program_specs(&self.root, &prepared.program, &host, extra_args)
                .map_err(|e| e.to_string())?;
        let contained = self.sandbox_for(plan) == SandboxMode::On;
        for spec in &mut specs {
            spec.contained = contained;
        }
        let session = once_runtime::start_session(&self.root, target, &specs, supervisor)
            .map_err(|e| format!("cannot start the runtime session: {e}"))?;
        Ok(Started {
            session: Ok(session),
            records,
            warnings: prepared.warnings,
        })
    }
}

/// What [`Session::build`] did.
#[derive(Debug)]
pub struct Built {
    /// One record per requested target.
    pub records: Vec<TargetRecord>,
    pub report: ExecutionReport,
    /// What the execution met without failing, and evidence not recorded.
    pub warnings: Vec<String>,
    /// The plan had problems: nothing ran.
    pub refused: bool,
    /// The plan was a `run`, its program among the actions: the exit code is its.
    program: bool,
}

impl Built {
    pub fn succeeded(&self) -> bool {
        !self.refused && self.report.succeeded()
    }

    /// What `once build` exits with, and `once run` and MCP's `once_run_target` when
    /// the program ran through the executor: see [`exit`].
    pub fn exit_code(&self, plan: &Plan) -> i32 {
        if self.refused {
            return exit::REFUSED;
        }
        if self.program {
            exit::of_run(plan, &self.report)
        } else {
            exit::of_build(&self.report)
        }
    }
}

/// What [`Session::prepare_run`] did, and the program left to the front end.
#[derive(Debug)]
pub struct Prepared {
    /// The report of what was built; the front end adds the program's results.
    pub report: ExecutionReport,
    /// How many results the report had when it was prepared (the build's, whose evidence
    /// is recorded); the program's come after.
    pub built: usize,
    /// The target's own uncached `run` commands, in order (run only when the report
    /// succeeded).
    pub program: Vec<PlannedAction>,
    pub warnings: Vec<String>,
}

impl Prepared {
    /// The records of the run, and what `once run` exits with ([`exit::of_run`]).
    pub fn finish(&self, plan: &Plan) -> (Vec<TargetRecord>, i32) {
        (
            crate::records(plan, &self.report),
            exit::of_run(plan, &self.report),
        )
    }
}

/// What [`Session::test`] did.
#[derive(Debug)]
pub struct Tested {
    pub runs: Vec<TestRun>,
    pub warnings: Vec<String>,
    pub refused: bool,
    pub cancelled: bool,
}

impl Tested {
    /// Whether every selected test passed (`passed` or `flaky`).
    pub fn succeeded(&self) -> bool {
        !self.refused && !self.cancelled && self.runs.iter().all(TestRun::passed)
    }

    /// What `once test` exits with: see [`exit`].
    pub fn exit_code(&self) -> i32 {
        if self.refused {
            exit::REFUSED
        } else if self.cancelled {
            exit::CANCELLED
        } else if self.succeeded() {
            exit::SUCCESS
        } else {
            exit::FAILED
        }
    }
}

/// What [`Session::exec_script`] did.
#[derive(Debug)]
pub struct ScriptRun {
    /// The id of the requested script's action.
    pub main: String,
    pub report: ExecutionReport,
    /// The evidence records of the run (each action's subject its digest).
    pub evidence: Vec<once_evidence::EvidenceRecord>,
    pub warnings: Vec<String>,
}

impl ScriptRun {
    /// A needed script that failed (the requested one then did not run).
    pub fn failed_need(&self) -> Option<&once_exec::ActionResult> {
        self.report
            .results
            .iter()
            .find(|r| r.id != self.main && r.status == ActionStatus::Failed)
    }

    /// The requested script's result.
    pub fn main_result(&self) -> Option<&once_exec::ActionResult> {
        self.report.result(&self.main)
    }

    /// What `once exec` exits with, and MCP's `once_exec_script` reports: see [`exit`].
    pub fn exit_code(&self) -> i32 {
        match (self.failed_need(), self.main_result()) {
            (Some(need), _) => exit::of_action(need),
            (None, Some(main)) => exit::of_action(main),
            (None, None) => exit::FAILED,
        }
    }
}

/// What [`Session::start_runtime`] did once it could build.
#[derive(Debug)]
pub struct Started {
    /// The session's record, or why it was not started.
    pub session: Result<once_runtime::SessionRecord, String>,
    pub records: Vec<TargetRecord>,
    pub warnings: Vec<String>,
}

impl Started {
    /// What `once runtime start` exits with: see [`exit`].
    pub fn exit_code(&self) -> i32 {
        if self.session.is_ok() {
            exit::SUCCESS
        } else {
            exit::FAILED
        }
    }
}

/// The actions whose outputs a build of `plan` must leave in the workspace: the
/// requested targets' own actions, and those producing a file the targets hand over
/// (a `filegroup` has no action of its own: its outputs are its dependencies').
fn required_actions(plan: &Plan, actions: &[PlannedAction]) -> Vec<String> {
    let mut required: Vec<String> = plan
        .targets
        .iter()
        .flat_map(|target| target.actions.iter().cloned())
        .collect();
    let wanted: Vec<&str> = plan
        .targets
        .iter()
        .flat_map(|target| {
            target
                .default_outputs
                .iter()
                .chain(&target.required_outputs)
        })
        .map(String::as_str)
        .collect();
    let within = |path: &str, output: &str| {
        path == output
            || path
                .strip_prefix(output)
                .is_some_and(|rest| rest.starts_with('/'))
            || output
                .strip_prefix(path)
                .is_some_and(|rest| rest.starts_with('/'))
    };
    // A set beside the list: `contains` on the list made this quadratic (10,000
    // requested actions: a third of a no-op build went to comparing ids).
    let mut listed: std::collections::HashSet<String> = required.iter().cloned().collect();
    for planned in actions {
        let action = &planned.action;
        if !listed.contains(&action.id)
            && action
                .outputs
                .iter()
                .any(|output| wanted.iter().any(|path| within(path, output)))
        {
            listed.insert(action.id.clone());
            required.push(action.id.clone());
        }
    }
    required
}
