//! The server loop. The reader thread parses lines, answers `ping` and handles
//! cancellations at once; every other message goes, in order, to the worker thread that
//! owns the database. Before each tool call the worker syncs the file watcher, so an
//! answer always reflects the files on disk when the call arrived.
//!
//! Loading the workspace (the watching walk and priming the database) runs on the worker
//! under `catch_unwind` too: after a panic there the server stays up without a database
//! and answers every request, `initialize` included, with an internal error saying the
//! load failed (a server that exits would look like a hang or a crash to the client).
//!
//! An executing tool (`once_build_target`, `once_run_target`) is planned on the worker
//! from a snapshot, then runs on a thread of its own, which sends its progress
//! notifications and its reply (alone on its line, even when the call came in a batch);
//! cancelling it kills its process groups, and the server cancels and waits for every
//! running one before it exits.
//!
//! Cancellation follows the MCP spec: only a request that was read and not yet answered
//! can be cancelled (its reply is then suppressed); a cancellation naming any other id
//! (unknown, finished, or not sent yet) is ignored and leaves nothing behind.

use std::collections::HashMap;
use std::io::{self, BufRead, Write};
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex, MutexGuard, Weak};

use once_analysis::{AnalysisHost, CancelHandle, OsSystem, System};
use once_watch::WorkspaceWatcher;
use serde_json::{Map, Value, json};

use crate::jsonrpc::{self, Message};
use crate::lifecycle::{self, BATCH_VERSION, MODERN_VERSION, PROTOCOL_VERSION_META};
use crate::pending::PendingRequests;
use crate::tools::{Tool, ToolHandler, ToolOutput, registry};

/// Lines longer than this are refused (and drained without being buffered).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// How the server was started.
#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Absolute, existing workspace root.
    pub root: PathBuf,
    /// Enables state-changing tools.
    pub allow_run: bool,
    /// Threads that compute the packages when the workspace loads.
    pub threads: usize,
    /// The store the executing tools use (`once mcp --store`); `None` for the
    /// workspace's own (`.once/cache`), as every CLI command that executes.
    pub store: Option<PathBuf>,
}

/// The request the worker is running, so that the reader can cancel it.
struct InFlight {
    id: Value,
    cancel: CancelHandle,
}

struct Shared {
    output: Mutex<Box<dyn Write + Send>>,
    /// The version `initialize` negotiated; `None` before.
    session: Mutex<Option<&'static str>>,
    in_flight: Mutex<Option<InFlight>>,
    /// Requests read and not yet answered, by id: what a cancellation can name.
    pending: Mutex<PendingRequests>,
    /// Executing tools running in the background, by the id's JSON text: cancelling one
    /// kills its process groups.
    background: Mutex<HashMap<String, once_exec::CancelHandle>>,
    /// The background threads, joined when the server exits (after cancelling them, so
    /// no process outlives the server).
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

impl Shared {
    fn send(&self, message: &Value) {
        let mut output = lock(&self.output);
        let line = message.to_string();
        let _ = output.write_all(line.as_bytes());
        let _ = output.write_all(b"\n");
        let _ = output.flush();
    }

    fn is_cancelled(&self, id: &Value) -> bool {
        lock(&self.pending).is_cancelled(id)
    }

    /// Queues `message` for the worker, registering it first when it is a request.
    fn queue(&self, jobs: &Sender<Job>, job: Job) -> bool {
        {
            let mut pending = lock(&self.pending);
            for message in job.messages() {
                if let Message::Request { id, .. } = message {
                    pending.begin(id);
                }
            }
        }
        jobs.send(job).is_ok()
    }
}

/// A unit of work for the worker.
enum Job {
    Single(Message),
    Batch(Vec<Message>),
}

impl Job {
    fn messages(&self) -> &[Message] {
        match self {
            Job::Single(message) => std::slice::from_ref(message),
            Job::Batch(messages) => messages,
        }
    }
}

/// The servers running in this process, for [`stop_all_builds`].
static SERVERS: Mutex<Vec<Weak<Shared>>> = Mutex::new(Vec::new());

/// Cancels every running build of every server in this process (killing their process
/// groups) and waits for them, and removes the workspace watcher's temporary directory:
/// what a signal handler calls before the process exits, so that no build process and
/// no file outlives the server.
pub fn stop_all_builds() {
    let servers: Vec<Arc<Shared>> = {
        let mut servers = lock(&SERVERS);
        servers.retain(|server| server.strong_count() > 0);
        servers.iter().filter_map(Weak::upgrade).collect()
    };
    for shared in &servers {
        for cancel in lock(&shared.background).values() {
            cancel.cancel();
        }
    }
    for shared in servers {
        let threads = std::mem::take(&mut *lock(&shared.threads));
        for thread in threads {
            let _ = thread.join();
        }
    }
    // The process exits right after, without destructors: the watcher's private
    // directory goes now.
    once_watch::remove_fence_dirs();
}

/// Serves MCP over stdin/stdout until stdin closes.
pub fn run_stdio(config: ServerConfig) -> io::Result<()> {
    let stdin = io::stdin();
    run(config, stdin.lock(), Box::new(io::stdout()))
}

/// Serves MCP over any line-oriented pair of streams until `input` ends.
pub fn run(
    config: ServerConfig,
    input: impl BufRead,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    serve(config, Arc::new(OsSystem), input, output)
}

/// [`run`] over any system (tests inject one whose reads panic).
fn serve(
    config: ServerConfig,
    system: Arc<dyn System>,
    mut input: impl BufRead,
    output: Box<dyn Write + Send>,
) -> io::Result<()> {
    let shared = Arc::new(Shared {
        output: Mutex::new(output),
        session: Mutex::new(None),
        in_flight: Mutex::new(None),
        pending: Mutex::new(PendingRequests::default()),
        background: Mutex::new(HashMap::new()),
        threads: Mutex::new(Vec::new()),
    });
    lock(&SERVERS).push(Arc::downgrade(&shared));
    let (jobs, receiver) = channel::<Job>();
    let worker = {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("once-mcp-worker".into())
            .spawn(move || load_and_serve(config, system, shared, receiver))?
    };
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        let oversize = match read_line(&mut input, &mut buffer)? {
            LineRead::Eof => break,
            LineRead::Line => false,
            LineRead::Oversize => true,
        };
        if oversize {
            shared.send(&jsonrpc::error(
                &Value::Null,
                jsonrpc::INVALID_REQUEST,
                format!(
                    "the message exceeds the {} MiB line limit",
                    MAX_LINE_BYTES / (1024 * 1024)
                ),
            ));
            continue;
        }
        let Ok(text) = std::str::from_utf8(&buffer) else {
            shared.send(&jsonrpc::error(
                &Value::Null,
                jsonrpc::PARSE_ERROR,
                "parse error: the line is not valid UTF-8",
            ));
            continue;
        };
        let text = text.trim();
        if text.is_empty() {
            continue;
        }
        let value: Value = match serde_json::from_str(text) {
            Ok(value) => value,
            Err(err) => {
                shared.send(&jsonrpc::error(
                    &Value::Null,
                    jsonrpc::PARSE_ERROR,
                    format!("parse error: {err}"),
                ));
                continue;
            }
        };
        if let Value::Array(items) = value {
            let session = *lock(&shared.session);
            if session != Some(BATCH_VERSION) {
                let negotiated = session.unwrap_or("none yet");
                shared.send(&jsonrpc::error(
                    &Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    format!("JSON-RPC batches are only accepted in a {BATCH_VERSION} session (this session: {negotiated})"),
                ));
            } else if items.is_empty() {
                shared.send(&jsonrpc::error(
                    &Value::Null,
                    jsonrpc::INVALID_REQUEST,
                    "an empty batch is not a request",
                ));
            } else {
                let batch = items.into_iter().map(jsonrpc::classify).collect();
                if !shared.queue(&jobs, Job::Batch(batch)) {
                    break;
                }
            }
            continue;
        }
        match jsonrpc::classify(value) {
            Message::Request { id, method, params } if method == "ping" => {
                shared.send(&jsonrpc::result(
                    &id,
                    stamp_modern(&params, json!({}), false),
                ));
            }
            Message::Notification { method, params } if method == "notifications/cancelled" => {
                cancel(&shared, &params);
            }
            message => {
                if !shared.queue(&jobs, Job::Single(message)) {
                    break;
                }
            }
        }
    }
    drop(jobs);
    let _ = worker.join();
    // No build outlives the server: kill every running one's processes, then wait.
    for cancel in lock(&shared.background).values() {
        cancel.cancel();
    }
    let threads = std::mem::take(&mut *lock(&shared.threads));
    for thread in threads {
        let _ = thread.join();
    }
    Ok(())
}

enum LineRead {
    Eof,
    Line,
    Oversize,
}

/// Reads one line into `buffer`; a line over the limit is drained and reported.
fn read_line(input: &mut impl BufRead, buffer: &mut Vec<u8>) -> io::Result<LineRead> {
    let mut oversize = false;
    let mut read_any = false;
    loop {
        let available = match input.fill_buf() {
            Ok(available) => available,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => continue,
            Err(err) => return Err(err),
        };
        if available.is_empty() {
            return Ok(match (read_any, oversize) {
                (false, _) => LineRead::Eof,
                (true, true) => LineRead::Oversize,
                (true, false) => LineRead::Line,
            });
        }
        read_any = true;
        let (chunk, found_newline) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], true),
            None => (available, false),
        };
        if !oversize {
            if buffer.len() + chunk.len() > MAX_LINE_BYTES {
                oversize = true;
                buffer.clear();
            } else {
                buffer.extend_from_slice(chunk);
            }
        }
        let consumed = chunk.len() + usize::from(found_newline);
        input.consume(consumed);
        if found_newline {
            return Ok(if oversize {
                LineRead::Oversize
            } else {
                LineRead::Line
            });
        }
    }
}

/// `notifications/cancelled`: stop the request if it runs, and never answer it. A
/// cancellation of a request that is not pending is ignored (MCP: the receiver may ignore
/// a cancellation of an unknown or finished request).
fn cancel(shared: &Shared, params: &Map<String, Value>) {
    let Some(id) = params.get("requestId") else {
        return;
    };
    if !lock(&shared.pending).cancel(id) {
        return;
    }
    if let Some(in_flight) = lock(&shared.in_flight).as_ref()
        && in_flight.id == *id
    {
        in_flight.cancel.cancel();
    }
    if let Some(running) = lock(&shared.background).get(&id.to_string()) {
        running.cancel();
    }
}

/// The request's stateless protocol version (2026-07-28 `_meta`), if it carries one.
fn modern_version(params: &Map<String, Value>) -> Option<&str> {
    params.get("_meta")?.get(PROTOCOL_VERSION_META)?.as_str()
}

/// Adds the fields a 2026-07-28 result needs when the request was a modern one.
fn stamp_modern(params: &Map<String, Value>, mut result: Value, list: bool) -> Value {
    if modern_version(params) == Some(MODERN_VERSION)
        && let Value::Object(object) = &mut result
    {
        object.insert("resultType".into(), json!("complete"));
        if list {
            object.insert("cacheScope".into(), json!("private"));
            object.insert("ttlMs".into(), json!(0));
        }
    }
    result
}

/// The worker thread: loads the workspace, then serves the jobs. A panic while loading
/// leaves a worker that answers every request with the load's failure.
fn load_and_serve(
    config: ServerConfig,
    system: Arc<dyn System>,
    shared: Arc<Shared>,
    jobs: Receiver<Job>,
) {
    let loaded = std::panic::catch_unwind(AssertUnwindSafe(|| {
        Worker::new(config, system, shared.clone())
    }));
    match loaded {
        Ok(worker) => worker.run(jobs),
        Err(panic) => answer_load_failure(&shared, jobs, panic_message(&*panic)),
    }
}

/// Answers every request of `jobs` with an internal error saying the workspace failed to
/// load (a panic, `what`); invalid messages get their usual errors.
fn answer_load_failure(shared: &Shared, jobs: Receiver<Job>, what: &str) {
    let failure = format!(
        "once could not load the workspace: internal error, this is a bug in once {}: {what}. \
         Restart the server to retry; please report it with the workspace if you can share it",
        env!("CARGO_PKG_VERSION")
    );
    log(&failure);
    for job in jobs {
        let (messages, batch) = match job {
            Job::Single(message) => (vec![message], false),
            Job::Batch(messages) => (messages, true),
        };
        let mut replies: Vec<Value> = messages
            .into_iter()
            .filter_map(|message| match message {
                Message::Request { id, .. } => {
                    let cancelled = lock(&shared.pending).finish(&id);
                    (!cancelled).then(|| jsonrpc::error(&id, jsonrpc::INTERNAL_ERROR, &failure))
                }
                Message::Invalid { id, code, message } => Some(jsonrpc::error(&id, code, message)),
                Message::Notification { .. } => None,
            })
            .collect();
        match (batch, replies.pop()) {
            (_, None) => {}
            (false, Some(reply)) => shared.send(&reply),
            (true, Some(last)) => {
                replies.push(last);
                shared.send(&Value::Array(replies));
            }
        }
    }
}

/// A panic's message, when it carries one.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> &str {
    panic
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| panic.downcast_ref::<&str>().copied())
        .unwrap_or("unknown panic")
}

struct Worker {
    config: ServerConfig,
    shared: Arc<Shared>,
    host: AnalysisHost,
    watcher: WorkspaceWatcher,
    tools: Vec<Tool>,
    /// Set by a call handed to a background job: its reply comes from there.
    deferred: bool,
}

impl Worker {
    fn new(config: ServerConfig, system: Arc<dyn System>, shared: Arc<Shared>) -> Worker {
        // One walk finds the files and watches each directory before reading it, so the
        // database loads from a file list no later change can have slipped past.
        let (watcher, files) = WorkspaceWatcher::watch_and_walk(&config.root);
        if !watcher.is_active() {
            log("file watcher unavailable; every request rescans the workspace");
        }
        let files = files.unwrap_or_default();
        let host = AnalysisHost::load_walked(system, config.root.clone(), &files);
        // Every tool reads the whole graph: compute the packages on every core now (the
        // first answer then only collects). Cancellation cannot happen yet.
        let _ = host.analysis().prime(config.threads);
        Worker {
            config,
            shared,
            host,
            watcher,
            tools: registry(),
            deferred: false,
        }
    }

    fn run(mut self, jobs: Receiver<Job>) {
        for job in jobs {
            match job {
                Job::Single(message) => {
                    if let Some(response) = self.handle_guarded(message) {
                        self.shared.send(&response);
                    }
                }
                Job::Batch(messages) => {
                    let responses: Vec<Value> = messages
                        .into_iter()
                        .filter_map(|message| match message {
                            Message::Request { id, method, .. } if method == "initialize" => {
                                let cancelled = lock(&self.shared.pending).finish(&id);
                                (!cancelled).then(|| {
                                    jsonrpc::error(
                                        &id,
                                        jsonrpc::INVALID_REQUEST,
                                        "`initialize` must not be part of a batch",
                                    )
                                })
                            }
                            message => self.handle_guarded(message),
                        })
                        .collect();
                    if !responses.is_empty() {
                        self.shared.send(&Value::Array(responses));
                    }
                }
            }
        }
    }

    /// Handles one message under `catch_unwind`: a bug becomes an internal-error reply.
    fn handle_guarded(&mut self, message: Message) -> Option<Value> {
        let id = match &message {
            Message::Request { id, .. } => Some(id.clone()),
            _ => None,
        };
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| self.handle(message)));
        *lock(&self.shared.in_flight) = None;
        if std::mem::take(&mut self.deferred) && outcome.is_ok() {
            // A background job owns the request now: it answers (or not, if cancelled).
            return None;
        }
        let cancelled = id
            .as_ref()
            .is_some_and(|id| lock(&self.shared.pending).finish(id));
        match outcome {
            Ok(_) if cancelled => None,
            Ok(response) => response,
            Err(panic) => {
                let what = panic_message(&*panic);
                log(&format!("internal error: {what}"));
                id.map(|id| {
                    jsonrpc::error(
                        &id,
                        jsonrpc::INTERNAL_ERROR,
                        format!("internal error in once (the server keeps running): {what}"),
                    )
                })
            }
        }
    }

    fn handle(&mut self, message: Message) -> Option<Value> {
        match message {
            Message::Invalid { id, code, message } => Some(jsonrpc::error(&id, code, message)),
            Message::Notification { method, .. } => {
                if method == "notifications/initialized" {
                    log("client initialized");
                }
                None
            }
            Message::Request { id, method, params } => {
                if self.shared.is_cancelled(&id) {
                    return None;
                }
                Some(self.request(&id, &method, &params))
            }
        }
    }

    fn request(&mut self, id: &Value, method: &str, params: &Map<String, Value>) -> Value {
        let modern = modern_version(params).map(str::to_owned);
        if let Some(requested) = &modern
            && !lifecycle::supported_versions().contains(&requested.as_str())
        {
            return jsonrpc::error_with_data(
                id,
                jsonrpc::UNSUPPORTED_PROTOCOL_VERSION,
                format!("protocol version `{requested}` is not supported"),
                json!({ "supported": lifecycle::supported_versions(), "requested": requested }),
            );
        }
        let session = *lock(&self.shared.session);
        // The version that shapes the answer: the request's own, else the session's.
        let version = modern.clone().or(session.map(str::to_owned));
        let established = version.is_some();
        let reply =
            |result: Value, list: bool| jsonrpc::result(id, stamp_modern(params, result, list));
        match method {
            "initialize" => {
                let requested = params.get("protocolVersion").and_then(Value::as_str);
                let negotiated = lifecycle::negotiate(requested);
                *lock(&self.shared.session) = Some(negotiated);
                log(&format!(
                    "initialize: client asked for {}, negotiated {negotiated}",
                    requested.unwrap_or("nothing")
                ));
                reply(
                    lifecycle::initialize_result(
                        negotiated,
                        &self.config.root,
                        self.config.allow_run,
                    ),
                    false,
                )
            }
            "ping" => reply(json!({}), false),
            "server/discover" => jsonrpc::result(
                id,
                lifecycle::discover_result(&self.config.root, self.config.allow_run),
            ),
            "tools/list"
            | "tools/call"
            | "resources/list"
            | "resources/templates/list"
            | "prompts/list"
                if !established =>
            {
                jsonrpc::error(
                    id,
                    jsonrpc::INVALID_REQUEST,
                    format!(
                        "`{method}` before `initialize`: send `initialize` first (or a {MODERN_VERSION} request carrying `_meta`)"
                    ),
                )
            }
            "tools/list" => {
                if let Some(cursor) = params.get("cursor").filter(|c| !c.is_null()) {
                    return jsonrpc::error(
                        id,
                        jsonrpc::INVALID_PARAMS,
                        format!("invalid cursor {cursor}: the tool list has one page"),
                    );
                }
                let version = version.unwrap_or_default();
                let tools: Vec<Value> = self
                    .tools
                    .iter()
                    .filter(|t| !t.gated() || self.config.allow_run)
                    .map(|t| {
                        t.listing(
                            lifecycle::has_structured_content(&version),
                            lifecycle::has_annotations(&version),
                        )
                    })
                    .collect();
                reply(json!({ "tools": tools }), true)
            }
            "tools/call" => {
                let version = version.unwrap_or_default();
                match self.call_tool(id, params, &version) {
                    Ok(result) => reply(result, false),
                    Err(error) => error,
                }
            }
            "resources/list" => reply(json!({ "resources": [] }), true),
            "resources/templates/list" => reply(json!({ "resourceTemplates": [] }), true),
            "prompts/list" => reply(json!({ "prompts": [] }), true),
            _ => jsonrpc::error(
                id,
                jsonrpc::METHOD_NOT_FOUND,
                format!("unknown method `{method}`"),
            ),
        }
    }

    /// Runs `tools/call`: `Ok` is the call result (possibly a tool error), `Err` a JSON-RPC error.
    fn call_tool(
        &mut self,
        id: &Value,
        params: &Map<String, Value>,
        version: &str,
    ) -> Result<Value, Value> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(jsonrpc::error(
                id,
                jsonrpc::INVALID_PARAMS,
                "malformed `tools/call` params: a string `name` is required",
            ));
        };
        let arguments = match params.get("arguments") {
            None | Some(Value::Null) => Map::new(),
            Some(Value::Object(arguments)) => arguments.clone(),
            Some(_) => {
                return Err(jsonrpc::error(
                    id,
                    jsonrpc::INVALID_PARAMS,
                    "malformed `tools/call` params: `arguments` must be an object",
                ));
            }
        };
        let Some(tool) = self.tools.iter().find(|t| t.name == name) else {
            let names: Vec<&str> = self
                .tools
                .iter()
                .filter(|t| !t.gated() || self.config.allow_run)
                .map(|t| t.name)
                .collect();
            return Ok(tool_error(format!(
                "unknown tool `{name}`; available tools: {}",
                names.join(", ")
            )));
        };
        if tool.gated() && !self.config.allow_run {
            return Ok(tool_error(format!(
                "`{name}` changes the workspace and is disabled: start the server with `once mcp --allow-run` to enable it"
            )));
        }
        if let Err(problem) = (tool.check)(&arguments) {
            return Ok(tool_error(format!(
                "Input validation error: invalid arguments for `{name}`: {problem}"
            )));
        }
        self.host.apply_changes(&self.watcher.sync());
        let handler = tool.handler;
        let outcome = match handler {
            // Writes go through the host, which applies the written paths as changes at
            // once: the next call sees them without waiting for the watcher.
            ToolHandler::Editing(edit) => Ok(edit(&mut self.host, &arguments)),
            ToolHandler::ReadOnly(query) => {
                let analysis = self.host.analysis();
                *lock(&self.shared.in_flight) = Some(InFlight {
                    id: id.clone(),
                    cancel: analysis.cancel_handle(),
                });
                let outcome = query(&analysis, &arguments);
                *lock(&self.shared.in_flight) = None;
                outcome
            }
            ToolHandler::Executing(plan) => {
                // Plan from a snapshot, drop it, run the plan in the background: the
                // worker (and the database) are free for the next request at once.
                let analysis = self.host.analysis();
                *lock(&self.shared.in_flight) = Some(InFlight {
                    id: id.clone(),
                    cancel: analysis.cancel_handle(),
                });
                let planned = plan(&analysis, &arguments);
                *lock(&self.shared.in_flight) = None;
                drop(analysis);
                match planned {
                    Ok(Ok(job)) => {
                        self.spawn_execution(id, params, version, job);
                        self.deferred = true;
                        return Ok(Value::Null);
                    }
                    Ok(Err(message)) => Ok(Err(message)),
                    Err(cancelled) => Err(cancelled),
                }
            }
        };
        match outcome {
            Err(_cancelled) => Ok(tool_error(format!("`{name}` was cancelled"))),
            Ok(Err(message)) => Ok(tool_error(message)),
            Ok(Ok(output)) => Ok(tool_result(output, version)),
        }
    }

    /// Runs an executing tool's job on its own thread, which sends the reply (none when
    /// the request is cancelled: its processes are killed) and, when the request carries
    /// a `progressToken`, a `notifications/progress` per finished action.
    fn spawn_execution(
        &self,
        id: &Value,
        params: &Map<String, Value>,
        version: &str,
        job: crate::execute::ExecutionJob,
    ) {
        let cancel = once_exec::CancelHandle::new();
        let key = id.to_string();
        lock(&self.shared.background).insert(key.clone(), cancel.clone());
        // A cancellation that arrived while planning.
        if self.shared.is_cancelled(id) {
            cancel.cancel();
        }
        let shared = self.shared.clone();
        let root = self.config.root.clone();
        let store = self.config.store.clone();
        let request_id = id.clone();
        let params = params.clone();
        let version = version.to_owned();
        let token = params
            .get("_meta")
            .and_then(|meta| meta.get("progressToken"))
            .filter(|token| token.is_string() || token.is_number())
            .cloned();
        let body = move || {
            let progress = |done: usize, total: usize, message: &str| {
                if let Some(token) = &token {
                    // Checked and sent under the lock the reader marks cancellations
                    // under: once it has read `notifications/cancelled` for this request,
                    // nothing more is said of it (the killed actions end after that).
                    let pending = lock(&shared.pending);
                    if pending.is_cancelled(&request_id) {
                        return;
                    }
                    shared.send(&json!({
                        "jsonrpc": "2.0",
                        "method": "notifications/progress",
                        "params": { "progressToken": token, "progress": done, "total": total, "message": message },
                    }));
                    drop(pending);
                }
            };
            let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                crate::execute::execute(&root, store.as_deref(), &job, cancel, &progress)
            }));
            lock(&shared.background).remove(&key);
            if lock(&shared.pending).finish(&request_id) {
                return;
            }
            let reply = match outcome {
                Ok(Ok(result)) => {
                    let output = ToolOutput {
                        result,
                        next_cursor: None,
                        warnings: None,
                    };
                    jsonrpc::result(
                        &request_id,
                        stamp_modern(&params, tool_result(output, &version), false),
                    )
                }
                Ok(Err(message)) => jsonrpc::result(
                    &request_id,
                    stamp_modern(&params, tool_error(message), false),
                ),
                Err(panic) => {
                    let what = panic_message(&*panic);
                    log(&format!("internal error: {what}"));
                    jsonrpc::error(
                        &request_id,
                        jsonrpc::INTERNAL_ERROR,
                        format!("internal error in once (the server keeps running): {what}"),
                    )
                }
            };
            shared.send(&reply);
        };
        let mut threads = lock(&self.shared.threads);
        threads.retain(|thread| !thread.is_finished());
        match std::thread::Builder::new()
            .name("once-mcp-execute".into())
            .spawn(body)
        {
            Ok(thread) => threads.push(thread),
            Err(e) => {
                log(&format!("cannot start a build thread: {e}"));
                lock(&self.shared.background).remove(&id.to_string());
                if !lock(&self.shared.pending).finish(id) {
                    self.shared.send(&jsonrpc::error(
                        id,
                        jsonrpc::INTERNAL_ERROR,
                        format!("cannot start the build: {e}"),
                    ));
                }
            }
        }
    }
}

/// A successful call's result: the output as text and, from 2025-06-18, structured.
fn tool_result(output: ToolOutput, version: &str) -> Value {
    let structured = once_json::to_value(&crate::schema::StructuredContent {
        result: output.result,
        warnings: output.warnings,
        next_cursor: output.next_cursor,
    });
    let text = structured.to_string();
    let mut result = json!({ "content": [{ "type": "text", "text": text }], "isError": false });
    if lifecycle::has_structured_content(version) {
        result["structuredContent"] = structured;
    }
    result
}

fn tool_error(message: String) -> Value {
    json!({ "content": [{ "type": "text", "text": message }], "isError": true })
}

#[allow(
    clippy::print_stderr,
    reason = "stderr is the MCP server's log channel"
)]
fn log(message: &str) {
    eprintln!("once mcp: {message}");
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use once_analysis::{EntryKind, FileStamp, HostPlatform, StampedRead, Walked, WriteLock};

    use super::*;

    /// The real disk, except that reading a file is a bug in once: loading panics.
    #[derive(Debug)]
    struct ReadsPanic;

    impl System for ReadsPanic {
        fn read_to_string(&self, path: &Path) -> io::Result<String> {
            panic!("reading `{}` blew up", path.display())
        }
        fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
            panic!("reading `{}` blew up", path.display())
        }
        fn is_file(&self, path: &Path) -> bool {
            OsSystem.is_file(path)
        }
        fn walk_entries(&self, root: &Path) -> io::Result<Walked> {
            OsSystem.walk_entries(root)
        }
        fn host_platform(&self) -> HostPlatform {
            OsSystem.host_platform()
        }
        fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
            OsSystem.entry_kind(path)
        }
        fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
            OsSystem.canonicalize(path)
        }
        fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
            OsSystem.read_confined(root, relative)
        }
        fn lock_writes(&self, root: &Path) -> io::Result<WriteLock> {
            OsSystem.lock_writes(root)
        }
        fn write_confined(
            &self,
            lock: &WriteLock,
            root: &Path,
            relative: &str,
            contents: &[u8],
        ) -> io::Result<bool> {
            OsSystem.write_confined(lock, root, relative, contents)
        }
        fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
            OsSystem.stamp(path)
        }
        fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
            OsSystem.link_stamp(path)
        }
        fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
            OsSystem.read_link(path)
        }
        fn now(&self) -> std::time::SystemTime {
            OsSystem.now()
        }
        fn read_stamped(&self, path: &Path) -> StampedRead {
            panic!("reading `{}` blew up", path.display())
        }
    }

    /// What the server wrote, shared with the test.
    #[derive(Clone, Default)]
    struct Written(Arc<Mutex<Vec<u8>>>);

    impl Write for Written {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            lock(&self.0).extend_from_slice(bytes);
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A panic while loading the workspace leaves a server that answers every request,
    /// `initialize` first, with an internal error naming the failed load, and ends when
    /// its input does (it neither dies before answering nor hangs).
    #[test]
    fn a_panic_while_loading_is_answered_on_every_request() {
        let dir = tempfile::tempdir().unwrap();
        for (path, text) in [
            ("once.toml", "[workspace]\n"),
            (
                "a/once.toml",
                "[[target]]\nname = \"a\"\nkind = \"group\"\n",
            ),
            (
                "b/once.toml",
                "[[target]]\nname = \"b\"\nkind = \"group\"\n",
            ),
        ] {
            let path = dir.path().join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let config = ServerConfig {
            root: dir.path().to_path_buf(),
            allow_run: false,
            threads: 2,
            store: None,
        };
        let input = concat!(
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}"#,
            "\n",
            r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            "\n",
            r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
            "\n",
        );
        let written = Written::default();
        serve(
            config,
            Arc::new(ReadsPanic),
            input.as_bytes(),
            Box::new(written.clone()),
        )
        .unwrap();
        let output = String::from_utf8(lock(&written.0).clone()).unwrap();
        let replies: Vec<Value> = output
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let errors: Vec<(i64, i64, bool)> = replies
            .iter()
            .filter(|reply| reply["id"] != json!(3))
            .map(|reply| {
                let message = reply["error"]["message"].as_str().unwrap_or_default();
                (
                    reply["id"].as_i64().unwrap_or_default(),
                    reply["error"]["code"].as_i64().unwrap_or_default(),
                    message.starts_with("once could not load the workspace: internal error")
                        && message.contains("reading `")
                        && message.contains("blew up"),
                )
            })
            .collect();
        assert_eq!(
            errors,
            [
                (1, jsonrpc::INTERNAL_ERROR, true),
                (2, jsonrpc::INTERNAL_ERROR, true)
            ],
            "{output}"
        );
        // `ping` is answered by the reader, load or no load.
        assert!(
            replies
                .iter()
                .any(|reply| reply["id"] == json!(3) && reply["result"] == json!({})),
            "{output}"
        );
    }
}
