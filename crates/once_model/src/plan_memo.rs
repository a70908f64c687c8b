//! The [`PlanMemo`] trait: answers of planning remembered across processes, as opaque
//! bytes by key. The database asks it (`once_db::plan_memo` says how); a one-shot front
//! end keeps it (`once_build::plan_cache::memo`, in the store).

use crate::digest::Sha256Digest;

/// Planned values by key, kept by the caller between processes.
pub trait PlanMemo: Send + Sync {
    /// The value recorded under `key` (by this process or an earlier one), if any.
    fn lookup(&self, key: &Sha256Digest) -> Option<std::sync::Arc<[u8]>>;

    /// Remembers `value` under `key` (a later [`PlanMemo::lookup`] may return it).
    fn record(&self, key: Sha256Digest, value: Vec<u8>);
}
