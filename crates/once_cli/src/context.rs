//! What a command reads of the process that asked for it: the environment, the current
//! directory, whether its streams are terminals, where its output goes, and how it is
//! interrupted.
//!
//! A command computed in its own `once` process reads all of that from the process. The
//! workspace server ([`crate::server`]) runs the same command code on one of its threads
//! for a client `once` process, so each command reads these facts through this module:
//! on a server thread they are the client's (a [`Context`] set for the thread), anywhere
//! else the process's own. Output written through [`crate::output`] goes back to the
//! client, which writes the bytes as they come: the answer is byte-for-byte the one the
//! client would have printed, by construction.
//!
//! Threads a command starts for its observers (a progress line written from the
//! executor's workers) carry the context along with [`current`] and [`enter`].

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::{Arc, Mutex};

use once_exec::CancelHandle;

/// Which stream a command writes to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stream {
    Stdout,
    Stderr,
}

/// Where a server-run command's output goes (the client connection).
pub trait Sink: Send + Sync {
    /// Writes `bytes` of `stream`; an error means the client is gone.
    fn write(&self, stream: Stream, bytes: &[u8]) -> io::Result<()>;
}

/// Where a server-run command gets its warm analysis from (the server's database).
pub trait Warm: Send + Sync {
    /// Runs `body` with a snapshot of the database, after the watcher has seen every
    /// change made before the request was sent (the fence).
    fn with_analysis(&self, body: &mut dyn FnMut(&once_analysis::Analysis));
}

/// The client of a command the server runs.
pub struct Context {
    /// The workspace root the client found (the server's own).
    pub root: PathBuf,
    pub cwd: PathBuf,
    pub env: BTreeMap<OsString, OsString>,
    pub stderr_terminal: bool,
    /// The colour choice `anstream` made for the client's stdout.
    pub stdout_color: anstream::ColorChoice,
    pub sink: Arc<dyn Sink>,
    pub warm: Arc<dyn Warm>,
    /// A write found the client's stream closed (see [`crate::output::closed`]).
    pub closed: AtomicBool,
    /// The execution to cancel when the client goes away or forwards a signal.
    pub cancel: Mutex<Option<CancelHandle>>,
    /// The termination signal the client forwarded (0: none).
    pub signal: AtomicI32,
    /// What a build left for the server's replays of it ([`crate::server::memo`]).
    pub memo: Mutex<Option<crate::server::memo::Capture>>,
}

impl Context {
    /// The client forwarded `signal` (or went away: `0` only cancels).
    pub fn interrupt(&self, signal: i32) {
        if signal != 0 {
            let _ = self
                .signal
                .compare_exchange(0, signal, Ordering::SeqCst, Ordering::SeqCst);
        }
        if let Some(cancel) = &*self.cancel.lock().unwrap_or_else(|e| e.into_inner()) {
            cancel.cancel();
        }
    }
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Context>>> = const { RefCell::new(None) };
}

/// The context of this thread's command, when the server runs it.
pub fn current() -> Option<Arc<Context>> {
    CURRENT.with(|current| current.borrow().clone())
}

/// Restores the thread's previous context when dropped.
pub struct Entered(Option<Arc<Context>>);

impl Drop for Entered {
    fn drop(&mut self) {
        let previous = self.0.take();
        CURRENT.with(|current| *current.borrow_mut() = previous);
    }
}

/// Makes `context` this thread's until the guard is dropped (`None`: the process's).
pub fn enter(context: Option<Arc<Context>>) -> Entered {
    Entered(CURRENT.with(|current| std::mem::replace(&mut *current.borrow_mut(), context)))
}

/// An environment variable of whoever asked for the command.
pub fn var_os(name: &str) -> Option<OsString> {
    match current() {
        Some(context) => context.env.get(OsStr::new(name)).cloned(),
        None => std::env::var_os(name),
    }
}

/// An environment variable of whoever asked, as UTF-8 (`None` when unset or not UTF-8).
pub fn var(name: &str) -> Option<String> {
    var_os(name).and_then(|value| value.into_string().ok())
}

/// Every environment variable of whoever asked, UTF-8 ones only (as `std::env::vars`
/// would panic on the others, this leaves them out).
pub fn vars() -> Vec<(String, String)> {
    match current() {
        Some(context) => context
            .env
            .iter()
            .filter_map(|(name, value)| {
                Some((name.to_str()?.to_owned(), value.to_str()?.to_owned()))
            })
            .collect(),
        None => std::env::vars_os()
            .filter_map(|(name, value)| Some((name.into_string().ok()?, value.into_string().ok()?)))
            .collect(),
    }
}

/// The current directory of whoever asked.
pub fn current_dir() -> io::Result<PathBuf> {
    match current() {
        Some(context) => Ok(context.cwd.clone()),
        None => std::env::current_dir(),
    }
}

/// Whether the asker's stderr is a terminal.
pub fn stderr_is_terminal() -> bool {
    use std::io::IsTerminal as _;
    match current() {
        Some(context) => context.stderr_terminal,
        None => std::io::stderr().is_terminal(),
    }
}

/// The workspace root the client resolved, when the server runs the command.
pub fn server_root() -> Option<PathBuf> {
    current().map(|context| context.root.clone())
}

/// Runs `body` with the server's warm analysis (fenced); `None` outside the server.
pub fn with_warm_analysis<R>(body: impl FnOnce(&once_analysis::Analysis) -> R) -> Option<R> {
    let context = current()?;
    let mut body = Some(body);
    let mut answer = None;
    context.warm.with_analysis(&mut |analysis| {
        if let Some(body) = body.take() {
            answer = Some(body(analysis));
        }
    });
    answer
}

/// Leaves `value` to the process's exit in a one-shot command (freeing it only costs
/// time, see `once_build::plan_cache::leave_to_exit`); the server frees it.
pub fn leave_to_exit<T>(value: T) {
    if current().is_none() {
        once_build::plan_cache::leave_to_exit(value);
    }
}
