//! What the client needs of a protocol: the ActionCache's get and update, and the CAS's
//! existence check, upload and download; [`crate::grpc`] and [`crate::http`] implement
//! it. Every call blocks; retries, time-outs and the circuit breaker are the client's.

use std::fs::File;
use std::io::Write;

use bazel_remote_apis::build::bazel::remote::execution::v2::ActionResult;

use crate::mapping::Blob;

/// Why a call failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Failure {
    /// Worth trying again (the server is unavailable, overloaded, timed out; a transport
    /// error).
    Transient(String),
    /// Trying again would not help (refused, unauthenticated, not supported).
    Refused(String),
}

impl Failure {
    pub fn message(&self) -> &str {
        match self {
            Failure::Transient(message) | Failure::Refused(message) => message,
        }
    }
}

/// One protocol's client.
pub trait Transport: Send + Sync {
    /// The entry stored under the action digest `action`; `None` when there is none.
    fn get_action_result(&self, action: &Blob) -> Result<Option<ActionResult>, Failure>;
    fn update_action_result(&self, action: &Blob, result: &ActionResult) -> Result<(), Failure>;
    /// Which of `blobs` the server lacks.
    fn find_missing(&self, blobs: &[Blob]) -> Result<Vec<Blob>, Failure>;
    /// Blobs up to this size go through [`Transport::upload_small`] (in batches whose total
    /// stays below it); larger ones are streamed.
    fn batch_limit(&self) -> u64;
    /// Uploads `blobs` in one request; they are moved into it, not copied.
    fn upload_small(&self, blobs: Vec<(Blob, Vec<u8>)>) -> Result<(), Failure>;
    /// Streams the blob from `file` (at its start).
    fn upload_large(&self, blob: &Blob, file: File) -> Result<(), Failure>;
    /// Streams the blob into `sink`; `false` when the server does not have it. The bytes
    /// are unchecked: the caller hashes them.
    fn download(&self, blob: &Blob, sink: &mut dyn Write) -> Result<bool, Failure>;
}
