//! Running one program: the [`ProcessRunner`] trait, the real [`SystemRunner`] and the
//! [`CancelHandle`] that kills what runs.
//!
//! The system runner starts each program as the leader of its own process group, with
//! exactly the environment it is given, stdin from `/dev/null` and stdout/stderr to the
//! files it is given (the executor passes the pipes of [`crate::capture`]).
//! When the program exits, its process group is killed before the program is reaped, so
//! nothing it left running in the background survives it (a process that moved itself to
//! another group or session with `setsid` escapes this; containing those needs cgroups).
//! Cancelling kills every registered group with `SIGKILL` at once. Each running group is
//! also announced to the [`crate::reaper`], which kills it if this process dies first.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::File;
use std::io;
use std::os::fd::AsFd as _;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use once_sandbox::launcher::{LaunchError, Launcher};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

/// One program to run.
pub struct ProcessRequest<'a> {
    /// The resolved program (absolute).
    pub program: &'a Path,
    /// The command line as declared; `argv[0]` is passed as the program's name.
    pub argv: &'a [String],
    /// The complete environment (nothing else is inherited).
    pub env: &'a BTreeMap<String, String>,
    /// The working directory (absolute).
    pub cwd: &'a Path,
    /// The sandbox the program runs in ([`crate::sandbox`]); `None`: unconfined.
    pub confinement: Option<&'a once_sandbox::Prepared>,
    /// Where the program's file accesses go when it runs traced (validation); `None`:
    /// not traced.
    pub trace: Option<&'a Mutex<Vec<crate::sandbox::Access>>>,
    pub stdout: File,
    pub stderr: File,
    pub cancel: &'a CancelHandle,
    /// How long the program may run; at the limit its process group is killed.
    pub timeout: Option<Duration>,
}

/// How a program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProcessExit {
    Code(i32),
    Signal(i32),
    /// Killed at its time limit ([`ProcessRequest::timeout`]).
    TimedOut,
}

impl ProcessExit {
    /// How a reaped process ended.
    fn of(status: std::process::ExitStatus) -> ProcessExit {
        match (status.code(), status.signal()) {
            (Some(code), _) => ProcessExit::Code(code),
            (None, Some(signal)) => ProcessExit::Signal(signal),
            (None, None) => ProcessExit::Signal(0),
        }
    }
}

/// Something that runs programs: [`SystemRunner`], or a fake in tests.
pub trait ProcessRunner: Send + Sync {
    /// Runs `request` to its end (or until it is cancelled).
    fn run(&self, request: ProcessRequest<'_>) -> io::Result<ProcessExit>;
}

/// Runs programs as real processes, each in its own process group.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemRunner;

impl ProcessRunner for SystemRunner {
    fn run(&self, request: ProcessRequest<'_>) -> io::Result<ProcessExit> {
        let program = crate::launch::Program {
            path: request.program,
            argv: request.argv,
            env: request.env,
            cwd: request.cwd,
        };
        // A confined program in a PID namespace of its own is started by the sandbox's
        // launcher when there is one, so that this process does not fork for it; when the
        // launcher is gone, it is forked here.
        if let Some(confinement) = request.confinement
            && request.trace.is_none()
            && confinement.own_pids()
            && let Some(launcher) = crate::launch::sandbox_launcher()
        {
            match run_through_launcher(launcher, &program, confinement, &request) {
                Err(LaunchError::Unavailable(_)) => crate::launch::sandbox_launcher_failed(),
                Err(LaunchError::Failed(error)) => return Err(error),
                Ok(exit) => return Ok(exit),
            }
        }
        let mut command = program.command();
        command
            .stdout(request.stdout)
            .stderr(request.stderr)
            .process_group(0);
        if let Some(confinement) = request.confinement {
            program.confine(&mut command, confinement)?;
        }
        if let Some(sink) = request.trace {
            return run_traced(&mut command, sink);
        }
        let mut child = spawn(&mut command)?;
        let group = Pid::from_raw(child.id().cast_signed());
        let Some(group) = group else {
            return Err(io::Error::other("the process has no valid id"));
        };
        request.cancel.register(group);
        crate::reaper::watch(group);
        let watchdog = request.timeout.map(|limit| Watchdog::start(group, limit));
        // Wait for the leader to exit without reaping it, so its id (the group's id) cannot
        // be reused before the group is killed.
        wait_unreaped(group);
        let timed_out = watchdog.is_some_and(Watchdog::stop);
        let _ = kill_process_group(group, Signal::KILL);
        request.cancel.unregister(group);
        crate::reaper::forget(group);
        let status = child.wait()?;
        if timed_out {
            return Ok(ProcessExit::TimedOut);
        }
        Ok(ProcessExit::of(status))
    }
}

/// Runs a confined program through the sandbox's launcher ([`crate::launch`]): the same
/// process group, cancelling, reaper and time limit as a program forked here.
fn run_through_launcher(
    launcher: &Launcher,
    program: &crate::launch::Program<'_>,
    confinement: &once_sandbox::Prepared,
    request: &ProcessRequest<'_>,
) -> Result<ProcessExit, LaunchError> {
    let exec = once_sandbox::Exec {
        path: program.path,
        argv: program.argv,
        env: program.env,
    };
    let launched = launcher.start(
        confinement,
        &exec,
        program.cwd,
        request.stdout.as_fd(),
        request.stderr.as_fd(),
    )?;
    let Some(group) = Pid::from_raw(launched.pid()) else {
        return Err(LaunchError::Unavailable(io::Error::other(
            "the sandbox's launcher reported an invalid process id",
        )));
    };
    request.cancel.register(group);
    crate::reaper::watch(group);
    let watchdog = request.timeout.map(|limit| Watchdog::start(group, limit));
    // The leader has exited but is not reaped (the launcher waits for `W`), so its id
    // (the group's) cannot be reused before the group is killed.
    launched.wait_exited();
    let timed_out = watchdog.is_some_and(Watchdog::stop);
    let _ = kill_process_group(group, Signal::KILL);
    request.cancel.unregister(group);
    crate::reaper::forget(group);
    // The program ran: a launcher that cannot say how it ended makes this run fail (it
    // must not run again elsewhere).
    let status = launched.reap().map_err(LaunchError::Failed)?;
    if timed_out {
        return Ok(ProcessExit::TimedOut);
    }
    let status = std::process::ExitStatus::from_raw(status);
    Ok(ProcessExit::of(status))
}

/// Runs `command` traced to its end, its file accesses into `sink`. It is not announced
/// for cancelling or to the reaper: the tracer kills every traced process when it stops
/// (and the kernel does when this process dies), and a traced run has no time limit.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
fn run_traced(
    command: &mut std::process::Command,
    sink: &Mutex<Vec<crate::sandbox::Access>>,
) -> io::Result<ProcessExit> {
    let (status, accesses) = once_sandbox::trace::run_traced(command)?;
    sink.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .extend(accesses);
    Ok(ProcessExit::of(status))
}

#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
fn run_traced(
    _command: &mut std::process::Command,
    _sink: &Mutex<Vec<crate::sandbox::Access>>,
) -> io::Result<ProcessExit> {
    Err(io::Error::new(
        io::ErrorKind::Unsupported,
        "tracing a program's file accesses needs Linux on x86_64",
    ))
}

/// Waits until the leader of `group` has exited, without reaping it: its id (the group's)
/// cannot be reused until it is reaped, so the group can still be killed safely.
pub(crate) fn wait_unreaped(group: Pid) {
    while let Err(rustix::io::Errno::INTR) = waitid(
        WaitId::Pid(group),
        WaitIdOptions::EXITED | WaitIdOptions::NOWAIT,
    ) {}
}

/// How many times a start failing with `ETXTBSY` is tried again.
const BUSY_RETRIES: u32 = 8;

/// Starts `command`, trying again (1, 2, 4, … ms later) while the program is "busy":
/// `ETXTBSY` means some process still held the executable open for writing when it
/// was to run, typically a child another thread forked while this file was being
/// written (it inherits the descriptor until its own `exec`), so the condition passes.
pub fn spawn(command: &mut std::process::Command) -> io::Result<std::process::Child> {
    let mut pause = Duration::from_millis(1);
    let mut tries = 0;
    loop {
        match command.spawn() {
            Err(e)
                if e.raw_os_error() == Some(rustix::io::Errno::TXTBSY.raw_os_error())
                    && tries < BUSY_RETRIES =>
            {
                tries += 1;
                std::thread::sleep(pause);
                pause *= 2;
            }
            spawned => return spawned,
        }
    }
}

/// Kills a process group when its time limit passes, unless stopped first.
struct Watchdog {
    state: Arc<(Mutex<WatchdogState>, Condvar)>,
    thread: std::thread::JoinHandle<()>,
}

#[derive(Default)]
struct WatchdogState {
    /// The program ended: the watchdog has nothing left to do.
    stopped: bool,
    /// The watchdog killed the group.
    fired: bool,
}

impl Watchdog {
    fn start(group: Pid, limit: Duration) -> Watchdog {
        let state = Arc::new((Mutex::new(WatchdogState::default()), Condvar::new()));
        let shared = Arc::clone(&state);
        let thread = std::thread::spawn(move || {
            let (lock, wake) = &*shared;
            let guard = lock.lock().unwrap_or_else(|e| e.into_inner());
            let (mut guard, _) = wake
                .wait_timeout_while(guard, limit, |state| !state.stopped)
                .unwrap_or_else(|e| e.into_inner());
            if !guard.stopped {
                // The leader has not been reaped (the runner waits with NOWAIT), so the
                // group id is still this group's.
                let _ = kill_process_group(group, Signal::KILL);
                guard.fired = true;
            }
        });
        Watchdog { state, thread }
    }

    /// Stops the watchdog; whether it killed the group first.
    fn stop(self) -> bool {
        {
            let (lock, wake) = &*self.state;
            lock.lock().unwrap_or_else(|e| e.into_inner()).stopped = true;
            wake.notify_all();
        }
        let _ = self.thread.join();
        let (lock, _) = &*self.state;
        lock.lock().unwrap_or_else(|e| e.into_inner()).fired
    }
}

/// Cancels an execution: no new action starts and every running process group is
/// killed. Clones share the same state.
#[derive(Clone, Default)]
pub struct CancelHandle {
    state: Arc<(Mutex<CancelState>, Condvar)>,
}

#[derive(Default)]
struct CancelState {
    cancelled: bool,
    groups: BTreeSet<i32>,
}

impl CancelHandle {
    pub fn new() -> CancelHandle {
        CancelHandle::default()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CancelState> {
        self.state.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Cancels: kills every running process group (`SIGKILL`) and wakes waiters.
    pub fn cancel(&self) {
        let mut state = self.lock();
        state.cancelled = true;
        for group in &state.groups {
            if let Some(pid) = Pid::from_raw(*group) {
                let _ = kill_process_group(pid, Signal::KILL);
            }
        }
        self.state.1.notify_all();
    }

    pub fn is_cancelled(&self) -> bool {
        self.lock().cancelled
    }

    /// Registers a running process group; killed at once when already cancelled.
    pub fn register(&self, group: Pid) {
        let mut state = self.lock();
        if state.cancelled {
            let _ = kill_process_group(group, Signal::KILL);
        }
        state.groups.insert(group.as_raw_nonzero().get());
    }

    pub fn unregister(&self, group: Pid) {
        self.lock().groups.remove(&group.as_raw_nonzero().get());
    }

    /// Kills every registered group without cancelling (an executor being dropped).
    pub(crate) fn kill_registered(&self) {
        let state = self.lock();
        for group in &state.groups {
            if let Some(pid) = Pid::from_raw(*group) {
                let _ = kill_process_group(pid, Signal::KILL);
            }
        }
    }

    /// Sleeps for `duration` or until cancelled; answers whether it was cancelled (for
    /// fake runners that pretend to take time).
    pub fn sleep(&self, duration: Duration) -> bool {
        let state = self.lock();
        let (state, _) = self
            .state
            .1
            .wait_timeout_while(state, duration, |state| !state.cancelled)
            .unwrap_or_else(|e| e.into_inner());
        state.cancelled
    }
}

impl std::fmt::Debug for CancelHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelHandle")
            .field("cancelled", &self.is_cancelled())
            .finish()
    }
}
