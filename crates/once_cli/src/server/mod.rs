//! The warm workspace server (`once server start|stop|status`, docs/server.md).
//!
//! One server per workspace keeps the database loaded and a file watcher on the
//! workspace; `once query …`, `once build`, `once test` and `once exec` send their command
//! line to it ([`client`]) and print what it answers, byte for byte what they would have
//! printed themselves: the server runs the very same command code on a thread of its
//! own with the client's environment, current directory and terminals
//! ([`crate::context`]), only planning from its warm database instead of loading one
//! ([`daemon`]). Every answer is fenced: before it reads the database, the watcher has
//! seen every change made before the request was sent. `once run` asks it for its plan
//! only, and runs the program itself with its terminal; a no-op build is answered from
//! the server's memory while its watchers prove nothing changed ([`memo`]).
//!
//! Where things are: the lock (held by the running server), the log and the socket under
//! the workspace's `.once/` ([`Paths`]); when the socket's path is too long for a Unix
//! socket, the socket is in the user's private runtime directory instead
//! ([`runtime_dir`]), where every server also leaves a record of its workspace (for
//! `once server stop --all`).
//!
//! The server can only make commands faster: when there is none, it is unhealthy, of
//! another `once` build, or does not answer in time, the client computes in-process.

pub mod client;
pub mod daemon;
pub mod memo;
pub mod protocol;

use std::fs::File;
use std::io::{self, Write as _};
use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, anyhow, bail};
use serde_json::json;

use crate::Outcome;
use crate::args::{Args, Format, Server};

/// How long a server waits without a request before it stops.
pub const DEFAULT_IDLE: Duration = Duration::from_secs(3 * 60 * 60);

/// The longest path a Unix socket address holds (`sun_path` is 108 bytes with its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// Where a workspace's server keeps its files.
#[derive(Clone, Debug)]
pub struct Paths {
    pub root: PathBuf,
    /// `.once/` of the workspace.
    pub state: PathBuf,
    pub socket: PathBuf,
    /// Held (`flock`) by the running server, from before it loads until it exits.
    pub lock: PathBuf,
    pub log: PathBuf,
    /// The name of the workspace's record in the runtime directory's `servers/`.
    pub key: String,
}

impl Paths {
    /// The paths of the server of the workspace at `root` (nothing is touched).
    pub fn of(root: &Path) -> Paths {
        let state = root.join(".once");
        let key = format!("{:016x}", fnv1a(root.as_os_str().as_encoded_bytes()));
        let local = state.join("server.sock");
        let socket = if local.as_os_str().len() <= MAX_SOCKET_PATH {
            local
        } else {
            runtime_base().join(format!("{key}.sock"))
        };
        Paths {
            root: root.to_path_buf(),
            lock: state.join("server.lock"),
            log: state.join("server.log"),
            state,
            socket,
            key,
        }
    }
}

/// FNV-1a, 64 bits: a stable name for a workspace's path (the same in every `once`).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The user's runtime directory for servers, unchecked: `$XDG_RUNTIME_DIR/once`, else
/// `once-UID` in the temporary directory.
fn runtime_base() -> PathBuf {
    match std::env::var_os("XDG_RUNTIME_DIR").map(PathBuf::from) {
        Some(dir) if dir.is_absolute() => dir.join("once"),
        _ => std::env::temp_dir().join(format!("once-{}", rustix::process::getuid().as_raw())),
    }
}

/// The user's runtime directory, created when missing; refused unless it is a directory
/// (not a link) this user owns that nobody else may enter.
pub fn runtime_dir() -> io::Result<PathBuf> {
    let dir = runtime_base();
    match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
        Ok(()) => {}
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    let metadata = std::fs::symlink_metadata(&dir)?;
    let uid = rustix::process::getuid().as_raw();
    if !metadata.is_dir() || metadata.uid() != uid || metadata.permissions().mode() & 0o077 != 0 {
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!(
                "`{}` is not a private directory of this user",
                dir.display()
            ),
        ));
    }
    Ok(dir)
}

/// This binary's identity: the same version can be two builds, and a server must only
/// answer clients of its own build. The executable's device, inode, size and
/// modification time (one `stat`; a rebuilt or reinstalled binary differs).
pub fn identity() -> String {
    let Ok(exe) = std::env::current_exe() else {
        return "unknown".to_owned();
    };
    match std::fs::metadata(&exe) {
        Ok(m) => format!(
            "{}:{}:{}:{}.{}",
            m.dev(),
            m.ino(),
            m.size(),
            m.mtime(),
            m.mtime_nsec()
        ),
        Err(_) => "unknown".to_owned(),
    }
}

pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// Parses `90s`, `30m`, `3h`, `1d` or a number of seconds.
pub fn parse_duration(text: &str) -> anyhow::Result<Duration> {
    let text = text.trim();
    let (number, unit) = match text.find(|c: char| !c.is_ascii_digit()) {
        Some(at) => text.split_at(at),
        None => (text, "s"),
    };
    let number: u64 = number
        .parse()
        .map_err(|_| anyhow!("`{text}` is not a duration such as `90s`, `30m` or `3h`"))?;
    let seconds = match unit {
        "s" => number,
        "m" => number.saturating_mul(60),
        "h" => number.saturating_mul(3600),
        "d" => number.saturating_mul(86_400),
        _ => bail!("`{text}` is not a duration such as `90s`, `30m` or `3h`"),
    };
    if seconds == 0 {
        bail!("the idle timeout must be longer than zero");
    }
    Ok(Duration::from_secs(seconds))
}

/// `once server …`.
pub fn run(args: &Args, command: &Server) -> anyhow::Result<Outcome> {
    match command {
        Server::Serve { idle_seconds } => {
            let root = crate::query::workspace_root(args)?;
            daemon::serve(root, Duration::from_secs((*idle_seconds).max(1)))?;
            Ok(Outcome::Success)
        }
        Server::Start { idle_timeout } => {
            let root = crate::query::workspace_root(args)?;
            let idle = match idle_timeout.as_deref() {
                Some(text) => parse_duration(text)?,
                None => configured_idle()?,
            };
            start(args, &root, idle)
        }
        Server::Stop { all: false } => {
            let root = crate::query::workspace_root(args)?;
            let stopped = client::stop(&Paths::of(&root));
            report(
                args.format,
                json!({ "stopped": stopped.is_some(), "pid": stopped }),
                &match stopped {
                    Some(pid) => format!("stopped the workspace server (pid {pid})"),
                    None => "no workspace server runs here".to_owned(),
                },
            )?;
            Ok(Outcome::Success)
        }
        Server::Stop { all: true } => {
            let stopped = client::stop_all();
            let lines: Vec<String> = stopped
                .iter()
                .map(|(root, pid)| {
                    format!(
                        "stopped the server of {} (pid {pid})",
                        crate::human::printable(&root.display().to_string())
                    )
                })
                .collect();
            let human = if lines.is_empty() {
                "no workspace server runs".to_owned()
            } else {
                lines.join("\n")
            };
            let value: Vec<serde_json::Value> = stopped
                .iter()
                .map(|(root, pid)| json!({ "root": root, "pid": pid }))
                .collect();
            report(args.format, json!({ "stopped": value }), &human)?;
            Ok(Outcome::Success)
        }
        Server::Status => {
            let root = crate::query::workspace_root(args)?;
            let paths = Paths::of(&root);
            match client::status(&paths) {
                Some(status) => {
                    let human = human_status(&status);
                    report(args.format, status, &human)?;
                    Ok(Outcome::Success)
                }
                None => {
                    report(
                        args.format,
                        json!({ "running": false, "root": root }),
                        "no workspace server runs here",
                    )?;
                    Ok(Outcome::Invalid)
                }
            }
        }
    }
}

/// The idle timeout of `ONCE_SERVER_IDLE_TIMEOUT`, else [`DEFAULT_IDLE`].
pub fn configured_idle() -> anyhow::Result<Duration> {
    match std::env::var("ONCE_SERVER_IDLE_TIMEOUT") {
        Ok(text) if !text.trim().is_empty() => {
            parse_duration(&text).context("ONCE_SERVER_IDLE_TIMEOUT")
        }
        _ => Ok(DEFAULT_IDLE),
    }
}

fn report(format: Format, value: serde_json::Value, human: &str) -> anyhow::Result<()> {
    match format {
        Format::Json => crate::query::print_json(&value),
        Format::Human => {
            println!("{human}");
            Ok(())
        }
    }
}

fn human_status(status: &serde_json::Value) -> String {
    let field = |name: &str| status.get(name).cloned().unwrap_or(serde_json::Value::Null);
    let mib = |bytes: &serde_json::Value| {
        bytes.as_u64().map_or_else(
            || "?".to_owned(),
            |b| format!("{:.1} MiB", b as f64 / 1048576.0),
        )
    };
    let mut out = format!(
        "workspace server of {}\n  pid:          {}\n  version:      {}\n  uptime:       {} s\n  requests:     {}\n  idle timeout: {} s (idle for {} s)\n  watcher:      {}\n  resident:     {}\n  database:     {}\n  socket:       {}\n  log:          {}",
        field("root").as_str().unwrap_or("?"),
        field("pid"),
        field("version").as_str().unwrap_or("?"),
        field("uptime_seconds"),
        field("requests"),
        field("idle_timeout_seconds"),
        field("idle_seconds"),
        if field("watcher_active").as_bool() == Some(true) {
            "active"
        } else {
            "unavailable (every request rescans)"
        },
        mib(&field("resident_bytes")),
        mib(&field("database_bytes")),
        field("socket").as_str().unwrap_or("?"),
        field("log").as_str().unwrap_or("?"),
    );
    if let Some(queries) = status.get("memory").and_then(|m| m.as_array()) {
        out.push_str("\n  memory per query (largest first):");
        for query in queries.iter().take(20) {
            out.push_str(&format!(
                "\n    {:<40} {:>8} × {:>10}",
                query.get("query").and_then(|q| q.as_str()).unwrap_or("?"),
                query.get("count").cloned().unwrap_or_default(),
                mib(&query.get("bytes").cloned().unwrap_or_default()),
            ));
        }
    }
    out
}

/// `once server start`: starts the server in the background and waits until it answers.
fn start(args: &Args, root: &Path, idle: Duration) -> anyhow::Result<Outcome> {
    let paths = Paths::of(root);
    let already_runs = |status: serde_json::Value| {
        let pid = status.get("pid").cloned().unwrap_or_default();
        report(
            args.format,
            json!({ "started": false, "running": true, "pid": pid }),
            &format!("the workspace server already runs (pid {pid})"),
        )
        .map(|()| Outcome::Success)
    };
    if let Some(status) = client::status(&paths) {
        return already_runs(status);
    }
    // A server of another build answers no status: stop it, a new one replaces it.
    let _ = client::stop(&paths);
    let deadline = std::time::Instant::now() + Duration::from_secs(600);
    // A server still loading (or one stopping) holds the lock: wait until it answers,
    // or lets go of the lock, instead of starting one that would give up at once.
    while client::starting(&paths) && std::time::Instant::now() < deadline {
        if let Some(status) = client::status(&paths) {
            return already_runs(status);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let pid = spawn(&paths, idle)?;
    loop {
        if let Some(status) = client::status(&paths) {
            let pid = status.get("pid").cloned().unwrap_or_default();
            report(
                args.format,
                json!({ "started": true, "running": true, "pid": pid }),
                &format!("started the workspace server (pid {pid})"),
            )?;
            return Ok(Outcome::Success);
        }
        if !process_alive(pid) || std::time::Instant::now() > deadline {
            bail!(
                "the workspace server did not start; see `{}`",
                paths.log.display()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn process_alive(pid: u32) -> bool {
    // A zombie (not yet reaped by the waiting thread) counts as gone.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// The largest the log grows before a start moves it to `server.log.old`.
const MAX_LOG_BYTES: u64 = 4 << 20;

/// Starts the server process of `paths`'s workspace in the background (it loads, then
/// answers); its output goes to the log. Answers its process id.
pub fn spawn(paths: &Paths, idle: Duration) -> anyhow::Result<u32> {
    std::fs::create_dir_all(&paths.state)
        .with_context(|| format!("cannot create `{}`", paths.state.display()))?;
    if std::fs::metadata(&paths.log).is_ok_and(|m| m.len() > MAX_LOG_BYTES) {
        let _ = std::fs::rename(&paths.log, paths.state.join("server.log.old"));
    }
    let log = File::options()
        .create(true)
        .append(true)
        .open(&paths.log)
        .with_context(|| format!("cannot open `{}`", paths.log.display()))?;
    let exe = std::env::current_exe().context("cannot find the `once` executable")?;
    let idle = idle.as_secs().to_string();
    let root = paths.root.as_os_str();
    let args: [&std::ffi::OsStr; 6] = [
        "-C".as_ref(),
        root,
        "server".as_ref(),
        "__serve".as_ref(),
        "--idle-seconds".as_ref(),
        idle.as_ref(),
    ];
    once_exec::launch::start_background(
        &exe,
        &args,
        &paths.root,
        std::process::Stdio::null(),
        std::process::Stdio::from(log.try_clone()?),
        std::process::Stdio::from(log),
    )
    .context("cannot start the workspace server")
}

/// Appends a line to the server's log (its stderr), with the time.
pub fn log(message: &str) {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let _ = writeln!(
        io::stderr().lock(),
        "[{}.{:03}] once server: {message}",
        now.as_secs(),
        now.subsec_millis()
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_workspace_paths_put_the_socket_in_the_runtime_directory() {
        let short = Paths::of(Path::new("/w/ws"));
        assert_eq!(short.socket, Path::new("/w/ws/.once/server.sock"));
        let long_root = PathBuf::from(format!("/w/{}", "d".repeat(120)));
        let long = Paths::of(&long_root);
        assert!(long.socket.starts_with(runtime_base()), "{long:?}");
        assert!(long.socket.as_os_str().len() <= MAX_SOCKET_PATH);
        assert_eq!(long.lock, long_root.join(".once/server.lock"));
        // Stable names: two workspaces, two names; one workspace, one.
        assert_ne!(Paths::of(&long_root.join("x")).socket, long.socket);
        assert_eq!(Paths::of(&long_root).socket, long.socket);
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("3h").unwrap(), Duration::from_secs(10800));
        assert!(parse_duration("0s").is_err());
        assert!(parse_duration("3x").is_err());
        assert!(parse_duration("").is_err());
    }
}
