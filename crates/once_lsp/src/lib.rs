//! `once lsp`: a language server for `once.toml` over the same database as the CLI and
//! the MCP server.
//!
//! **Architecture Invariant:** this crate converts and dispatches, nothing else. Every
//! fact comes from `once_analysis`; this crate owns the `lsp-server` main loop
//! ([`server`]), one handler per request (`handlers`), its stdio framing ([`transport`]),
//! the overlay of open documents ([`overlay`]) and every conversion between the analysis'
//! data (Unicode-scalar columns) and the protocol's (the negotiated UTF-16 or UTF-8
//! encoding) ([`convert`]).

pub mod convert;
mod handlers;
pub mod overlay;
pub mod server;
pub mod transport;

use std::path::PathBuf;

pub use server::{run, run_with_system};

/// Serves the language server protocol on stdin/stdout. `root` overrides the workspace the
/// client names (from `once -C DIR lsp`); `threads` compute the packages when it loads.
pub fn run_stdio(
    root: Option<PathBuf>,
    threads: usize,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let (connection, io_threads) = transport::stdio()?;
    let outcome = server::run(&connection, root, threads);
    drop(connection);
    io_threads.join();
    outcome
}
