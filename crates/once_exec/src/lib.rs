//! The execution layer: runs the actions a plan declares, caches their results, and is
//! the only crate that starts processes.
//!
//! A front end takes a plan from analysis ([`PlannedAction`]s: each `once_model` action
//! with its static key), drops its database snapshot, opens the [`Store`] and runs the
//! plan with an [`Executor`]:
//!
//! ```no_run
//! # fn plan() -> Vec<once_exec::PlannedAction> { Vec::new() }
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let root = std::path::Path::new("/path/to/workspace");
//! let store = once_exec::Store::open(&once_exec::Store::default_path(root))?;
//! let report = once_exec::Executor::new(root, &store).run(&plan())?;
//! assert!(report.succeeded());
//! # Ok(()) }
//! ```
//!
//! - [`key`]: the canonical encoding of action keys;
//! - [`executor`]: scheduling, cache lookup, execution, results and progress;
//! - [`launch`]: the one place a process starts, for each way `once` runs one (captured,
//!   piped, attached, grouped, companions);
//! - [`runner`]: the [`ProcessRunner`] trait, real process groups, cancellation;
//! - [`reaper`]: kills the running groups when this process dies first (`SIGKILL`);
//! - [`fake`]: an in-memory runner for tests;
//! - [`store`]: blobs, records, key locks, `stats`/`clean`/`gc`;
//! - [`outputs`]: clearing, capturing and restoring build outputs in the workspace;
//! - [`materialize`]: copies in place of output links that lead out of their output;
//! - `stage`: the `copy` step (files, links as links, directory trees);
//! - [`environment`]: the scrubbed environment and its allowlist;
//! - [`sandbox`]: what an action's program may read, write and reach (`once_sandbox`);
//! - [`depfile`]: compilers' dependency files checked against declared inputs;
//! - [`inputs`]: source inputs checked again after an action ran ([`SourceStamps`]);
//! - [`tools`]: finding programs and caching their digests;
//! - [`probes`]: toolchain probes whose output joins a command's key;
//! - [`record`]: the action cache's record format;
//! - [`record_index`]: one file per workspace with copies of the records its builds used;
//! - [`remote`]: the [`RemoteCache`] seam a shared cache (`once_remote`) plugs into;
//! - [`capture`]: a program's stdout and stderr, through pipes into the store;
//! - [`piped`]: helper programs (test runners, probes) read through pipes, their group
//!   killed when they exit;
//! - [`evidence`]: the `once.evidence.v1` records of a report (`once_evidence`).
//!
//! `docs/execution.md` describes the design for users.

pub mod capture;
pub mod depfile;
pub mod environment;
pub mod evidence;
pub mod executor;
pub mod fake;
mod handles;
pub mod inputs;
pub mod key;
pub mod launch;
pub mod materialize;
pub mod outputs;
pub mod piped;
pub mod probe_stamps;
pub mod probes;
pub mod reaper;
pub mod record;
pub mod record_index;
pub mod remote;
pub mod runner;
pub mod sandbox;
mod stage;
pub mod store;
pub mod tools;

pub use environment::HostEnvironment;
pub use executor::{
    ActionResult, ActionStatus, CacheState, CapturedStream, DeclaredOutput, ExecError, ExecOptions,
    ExecutionReport, Executor, ONCE_PROGRAM, OutputScope, PlanError, PlannedAction, Progress,
};
pub use fake::{FakeOutcome, FakeRunner};
pub use inputs::SourceStamps;
pub use key::{KEY_FORMAT_VERSION, ToolIdentity};
pub use remote::{FetchError, RemoteCache};
pub use runner::{CancelHandle, ProcessExit, ProcessRequest, ProcessRunner, SystemRunner};
pub use sandbox::SandboxMode;
pub use store::{GcReport, Store, StoreStats};
