//! The binary's panic guard: a panic anywhere in `once` is a bug in `once`, and the user
//! sees one message saying so (with the version, the command and where to report it)
//! instead of Rust's default report, and the process exits 2 like any other failure.
//!
//! The hook only records and prints; [`guard`] turns the unwound panic into an exit code.
//! The MCP and language servers catch their own panics, per request and while loading,
//! and answer them as internal errors; the hook prints the full report only for panics
//! on the main thread (where `once lsp` loads, so a failed load is also on its stderr)
//! and one line for other threads.

use std::io::Write;
use std::panic::{self, AssertUnwindSafe};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

/// Where users report bugs.
const REPORT_AT: &str = concat!(env!("CARGO_PKG_REPOSITORY"), "/issues");

/// Whether the command line asked for `--format json` (errors are then one JSON line).
static JSON_ERRORS: AtomicBool = AtomicBool::new(false);

/// Reports later panics as one JSON line on stderr, like other errors of `--format json`.
pub fn report_as_json() {
    JSON_ERRORS.store(true, Ordering::Relaxed);
}

/// Installs the hook that prints the bug report for panics on the main thread.
pub fn install_hook() {
    let main_thread = std::thread::current().id();
    panic::set_hook(Box::new(move |info| {
        let on_main = std::thread::current().id() == main_thread;
        if !on_main {
            // Worker threads (MCP requests, language-server requests) report their own
            // panics through their protocol; a short line on stderr keeps a trace.
            let _ = writeln!(
                std::io::stderr().lock(),
                "once: internal error on a worker thread: {}",
                describe(info)
            );
            return;
        }
        let lines = bug_report(&describe(info));
        let mut stderr = std::io::stderr().lock();
        if JSON_ERRORS.load(Ordering::Relaxed) {
            let value = serde_json::json!({
                "error": { "message": lines.join(" "), "causes": lines, "internal": true }
            });
            let _ = writeln!(stderr, "{value}");
        } else {
            for line in lines {
                let _ = writeln!(stderr, "once: {line}");
            }
        }
    }));
}

/// Runs `body`, turning a panic into exit code 2 (the hook has already printed why).
pub fn guard(body: impl FnOnce() -> ExitCode) -> ExitCode {
    panic::catch_unwind(AssertUnwindSafe(body)).unwrap_or(ExitCode::from(2))
}

/// The panic's message and where it happened.
fn describe(info: &panic::PanicHookInfo<'_>) -> String {
    let payload = info.payload();
    let message = payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "(no message)".to_owned());
    match info.location() {
        Some(location) => format!("{message} (at {location})"),
        None => message,
    }
}

/// The message a user sees for a panic, line by line: it is our bug, what ran, and where
/// to report it.
fn bug_report(description: &str) -> [String; 3] {
    let command: Vec<String> = std::env::args_os()
        .map(|arg| crate::human::printable(&arg.to_string_lossy()).into_owned())
        .collect();
    [
        format!(
            "error: internal error, this is a bug in once {}: {description}",
            env!("CARGO_PKG_VERSION")
        ),
        format!("while running: {}", command.join(" ")),
        format!(
            "please report it at {REPORT_AT}, with the command and the workspace if you can share it"
        ),
    ]
}
