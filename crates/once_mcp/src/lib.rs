//! `once mcp`: a Model Context Protocol server over stdio.
//!
//! - [`jsonrpc`]: message classification and reply builders.
//! - [`lifecycle`]: versions, `initialize`, `server/discover`, instructions.
//! - [`schema`]: the JSON Schema subset tool schemas use, the output schemas derived from
//!   the record types, and the validator.
//! - [`tools`]: the tool registry.
//! - [`server`]: the reader/worker loop.
//!
//! **Architecture Invariant:** this crate converts and dispatches; every fact comes from
//! `once_analysis` (evidence records from `once_evidence`). stdout carries protocol messages only; logs go to stderr.

pub mod execute;
pub mod jsonrpc;
pub mod lifecycle;
mod pending;
pub mod schema;
pub mod server;
pub mod tools;

pub use server::{MAX_LINE_BYTES, ServerConfig, run, run_stdio};
