//! Standard output and error when their reader may leave early: `once query targets |
//! head` closes the pipe after ten lines. A write that finds the pipe closed is neither an
//! error nor a bug: [`Watched`] records it (every `println!`, `print!` and `eprintln!` of
//! this crate writes through it, see `main.rs`), the command prints nothing more that
//! anyone could read, and `once` exits [`CLOSED_PIPE_EXIT`] without a message.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};

/// The exit status after stdout or stderr was found closed: 128 + SIGPIPE (13), what a
/// shell reports for a program that a closed pipe stopped (`seq 1000000 | head` under
/// `set -o pipefail`), and what `once run` and `once exec` report for a program that
/// died of it.
pub const CLOSED_PIPE_EXIT: u8 = 141;

/// Whether a write to stdout or stderr found its reader gone.
static CLOSED: AtomicBool = AtomicBool::new(false);

/// Whether a write to stdout or stderr found its reader gone.
pub fn closed() -> bool {
    CLOSED.load(Ordering::Relaxed)
}

/// `result` of a write to stdout or stderr, unchanged; a broken pipe is recorded.
pub fn noted<T>(result: io::Result<T>) -> io::Result<T> {
    if let Err(error) = &result
        && error.kind() == io::ErrorKind::BrokenPipe
    {
        CLOSED.store(true, Ordering::Relaxed);
    }
    result
}

/// A writer to stdout or stderr that records a closed pipe ([`closed`]).
pub struct Watched<W>(pub W);

impl<W: Write> Write for Watched<W> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        noted(self.0.write(bytes))
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        noted(self.0.write_all(bytes))
    }

    fn flush(&mut self) -> io::Result<()> {
        noted(self.0.flush())
    }
}

/// Locked stdout, watched.
pub fn stdout() -> Watched<io::StdoutLock<'static>> {
    Watched(io::stdout().lock())
}

/// Locked stderr, watched.
pub fn stderr() -> Watched<io::StderrLock<'static>> {
    Watched(io::stderr().lock())
}
