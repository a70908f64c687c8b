//! Running a helper program whose output is read through pipes: a test runner under
//! `once __test-adapter`, a listing of its cases, a toolchain probe.
//!
//! The program is the leader of its own process group, as actions are
//! ([`crate::runner`]), announced to the [`crate::reaper`] while it runs. When it exits,
//! its group is killed before it is reaped, so nothing it left running in the
//! background survives it; the output is then read until both pipes are closed, at most
//! [`crate::capture::LINGER`] more (a process that escaped the group with `setsid` and
//! still holds a pipe does not hold the caller up). What the program itself wrote is
//! never lost to that limit: everything already in the pipes when it ended is read
//! first.
//!
//! Reading to end-of-file instead (`Command::output`, `read_to_end` on a child's pipe)
//! waits for every process that inherited the pipe: a test that leaves `sleep 600 &`
//! behind would hold its caller for ten minutes.

use std::io;
use std::os::fd::{AsFd as _, OwnedFd};
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::pipe::{PipeFlags, pipe_with};
use rustix::process::{Pid, Signal, WaitId, WaitIdOptions, kill_process_group, waitid};

use crate::capture::LINGER;

/// The longest the output is read after the program ended while something still
/// writes into it (a process that left the group).
const DRAIN_LIMIT: Duration = Duration::from_secs(2);

/// How often a blocked drain checks whether the program has ended.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// Where one stream of a piped program goes, chunk by chunk as it comes.
pub type Sink<'a> = &'a mut (dyn FnMut(&[u8]) + Send);

/// How a piped program ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PipedExit {
    pub status: ExitStatus,
    /// Killed at the time limit it was given.
    pub timed_out: bool,
}

impl PipedExit {
    /// The exit code, or 128 + the signal that ended it (as a shell reports it).
    pub fn code(&self) -> i32 {
        self.status
            .code()
            .or_else(|| self.status.signal().map(|signal| 128 + signal))
            .unwrap_or(1)
    }
}

/// Runs `program` with `args` in the current directory and environment, standard input
/// closed, as [`run_piped`] runs a command: for front ends, which start processes only
/// through this crate (the tidy's one-runner rule).
pub fn run_program(
    program: &str,
    args: &[String],
    timeout: Option<Duration>,
    stdout: Sink<'_>,
    stderr: Sink<'_>,
) -> io::Result<PipedExit> {
    let mut command = Command::new(program);
    command.args(args).stdin(Stdio::null());
    run_piped(&mut command, timeout, stdout, stderr)
}

/// Runs `program` with `args` in the directory `cwd`, with this process's environment
/// and `env` on top of it, as [`run_program`] does: for a front end asking an ecosystem's
/// own tool (`cargo metadata`, `go list`) about a directory of the workspace.
pub fn run_program_in(
    program: &str,
    args: &[String],
    cwd: &std::path::Path,
    env: &[(&str, &str)],
    timeout: Option<Duration>,
    stdout: Sink<'_>,
    stderr: Sink<'_>,
) -> io::Result<PipedExit> {
    let mut command = Command::new(program);
    command
        .args(args)
        .current_dir(cwd)
        .envs(env.iter().copied())
        .stdin(Stdio::null());
    run_piped(&mut command, timeout, stdout, stderr)
}

/// Runs `command` (its program, arguments, environment, working directory and standard
/// input as the caller set them; its standard output and error are replaced by pipes)
/// as the leader of its own process group, passing what it writes to `stdout` and
/// `stderr` as it comes. At `timeout` its group is killed. Returns once the program
/// has exited, its group is killed and its output is read (see the module's
/// documentation); an error when it could not start.
pub fn run_piped(
    command: &mut Command,
    timeout: Option<Duration>,
    stdout: Sink<'_>,
    stderr: Sink<'_>,
) -> io::Result<PipedExit> {
    // Close-on-exec: programs other threads start never hold them.
    let (out_read, out_write) = pipe_with(PipeFlags::CLOEXEC)?;
    let (err_read, err_write) = pipe_with(PipeFlags::CLOEXEC)?;
    command
        .stdout(Stdio::from(out_write))
        .stderr(Stdio::from(err_write))
        .process_group(0);
    let spawned = crate::runner::spawn(command);
    // The command keeps what it was given: drop the write ends here, or the pipes never
    // reach end-of-file.
    command.stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = spawned?;
    let Some(group) = Pid::from_raw(child.id().cast_signed()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(io::Error::other("the process has no valid id"));
    };
    crate::reaper::watch(group);
    let ended = Arc::new(AtomicBool::new(false));
    std::thread::scope(|scope| {
        let drain = {
            let ended = Arc::clone(&ended);
            scope.spawn(move || drain(&[out_read, err_read], &ended, [stdout, stderr]))
        };
        let timed_out = wait_for_leader(group, timeout);
        // The leader is not reaped yet, so the group's id is still this group's.
        let _ = kill_process_group(group, Signal::KILL);
        crate::reaper::forget(group);
        let status = child.wait();
        ended.store(true, Ordering::Release);
        let drained = drain.join();
        let status = status?;
        match drained {
            Ok(Ok(())) => Ok(PipedExit { status, timed_out }),
            Ok(Err(error)) => Err(error),
            Err(_) => Err(io::Error::other("the output reader panicked")),
        }
    })
}

/// Waits until the group's leader exited (without reaping it); at `timeout` kills the
/// group first and answers true.
fn wait_for_leader(group: Pid, timeout: Option<Duration>) -> bool {
    let Some(limit) = timeout else {
        crate::runner::wait_unreaped(group);
        return false;
    };
    let deadline = Instant::now() + limit;
    let mut pause = Duration::from_millis(1);
    loop {
        match waitid(
            WaitId::Pid(group),
            WaitIdOptions::EXITED | WaitIdOptions::NOWAIT | WaitIdOptions::NOHANG,
        ) {
            Ok(None) | Err(rustix::io::Errno::INTR) => {}
            // Exited, or nothing left to wait for.
            Ok(Some(_)) | Err(_) => return false,
        }
        let now = Instant::now();
        if now >= deadline {
            let _ = kill_process_group(group, Signal::KILL);
            return true;
        }
        std::thread::sleep(pause.min(deadline - now));
        pause = (pause * 2).min(Duration::from_millis(20));
    }
}

/// Reads `pipes` into `sinks` until both are closed, or, once `ended`, until nothing
/// more is ready after [`LINGER`] (at most [`DRAIN_LIMIT`]).
fn drain(pipes: &[OwnedFd; 2], ended: &AtomicBool, sinks: [Sink<'_>; 2]) -> io::Result<()> {
    let mut open = [true, true];
    let mut buffer = vec![0u8; 64 * 1024];
    // When the program ended: then until when to wait for more, and the hard stop.
    let mut ended_at: Option<Instant> = None;
    while open.iter().any(|open| *open) {
        if ended_at.is_none() && ended.load(Ordering::Acquire) {
            ended_at = Some(Instant::now());
        }
        let wait = match ended_at {
            None => POLL_INTERVAL,
            Some(at) => {
                let elapsed = at.elapsed();
                if elapsed >= DRAIN_LIMIT {
                    break;
                }
                // After the linger, only what is ready at once is read.
                LINGER.saturating_sub(elapsed).min(POLL_INTERVAL)
            }
        };
        let interval = Timespec::try_from(wait).map_err(io::Error::other)?;
        let indices: Vec<usize> = (0..2).filter(|index| open[*index]).collect();
        let mut poll_fds: Vec<PollFd<'_>> = indices
            .iter()
            .map(|index| PollFd::new(&pipes[*index], PollFlags::IN))
            .collect();
        match poll(&mut poll_fds, Some(&interval)) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(error) => return Err(error.into()),
        }
        let ready: Vec<usize> = indices
            .iter()
            .zip(&poll_fds)
            .filter(|(_, polled)| !polled.revents().is_empty())
            .map(|(index, _)| *index)
            .collect();
        if ready.is_empty() {
            if ended_at.is_some_and(|at| at.elapsed() >= LINGER) {
                break;
            }
            continue;
        }
        for index in ready {
            match rustix::io::read(pipes[index].as_fd(), &mut buffer) {
                Ok(0) => open[index] = false,
                Ok(read) => (sinks[index])(&buffer[..read]),
                Err(rustix::io::Errno::INTR | rustix::io::Errno::AGAIN) => {}
                Err(error) => return Err(error.into()),
            }
        }
    }
    Ok(())
}

/// Collects up to `limit` bytes of a stream, discarding the rest (still reading it, so
/// the program never blocks on a full pipe); says whether anything was discarded.
#[derive(Debug, Default)]
pub struct Bounded {
    pub bytes: Vec<u8>,
    pub cut: bool,
    limit: usize,
}

impl Bounded {
    pub fn new(limit: usize) -> Bounded {
        Bounded {
            bytes: Vec::new(),
            cut: false,
            limit,
        }
    }

    pub fn take(&mut self, chunk: &[u8]) {
        let room = self.limit.saturating_sub(self.bytes.len());
        self.bytes
            .extend_from_slice(&chunk[..room.min(chunk.len())]);
        self.cut |= chunk.len() > room;
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn sh(script: &str) -> Command {
        let mut command = Command::new("sh");
        command
            .args(["-c", script])
            .stdin(Stdio::null())
            .current_dir("/");
        command
    }

    /// Runs `script`; its exit, both streams, and how long it took.
    fn run(script: &str, timeout: Option<Duration>) -> (PipedExit, String, String, Duration) {
        let mut out = Vec::new();
        let mut err = Vec::new();
        let started = Instant::now();
        let exit = run_piped(
            &mut sh(script),
            timeout,
            &mut |chunk| out.extend_from_slice(chunk),
            &mut |chunk| err.extend_from_slice(chunk),
        )
        .expect("sh starts");
        let took = started.elapsed();
        (
            exit,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
            took,
        )
    }

    /// Whether a process of this id is alive (not a zombie).
    pub(crate) fn alive(pid: &str) -> bool {
        std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
            !stat
                .rsplit(')')
                .next()
                .unwrap_or("")
                .trim()
                .starts_with('Z')
        })
    }

    #[test]
    fn a_background_child_holding_the_pipes_is_killed_and_not_waited_for() {
        let (exit, out, err, took) =
            run("echo out; echo err >&2; sleep 600 & echo $!; exit 3", None);
        assert_eq!(exit.code(), 3);
        assert!(!exit.timed_out);
        assert!(took < Duration::from_secs(5), "{took:?}");
        let mut lines = out.lines();
        assert_eq!(lines.next(), Some("out"));
        let sleeper = lines.next().expect("the background child's id");
        assert_eq!(err, "err\n");
        std::thread::sleep(Duration::from_millis(50));
        assert!(!alive(sleeper), "the background child survived");
    }

    #[test]
    fn everything_the_program_wrote_is_read_however_much() {
        // More than a pipe holds, written by a child that exits before the shell.
        let (exit, out, _, _) = run("head -c 3000000 /dev/zero | tr '\\0' x; exit 0", None);
        assert_eq!(exit.code(), 0);
        assert_eq!(out.len(), 3_000_000);
    }

    #[test]
    fn an_escaped_writer_holds_the_caller_only_for_the_linger() {
        let (exit, out, _, took) = run("echo before; setsid sh -c 'sleep 3' & exit 0", None);
        assert_eq!(exit.code(), 0);
        assert_eq!(out, "before\n");
        assert!(took < Duration::from_secs(2), "{took:?}");
    }

    #[test]
    fn at_the_time_limit_the_group_is_killed() {
        let (exit, out, _, took) = run("echo started; sleep 600", Some(Duration::from_millis(300)));
        assert!(exit.timed_out);
        assert_eq!(exit.code(), 128 + 9);
        assert_eq!(out, "started\n");
        assert!(took < Duration::from_secs(5), "{took:?}");
    }

    #[test]
    fn a_program_that_cannot_start_is_an_error() {
        let mut command = Command::new("/no/such/program");
        let error = run_piped(&mut command, None, &mut |_| {}, &mut |_| {}).unwrap_err();
        assert_eq!(error.kind(), io::ErrorKind::NotFound);
    }

    #[test]
    fn bounded_keeps_the_beginning() {
        let mut bounded = Bounded::new(4);
        bounded.take(b"ab");
        bounded.take(b"cdef");
        bounded.take(b"g");
        assert_eq!(bounded.bytes, b"abcd");
        assert!(bounded.cut);
    }
}
