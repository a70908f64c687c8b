//! The client side: a command that the workspace server can answer is sent to it, and
//! its output written as it arrives; when there is no server, or it is of another
//! build, declines, stops answering (no frame within [`SILENCE`]: it sends a keepalive
//! every second while it works) or dies, the command is computed in-process
//! ([`forward`] answers `None`).
//!
//! Queries are buffered until their exit status arrives, so a server that fails midway
//! leaves nothing printed and the fallback's answer is the only one. Executing commands
//! stream (a build's progress and failures appear as they happen); SIGINT, SIGTERM and
//! SIGHUP are forwarded to the server, which interrupts the command as it would have
//! been interrupted here.
//!
//! `ONCE_SERVER=off` never asks a server; `ONCE_SERVER=auto` (or `[workspace] server =
//! "auto"` in the root manifest, unless `CI` is set) starts one in the background when
//! none runs, and this command is computed in-process meanwhile.

use std::io::Write as _;
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use super::protocol::{self, Hello, Request};
use super::{Paths, VERSION, identity};
use crate::args::{Args, Command, Query};

/// How long `stop` waits for the server to exit and release its lock.
const STOP_DEADLINE: Duration = Duration::from_secs(30);

/// How long the server may take to answer the handshake.
const HANDSHAKE_DEADLINE: Duration = Duration::from_secs(1);

/// The longest silence of a server running a command (it sends a keepalive every
/// second): past it, the server is taken for hung and the command computed here.
const SILENCE: Duration = Duration::from_secs(5);

/// Whether the server runs `args`' command: `Some(executes)` when it does (`executes`:
/// it runs actions, so the environment matters and its output streams), `None` for
/// commands computed in-process (those that read stdin, write manifests, need no
/// workspace, or name paths relative to the current directory that the server cannot
/// open as typed).
pub fn eligible(args: &Args) -> Option<bool> {
    let relative = |store: Option<&Path>| store.is_some_and(|s| s.is_relative());
    match &args.command {
        Command::Query(query) => match query {
            Query::ExternalSource { .. }
            | Query::Evidence { .. }
            | Query::ValidateActions { .. }
            | Query::ValidateTarget { .. }
            | Query::ModuleContract
            | Query::ValidateWorkspace { fix: true } => None,
            _ => Some(false),
        },
        Command::Build { exec, .. } if !relative(exec.store.as_deref()) => Some(true),
        Command::Test { store, .. } if !relative(store.as_deref()) => Some(true),
        Command::Exec { store, .. } if !relative(store.as_deref()) => Some(true),
        _ => None,
    }
}

/// Whether the server plans `args`' command for the client (`once run`: the client runs
/// the program itself, attached to its terminal).
pub fn plannable(args: &Args) -> bool {
    matches!(&args.command, Command::Run { exec, .. }
        if !exec.store.as_deref().is_some_and(|s| s.is_relative()))
}

/// The plan of `once run`'s command from the workspace server; `None` when it must be
/// planned here (no server, another build, a decline, a silence, or `ONCE_SERVER=off`).
pub fn plan_run(args: &Args) -> Option<once_build::Plan> {
    if crate::context::current().is_some() || !plannable(args) {
        return None;
    }
    let mode = mode();
    if mode == Mode::Off {
        return None;
    }
    let root = crate::query::workspace_root(args).ok()?;
    let mut stream = connect_same_build(&root, mode)?;
    let request = request(&root, false)?;
    protocol::write_frame(&mut stream, protocol::PLAN, &request.encode()).ok()?;
    let _ = stream.set_read_timeout(Some(SILENCE));
    loop {
        match protocol::read_frame(&mut stream).ok()? {
            (protocol::KEEPALIVE, _) => {}
            (protocol::PLANNED, bytes) => {
                return once_build::plan_cache::last_plan::decode_transfer(&bytes);
            }
            _ => return None,
        }
    }
}

/// What `ONCE_SERVER` asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Mode {
    /// Unset: use a running server; start one only when the root manifest asks.
    Default,
    Auto,
    Off,
}

fn mode() -> Mode {
    match std::env::var("ONCE_SERVER").as_deref() {
        Ok("off") | Ok("0") | Ok("false") => Mode::Off,
        Ok("auto") | Ok("on") => Mode::Auto,
        _ => Mode::Default,
    }
}

/// Runs `args`' command on the workspace server and answers its exit status; `None`
/// when it must be computed here.
pub fn forward(args: &Args) -> Option<u8> {
    let mode = mode();
    if mode == Mode::Off {
        return None;
    }
    let executes = eligible(args)?;
    let root = crate::query::workspace_root(args).ok()?;
    let mut stream = connect_same_build(&root, mode)?;
    let request = request(&root, executes)?;
    protocol::write_frame(&mut stream, protocol::REQUEST, &request.encode()).ok()?;
    let _ = stream.set_read_timeout(Some(SILENCE));
    if executes {
        forward_signals(&stream);
        streamed(stream)
    } else {
        buffered(stream)
    }
}

/// A connection to the workspace server of `root` when it is this very build; `None`
/// otherwise, after starting one (or replacing one of another build) when servers start
/// automatically.
fn connect_same_build(root: &Path, mode: Mode) -> Option<UnixStream> {
    let paths = Paths::of(root);
    let Some((stream, theirs)) = connect(&paths) else {
        auto_start(&paths, mode);
        return None;
    };
    if theirs.version != VERSION || theirs.identity != identity() {
        // A server of another build: replaced when servers start automatically.
        if wants_server(&paths, mode) {
            let _ = stop(&paths);
            auto_start(&paths, mode);
        }
        return None;
    }
    Some(stream)
}

/// The command as this process would run it.
fn request(root: &Path, executes: bool) -> Option<Request> {
    use std::io::IsTerminal as _;
    let color = match anstream::AutoStream::choice(&std::io::stdout()) {
        anstream::ColorChoice::AlwaysAnsi => 1,
        anstream::ColorChoice::Always => 2,
        _ => 0,
    };
    Some(Request {
        root: root.to_path_buf(),
        argv: std::env::args_os().skip(1).collect(),
        cwd: std::env::current_dir().ok()?,
        env: std::env::vars_os().collect(),
        stdout_terminal: std::io::stdout().is_terminal(),
        stderr_terminal: std::io::stderr().is_terminal(),
        stdout_color: color,
        streamed: executes,
    })
}

/// Collects the answer, then prints it: nothing is printed unless it is complete.
fn buffered(mut stream: UnixStream) -> Option<u8> {
    let mut output: Vec<(u8, Vec<u8>)> = Vec::new();
    loop {
        match protocol::read_frame(&mut stream).ok()? {
            (tag @ (protocol::STDOUT | protocol::STDERR), bytes) => match output.last_mut() {
                // Consecutive writes to one stream are printed as one.
                Some((last, buffer)) if *last == tag => buffer.extend_from_slice(&bytes),
                _ => output.push((tag, bytes)),
            },
            (protocol::KEEPALIVE, _) => {}
            (protocol::EXIT, code) => {
                let code = *code.first()?;
                for (tag, bytes) in &output {
                    print(*tag, bytes);
                }
                return Some(exit_code(code));
            }
            _ => return None,
        }
    }
}

/// Prints the answer as it arrives.
fn streamed(mut stream: UnixStream) -> Option<u8> {
    loop {
        match protocol::read_frame(&mut stream).ok()? {
            (tag @ (protocol::STDOUT | protocol::STDERR), bytes) => print(tag, &bytes),
            (protocol::KEEPALIVE, _) => {}
            (protocol::EXIT, code) => return Some(exit_code(*code.first()?)),
            _ => return None,
        }
    }
}

fn print(tag: u8, bytes: &[u8]) {
    let written = if tag == protocol::STDOUT {
        let mut out = crate::output::stdout();
        out.write_all(bytes).and_then(|()| out.flush())
    } else {
        let mut out = crate::output::stderr();
        out.write_all(bytes).and_then(|()| out.flush())
    };
    let _ = written;
}

/// The server's exit status, unless this process found its own stdout or stderr
/// closed while printing (then 141, as in-process).
fn exit_code(code: u8) -> u8 {
    if crate::output::closed() {
        crate::output::CLOSED_PIPE_EXIT
    } else {
        code
    }
}

/// SIGINT, SIGTERM and SIGHUP go to the server, which interrupts the command.
fn forward_signals(stream: &UnixStream) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let _ = std::thread::Builder::new()
        .name("once-server-signals".into())
        .spawn(move || {
            for signal in signals.forever() {
                if protocol::write_frame(&mut writer, protocol::SIGNAL, &signal.to_le_bytes())
                    .is_err()
                {
                    return;
                }
            }
        });
}

/// Whether a server should run for this workspace: `ONCE_SERVER=auto`, or the root
/// manifest's `[workspace] server = "auto"` outside CI.
fn wants_server(paths: &Paths, mode: Mode) -> bool {
    match mode {
        Mode::Off => false,
        Mode::Auto => true,
        Mode::Default => {
            std::env::var_os("CI").is_none_or(|ci| ci.is_empty())
                && manifest_asks_for_server(&paths.root)
        }
    }
}

/// Whether the root manifest says `[workspace] server = "auto"`.
pub fn manifest_asks_for_server(root: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(root.join("once.toml")) else {
        return false;
    };
    let document = once_syntax::value::document(&once_syntax::parse(&text));
    document
        .root
        .get("workspace")
        .and_then(|entry| match &entry.value.kind {
            once_syntax::value::ValueKind::Table(table) => table.get("server"),
            _ => None,
        })
        .is_some_and(|entry| {
            matches!(&entry.value.kind, once_syntax::value::ValueKind::String(s) if s == "auto")
        })
}

/// Starts a server in the background when one is wanted and none is starting.
fn auto_start(paths: &Paths, mode: Mode) {
    if !wants_server(paths, mode) || starting(paths) {
        return;
    }
    let idle = super::configured_idle().unwrap_or(super::DEFAULT_IDLE);
    let _ = super::spawn(paths, idle);
}

/// Whether a server holds the workspace's lock (it is loading, or runs).
pub fn starting(paths: &Paths) -> bool {
    let Ok(file) = std::fs::File::open(&paths.lock) else {
        return false;
    };
    match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockShared) {
        Ok(()) => {
            let _ = rustix::fs::flock(&file, rustix::fs::FlockOperation::Unlock);
            false
        }
        Err(_) => true,
    }
}

/// Connects and says hello; answers the stream and the server's hello.
fn connect(paths: &Paths) -> Option<(UnixStream, Hello)> {
    let mut stream = UnixStream::connect(&paths.socket).ok()?;
    let _ = stream.set_read_timeout(Some(HANDSHAKE_DEADLINE));
    let _ = stream.set_write_timeout(Some(HANDSHAKE_DEADLINE));
    let ours = Hello {
        version: VERSION.to_owned(),
        identity: identity(),
        pid: 0,
    };
    protocol::write_frame(&mut stream, protocol::HELLO, &ours.encode()).ok()?;
    let (tag, payload) = protocol::read_frame(&mut stream).ok()?;
    if tag != protocol::HELLO {
        return None;
    }
    Some((stream, Hello::decode(&payload)?))
}

/// The server's status, when one of this build answers.
pub fn status(paths: &Paths) -> Option<serde_json::Value> {
    let (mut stream, hello) = connect(paths)?;
    if hello.version != VERSION || hello.identity != identity() {
        return None;
    }
    protocol::write_frame(&mut stream, protocol::STATUS, &[]).ok()?;
    // Measuring the database waits for the request planning now.
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let (tag, payload) = protocol::read_frame(&mut stream).ok()?;
    (tag == protocol::STATUS).then_some(())?;
    serde_json::from_slice(&payload).ok()
}

/// Stops the workspace's server (of any build) and waits until its socket is gone;
/// answers its process id.
pub fn stop(paths: &Paths) -> Option<u32> {
    let (mut stream, hello) = connect(paths)?;
    protocol::write_frame(&mut stream, protocol::STOP, &[]).ok()?;
    let _ = stream.set_read_timeout(Some(Duration::from_secs(30)));
    let _ = protocol::read_frame(&mut stream);
    // It cancels what runs, then removes its socket and exits. Its main thread ends
    // (and shows as gone) before the others: the lock is released only when the last
    // one has, so a `start` right after this finds the workspace free.
    let deadline = std::time::Instant::now() + STOP_DEADLINE;
    while std::time::Instant::now() < deadline
        && (super::process_alive(hello.pid) || starting(paths))
    {
        std::thread::sleep(Duration::from_millis(10));
    }
    Some(hello.pid)
}

/// Stops every server of this user (their records in the runtime directory); records
/// of servers that are gone are removed.
pub fn stop_all() -> Vec<(PathBuf, u32)> {
    let Ok(dir) = super::runtime_dir().map(|dir| dir.join("servers")) else {
        return Vec::new();
    };
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut stopped = Vec::new();
    let mut names: Vec<_> = entries.flatten().map(|e| e.path()).collect();
    names.sort();
    for entry in names {
        if entry
            .file_name()
            .is_some_and(|n| n.as_encoded_bytes().starts_with(b"."))
        {
            continue;
        }
        let Ok(bytes) = std::fs::read(&entry) else {
            continue;
        };
        let root =
            PathBuf::from(<std::ffi::OsString as std::os::unix::ffi::OsStringExt>::from_vec(bytes));
        match stop(&Paths::of(&root)) {
            Some(pid) => stopped.push((root, pid)),
            None => {
                let _ = std::fs::remove_file(&entry);
            }
        }
    }
    stopped
}
