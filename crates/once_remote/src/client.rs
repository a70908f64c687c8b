//! The remote cache client the executor uses ([`once_exec::RemoteCache`]): lookups and
//! downloads on the executor's threads, uploads on a small pool of its own, every
//! failure counted, and a circuit breaker per direction.
//!
//! - **Connecting** happens at the first lookup or upload, not before: a build whose
//!   actions are all local hits never touches the network. A server that cannot be
//!   reached (or lacks SHA-256, or REAPI v2) is one failure, and the remote is not used
//!   again in this command.
//! - **Retries.** A transient failure (unavailable, overloaded, timed out, a transport
//!   error, HTTP 5xx) is tried again twice, after 100 ms and 300 ms; a refusal (HTTP
//!   4xx, permission denied, unauthenticated) is not.
//! - **Circuit breaker.** After three failed operations in a row in one direction
//!   (reads, writes), that direction is not used for the rest of the command: what it
//!   would have done is counted as skipped.
//! - **Verification.** A downloaded blob is written to a temporary file of the store while
//!   it is hashed, and becomes a blob only when its digest and size match; otherwise it is
//!   deleted and the caller is told ([`FetchError::Corrupt`]), which makes it a miss with a
//!   warning.
//! - **Uploads** run after an action succeeded, `upload_jobs` at a time, in the
//!   background: `FindMissingBlobs` first, then the missing blobs (batched up to the
//!   server's limit, larger ones streamed), then the ActionCache entry, last, so no entry
//!   ever names a blob the server lacks. [`RemoteClient::finish`] waits for them and
//!   answers the command's [`RemoteSummary`].

use std::io::{Read as _, Write};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, mpsc};
use std::time::Duration;

use once_exec::record::ActionRecord;
use once_exec::store::Store;
use once_exec::{FetchError, RemoteCache};
use once_model::Sha256Digest;
use sha2::{Digest as _, Sha256};

use crate::mapping::{Blob, action_result, map_action, record_of};
use crate::settings::{Protocol, RemoteSettings};
use crate::transport::{Failure, Transport};

/// Tries of an operation that fails transiently.
const ATTEMPTS: u32 = 3;
/// Failed operations in a row that open a direction's breaker.
const BREAKER_THRESHOLD: u32 = 3;
/// How many distinct failure messages a summary keeps.
const KEPT_ERRORS: usize = 5;

/// What one command did with the remote cache.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteSummary {
    /// The server, as configured (never with credentials).
    pub url: String,
    pub lookups: u64,
    /// Lookups that found a result of this key.
    pub found: u64,
    pub blobs_down: u64,
    pub bytes_down: u64,
    /// Results whose upload completed.
    pub uploads: u64,
    pub blobs_up: u64,
    pub bytes_up: u64,
    /// Lookups and downloads that failed (after retries).
    pub read_failures: u64,
    /// Uploads that failed, or were skipped once the write breaker opened.
    pub upload_failures: u64,
    /// Blobs the server sent with wrong content (never stored).
    pub corrupt: u64,
    /// Results not uploaded by the upload policy (`max_upload_size`).
    pub too_large: u64,
    /// The policy's limit, for the warning that says so.
    pub max_upload_size: u64,
    /// Operations skipped because the remote failed earlier in the command.
    pub skipped: u64,
    /// Why the remote was given up on, per direction, when it was.
    pub reads_disabled: Option<String>,
    pub writes_disabled: Option<String>,
    /// The first distinct failure messages.
    pub errors: Vec<String>,
}

impl RemoteSummary {
    /// The failures as warnings for the end of the command: empty when nothing failed.
    pub fn warnings(&self) -> Vec<String> {
        let mut warnings = Vec::new();
        if self.too_large > 0 {
            warnings.push(format!(
                "the remote cache {}: {} results were not uploaded, a file of theirs being above \
                 `max_upload_size` ({} bytes)",
                self.url, self.too_large, self.max_upload_size
            ));
        }
        if self.read_failures + self.upload_failures + self.corrupt + self.skipped == 0 {
            return warnings;
        }
        let mut parts = Vec::new();
        if self.read_failures > 0 {
            parts.push(format!(
                "{} lookups or downloads failed",
                self.read_failures
            ));
        }
        if self.upload_failures > 0 {
            parts.push(format!("{} uploads failed", self.upload_failures));
        }
        if self.corrupt > 0 {
            parts.push(format!(
                "{} blobs arrived with wrong content and were discarded",
                self.corrupt
            ));
        }
        if self.skipped > 0 {
            parts.push(format!(
                "{} operations were skipped after earlier failures",
                self.skipped
            ));
        }
        let mut line = format!("the remote cache {}: {}", self.url, parts.join(", "));
        if let Some(why) = &self.reads_disabled {
            line.push_str(&format!("; lookups stopped for this command ({why})"));
        }
        if let Some(why) = &self.writes_disabled {
            line.push_str(&format!("; uploads stopped for this command ({why})"));
        }
        if !self.errors.is_empty() {
            line.push_str(&format!("; errors: {}", self.errors.join("; ")));
        }
        line.push_str(" (the build itself did not depend on it)");
        warnings.push(line);
        warnings
    }
}

#[derive(Default)]
struct Counters {
    lookups: AtomicU64,
    found: AtomicU64,
    blobs_down: AtomicU64,
    bytes_down: AtomicU64,
    uploads: AtomicU64,
    blobs_up: AtomicU64,
    bytes_up: AtomicU64,
    read_failures: AtomicU64,
    upload_failures: AtomicU64,
    corrupt: AtomicU64,
    too_large: AtomicU64,
    skipped: AtomicU64,
}

fn add(counter: &AtomicU64, value: u64) {
    counter.fetch_add(value, Ordering::Relaxed);
}

/// One direction's circuit breaker.
#[derive(Default)]
struct Breaker {
    in_a_row: AtomicU32,
    open: AtomicBool,
    why: Mutex<Option<String>>,
}

impl Breaker {
    fn is_open(&self) -> bool {
        self.open.load(Ordering::Relaxed)
    }

    fn success(&self) {
        self.in_a_row.store(0, Ordering::Relaxed);
    }

    fn failure(&self, message: &str) {
        if self.in_a_row.fetch_add(1, Ordering::Relaxed) + 1 >= BREAKER_THRESHOLD {
            self.trip(&format!(
                "{BREAKER_THRESHOLD} failures in a row, the last: {message}"
            ));
        }
    }

    fn trip(&self, why: &str) {
        if !self.open.swap(true, Ordering::Relaxed) {
            *self.why.lock().unwrap_or_else(|e| e.into_inner()) = Some(why.to_owned());
        }
    }

    fn reason(&self) -> Option<String> {
        self.why.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }
}

struct Shared {
    settings: RemoteSettings,
    /// The client's own handle on the local store (uploads read blobs from it).
    store: Store,
    transport: OnceLock<Option<Box<dyn Transport>>>,
    /// A connection started ahead of the first request ([`RemoteClient::connect_ahead`]),
    /// taken by the first request that needs the transport.
    connecting: Mutex<Option<std::thread::JoinHandle<Connected>>>,
    /// Whether the failed connection was counted (once, as one failure).
    connect_failure_counted: AtomicBool,
    counters: Counters,
    reads: Breaker,
    writes: Breaker,
    errors: Mutex<Vec<String>>,
    /// Blobs the server sent with wrong content: uploaded again whatever it says it
    /// has, so the next result naming them repairs the server's copy.
    corrupted: Mutex<Vec<Blob>>,
}

type Job = (Sha256Digest, ActionRecord);

/// A transport connected to the server, or why it could not be.
type Connected = Result<Box<dyn Transport>, String>;

/// Connects to the server `settings` name (for gRPC: the connection and the check of
/// its capabilities; HTTP connects per request).
fn connect(settings: &RemoteSettings) -> Connected {
    match settings.protocol {
        Protocol::Grpc { .. } => {
            crate::grpc::GrpcTransport::connect(settings).map(|t| Box::new(t) as Box<dyn Transport>)
        }
        Protocol::Http => Ok(Box::new(crate::http::HttpTransport::new(settings))),
    }
}

/// Why [`Shared::attempt`] did not succeed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Skip {
    /// The direction was off already: counted as skipped.
    Skipped,
    /// It failed now: the caller counts it.
    Failed,
}

struct UploadPool {
    sender: mpsc::Sender<Job>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

/// A remote cache for one command (see the module's documentation).
pub struct RemoteClient {
    shared: Arc<Shared>,
    pool: Mutex<Option<UploadPool>>,
}

impl RemoteClient {
    /// A client of the server `settings` name, using the local store at `store_path`.
    /// Nothing is connected yet.
    pub fn new(
        settings: RemoteSettings,
        store_path: &std::path::Path,
    ) -> Result<RemoteClient, String> {
        let store = Store::open(store_path)
            .map_err(|e| format!("cannot open the store `{}`: {e}", store_path.display()))?;
        Ok(RemoteClient {
            shared: Arc::new(Shared {
                settings,
                store,
                transport: OnceLock::new(),
                connecting: Mutex::new(None),
                connect_failure_counted: AtomicBool::new(false),
                counters: Counters::default(),
                reads: Breaker::default(),
                writes: Breaker::default(),
                errors: Mutex::default(),
                corrupted: Mutex::default(),
            }),
            pool: Mutex::new(None),
        })
    }

    pub fn settings(&self) -> &RemoteSettings {
        &self.shared.settings
    }

    /// Starts connecting now, on a thread of its own, so that the connection (for gRPC a
    /// TCP and HTTP/2 handshake, TLS, and the capabilities' round trip) overlaps what the
    /// command does before its first lookup. Nothing is reported unless a request needs
    /// the connection: a command that never asks the remote reports no failure to reach
    /// it. Calling it again, or after the first request, does nothing.
    pub fn connect_ahead(&self) {
        if self.shared.transport.get().is_some() {
            return;
        }
        let mut connecting = self
            .shared
            .connecting
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        if connecting.is_some() {
            return;
        }
        let settings = self.shared.settings.clone();
        *connecting = std::thread::Builder::new()
            .name("once-remote-connect".to_owned())
            .spawn(move || connect(&settings))
            .ok();
    }

    /// Waits for the uploads handed over so far and answers what the command did with
    /// the remote (the counters keep counting if the client is used again).
    pub fn finish(&self) -> RemoteSummary {
        let pool = self.pool.lock().unwrap_or_else(|e| e.into_inner()).take();
        if let Some(UploadPool { sender, threads }) = pool {
            drop(sender);
            for thread in threads {
                let _ = thread.join();
            }
        }
        self.shared.summary()
    }
}

impl Shared {
    fn summary(&self) -> RemoteSummary {
        let c = &self.counters;
        let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        RemoteSummary {
            url: self.settings.url.clone(),
            lookups: get(&c.lookups),
            found: get(&c.found),
            blobs_down: get(&c.blobs_down),
            bytes_down: get(&c.bytes_down),
            uploads: get(&c.uploads),
            blobs_up: get(&c.blobs_up),
            bytes_up: get(&c.bytes_up),
            read_failures: get(&c.read_failures),
            upload_failures: get(&c.upload_failures),
            corrupt: get(&c.corrupt),
            too_large: get(&c.too_large),
            max_upload_size: self.settings.max_upload_size,
            skipped: get(&c.skipped),
            reads_disabled: self.reads.reason(),
            writes_disabled: self.writes.reason(),
            errors: self
                .errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .clone(),
        }
    }

    fn note_error(&self, message: String) {
        let mut errors = self.errors.lock().unwrap_or_else(|e| e.into_inner());
        if errors.len() < KEPT_ERRORS && !errors.contains(&message) {
            errors.push(message);
        }
    }

    /// The connected transport; `None` when connecting failed (then both directions are
    /// off for the command).
    fn transport(&self) -> Option<&dyn Transport> {
        self.transport
            .get_or_init(|| {
                let ahead = self
                    .connecting
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .take();
                let connected = match ahead {
                    Some(thread) => thread.join().unwrap_or_else(|_| {
                        Err("connecting to the remote cache failed".to_owned())
                    }),
                    None => connect(&self.settings),
                };
                match connected {
                    Ok(transport) => Some(transport),
                    Err(why) => {
                        self.note_error(why.clone());
                        self.reads.trip(&why);
                        self.writes.trip(&why);
                        None
                    }
                }
            })
            .as_deref()
    }

    /// Runs `operation` with retries: [`Skip::Skipped`] (counted here) when the
    /// direction is off, [`Skip::Failed`] (for the caller to count) when it failed.
    fn attempt<T>(
        &self,
        breaker: &Breaker,
        what: &str,
        operation: impl Fn(&dyn Transport) -> Result<T, Failure>,
    ) -> Result<T, Skip> {
        if breaker.is_open() {
            add(&self.counters.skipped, 1);
            return Err(Skip::Skipped);
        }
        let Some(transport) = self.transport() else {
            // One failure for the connection that failed; what waited for it (or came
            // after) is skipped.
            if self.connect_failure_counted.swap(true, Ordering::Relaxed) {
                add(&self.counters.skipped, 1);
                return Err(Skip::Skipped);
            }
            return Err(Skip::Failed);
        };
        let mut delay = Duration::from_millis(100);
        for attempt in 1..=ATTEMPTS {
            match operation(transport) {
                Ok(value) => {
                    breaker.success();
                    return Ok(value);
                }
                Err(Failure::Transient(_)) if attempt < ATTEMPTS => {
                    std::thread::sleep(delay);
                    delay *= 3;
                }
                Err(failure) => {
                    let message = format!("{what}: {}", failure.message());
                    self.note_error(message.clone());
                    breaker.failure(&message);
                    return Err(Skip::Failed);
                }
            }
        }
        Err(Skip::Failed)
    }

    /// Downloads `blob` into `store`, checked (see the module's documentation).
    fn fetch(&self, store: &Store, blob: Blob) -> Result<(), FetchError> {
        let fetched = self.attempt(&self.reads, "download", |transport| {
            let (name, file) = store
                .temporary_file()
                .map_err(|e| Failure::Refused(format!("cannot write to the store: {e}")))?;
            let mut sink = HashingWriter {
                file,
                hasher: Sha256::new(),
                size: 0,
            };
            let found = match transport.download(&blob, &mut sink) {
                Ok(found) => found,
                Err(failure) => {
                    store.remove_temporary(&name);
                    return Err(failure);
                }
            };
            if !found {
                store.remove_temporary(&name);
                return Ok(Err(FetchError::Missing));
            }
            let digest = Sha256Digest(sink.hasher.finalize().into());
            if digest != blob.hash || sink.size != blob.size {
                store.remove_temporary(&name);
                return Ok(Err(FetchError::Corrupt(format!(
                    "expected {} ({} bytes), received {} bytes hashing to {}",
                    blob.hash, blob.size, sink.size, digest
                ))));
            }
            if let Err(e) = store.adopt_temporary(&name, &sink.file, &blob.hash) {
                return Err(Failure::Refused(format!("cannot store the blob: {e}")));
            }
            Ok(Ok(sink.size))
        });
        match fetched {
            Ok(Ok(size)) => {
                add(&self.counters.blobs_down, 1);
                add(&self.counters.bytes_down, size);
                Ok(())
            }
            Ok(Err(FetchError::Corrupt(why))) => {
                add(&self.counters.corrupt, 1);
                self.corrupted
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push(blob);
                self.note_error(format!("wrong content for {}: {why}", blob.hash));
                Err(FetchError::Corrupt(why))
            }
            Ok(Err(other)) => Err(other),
            Err(skip) => {
                if skip == Skip::Failed {
                    add(&self.counters.read_failures, 1);
                }
                Err(FetchError::Failed("the download failed".to_owned()))
            }
        }
    }

    /// Uploads one result (see the module's documentation); every way it can end but
    /// success is counted.
    fn upload(&self, key: &Sha256Digest, record: &ActionRecord) {
        let mapped = map_action(key);
        let mut blobs: Vec<Blob> = Vec::new();
        let push = |blobs: &mut Vec<Blob>, blob: Blob| {
            if blob.size > 0 && !blobs.contains(&blob) {
                blobs.push(blob);
            }
        };
        push(
            &mut blobs,
            Blob {
                hash: record.stdout.digest,
                size: record.stdout.size,
            },
        );
        push(
            &mut blobs,
            Blob {
                hash: record.stderr.digest,
                size: record.stderr.size,
            },
        );
        for entry in &record.outputs {
            if let once_exec::record::OutputKind::File { digest, size, .. } = &entry.kind {
                push(
                    &mut blobs,
                    Blob {
                        hash: *digest,
                        size: *size,
                    },
                );
            }
        }
        if blobs
            .iter()
            .any(|blob| blob.size > self.settings.max_upload_size)
        {
            add(&self.counters.too_large, 1);
            return;
        }
        push(&mut blobs, mapped.action);
        push(&mut blobs, mapped.command);
        let memory = |blob: &Blob| -> Option<&[u8]> {
            if *blob == mapped.action {
                Some(&mapped.action_bytes)
            } else if *blob == mapped.command {
                Some(&mapped.command_bytes)
            } else {
                None
            }
        };
        let uploaded = self.attempt(&self.writes, "upload", |transport| {
            let mut missing = transport.find_missing(&blobs)?;
            for blob in self
                .corrupted
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .iter()
            {
                if blobs.contains(blob) && !missing.contains(blob) {
                    missing.push(*blob);
                }
            }
            let limit = transport.batch_limit();
            let mut batch: Vec<(Blob, Vec<u8>)> = Vec::new();
            let mut batch_bytes = 0u64;
            let mut sent = (0u64, 0u64);
            for blob in &missing {
                if blob.size > limit {
                    let file = self
                        .store
                        .open_blob_checked(&blob.hash, blob.size)
                        .map_err(|e| Failure::Refused(format!("cannot read {}: {e}", blob.hash)))?;
                    transport.upload_large(blob, file)?;
                    sent = (sent.0 + 1, sent.1 + blob.size);
                    continue;
                }
                if batch_bytes + blob.size > limit && !batch.is_empty() {
                    transport.upload_small(std::mem::take(&mut batch))?;
                    batch_bytes = 0;
                }
                let data = match memory(blob) {
                    Some(bytes) => bytes.to_vec(),
                    None => {
                        let mut file = self
                            .store
                            .open_blob_checked(&blob.hash, blob.size)
                            .map_err(|e| {
                                Failure::Refused(format!("cannot read {}: {e}", blob.hash))
                            })?;
                        let mut data = Vec::with_capacity(blob.size as usize);
                        file.read_to_end(&mut data).map_err(|e| {
                            Failure::Refused(format!("cannot read {}: {e}", blob.hash))
                        })?;
                        data
                    }
                };
                batch_bytes += blob.size;
                sent = (sent.0 + 1, sent.1 + blob.size);
                batch.push((*blob, data));
            }
            if !batch.is_empty() {
                transport.upload_small(batch)?;
            }
            transport.update_action_result(&mapped.action, &action_result(key, record))?;
            Ok(sent)
        });
        match uploaded {
            Ok((blobs, bytes)) => {
                add(&self.counters.uploads, 1);
                add(&self.counters.blobs_up, blobs);
                add(&self.counters.bytes_up, bytes);
            }
            Err(Skip::Failed) => add(&self.counters.upload_failures, 1),
            Err(Skip::Skipped) => {}
        }
    }
}

/// Writes to a file while hashing and counting.
struct HashingWriter {
    file: std::fs::File,
    hasher: Sha256,
    size: u64,
}

impl Write for HashingWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.file.write(bytes)?;
        self.hasher.update(&bytes[..written]);
        self.size += written as u64;
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

impl RemoteCache for RemoteClient {
    fn lookup(&self, key: &Sha256Digest) -> Option<ActionRecord> {
        let shared = &self.shared;
        add(&shared.counters.lookups, 1);
        let action = map_action(key).action;
        let found = shared.attempt(&shared.reads, "lookup", |transport| {
            transport.get_action_result(&action)
        });
        match found {
            Ok(Some(result)) => {
                let record = record_of(key, &result)?;
                add(&shared.counters.found, 1);
                Some(record)
            }
            Ok(None) | Err(Skip::Skipped) => None,
            Err(Skip::Failed) => {
                add(&shared.counters.read_failures, 1);
                None
            }
        }
    }

    fn fetch_blob(
        &self,
        store: &Store,
        digest: &Sha256Digest,
        size: u64,
    ) -> Result<(), FetchError> {
        self.shared.fetch(
            store,
            Blob {
                hash: *digest,
                size,
            },
        )
    }

    fn upload(&self, key: &Sha256Digest, record: &ActionRecord) {
        if self.shared.settings.read_only {
            return;
        }
        let mut pool = self.pool.lock().unwrap_or_else(|e| e.into_inner());
        let pool = pool.get_or_insert_with(|| {
            let (sender, receiver) = mpsc::channel::<Job>();
            let receiver = Arc::new(Mutex::new(receiver));
            let threads = (0..self.shared.settings.upload_jobs)
                .filter_map(|index| {
                    let receiver = Arc::clone(&receiver);
                    let shared = Arc::clone(&self.shared);
                    std::thread::Builder::new()
                        .name(format!("once-upload-{index}"))
                        .spawn(move || {
                            loop {
                                let job = receiver.lock().unwrap_or_else(|e| e.into_inner()).recv();
                                let Ok((key, record)) = job else {
                                    return;
                                };
                                shared.upload(&key, &record);
                            }
                        })
                        .ok()
                })
                .collect();
            UploadPool { sender, threads }
        });
        if pool.threads.is_empty() || pool.sender.send((*key, record.clone())).is_err() {
            add(&self.shared.counters.upload_failures, 1);
            self.shared
                .note_error("cannot start the upload threads".to_owned());
        }
    }
}

#[cfg(test)]
mod tests {
    //! The retry and breaker policy, over a transport that fails as told (the protocols
    //! themselves are tested against real servers: crates/once_cli/tests/remote_cache.rs).

    use super::*;
    use bazel_remote_apis::build::bazel::remote::execution::v2::ActionResult;

    /// Fails every call, transiently or not, and counts the calls.
    struct Failing {
        transient: bool,
        calls: AtomicU64,
    }

    impl Failing {
        fn fail(&self) -> Failure {
            self.calls.fetch_add(1, Ordering::Relaxed);
            if self.transient {
                Failure::Transient("unavailable".into())
            } else {
                Failure::Refused("permission denied".into())
            }
        }
    }

    impl Transport for Arc<Failing> {
        fn get_action_result(&self, _: &Blob) -> Result<Option<ActionResult>, Failure> {
            Err(self.fail())
        }
        fn update_action_result(&self, _: &Blob, _: &ActionResult) -> Result<(), Failure> {
            Err(self.fail())
        }
        fn find_missing(&self, _: &[Blob]) -> Result<Vec<Blob>, Failure> {
            Err(self.fail())
        }
        fn batch_limit(&self) -> u64 {
            1 << 20
        }
        fn upload_small(&self, _: Vec<(Blob, Vec<u8>)>) -> Result<(), Failure> {
            Err(self.fail())
        }
        fn upload_large(&self, _: &Blob, _: std::fs::File) -> Result<(), Failure> {
            Err(self.fail())
        }
        fn download(&self, _: &Blob, _: &mut dyn Write) -> Result<bool, Failure> {
            Err(self.fail())
        }
    }

    fn client(store: &std::path::Path, transport: Arc<Failing>) -> RemoteClient {
        let settings = crate::settings::resolve(
            None,
            &crate::Overrides {
                url: Some("http://127.0.0.1:9/cache".into()),
                ..crate::Overrides::default()
            },
            &|_| None,
            store,
        )
        .unwrap()
        .unwrap();
        let client = RemoteClient::new(settings, store).unwrap();
        let _ = client
            .shared
            .transport
            .set(Some(Box::new(transport) as Box<dyn Transport>));
        client
    }

    #[test]
    fn transient_failures_are_retried_and_three_in_a_row_stop_the_direction() {
        let directory = tempfile::tempdir().unwrap();
        let failing = Arc::new(Failing {
            transient: true,
            calls: AtomicU64::new(0),
        });
        let client = client(directory.path(), Arc::clone(&failing));
        for n in 0..5u8 {
            assert_eq!(client.lookup(&Sha256Digest::of(&[n])), None);
        }
        let summary = client.finish();
        // Three operations of three tries each; the other two never reached the server.
        assert_eq!(failing.calls.load(Ordering::Relaxed), 9);
        assert_eq!(
            (summary.lookups, summary.read_failures, summary.skipped),
            (5, 3, 2)
        );
        let why = summary.reads_disabled.clone().unwrap();
        assert!(why.starts_with("3 failures in a row"), "{why}");
        assert_eq!(summary.writes_disabled, None);
        let warnings = summary.warnings();
        assert!(
            warnings[0].contains("lookups stopped for this command"),
            "{warnings:?}"
        );
    }

    #[test]
    fn refusals_are_not_retried() {
        let directory = tempfile::tempdir().unwrap();
        let failing = Arc::new(Failing {
            transient: false,
            calls: AtomicU64::new(0),
        });
        let client = client(directory.path(), Arc::clone(&failing));
        assert_eq!(client.lookup(&Sha256Digest::of(b"key")), None);
        assert_eq!(failing.calls.load(Ordering::Relaxed), 1);
        assert_eq!(client.finish().read_failures, 1);
    }
}
