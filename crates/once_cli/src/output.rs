//! Standard output and error when their reader may leave early: `once query targets |
//! head` closes the pipe after ten lines. A write that finds the pipe closed is neither an
//! error nor a bug: [`Watched`] records it (every `println!`, `print!` and `eprintln!` of
//! this crate writes through it, see `main.rs`), the command prints nothing more that
//! anyone could read, and `once` exits [`CLOSED_PIPE_EXIT`] without a message.
//!
//! When the workspace server runs a command for a client ([`crate::context`]), these
//! writers send the bytes to the client instead, and a closed pipe is the request's own.

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
    match crate::context::current() {
        Some(context) => context.closed.load(Ordering::Relaxed),
        None => CLOSED.load(Ordering::Relaxed),
    }
}

/// `result` of a write to stdout or stderr, unchanged; a broken pipe is recorded.
pub fn noted<T>(result: io::Result<T>) -> io::Result<T> {
    if let Err(error) = &result
        && error.kind() == io::ErrorKind::BrokenPipe
    {
        match crate::context::current() {
            Some(context) => context.closed.store(true, Ordering::Relaxed),
            None => CLOSED.store(true, Ordering::Relaxed),
        }
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

/// Standard output or error: the process's (locked), or the client's when the server
/// runs the command.
pub enum Out<L, C = Client> {
    Local(L),
    Client(C),
}

impl<L: Write, C: Write> Write for Out<L, C> {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        match self {
            Out::Local(local) => local.write(bytes),
            Out::Client(client) => client.write(bytes),
        }
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        match self {
            Out::Local(local) => local.write_all(bytes),
            Out::Client(client) => client.write_all(bytes),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Out::Local(local) => local.flush(),
            Out::Client(client) => client.flush(),
        }
    }
}

/// A stream of the client a server-run command writes to: each write is sent as it is.
pub struct Client {
    context: std::sync::Arc<crate::context::Context>,
    stream: crate::context::Stream,
}

impl Write for Client {
    fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
        self.write_all(bytes).map(|()| bytes.len())
    }

    fn write_all(&mut self, bytes: &[u8]) -> io::Result<()> {
        if bytes.is_empty() {
            return Ok(());
        }
        // A client that left is a closed pipe: the command stops printing.
        self.context
            .sink
            .write(self.stream, bytes)
            .map_err(|_| io::Error::from(io::ErrorKind::BrokenPipe))
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn client(stream: crate::context::Stream) -> Option<Client> {
    crate::context::current().map(|context| Client { context, stream })
}

/// Locked stdout (or the client's), watched.
pub fn stdout() -> Watched<Out<io::StdoutLock<'static>>> {
    Watched(match client(crate::context::Stream::Stdout) {
        Some(client) => Out::Client(client),
        None => Out::Local(io::stdout().lock()),
    })
}

/// Locked stderr (or the client's), watched.
pub fn stderr() -> Watched<Out<io::StderrLock<'static>>> {
    Watched(match client(crate::context::Stream::Stderr) {
        Some(client) => Out::Client(client),
        None => Out::Local(io::stderr().lock()),
    })
}

/// Stdout for human output, whose colour `anstream` strips off a terminal (as the
/// client's stdout decided, when the server runs the command), watched.
pub fn human_stdout() -> Watched<Out<anstream::Stdout, anstream::AutoStream<Box<dyn Write + Send>>>>
{
    Watched(match client(crate::context::Stream::Stdout) {
        Some(client) => {
            let choice = client.context.stdout_color;
            Out::Client(anstream::AutoStream::new(Box::new(client), choice))
        }
        None => Out::Local(anstream::stdout()),
    })
}
