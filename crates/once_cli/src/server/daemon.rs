//! The server process: loads the workspace once, keeps a fenced watcher on it, and runs
//! each client's command on a thread of its own against the warm database.
//!
//! Life cycle: it leaves the starting terminal's session, takes the workspace's lock (a
//! second server of the same workspace gives up at once; a server that died left a lock
//! nobody holds), walks and loads the workspace while watching it, then removes whatever
//! socket a dead server left and binds its own. It stops after its idle timeout without
//! a request, on `once server stop`, and on SIGTERM/SIGINT/SIGHUP; stopping cancels the
//! commands still running (killing their actions' process groups) and waits for them,
//! then removes the socket and its record.
//!
//! Requests: only the user who runs the server may connect (the peer's credentials are
//! checked). A client of another version or build is told so in the handshake and
//! computes in-process. Commands that plan read the database through [`WarmDatabase`]:
//! one at a time, each after a fence ([`once_watch::WorkspaceWatcher::sync`]), and the
//! snapshot is dropped before anything executes. Executing commands (`build`, `test`,
//! `exec`) run only when the client's environment agrees with the server's on what an
//! execution reads (see [`execution_env_matches`]); otherwise the client computes them.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::fs::PermissionsExt as _;
use std::os::unix::net::{UnixListener, UnixStream};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::Parser as _;
use once_analysis::{AnalysisHost, OsSystem};
use once_watch::WorkspaceWatcher;
use serde_json::json;

use super::memo::{self, Memo};
use super::protocol::{self, Hello, Request};
use super::{Paths, VERSION, identity, log};
use crate::args::Args;
use crate::context::{Context, Sink, Stream, Warm};

/// How often a running command tells its client it is still working.
pub const KEEPALIVE: Duration = Duration::from_secs(1);

/// How long a client may take to send its handshake and request.
const REQUEST_DEADLINE: Duration = Duration::from_secs(5);

/// How long stopping waits for running commands to end after cancelling them.
const STOP_GRACE: Duration = Duration::from_secs(10);

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

/// The database and the watcher that keeps it fresh.
struct WarmState {
    host: AnalysisHost,
    watcher: WorkspaceWatcher,
}

/// What every connection of the server shares.
struct Server {
    root: PathBuf,
    paths: Paths,
    identity: String,
    idle: Duration,
    started: Instant,
    warm: Mutex<WarmState>,
    /// The server's own environment, which executions see.
    env: BTreeMap<OsString, OsString>,
    requests: AtomicU64,
    active: AtomicUsize,
    /// Milliseconds since `started` of the last request's start or end.
    last_activity: AtomicU64,
    running: Mutex<Vec<Weak<Context>>>,
    stopping: AtomicBool,
    /// The socket's identity (device, inode), to remove only our own.
    socket_id: Mutex<Option<(u64, u64)>>,
    registry: Mutex<Option<PathBuf>>,
    /// Grows whenever a watcher reports a change ([`super::memo`]).
    generation: AtomicU64,
    /// The outputs' and the store's watcher, for the build memo.
    trees: Mutex<Option<once_watch::TreeWatcher>>,
    /// The last no-op builds' answers, newest last.
    memos: Mutex<Vec<Arc<Memo>>>,
    /// How many builds were answered from memory.
    replays: AtomicU64,
}

/// The warm database as a command sees it ([`crate::context::with_warm_analysis`]).
struct WarmDatabase(Arc<Server>);

impl Warm for WarmDatabase {
    fn with_analysis(&self, body: &mut dyn FnMut(&once_analysis::Analysis)) {
        let mut warm = lock(&self.0.warm);
        // The fence: every change made before this point is in `changes`.
        let changes = warm.watcher.sync();
        if !changes.is_empty() {
            self.0.generation.fetch_add(1, Ordering::SeqCst);
            let started = Instant::now();
            warm.host.apply_changes(&changes);
            if changes.contains(&once_db::ChangeEvent::Rescan) {
                log(&format!(
                    "rescanned the workspace in {:?}",
                    started.elapsed()
                ));
            }
        }
        let analysis = warm.host.analysis();
        body(&analysis);
    }
}

/// Runs the server of the workspace at `root` until it stops.
pub fn serve(root: PathBuf, idle: Duration) -> anyhow::Result<()> {
    // Out of the starting terminal's session: its Ctrl-C and hangup are not ours.
    let _ = rustix::process::setsid();
    let paths = Paths::of(&root);
    std::fs::create_dir_all(&paths.state)
        .with_context(|| format!("cannot create `{}`", paths.state.display()))?;
    let lock_file = std::fs::File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&paths.lock)
        .with_context(|| format!("cannot open `{}`", paths.lock.display()))?;
    if rustix::fs::flock(
        &lock_file,
        rustix::fs::FlockOperation::NonBlockingLockExclusive,
    )
    .is_err()
    {
        log("another server of this workspace runs or starts: this one stops");
        return Ok(());
    }
    let started = Instant::now();
    log(&format!(
        "starting (version {VERSION}, pid {}) for {}",
        std::process::id(),
        root.display()
    ));
    let threads = crate::query::analysis_threads()?;
    let (watcher, files) = WorkspaceWatcher::watch_and_walk(&root);
    if !watcher.is_active() {
        log("file watcher unavailable; every request rescans the workspace");
    }
    let files = files.unwrap_or_default();
    let host = AnalysisHost::load_walked(Arc::new(OsSystem), root.clone(), &files);
    let _ = host.analysis().prime(threads);
    drop(files);
    log(&format!("loaded in {:?}", started.elapsed()));

    let server = Arc::new(Server {
        root: root.clone(),
        paths: paths.clone(),
        identity: identity(),
        idle,
        started,
        warm: Mutex::new(WarmState { host, watcher }),
        env: std::env::vars_os().collect(),
        requests: AtomicU64::new(0),
        active: AtomicUsize::new(0),
        last_activity: AtomicU64::new(0),
        running: Mutex::new(Vec::new()),
        stopping: AtomicBool::new(false),
        socket_id: Mutex::new(None),
        registry: Mutex::new(None),
        generation: AtomicU64::new(0),
        trees: Mutex::new(None),
        memos: Mutex::new(Vec::new()),
        replays: AtomicU64::new(0),
    });
    let listener = bind(&server)?;
    log(&format!("listening on {}", paths.socket.display()));
    register(&server);
    watch_signals(&server);
    watch_idle(&server);
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let server = server.clone();
        let spawned = std::thread::Builder::new()
            .name("once-server-connection".into())
            .spawn(move || connection(&server, stream));
        if let Err(e) = spawned {
            log(&format!("cannot start a connection thread: {e}"));
        }
    }
    Ok(())
}

/// Binds the socket, replacing whatever a dead server left (the lock says none runs).
fn bind(server: &Server) -> anyhow::Result<UnixListener> {
    let socket = &server.paths.socket;
    if let Some(parent) = socket.parent()
        && parent != server.paths.state
    {
        // The runtime directory, checked private.
        super::runtime_dir()
            .with_context(|| format!("cannot use `{}` for the socket", parent.display()))?;
    }
    match std::fs::remove_file(socket) {
        Ok(()) => log("removed the socket a stopped server left"),
        Err(e) if e.kind() == io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("cannot remove `{}`", socket.display())),
    }
    let listener = UnixListener::bind(socket)
        .with_context(|| format!("cannot listen on `{}`", socket.display()))?;
    let _ = std::fs::set_permissions(socket, std::fs::Permissions::from_mode(0o600));
    if let Ok(metadata) = std::fs::symlink_metadata(socket) {
        use std::os::unix::fs::MetadataExt as _;
        *lock(&server.socket_id) = Some((metadata.dev(), metadata.ino()));
    }
    Ok(listener)
}

/// Leaves a record of the workspace in the runtime directory, for `stop --all`.
fn register(server: &Server) {
    let Ok(dir) = super::runtime_dir().map(|dir| dir.join("servers")) else {
        log("no private runtime directory: `once server stop --all` will not see this server");
        return;
    };
    let _ = std::fs::create_dir_all(&dir);
    let entry = dir.join(&server.paths.key);
    let temporary = dir.join(format!(".{}.{}", server.paths.key, std::process::id()));
    let written = std::fs::write(&temporary, server.root.as_os_str().as_encoded_bytes())
        .and_then(|()| std::fs::rename(&temporary, &entry));
    match written {
        Ok(()) => *lock(&server.registry) = Some(entry),
        Err(e) => log(&format!(
            "cannot record the server in `{}`: {e}",
            dir.display()
        )),
    }
}

/// SIGTERM, SIGINT and SIGHUP stop the server like `once server stop`.
fn watch_signals(server: &Arc<Server>) {
    use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
    let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGINT, SIGTERM, SIGHUP]) else {
        return;
    };
    let server = server.clone();
    let _ = std::thread::Builder::new()
        .name("once-server-signals".into())
        .spawn(move || {
            if let Some(signal) = signals.forever().next() {
                stop(&server, &format!("signal {signal}"));
            }
        });
}

/// Stops the server once it has been idle for its timeout.
fn watch_idle(server: &Arc<Server>) {
    let server = server.clone();
    let _ = std::thread::Builder::new()
        .name("once-server-idle".into())
        .spawn(move || {
            let tick = (server.idle / 4).clamp(Duration::from_millis(100), Duration::from_secs(30));
            loop {
                std::thread::sleep(tick);
                if server.active.load(Ordering::SeqCst) == 0 && idle_for(&server) >= server.idle {
                    stop(&server, "idle timeout");
                }
            }
        });
}

fn now_millis(server: &Server) -> u64 {
    u64::try_from(server.started.elapsed().as_millis()).unwrap_or(u64::MAX)
}

fn idle_for(server: &Server) -> Duration {
    Duration::from_millis(
        now_millis(server).saturating_sub(server.last_activity.load(Ordering::SeqCst)),
    )
}

/// Cancels the running commands, waits for them, removes the socket and the record,
/// and exits.
fn stop(server: &Server, why: &str) -> ! {
    if server.stopping.swap(true, Ordering::SeqCst) {
        // Another thread stops the server already.
        loop {
            std::thread::park();
        }
    }
    log(&format!("stopping: {why}"));
    for context in lock(&server.running).iter().filter_map(Weak::upgrade) {
        context.interrupt(signal_hook::consts::SIGTERM);
    }
    let deadline = Instant::now() + STOP_GRACE;
    while server.active.load(Ordering::SeqCst) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    remove_socket(server);
    if let Some(entry) = lock(&server.registry).take() {
        let _ = std::fs::remove_file(entry);
    }
    log("stopped");
    std::process::exit(0)
}

fn remove_socket(server: &Server) {
    use std::os::unix::fs::MetadataExt as _;
    let ours = std::fs::symlink_metadata(&server.paths.socket)
        .is_ok_and(|m| *lock(&server.socket_id) == Some((m.dev(), m.ino())));
    if ours {
        let _ = std::fs::remove_file(&server.paths.socket);
    }
}

/// One client connection: the handshake, then one request.
fn connection(server: &Arc<Server>, mut stream: UnixStream) {
    // Only this user's processes are answered.
    let uid = rustix::process::getuid();
    match rustix::net::sockopt::socket_peercred(&stream) {
        Ok(peer) if peer.uid == uid => {}
        Ok(peer) => {
            log(&format!(
                "refused a connection of user {}",
                peer.uid.as_raw()
            ));
            return;
        }
        Err(e) => {
            log(&format!("refused a connection without credentials: {e}"));
            return;
        }
    }
    let _ = stream.set_read_timeout(Some(REQUEST_DEADLINE));
    let Ok((protocol::HELLO, payload)) = protocol::read_frame(&mut stream) else {
        return;
    };
    let ours = Hello {
        version: VERSION.to_owned(),
        identity: server.identity.clone(),
        pid: std::process::id(),
    };
    if protocol::write_frame(&mut stream, protocol::HELLO, &ours.encode()).is_err() {
        return;
    }
    let Some(theirs) = Hello::decode(&payload) else {
        return;
    };
    let Ok((tag, payload)) = protocol::read_frame(&mut stream) else {
        return;
    };
    match tag {
        protocol::STOP => {
            let _ = protocol::write_frame(&mut stream, protocol::EXIT, &[0]);
            drop(stream);
            stop(server, "`once server stop`");
        }
        protocol::STATUS => {
            let status = status(server);
            let _ =
                protocol::write_frame(&mut stream, protocol::STATUS, status.to_string().as_bytes());
        }
        protocol::REQUEST if theirs.version == ours.version && theirs.identity == ours.identity => {
            match Request::decode(&payload) {
                Some(request) => run_request(server, stream, request),
                None => decline(&mut stream, "a malformed request"),
            }
        }
        protocol::REQUEST => decline(&mut stream, "another `once` build"),
        protocol::PLAN if theirs.version == ours.version && theirs.identity == ours.identity => {
            match Request::decode(&payload) {
                Some(request) => plan_request(server, stream, request),
                None => decline(&mut stream, "a malformed request"),
            }
        }
        protocol::PLAN => decline(&mut stream, "another `once` build"),
        _ => {}
    }
}

fn decline(stream: &mut UnixStream, why: &str) {
    let _ = protocol::write_frame(stream, protocol::DECLINE, why.as_bytes());
}

/// The status `once server status` prints.
fn status(server: &Server) -> serde_json::Value {
    let (memory, watcher_active) = {
        let mut warm = lock(&server.warm);
        let active = warm.watcher.is_active();
        (warm.host.memory_usage(), active)
    };
    let database: usize = memory.iter().map(|m| m.bytes).sum();
    json!({
        "running": true,
        "root": server.root,
        "pid": std::process::id(),
        "version": VERSION,
        "uptime_seconds": server.started.elapsed().as_secs(),
        "requests": server.requests.load(Ordering::SeqCst),
        "replayed_builds": server.replays.load(Ordering::SeqCst),
        "running_requests": server.active.load(Ordering::SeqCst),
        "idle_timeout_seconds": server.idle.as_secs(),
        "idle_seconds": idle_for(server).as_secs(),
        "watcher_active": watcher_active,
        "resident_bytes": resident_bytes(),
        "database_bytes": database,
        "memory": memory.iter().map(|m| json!({
            "query": m.name,
            "count": m.count,
            "bytes": m.bytes,
            "heap_measured": m.heap_measured,
        })).collect::<Vec<_>>(),
        "socket": server.paths.socket,
        "log": server.paths.log,
    })
}

/// The process's resident memory (`VmRSS`), when `/proc` tells.
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The variables an execution reads from the environment of the process running it:
/// the action environment's allowlist and every `ONCE_*` setting but those the client
/// resolves itself.
fn execution_env_matches(
    server: &BTreeMap<OsString, OsString>,
    client: &BTreeMap<OsString, OsString>,
) -> bool {
    let relevant = |name: &OsStr| {
        let Some(name) = name.to_str() else {
            return false;
        };
        once_exec::environment::ALLOWLIST.contains(&name)
            || (name.starts_with("ONCE_")
                && !matches!(
                    name,
                    "ONCE_SERVER" | "ONCE_WORKSPACE" | "ONCE_THREADS" | "ONCE_SERVER_IDLE_TIMEOUT"
                ))
    };
    let pick = |env: &BTreeMap<OsString, OsString>| -> Vec<(OsString, OsString)> {
        env.iter()
            .filter(|(name, _)| relevant(name))
            .map(|(n, v)| (n.clone(), v.clone()))
            .collect()
    };
    pick(server) == pick(client)
}

/// The client's end of a running command: frames written one at a time.
struct Connection {
    stream: Mutex<UnixStream>,
    gone: AtomicBool,
}

impl Connection {
    fn send(&self, tag: u8, payload: &[u8]) -> io::Result<()> {
        if self.gone.load(Ordering::SeqCst) {
            return Err(io::ErrorKind::BrokenPipe.into());
        }
        let written = protocol::write_frame(&mut *lock(&self.stream), tag, payload);
        if written.is_err() {
            self.gone.store(true, Ordering::SeqCst);
        }
        written
    }
}

impl Sink for Connection {
    fn write(&self, stream: Stream, bytes: &[u8]) -> io::Result<()> {
        let tag = match stream {
            Stream::Stdout => protocol::STDOUT,
            Stream::Stderr => protocol::STDERR,
        };
        self.send(tag, bytes)
    }
}

/// Runs a client's command and sends its output and exit status.
fn run_request(server: &Arc<Server>, stream: UnixStream, request: Request) {
    let mut stream = stream;
    if request.root != server.root {
        return decline(&mut stream, "another workspace");
    }
    let argv = std::iter::once(OsString::from("once")).chain(request.argv.iter().cloned());
    let Ok(args) = Args::try_parse_from(argv) else {
        return decline(&mut stream, "a command line that does not parse");
    };
    let Some(executes) = super::client::eligible(&args) else {
        return decline(&mut stream, "a command the server does not run");
    };
    // A build is answered from memory when nothing changed since the same request.
    let build_store = match &args.command {
        crate::args::Command::Build { exec, .. } => Some(once_build::session::store_path(
            &server.root,
            exec.store.as_deref(),
        )),
        _ => None,
    };
    let key = if build_store.is_some() {
        request.encode()
    } else {
        Vec::new()
    };
    let env: BTreeMap<OsString, OsString> = request.env.into_iter().collect();
    if executes && !execution_env_matches(&server.env, &env) {
        return decline(&mut stream, "an environment that differs from the server's");
    }
    let Ok(reader) = stream.try_clone() else {
        return decline(&mut stream, "no second handle on the connection");
    };
    let _ = stream.set_read_timeout(None);
    let connection = Arc::new(Connection {
        stream: Mutex::new(stream),
        gone: AtomicBool::new(false),
    });
    let color = match request.stdout_color {
        1 => anstream::ColorChoice::AlwaysAnsi,
        2 => anstream::ColorChoice::Always,
        _ => anstream::ColorChoice::Never,
    };
    let recorder = build_store.as_ref().map(|_| {
        Arc::new(Recorder {
            connection: connection.clone(),
            frames: Mutex::new(Some(Vec::new())),
            size: AtomicUsize::new(0),
        })
    });
    let sink: Arc<dyn crate::context::Sink> = match &recorder {
        Some(recorder) => recorder.clone(),
        None => connection.clone(),
    };
    let context = begin_request(
        server,
        request.cwd,
        env,
        request.stderr_terminal,
        color,
        sink,
    );
    {
        let mut running = lock(&server.running);
        running.retain(|context| context.strong_count() > 0);
        running.push(Arc::downgrade(&context));
    }
    if server.stopping.load(Ordering::SeqCst) {
        context.interrupt(signal_hook::consts::SIGTERM);
    }
    let done = Arc::new(AtomicBool::new(false));
    listen(reader, &context, &done);
    keep_alive(&connection, &context, &done);
    let before = build_store
        .as_deref()
        .and_then(|store| fence_all(server, store));
    let replayed = before.and_then(|generation| replay(server, &key, generation, &connection));
    let outcome = match replayed {
        Some(code) => Ok(code),
        None => {
            let _entered = crate::context::enter(Some(context.clone()));
            std::panic::catch_unwind(AssertUnwindSafe(|| crate::execute(&args)))
        }
    };
    if let (None, Some(store), Some(generation), Some(recorder), Ok(code)) =
        (replayed, &build_store, before, &recorder, &outcome)
    {
        remember(server, store, key, generation, recorder, &context, *code);
    }
    done.store(true, Ordering::SeqCst);
    match outcome {
        Ok(code) => {
            let _ = connection.send(protocol::EXIT, &[code]);
        }
        Err(_) => {
            log(&format!(
                "internal error answering `{}`",
                printable_argv(&request.argv)
            ));
            let _ = connection.send(protocol::DECLINE, b"an internal error");
        }
    }
    let _ = lock(&connection.stream).shutdown(std::net::Shutdown::Both);
    if replayed.is_some() {
        // A replay appends its evidence without compacting the journal (an in-process
        // build compacts it before it answers, every few builds): done now that the
        // client has its answer. A command that appends meanwhile waits for it.
        if let Err(err) = once_evidence::compact_journal_if_due(&server.root) {
            log(&format!("compacting the evidence journal failed: {err}"));
        }
    }
    server
        .last_activity
        .store(now_millis(server), Ordering::SeqCst);
    server.active.fetch_sub(1, Ordering::SeqCst);
}

/// The context a client's command runs in on the server (its directory, environment,
/// terminals and where its output goes), counted as a request and as activity.
fn begin_request(
    server: &Arc<Server>,
    cwd: std::path::PathBuf,
    env: BTreeMap<OsString, OsString>,
    stderr_terminal: bool,
    stdout_color: anstream::ColorChoice,
    sink: Arc<dyn crate::context::Sink>,
) -> Arc<Context> {
    let context = Arc::new(Context {
        root: server.root.clone(),
        cwd,
        env,
        stderr_terminal,
        stdout_color,
        sink,
        warm: Arc::new(WarmDatabase(server.clone())),
        closed: AtomicBool::new(false),
        cancel: Mutex::new(None),
        signal: AtomicI32::new(0),
        memo: Mutex::new(None),
    });
    server.active.fetch_add(1, Ordering::SeqCst);
    server.requests.fetch_add(1, Ordering::SeqCst);
    server
        .last_activity
        .store(now_millis(server), Ordering::SeqCst);
    context
}

/// Plans `once run`'s command for a client, which runs the program itself: the plan is
/// sent when planning printed nothing and found no problem (the client plans anything
/// else itself, and prints what it prints).
fn plan_request(server: &Arc<Server>, mut stream: UnixStream, request: Request) {
    if request.root != server.root {
        return decline(&mut stream, "another workspace");
    }
    let argv = std::iter::once(OsString::from("once")).chain(request.argv.iter().cloned());
    let Ok(args) = Args::try_parse_from(argv) else {
        return decline(&mut stream, "a command line that does not parse");
    };
    if !super::client::plannable(&args) {
        return decline(&mut stream, "a command the server does not plan");
    }
    let env: BTreeMap<OsString, OsString> = request.env.into_iter().collect();
    if !execution_env_matches(&server.env, &env) {
        return decline(&mut stream, "an environment that differs from the server's");
    }
    let buffer = Arc::new(Buffer(Mutex::new(Vec::new())));
    let sink: Arc<dyn crate::context::Sink> = buffer.clone();
    let context = begin_request(
        server,
        request.cwd,
        env,
        request.stderr_terminal,
        anstream::ColorChoice::Never,
        sink,
    );
    let planned = {
        let _entered = crate::context::enter(Some(context));
        std::panic::catch_unwind(AssertUnwindSafe(|| crate::build::plan_for_run(&args)))
    };
    let encoded = match planned {
        Ok(Ok(plan)) if lock(&buffer.0).is_empty() => {
            once_build::plan_cache::last_plan::encode_transfer(&plan)
        }
        _ => None,
    };
    match encoded {
        Some(bytes) => {
            let _ = protocol::write_frame(&mut stream, protocol::PLANNED, &bytes);
        }
        None => decline(&mut stream, "a plan the client makes itself"),
    }
    server
        .last_activity
        .store(now_millis(server), Ordering::SeqCst);
    server.active.fetch_sub(1, Ordering::SeqCst);
}

/// What planning printed (nothing, normally).
struct Buffer(Mutex<Vec<u8>>);

impl Sink for Buffer {
    fn write(&self, _stream: Stream, bytes: &[u8]) -> io::Result<()> {
        lock(&self.0).extend_from_slice(bytes);
        Ok(())
    }
}

/// Fences both watchers (the workspace's, and the outputs' and store's for `store`)
/// and answers the generation every change made before now is counted in; `None` when
/// a watcher cannot tell (then nothing is answered from memory).
fn fence_all(server: &Server, store: &std::path::Path) -> Option<u64> {
    {
        let mut warm = lock(&server.warm);
        if !warm.watcher.is_active() {
            return None;
        }
        let changes = warm.watcher.sync();
        if !changes.is_empty() {
            server.generation.fetch_add(1, Ordering::SeqCst);
            warm.host.apply_changes(&changes);
        }
    }
    let roots = [
        server.root.join(once_model::action::OUT_DIR),
        store.join("actions"),
        store.join("blobs"),
    ];
    let mut trees = lock(&server.trees);
    match trees.as_mut() {
        Some(watcher) if !watcher.is_broken() && watcher.roots() == roots => {
            if watcher.changed() {
                server.generation.fetch_add(1, Ordering::SeqCst);
            }
        }
        _ => {
            // A new watcher knows nothing of what happened before it.
            server.generation.fetch_add(1, Ordering::SeqCst);
            *trees = once_watch::TreeWatcher::watch(&roots);
        }
    }
    let generation = server.generation.load(Ordering::SeqCst);
    trees
        .as_ref()
        .is_some_and(|t| !t.is_broken())
        .then_some(generation)
}

/// Answers the build of `key` from memory when its memo holds at `generation`: records
/// its evidence, sends its output and answers its exit status.
fn replay(server: &Server, key: &[u8], generation: u64, connection: &Connection) -> Option<u8> {
    let memo = lock(&server.memos)
        .iter()
        .rev()
        .find(|memo| memo.key == key)
        .cloned()?;
    if memo.generation != generation
        || memo.created.elapsed() > memo::MAX_AGE
        || !memo.capture.tools_hold()
    {
        return None;
    }
    // The evidence (10,000 records for 10,000 actions) is made and written while the
    // answer goes out; the exit status follows both.
    let warning = std::thread::scope(|scope| {
        let recording = scope.spawn(|| memo.capture.record());
        for (stream, bytes) in &memo.frames {
            if connection.write(*stream, bytes).is_err() {
                break;
            }
        }
        recording.join().ok().flatten()
    });
    if let Some(warning) = warning {
        let _ = connection.write(Stream::Stderr, warning.as_bytes());
    }
    server.replays.fetch_add(1, Ordering::SeqCst);
    Some(memo.code)
}

/// Keeps the answer of the build just done, when it was a no-op (its command left a
/// capture), nothing changed while it ran, and every source it read is watched.
fn remember(
    server: &Server,
    store: &std::path::Path,
    key: Vec<u8>,
    before: u64,
    recorder: &Recorder,
    context: &Context,
    code: u8,
) {
    let Some(capture) = lock(&context.memo).take() else {
        return;
    };
    let Some(frames) = lock(&recorder.frames).take() else {
        return;
    };
    if code != 0 || capture.store != store || fence_all(server, store) != Some(before) {
        return;
    }
    {
        let warm = lock(&server.warm);
        // A link's target, or what is inside a directory, may be where no watch is.
        let plain = |input: &std::path::Path| match std::fs::symlink_metadata(input) {
            Ok(metadata) => metadata.is_file(),
            Err(e) => e.kind() == io::ErrorKind::NotFound,
        };
        if !capture
            .inputs
            .iter()
            .all(|input| plain(input) && warm.watcher.covers(input))
        {
            return;
        }
    }
    let memo = Arc::new(Memo {
        key,
        generation: before,
        frames,
        code,
        capture,
        created: Instant::now(),
    });
    let mut memos = lock(&server.memos);
    memos.retain(|old| old.key != memo.key);
    if memos.len() >= memo::MAX_MEMOS {
        memos.remove(0);
    }
    memos.push(memo);
}

/// The sink of a build: the client's connection, and a copy of what it was sent (for
/// the memo), given up past [`memo::MAX_OUTPUT`] bytes.
struct Recorder {
    connection: Arc<Connection>,
    frames: Mutex<Option<memo::Frames>>,
    size: AtomicUsize,
}

impl Sink for Recorder {
    fn write(&self, stream: Stream, bytes: &[u8]) -> io::Result<()> {
        let size = self.size.fetch_add(bytes.len(), Ordering::SeqCst) + bytes.len();
        let mut frames = lock(&self.frames);
        if size > memo::MAX_OUTPUT {
            *frames = None;
        } else if let Some(frames) = frames.as_mut() {
            match frames.last_mut() {
                Some((last, buffer)) if *last == stream => buffer.extend_from_slice(bytes),
                _ => frames.push((stream, bytes.to_vec())),
            }
        }
        drop(frames);
        self.connection.write(stream, bytes)
    }
}

fn printable_argv(argv: &[OsString]) -> String {
    let parts: Vec<String> = argv
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    crate::human::printable(&parts.join(" ")).into_owned()
}

/// Reads what the client sends while its command runs: a forwarded signal interrupts
/// the command as it would have interrupted the client; the connection closing (the
/// client was killed) cancels it.
fn listen(mut reader: UnixStream, context: &Arc<Context>, done: &Arc<AtomicBool>) {
    let context = context.clone();
    let done = done.clone();
    let _ = std::thread::Builder::new()
        .name("once-server-listen".into())
        .spawn(move || {
            loop {
                match protocol::read_frame(&mut reader) {
                    Ok((protocol::SIGNAL, payload)) if payload.len() == 4 => {
                        let signal =
                            i32::from_le_bytes([payload[0], payload[1], payload[2], payload[3]]);
                        context.interrupt(signal);
                    }
                    Ok(_) => {}
                    Err(_) => {
                        if !done.load(Ordering::SeqCst) {
                            context.interrupt(0);
                            context.closed.store(true, Ordering::SeqCst);
                        }
                        return;
                    }
                }
            }
        });
}

/// Tells the client every [`KEEPALIVE`] that its command still runs; a client gone
/// cancels it.
fn keep_alive(connection: &Arc<Connection>, context: &Arc<Context>, done: &Arc<AtomicBool>) {
    let connection = connection.clone();
    let context = Arc::downgrade(context);
    let done = done.clone();
    let _ = std::thread::Builder::new()
        .name("once-server-keepalive".into())
        .spawn(move || {
            let step = Duration::from_millis(50);
            let mut waited = Duration::ZERO;
            while !done.load(Ordering::SeqCst) {
                std::thread::sleep(step);
                waited += step;
                if waited < KEEPALIVE {
                    continue;
                }
                waited = Duration::ZERO;
                if connection.send(protocol::KEEPALIVE, &[]).is_err() {
                    if let Some(context) = context.upgrade() {
                        context.interrupt(0);
                    }
                    return;
                }
            }
        });
}
