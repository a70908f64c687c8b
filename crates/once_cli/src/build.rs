//! `once build PATTERN…` and `once run TARGET [-- ARGS…]`: plan cold and execute through
//! the driver (`once_build::session`), render its records. Exit codes are the driver's
//! table (`once_build::session::exit`): 0 success, 1 a build failed, the program's own
//! code once `once run` ran it; 2 usage or I/O errors.

use std::io::{IsTerminal as _, Write as _};
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};

use anyhow::{Context as _, anyhow};
use once_build::plan_cache::{self as planning, PlanRequest, PlanSource, Planned};
use once_build::session::{self, Observer, Session};
use once_build::{Plan, TargetRecord, TargetStatus};
use once_exec::{CancelHandle, ExecOptions, Progress, Store};
use once_model::action::ActionStep;
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, ExecArgs, Format};
use crate::human::printable;
use crate::query::{listing_hint, print_json, print_json_bytes, workspace_root};

pub(crate) fn answer<T>(value: once_analysis::Cancellable<T>) -> anyhow::Result<T> {
    value.map_err(|_| anyhow!("the analysis was cancelled"))
}

/// What SIGINT, SIGTERM and SIGHUP stop: the running execution (cancelled: every action
/// group killed), or the program `once run` runs attached to the terminal (the signal is
/// forwarded to it; a second signal kills it).
pub(crate) enum Interruptible {
    Nothing,
    Execution(CancelHandle),
    /// The program, and its process group when it has one of its own (no terminal: it is
    /// not in the terminal's foreground group).
    Program(once_exec::launch::AttachedProcess),
}

static INTERRUPTIBLE: Mutex<Interruptible> = Mutex::new(Interruptible::Nothing);

/// The first termination signal received (0 before one arrives).
static RECEIVED: AtomicI32 = AtomicI32::new(0);

fn interruptible() -> std::sync::MutexGuard<'static, Interruptible> {
    INTERRUPTIBLE.lock().unwrap_or_else(|e| e.into_inner())
}

pub(crate) fn set_interruptible(what: Interruptible) {
    // On the workspace server, the client's connection interrupts its own command.
    if let Some(context) = crate::context::current() {
        let cancel = match what {
            Interruptible::Execution(cancel) => Some(cancel),
            _ => None,
        };
        if let Some(cancel) = &cancel
            && context.signal.load(Ordering::SeqCst) != 0
        {
            cancel.cancel();
        }
        *context.cancel.lock().unwrap_or_else(|e| e.into_inner()) = cancel;
        return;
    }
    static INSTALLED: std::sync::Once = std::sync::Once::new();
    INSTALLED.call_once(|| {
        use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
        let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
            return;
        };
        let _ = std::thread::Builder::new()
            .name("once-signals".into())
            .spawn(move || {
                for signal in signals.forever() {
                    let first = RECEIVED
                        .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst)
                        .is_ok();
                    match &*interruptible() {
                        Interruptible::Nothing => {}
                        Interruptible::Execution(cancel) => cancel.cancel(),
                        Interruptible::Program(process) => process.signal(if first {
                            signal
                        } else {
                            signal_hook::consts::SIGKILL
                        }),
                    }
                }
            });
    });
    *interruptible() = what;
}

/// The termination signal `once` received, if any (its exit status is then 128 + it).
fn received_signal() -> Option<i32> {
    let received = match crate::context::current() {
        Some(context) => context.signal.load(Ordering::SeqCst),
        None => RECEIVED.load(Ordering::SeqCst),
    };
    Some(received).filter(|&signal| signal != 0)
}

/// Plans `request` in a one-shot process (`once_build::plan_cache`, cold: the
/// last plan and the plan memo of the store); the database is gone on return.
/// `ends_with_process`: the process exits once the plan ran, so the database is left to
/// the exit instead of freed.
pub(crate) fn plan_cold(
    root: &Path,
    store: &Store,
    request: &PlanRequest<'_>,
    ends_with_process: bool,
) -> anyhow::Result<Planned> {
    // On the workspace server: from its warm database, the snapshot dropped on return.
    if let Some(planned) = crate::context::with_warm_analysis(|analysis| {
        planning::plan(PlanSource::Warm(analysis), request, listing_hint)
    }) {
        return answer(planned)?.map_err(|e| anyhow!(e));
    }
    let source = PlanSource::Cold {
        root,
        store,
        threads: crate::query::analysis_threads()?,
        ends_with_process,
    };
    answer(planning::plan(source, request, listing_hint))?.map_err(|e| anyhow!(e))
}

/// The session of an executing command: the workspace's store (`--store`, else
/// `.once/store`) and the execution options of its flags.
pub(crate) fn open_session(root: &Path, exec: &ExecArgs) -> anyhow::Result<Session> {
    Session::open(root, exec.store.as_deref(), options(exec))
        .map(|session| {
            session
                .with_sandbox(crate::args::SandboxArg::mode(exec.sandbox))
                .with_remote_cache(exec.remote_cache())
        })
        .map_err(|e| anyhow!(e))
}

/// What `code` (from `once_build::session::exit`) is as the process's outcome, unless a
/// termination signal stopped `once` (then 128 + it).
pub(crate) fn outcome_of(code: i32) -> Outcome {
    match received_signal() {
        Some(signal) => Outcome::Interrupted(signal),
        None => match code {
            0 => Outcome::Success,
            1 => Outcome::Invalid,
            code => Outcome::Exit(u8::try_from(code).unwrap_or(1)),
        },
    }
}

/// Prints what the execution met without failing (`once: warning: …`).
pub(crate) fn print_warnings(warnings: &[String]) {
    for warning in warnings {
        eprintln!("once: warning: {}", printable(warning));
    }
}

fn options(exec: &ExecArgs) -> ExecOptions {
    let mut options = ExecOptions {
        keep_going: exec.keep_going,
        ..ExecOptions::default()
    };
    if let Some(jobs) = exec.jobs {
        options.jobs = Some(jobs.max(1));
    }
    options
}

/// The live progress line on a terminal, an observer of the session: `[done/total]
/// building TARGET (kind)` and the actions running: those whose step started and has
/// not ended, as the executor says (never more than `--jobs`). An action taken up and
/// still being looked up in a cache is not running; with a remote cache up to twice
/// `--jobs` are taken up.
struct ProgressLine<'p> {
    /// Whose stderr the line is on (the executor's workers call the observer).
    context: Option<std::sync::Arc<crate::context::Context>>,
    plan: &'p Plan,
    total: usize,
    /// The ids of the actions whose steps run, in the order they started.
    running: Mutex<Vec<String>>,
    /// The last `done` shown.
    done: std::sync::atomic::AtomicUsize,
    shown: AtomicBool,
}

impl<'p> ProgressLine<'p> {
    fn new(plan: &'p Plan, total: usize) -> Self {
        ProgressLine {
            context: crate::context::current(),
            plan,
            total,
            running: Mutex::new(Vec::new()),
            done: std::sync::atomic::AtomicUsize::new(0),
            shown: AtomicBool::new(false),
        }
    }

    fn show(&self, done: usize, last: Option<&str>) {
        let _context = crate::context::enter(self.context.clone());
        let running = self.running.lock().unwrap_or_else(|e| e.into_inner());
        let current = running.first().map(String::as_str).or(last);
        let mut line = format!("[{done}/{}]", self.total);
        if let Some(id) = current {
            // An action id is `TARGET#CAPABILITY/NAME`.
            let (target, rest) = id.split_once('#').unwrap_or((id, ""));
            let capability = rest.split('/').next().unwrap_or("");
            let kind = self.plan.kinds.get(target).map_or("", String::as_str);
            let verb = if capability == "build" {
                "building".to_owned()
            } else {
                format!("{capability}:")
            };
            line.push_str(&format!(" {verb} {target} ({kind})"));
        }
        if !running.is_empty() {
            line.push_str(&format!(" · running {}", running.join(", ")));
        }
        drop(running);
        let width = terminal_width();
        let line: String = printable(&line)
            .chars()
            .take(width.saturating_sub(1))
            .collect();
        let mut stderr = crate::output::stderr();
        let _ = write!(stderr, "\r\x1b[K{line}");
        let _ = stderr.flush();
        self.shown.store(true, Ordering::Relaxed);
    }

    fn clear(&self) {
        let _context = crate::context::enter(self.context.clone());
        if self.shown.load(Ordering::Relaxed) {
            let mut stderr = crate::output::stderr();
            let _ = write!(stderr, "\r\x1b[K");
            let _ = stderr.flush();
        }
    }
}

impl Observer for ProgressLine<'_> {
    fn action_started(&self, id: &str) {
        self.show(self.done.load(Ordering::Relaxed), Some(id));
    }

    fn step_started(&self, id: &str) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(id.to_owned());
        self.show(self.done.load(Ordering::Relaxed), Some(id));
    }

    fn step_ended(&self, id: &str) {
        self.running
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|running| running != id);
    }

    fn action_finished(&self, progress: &Progress<'_>) {
        let id = progress.result.id.as_str();
        self.done.store(progress.done, Ordering::Relaxed);
        self.show(progress.done, Some(id));
    }
}

pub(crate) fn terminal_width() -> usize {
    crate::context::var("COLUMNS")
        .and_then(|c| c.parse().ok())
        .filter(|&c: &usize| c > 10)
        .unwrap_or(100)
}

/// The progress line of `plan`'s `actions` when stderr is a terminal (human output).
fn progress_line<'p>(
    plan: &'p Plan,
    actions: &[once_exec::PlannedAction],
    format: Format,
) -> Option<ProgressLine<'p>> {
    let live =
        format == Format::Human && crate::context::stderr_is_terminal() && !actions.is_empty();
    live.then(|| {
        let line = ProgressLine::new(plan, actions.len());
        line.show(0, None);
        line
    })
}

/// The JSON answer of `once build` and `once run` once the plan ran, written straight
/// from the records: building a `serde_json::Value` of them first (and dropping it) was
/// about 7 % of a no-op build of 10,000 targets. The fields are in the order the
/// answer always had.
#[derive(serde::Serialize)]
struct Answer<'a> {
    success: bool,
    capability: &'a str,
    /// `once run`'s exit code of the program (`null` when it did not exit); absent from
    /// `once build`'s answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    exit_code: Option<Option<i32>>,
    targets: &'a [TargetRecord],
    problems: &'a [String],
    /// The same problems, each with its code, file and range.
    diagnostics: &'a [once_build::PlanDiagnostic],
}

/// Prints the plan's problems; a plan with problems is not executed.
pub(crate) fn refuse(plan: &Plan, format: Format) -> anyhow::Result<Outcome> {
    if format == Format::Json {
        print_json(&json!({
            "success": false,
            "capability": plan.capability,
            "targets": [],
            "problems": plan.problem_lines(),
            "diagnostics": plan.problem_diagnostics(),
        }))?;
    } else {
        eprintln!(
            "once: cannot {} what was asked; nothing ran:",
            plan.capability
        );
        for problem in &plan.problems {
            eprintln!("  {}", printable(&problem.line));
        }
    }
    Ok(outcome_of(session::exit::REFUSED))
}

/// `once query validate-actions PATTERN… [--capability C]`.
pub fn validate_actions(
    args: &Args,
    patterns: &[String],
    capability: &str,
    store: Option<&Path>,
) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let session = Session::open(&root, store, ExecOptions::default()).map_err(|e| anyhow!(e))?;
    let request = PlanRequest::Capability {
        patterns,
        capability,
    };
    let plan = plan_cold(&root, session.store(), &request, true)?.plan;
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let validation = session
        .validate_actions(patterns, &plan)
        .map_err(|e| anyhow!(e))?;
    set_interruptible(Interruptible::Nothing);
    if args.format == Format::Json {
        crate::query::print_json(&validation)?;
    } else {
        print_validation(&validation);
    }
    Ok(if validation.valid {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}

/// The human form of a validation: each action with its findings, then the verdict.
fn print_validation(validation: &once_build::validation::ActionsValidation) {
    for problem in &validation.problems {
        println!("{}", printable(problem));
    }
    let mut found = 0;
    for action in &validation.actions {
        let state = match action.status {
            once_build::record::ActionState::Succeeded if action.findings.is_empty() => "ok",
            once_build::record::ActionState::Succeeded => "undeclared access",
            once_build::record::ActionState::Failed => "failed",
            once_build::record::ActionState::Skipped => "skipped",
            once_build::record::ActionState::Cancelled => "cancelled",
        };
        println!("{}: {state}", printable(&action.id));
        for finding in &action.findings {
            found += 1;
            println!("  {} {}", finding.access, printable(&finding.repair));
        }
        if action.findings.is_empty()
            && let Some(message) = &action.message
        {
            println!("  {}", printable(message));
        }
    }
    let count = validation.actions.len();
    let actions = if count == 1 { "action" } else { "actions" };
    if validation.valid {
        let (ran, declare) = if count == 1 {
            ("ran", "it declares")
        } else {
            ("ran", "they declare")
        };
        println!(
            "actions valid: {count} {actions} {ran} sandboxed and touched only what {declare}"
        );
    } else {
        let accesses = if found == 1 { "access" } else { "accesses" };
        println!("actions invalid: {found} undeclared {accesses} across {count} {actions}");
    }
}

/// `once build PATTERN…`.
pub fn build(args: &Args, patterns: &[String], exec: &ExecArgs) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let session = open_session(&root, exec)?;
    // Connecting overlaps the planning.
    session.connect_remote_early();
    let request = PlanRequest::Capability {
        patterns,
        capability: "build",
    };
    let plan = plan_cold(&root, session.store(), &request, true)?.plan;
    if !plan.problems.is_empty() {
        return refuse(&plan, args.format);
    }
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let line = progress_line(&plan, &plan.actions, args.format);
    let observer = line.as_ref().map(|line| line as &dyn Observer);
    // The JSON answer is made while the evidence is recorded (each is a few percent of a
    // no-op build of 10,000 targets, and both only read the plan and the report); it is
    // printed once the evidence is recorded, so whoever reads it can query it.
    let json = args.format == Format::Json;
    let (built, answer) = session
        .build(&plan, observer, |records, report| {
            json.then(|| {
                serde_json::to_vec(&Answer {
                    success: report.succeeded(),
                    capability: "build",
                    exit_code: None,
                    targets: records,
                    problems: &[],
                    diagnostics: &[],
                })
            })
        })
        .map_err(|e| anyhow!(e))?;
    if let Some(line) = &line {
        line.clear();
    }
    set_interruptible(Interruptible::Nothing);
    print_warnings(&built.warnings);
    if let Some(answer) = answer {
        let answer = answer.context("cannot encode the JSON answer")?;
        print_json_bytes(&answer)?;
    } else {
        print_records(&built.records);
        let success = built.succeeded();
        let (hit, miss, bypass, not_ok) = once_build::action_counts(&built.report);
        let actions = built.report.results.len();
        let summary = format!(
            "{} {} {} ({} {}: {hit} hit, {miss} miss, {bypass} bypass{})",
            if success { "built" } else { "failed to build" },
            built.records.len(),
            if built.records.len() == 1 {
                "target"
            } else {
                "targets"
            },
            actions,
            if actions == 1 { "action" } else { "actions" },
            if not_ok > 0 {
                format!(", {not_ok} failed or not run")
            } else {
                String::new()
            }
        );
        println!("{summary}");
    }
    let code = built.exit_code(&plan);
    crate::server::memo::offer(&root, &plan, &built, &session, code);
    // The process ends with the build: what it holds is left to the exit, not freed
    // (10,000 actions' plan, results and records took a no-op build of 10,000 targets
    // about a twentieth of its time to free).
    crate::context::leave_to_exit((plan, built, session));
    Ok(outcome_of(code))
}

/// One line per target with its cache state; a failure's command, exit code and output.
pub(crate) fn print_records(records: &[TargetRecord]) {
    use std::fmt::Write as _;
    // Printed at once: a line per `println!` was a system call per target (10,000 for
    // a no-op build of 10,000 targets).
    let mut out = String::new();
    // A failure shown once in full: a target skipped because of it refers to it.
    let mut shown = std::collections::HashSet::new();
    for record in records {
        let state = match (record.status, record.cache) {
            (TargetStatus::Completed, Some(cache)) => cache.as_str().to_owned(),
            (TargetStatus::Completed, None) if !record.implemented => format!(
                "nothing to run (the kind does not implement `{}`)",
                record.capability
            ),
            (TargetStatus::Completed, None) => "nothing to run".to_owned(),
            (TargetStatus::Failed, _) => "FAILED".to_owned(),
            (TargetStatus::Skipped, _) => "SKIPPED".to_owned(),
            (TargetStatus::Cancelled, _) => "CANCELLED".to_owned(),
        };
        let _ = writeln!(
            out,
            "{} ({}): {state}",
            printable(&record.target),
            printable(&record.kind)
        );
        let Some(failure) = &record.failure else {
            continue;
        };
        if record.status == TargetStatus::Skipped {
            let _ = write!(out, "  not built: `{}` failed", printable(&failure.action));
            if !shown.insert(failure.action.as_str()) {
                let _ = writeln!(out, " (above)");
                continue;
            }
            let _ = writeln!(out);
        } else {
            shown.insert(failure.action.as_str());
        }
        let _ = writeln!(out, "  action:    {}", printable(&failure.action));
        if !failure.command.is_empty() {
            let _ = writeln!(out, "  command:   {}", printable(&failure.command));
        }
        if let Some(code) = failure.exit_code {
            let _ = writeln!(out, "  exit code: {code}");
        }
        // The exit code tells why, unless the failure came after it (a missing output, an
        // undeclared read) or there is none (a signal, a step that failed).
        let exit_says_it = failure.exit_code.is_some_and(|code| {
            failure
                .message
                .ends_with(&format!("exited with code {code}"))
        });
        if !exit_says_it {
            let _ = writeln!(out, "  error:     {}", printable(&failure.message));
        }
        for (name, text) in [
            ("stdout", &failure.stdout_tail),
            ("stderr", &failure.stderr_tail),
        ] {
            if text.is_empty() {
                continue;
            }
            let _ = writeln!(out, "  {name} (last lines):");
            for line in text.lines() {
                let _ = writeln!(out, "    {}", printable(line));
            }
        }
    }
    print!("{out}");
}

/// The plan of `once run`'s command, as [`run`] makes it in-process (on the workspace
/// server: from its warm database, for a client that runs the program itself).
pub(crate) fn plan_for_run(args: &Args) -> anyhow::Result<Plan> {
    let crate::args::Command::Run { target, exec, .. } = &args.command else {
        return Err(anyhow!("not a `once run` command"));
    };
    let root = workspace_root(args)?;
    let session = open_session(&root, exec)?;
    let patterns = [target.clone()];
    let request = PlanRequest::Capability {
        patterns: &patterns,
        capability: "run",
    };
    Ok(plan_cold(&root, session.store(), &request, false)?.plan)
}

/// `once run TARGET [-- ARGS…]`: builds what the run capability needs, then runs its
/// uncached commands with the terminal attached (ARGS appended to the last one). Exits
/// with the program's exit code once it ran (`once_build::session::exit`).
pub fn run(
    args: &Args,
    target: &str,
    extra: &[String],
    exec: &ExecArgs,
) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let session = open_session(&root, exec)?;
    session.connect_remote_early();
    let patterns = [target.to_owned()];
    let request = PlanRequest::Capability {
        patterns: &patterns,
        capability: "run",
    };
    // Planned by the workspace server when one runs (the program still runs here, with
    // this terminal).
    let plan = match crate::server::client::plan_run(args) {
        Some(plan) => plan,
        None => plan_cold(&root, session.store(), &request, false)?.plan,
    };
    if !plan.problems.is_empty() {
        return refuse(&plan, args.format);
    }
    let own: Vec<String> = plan
        .targets
        .first()
        .map(|t| t.actions.clone())
        .unwrap_or_default();
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let (before, _) = plan.split_program();
    let line = progress_line(&plan, &before, args.format);
    let prepared = session.prepare_run(&plan, line.as_ref().map(|line| line as &dyn Observer));
    if let Some(line) = &line {
        line.clear();
    }
    set_interruptible(Interruptible::Nothing);
    let mut prepared = prepared.map_err(|e| anyhow!(e))?;
    print_warnings(&prepared.warnings);
    if !prepared.report.succeeded() {
        // The program is not started: its actions are skipped, for the failure before.
        for planned in &prepared.program {
            let mut skipped = attached_result(&planned.action.id, once_exec::ActionStatus::Skipped);
            skipped.cache = None;
            skipped.message = Some("not started: what it needs failed to build".to_owned());
            prepared.report.results.push(skipped);
        }
        let (records, code) = prepared.finish(&plan);
        if args.format == Format::Json {
            print_json(
                &json!({ "success": false, "capability": "run", "targets": records, "problems": [], "diagnostics": [] }),
            )?;
        } else {
            print_records(&records);
            println!(
                "not run: what `{}` needs failed to build",
                printable(target)
            );
        }
        return Ok(outcome_of(code));
    }
    // A run the kind declares cacheable went through the executor: replay its output.
    if args.format == Format::Human {
        for id in &own {
            if let Some(result) = prepared.report.result(id) {
                let _ = crate::output::stdout().write_all(&result.stdout.tail);
                let _ = crate::output::stderr().write_all(&result.stderr.tail);
            }
        }
    }
    let host = once_exec::HostEnvironment::from_process();
    let last = prepared.program.len().saturating_sub(1);
    let mut exit_code = None;
    for (index, planned) in prepared.program.iter().enumerate() {
        let ActionStep::Run(command) = &planned.action.step else {
            continue;
        };
        let environment = host.action_environment(&command.env, &root);
        let cwd = if command.cwd.is_empty() {
            root.clone()
        } else {
            root.join(&command.cwd)
        };
        let path = environment.get("PATH").cloned().unwrap_or_default();
        let program = once_exec::tools::resolve_program(&command.argv[0], &path, &cwd)
            .map_err(|e| anyhow!("cannot run `{}`: {e}", planned.action.id))?;
        let mut argv = vec![program.to_string_lossy().into_owned()];
        argv.extend_from_slice(&command.argv[1..]);
        if index == last {
            argv.extend_from_slice(extra);
        }
        // Without a terminal the program gets a process group of its own, so a signal
        // reaches everything it started; on a terminal it stays in the foreground group
        // (it reads the terminal, and the terminal's ^C reaches it directly).
        // Sandboxed, the group is also contained: nothing the program starts outlives it.
        let group = if std::io::stdin().is_terminal() {
            once_exec::launch::AttachedGroup::Terminal
        } else if session.sandbox_for(&plan) == once_exec::SandboxMode::On {
            once_exec::launch::AttachedGroup::Contained
        } else {
            once_exec::launch::AttachedGroup::Own
        };
        let attached = once_exec::launch::Program {
            path: &program,
            argv: &argv,
            env: &environment,
            cwd: &cwd,
        };
        let started = std::time::Instant::now();
        let status = once_exec::launch::run_attached(
            &attached,
            group,
            &mut |process| {
                set_interruptible(Interruptible::Program(process));
                // A signal that came before the program started is its too.
                if let Some(signal) = received_signal() {
                    process.signal(signal);
                }
            },
            &mut || set_interruptible(Interruptible::Nothing),
        )
        .with_context(|| format!("cannot start `{}`", program.display()))?;
        let code = status.code();
        exit_code = code;
        let ok = code.is_some_and(|c| command.success_exit_codes.contains(&c));
        let mut result = attached_result(
            &planned.action.id,
            if ok {
                once_exec::ActionStatus::Succeeded
            } else {
                once_exec::ActionStatus::Failed
            },
        );
        result.exit_code = code;
        result.signal = std::os::unix::process::ExitStatusExt::signal(&status);
        result.duration = started.elapsed();
        if !ok {
            result.message = Some(match code {
                Some(code) => format!("the program exited with code {code}"),
                None => "the program was killed by a signal".to_owned(),
            });
        }
        prepared.report.results.push(result);
        if !ok || received_signal().is_some() {
            break;
        }
    }
    print_warnings(session.record_program(&plan, &prepared).as_slice());
    let (records, code) = prepared.finish(&plan);
    let success = code == session::exit::SUCCESS;
    if args.format == Format::Json {
        print_json(&Answer {
            success,
            capability: "run",
            exit_code: Some(exit_code),
            targets: &records,
            problems: &[],
            diagnostics: &[],
        })?;
    } else if !success {
        eprintln!(
            "once: `{}` failed: {}",
            printable(target),
            match exit_code {
                Some(code) => format!("exit code {code}"),
                None => "killed by a signal".to_owned(),
            }
        );
    }
    Ok(outcome_of(code))
}

/// The result of an action `once run` runs itself, attached to the terminal: uncached,
/// no key, no captured streams.
fn attached_result(id: &str, status: once_exec::ActionStatus) -> once_exec::ActionResult {
    once_exec::ActionResult {
        cache: Some(once_exec::CacheState::Bypass),
        ..once_exec::ActionResult::new(id, status)
    }
}
