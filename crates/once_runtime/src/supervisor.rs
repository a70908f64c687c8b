//! The supervisor (`once __supervise DIR`): runs a session's program and records what
//! happens to it, for its whole life holding the session's life lock (its standard
//! input, inherited locked from the starter).
//!
//! It first leaves the starter's process session (`setsid`: no terminal, no hang-up when
//! the starter's terminal closes) and becomes a child subreaper (Linux), so that every
//! descendant of the program, even one whose parent exited, stays its descendant. Each
//! command runs in a process group of its own, with the scrubbed environment, stdin from
//! `/dev/null`, and its stdout and stderr on pipes that two reader threads cut into
//! lines; the main loop appends them to the log in the order they arrive, reaps
//! orphans, and every 50 ms checks for the program's end and for a stop request.
//!
//! - **The program exits**: its group and every remaining descendant are killed (as
//!   `once run` kills an action's group), the pipes are read to their end, and the
//!   record becomes `exited` (a success exit code), or `failed` with the code or signal.
//! - **A stop request** (`stop.request`): `SIGTERM` to the program's process group; when
//!   no descendant is left the record becomes `stopped` with `stopped_by: SIGTERM`; when
//!   the grace period passes first, `SIGKILL` goes to the group and to every remaining
//!   descendant (found by parent ids in `/proc`, so processes that left the group are
//!   included) and the record says `stopped_by: SIGKILL`.

use std::io;
use std::path::Path;
use std::process::{ChildStderr, ChildStdout};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

use crate::logs::{LineBuffer, LogSource, LogWriter};
use crate::processes;
use crate::session::{self, STOP_FILE, SessionStatus, now_unix_ms};
use crate::start::{ProgramSpec, read_programs};
use crate::stop::StopSignal;

/// How often the supervisor looks at the program and for a stop request.
const TICK: Duration = Duration::from_millis(50);

/// How long the supervisor waits for the pipes to close after the program's processes
/// were killed (a process that left the supervisor's reach may hold them).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

enum Event {
    Line(LogSource, String, u64),
    Closed,
}

/// How one program ended.
struct Ending {
    exit_code: Option<i32>,
    signal: Option<i32>,
    stopped_by: Option<StopSignal>,
    stopped: bool,
}

/// Runs the session whose directory is `path` (`<root>/.once/runtime/<id>`) to its end,
/// reaching it from the workspace root without following links. Errors are recorded in
/// the session (and the supervisor's log), so the caller only prints them.
pub fn supervise(path: &Path) -> io::Result<()> {
    let invalid = || io::Error::other(format!("`{}` is not a session directory", path.display()));
    let id = path
        .file_name()
        .and_then(|name| name.to_str())
        .ok_or_else(invalid)?;
    let root = path
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .ok_or_else(invalid)?;
    let handle = session::session_dir(root, id)?;
    supervise_in(&handle)
}

fn supervise_in(dir: &Path) -> io::Result<()> {
    let me = std::process::id();
    if let Err(e) = rustix::process::setsid() {
        return fail(
            dir,
            format!("the supervisor cannot start a process session: {e}"),
        );
    }
    if let Some(pid) = Pid::from_raw(me.cast_signed())
        && let Err(e) = rustix::process::set_child_subreaper(Some(pid))
    {
        note(&format!("the supervisor is not a child subreaper: {e}"));
    }
    let programs = match read_programs(dir) {
        Ok(programs) => programs,
        Err(e) => return fail(dir, format!("cannot read the session's program.json: {e}")),
    };
    session::update_record(dir, |record| {
        record.supervisor_pid = Some(me);
        record.boot_id = processes::boot_id();
    })?;
    let mut log = LogWriter::create(dir)?;
    let mut ending = Ending {
        exit_code: None,
        signal: None,
        stopped_by: None,
        stopped: false,
    };
    for spec in &programs {
        if dir.join(STOP_FILE).exists() {
            ending.stopped = true;
            break;
        }
        ending = match run_program(dir, spec, &mut log) {
            Ok(ending) => ending,
            Err(e) => {
                return fail(
                    dir,
                    format!("cannot start `{}`: {e}", spec.program.display()),
                );
            }
        };
        let succeeded = ending
            .exit_code
            .is_some_and(|code| spec.success_exit_codes.contains(&code));
        if ending.stopped || !succeeded {
            break;
        }
    }
    session::update_record(dir, |record| {
        record.finished_at_unix_ms = Some(now_unix_ms());
        record.exit_code = ending.exit_code;
        record.signal = ending.signal;
        let last = programs.last();
        let succeeded = ending
            .exit_code
            .is_some_and(|code| last.is_some_and(|spec| spec.success_exit_codes.contains(&code)));
        if ending.stopped || record.status == SessionStatus::Stopping {
            record.status = SessionStatus::Stopped;
            record.stopped_by = ending.stopped_by;
        } else if succeeded {
            record.status = SessionStatus::Exited;
        } else {
            record.status = SessionStatus::Failed;
            record.reason = Some(match (ending.exit_code, ending.signal) {
                (Some(code), _) => format!("the program exited with code {code}"),
                (None, Some(signal)) => format!("the program was killed by signal {signal}"),
                (None, None) => "the program ended without a status".to_owned(),
            });
        }
    })?;
    Ok(())
}

/// A line in the supervisor's own log (its stderr is the session's `supervisor.log`).
fn note(message: &str) {
    use std::io::Write as _;
    let _ = writeln!(io::stderr(), "once: {message}");
}

fn fail(dir: &Path, reason: String) -> io::Result<()> {
    note(&reason);
    session::update_record(dir, |record| {
        record.status = SessionStatus::Failed;
        record.reason = Some(reason);
        record.finished_at_unix_ms = Some(now_unix_ms());
    })?;
    Ok(())
}

fn spawn_reader(
    source: LogSource,
    mut stream: impl io::Read + Send + 'static,
    events: Sender<Event>,
) {
    let body = move || {
        let mut lines = LineBuffer::default();
        let mut buffer = vec![0; 64 * 1024];
        loop {
            match stream.read(&mut buffer) {
                Ok(0) => break,
                Ok(n) => {
                    for line in lines.push(&buffer[..n]) {
                        let _ = events.send(Event::Line(source, line, now_unix_ms()));
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        if let Some(line) = lines.finish() {
            let _ = events.send(Event::Line(source, line, now_unix_ms()));
        }
        let _ = events.send(Event::Closed);
    };
    let _ = std::thread::Builder::new()
        .name(format!("once-supervise-{}", source.as_str()))
        .spawn(body);
}

/// Appends every event that arrived; answers how many streams closed.
fn write_events(events: &Receiver<Event>, first: Option<Event>, log: &mut LogWriter) -> usize {
    let mut closed = 0;
    let mut handle = |event: Event| match event {
        Event::Line(source, message, time) => {
            if let Err(e) = log.append(source, message, time) {
                note(&format!("cannot append to the session log: {e}"));
            }
        }
        Event::Closed => closed += 1,
    };
    if let Some(event) = first {
        handle(event);
    }
    while let Ok(event) = events.try_recv() {
        handle(event);
    }
    closed
}

/// Reaps every exited child but `leader` (orphans re-parented to the supervisor); the
/// leader is only reaped at the end, so its id, its group's, is never reused meanwhile.
fn reap_orphans(leader: i32) {
    let me = std::process::id().cast_signed();
    // `NOWAIT` only tells whether some child is waitable; the zombies are then reaped
    // one by one by id.
    while let Ok(Some(_)) = waitid(
        WaitId::All,
        WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
    ) {
        let zombies: Vec<Pid> = processes::scan()
            .into_iter()
            .filter(|p| p.parent == me && p.zombie && p.pid != leader)
            .filter_map(|p| Pid::from_raw(p.pid))
            .collect();
        if zombies.is_empty() {
            break;
        }
        for pid in zombies {
            let _ = waitid(
                WaitId::Pid(pid),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG,
            );
        }
    }
}

/// Kills the program's group and every remaining descendant (`SIGKILL`) until none is
/// left (bounded), reaping as it goes.
fn kill_everything(group: Pid, leader: i32) {
    let me = std::process::id().cast_signed();
    for _ in 0..100 {
        let _ = kill_process_group(group, Signal::KILL);
        let left = processes::descendants(me, &processes::scan());
        let left: Vec<i32> = left.into_iter().filter(|&pid| pid != leader).collect();
        if left.is_empty() {
            break;
        }
        processes::signal_each(&left, Signal::KILL);
        std::thread::sleep(Duration::from_millis(5));
        reap_orphans(leader);
    }
    reap_orphans(leader);
}

fn run_program(dir: &Path, spec: &ProgramSpec, log: &mut LogWriter) -> io::Result<Ending> {
    let mut child = once_exec::launch::start_grouped(
        &once_exec::launch::Program {
            path: &spec.program,
            argv: &spec.argv,
            env: &spec.env,
            cwd: &spec.cwd,
        },
        spec.contained,
    )?;
    let leader = child.id().cast_signed();
    let Some(group) = Pid::from_raw(leader) else {
        return Err(io::Error::other("the program has no valid process id"));
    };
    session::update_record(dir, |record| {
        record.pid = Some(child.id());
        record.argv.clone_from(&spec.argv);
        if record.status == SessionStatus::Starting {
            record.status = SessionStatus::Running;
        }
    })?;
    let (sender, events) = mpsc::channel();
    let stdout: Option<ChildStdout> = child.stdout.take();
    let stderr: Option<ChildStderr> = child.stderr.take();
    let mut open = 0;
    if let Some(stdout) = stdout {
        spawn_reader(LogSource::Stdout, stdout, sender.clone());
        open += 1;
    }
    if let Some(stderr) = stderr {
        spawn_reader(LogSource::Stderr, stderr, sender.clone());
        open += 1;
    }
    drop(sender);
    let me = std::process::id().cast_signed();
    let mut stop: Option<(Instant, Duration)> = None;
    let mut leader_exited = false;
    let stopped_by = loop {
        let first = events.recv_timeout(TICK).ok();
        open -= write_events(&events, first, log).min(open);
        reap_orphans(leader);
        if !leader_exited
            && let Ok(Some(_)) = waitid(
                WaitId::Pid(group),
                WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
            )
        {
            leader_exited = true;
        }
        if stop.is_none() && dir.join(STOP_FILE).exists() {
            let grace = std::fs::read_to_string(dir.join(STOP_FILE))
                .ok()
                .and_then(|text| text.trim().parse::<u64>().ok())
                .map_or(crate::stop::DEFAULT_GRACE, Duration::from_millis);
            session::update_record(dir, |record| {
                record.status = SessionStatus::Stopping;
                record
                    .stop_requested_at_unix_ms
                    .get_or_insert_with(now_unix_ms);
            })?;
            let _ = kill_process_group(group, Signal::TERM);
            stop = Some((Instant::now(), grace));
        }
        match stop {
            None => {
                if leader_exited {
                    break None;
                }
            }
            Some((since, grace)) => {
                // Zombies are not counted: an empty list means the leader exited too.
                if processes::descendants(me, &processes::scan()).is_empty() {
                    break Some(StopSignal::Term);
                }
                if since.elapsed() >= grace {
                    kill_everything(group, leader);
                    break Some(StopSignal::Kill);
                }
            }
        }
    };
    // The leader has exited (or was just killed): end its group and every descendant
    // before reaping it, so its id (the group's) cannot be reused meanwhile.
    kill_everything(group, leader);
    let status = child.wait()?;
    let drain_until = Instant::now() + DRAIN_LIMIT;
    while open > 0 && Instant::now() < drain_until {
        match events.recv_timeout(TICK) {
            Ok(event) => open -= write_events(&events, Some(event), log).min(open),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    write_events(&events, None, log);
    Ok(Ending {
        exit_code: status.code(),
        signal: std::os::unix::process::ExitStatusExt::signal(&status),
        stopped: stopped_by.is_some(),
        stopped_by,
    })
}
