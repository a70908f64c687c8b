//! The seam between the executor and a shared cache on another machine.
//!
//! The executor knows a remote cache only through [`RemoteCache`]: look a key up, bring
//! a blob into the local store, hand a recorded result over for upload. The protocols
//! (REAPI over gRPC, Bazel's HTTP cache) live in `once_remote`, which implements the
//! trait; nothing here does network I/O.
//!
//! Only sandboxed, cacheable results take part: an action run with the sandbox off (its
//! key differs already) is never looked up remotely nor uploaded, and neither is anything
//! run while validating.

use once_model::Sha256Digest;

use crate::record::ActionRecord;
use crate::store::Store;

/// Why a blob could not be brought from the remote cache.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchError {
    /// The server sent bytes that do not hash to the digest asked for: never stored.
    Corrupt(String),
    /// The server does not have it (an entry whose blobs were evicted).
    Missing,
    /// The transfer failed (counted by the remote cache, which reports it at the end).
    Failed(String),
}

impl std::fmt::Display for FetchError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            FetchError::Corrupt(why) => write!(f, "the remote cache sent wrong content: {why}"),
            FetchError::Missing => f.write_str("the remote cache does not have the blob"),
            FetchError::Failed(why) => write!(f, "{why}"),
        }
    }
}

/// A shared cache behind the local store. Every method may be called from several
/// executor threads at once; a failing remote answers misses, never errors that fail a
/// build.
pub trait RemoteCache: Send + Sync {
    /// The result recorded remotely under `key`, if the remote has one that decodes as a
    /// record of this key (its checksum is bound to the key).
    fn lookup(&self, key: &Sha256Digest) -> Option<ActionRecord>;

    /// Brings the blob `digest` of `size` bytes into `store`, streaming, checked against
    /// its digest before it becomes a blob.
    fn fetch_blob(&self, store: &Store, digest: &Sha256Digest, size: u64)
    -> Result<(), FetchError>;

    /// Hands the result just recorded under `key` over for upload (its blobs are in the
    /// local store); returns at once, the upload runs in the background and its failures
    /// are counted, never reported to the action.
    fn upload(&self, key: &Sha256Digest, record: &ActionRecord);
}
