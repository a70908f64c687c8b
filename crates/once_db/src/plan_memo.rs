//! The [`PlanMemo`] trait: answers of planning remembered across processes.
//!
//! Planning a target calls its kind's Starlark implementation; in a new process salsa
//! remembers nothing, so every `once build` would plan every target again. A front end
//! that runs one command per process installs a memo ([`crate::RootDatabase::set_plan_memo`]);
//! the planning query (`once_graph::actions`) then looks its answer up by a key over
//! everything the implementation can observe, and records what it planned. The memo
//! stores opaque bytes: the key and the value's encoding belong to the planner, the
//! storage to the front end (`once_exec::plan_memo` keeps it in the store). Servers with
//! a warm database (`once lsp`, `once mcp`) install none.

use crate::digests::Sha256Digest;

/// Planned values by key, kept by the caller between processes.
pub trait PlanMemo: Send + Sync {
    /// The value recorded under `key` (by this process or an earlier one), if any.
    fn lookup(&self, key: &Sha256Digest) -> Option<std::sync::Arc<[u8]>>;

    /// Remembers `value` under `key` (a later [`PlanMemo::lookup`] may return it).
    fn record(&self, key: Sha256Digest, value: Vec<u8>);
}
