//! REAPI v2 over gRPC (`grpc://`, `grpcs://`): Capabilities, ActionCache,
//! ContentAddressableStorage and ByteStream, with the stubs of `bazel-remote-apis` over
//! `tonic`.
//!
//! The async runtime stays in here: the transport owns a small tokio runtime and every
//! method blocks on it, so the executor's threads and the upload pool call it like any
//! blocking client. Blobs up to the batch limit the server announces (at most 4 MiB,
//! gRPC's usual message limit) are uploaded through `BatchUpdateBlobs`, and those up to
//! 64 KiB downloaded through `BatchReadBlobs`; larger ones are streamed through ByteStream in 1 MiB chunks, read from and written to files,
//! so memory stays bounded whatever their size.

use std::fs::File;
use std::io::{Read as _, Write};
use std::str::FromStr as _;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::bytestream;
use reapi::action_cache_client::ActionCacheClient;
use reapi::capabilities_client::CapabilitiesClient;
use reapi::content_addressable_storage_client::ContentAddressableStorageClient;
use tonic::metadata::{AsciiMetadataKey, AsciiMetadataValue};
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::mapping::Blob;
use crate::settings::{Protocol, RemoteSettings};
use crate::transport::{Failure, Transport};

/// gRPC's usual largest message; batches stay below it whatever a server announces.
const MESSAGE_LIMIT: u64 = 4 << 20;
/// Room for the framing of a batch beside its blobs' bytes.
const BATCH_OVERHEAD: u64 = 64 << 10;
/// The size of one ByteStream write.
const CHUNK: usize = 1 << 20;
/// The time allowed to connect.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// HTTP/2 flow-control windows of a stream and of the connection (bytes a server may
/// send before the client acknowledges them).
const STREAM_WINDOW: u32 = 8 << 20;
const CONNECTION_WINDOW: u32 = 32 << 20;
/// The largest blob downloaded through `BatchReadBlobs`; larger ones are streamed through
/// ByteStream, which BuildGrid serves faster per byte than one large batch message
/// (measured: a clean client's hit of 22 MiB, median 64 against 68-76 ms).
const BATCH_READ_LIMIT: u64 = 64 << 10;
/// The largest message accepted from a server.
const DECODING_LIMIT: usize = 16 << 20;

/// A connected REAPI server whose capabilities were checked.
pub struct GrpcTransport {
    runtime: tokio::runtime::Runtime,
    channel: Channel,
    instance: String,
    header: Option<(AsciiMetadataKey, AsciiMetadataValue)>,
    batch_limit: u64,
}

/// `tonic::Status` as a [`Failure`]: what may pass is retried.
fn failure(status: &tonic::Status) -> Failure {
    use tonic::Code;
    let message = format!("{:?}: {}", status.code(), status.message());
    match status.code() {
        Code::Unavailable
        | Code::DeadlineExceeded
        | Code::ResourceExhausted
        | Code::Aborted
        | Code::Internal
        | Code::Unknown
        | Code::Cancelled => Failure::Transient(message),
        _ => Failure::Refused(message),
    }
}

/// A status carried in a batch response as a [`Failure`] (its code is gRPC's).
fn batch_failure(status: &bazel_remote_apis::google::rpc::Status) -> Failure {
    failure(&tonic::Status::new(
        tonic::Code::from_i32(status.code),
        status.message.clone(),
    ))
}

impl GrpcTransport {
    /// Connects to the server of `settings` and checks its capabilities: SHA-256, an
    /// ActionCache and an API version range including 2.
    pub fn connect(settings: &RemoteSettings) -> Result<GrpcTransport, String> {
        let Protocol::Grpc { tls } = settings.protocol else {
            return Err("not a gRPC URL".to_owned());
        };
        let rest = settings
            .url
            .split_once("://")
            .map_or("", |(_, rest)| rest)
            .trim_end_matches('/');
        let address = format!("{}://{rest}", if tls { "https" } else { "http" });
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("once-remote-grpc")
            .enable_all()
            .build()
            .map_err(|e| format!("cannot start the gRPC client: {e}"))?;
        let mut endpoint = Endpoint::from_shared(address)
            .map_err(|e| format!("the remote cache URL is not a valid endpoint: {e}"))?
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(settings.timeout)
            // HTTP/2's default windows (64 KiB) make a blob's download wait for a window
            // update every 64 KiB: with a window of a few MiB a blob flows at the
            // server's pace (about 4 times as fast from BuildGrid on loopback).
            .initial_stream_window_size(Some(STREAM_WINDOW))
            .initial_connection_window_size(Some(CONNECTION_WINDOW))
            .tcp_nodelay(true);
        if tls {
            endpoint = endpoint
                .tls_config(ClientTlsConfig::new().with_native_roots())
                .map_err(|e| format!("cannot set up TLS: {e}"))?;
        }
        let channel = runtime
            .block_on(endpoint.connect())
            .map_err(|e| format!("cannot connect to {}: {}", settings.url, error_chain(&e)))?;
        let header = match &settings.credentials {
            Some(credentials) => Some((
                AsciiMetadataKey::from_str(&credentials.name)
                    .map_err(|_| "the credentials' header name is not valid".to_owned())?,
                AsciiMetadataValue::try_from(credentials.value.as_str())
                    .map_err(|_| "the credentials' header value is not valid".to_owned())?,
            )),
            None => None,
        };
        let mut transport = GrpcTransport {
            runtime,
            channel,
            instance: settings.instance_name.clone(),
            header,
            batch_limit: MESSAGE_LIMIT - BATCH_OVERHEAD,
        };
        transport.check_capabilities()?;
        Ok(transport)
    }

    fn request<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some((name, value)) = &self.header {
            request.metadata_mut().insert(name.clone(), value.clone());
        }
        request
    }

    fn check_capabilities(&mut self) -> Result<(), String> {
        let mut client = CapabilitiesClient::new(self.channel.clone());
        let request = self.request(reapi::GetCapabilitiesRequest {
            instance_name: self.instance.clone(),
        });
        let capabilities = self
            .runtime
            .block_on(client.get_capabilities(request))
            .map_err(|status| {
                format!(
                    "the server did not answer GetCapabilities ({})",
                    failure(&status).message()
                )
            })?
            .into_inner();
        let supports_two =
            |low: Option<&bazel_remote_apis::build::bazel::semver::SemVer>,
             high: Option<&bazel_remote_apis::build::bazel::semver::SemVer>| {
                low.is_none_or(|low| low.major <= 2) && high.is_none_or(|high| high.major >= 2)
            };
        if !supports_two(
            capabilities.low_api_version.as_ref(),
            capabilities.high_api_version.as_ref(),
        ) {
            return Err(format!(
                "the server does not speak REAPI v2 (it supports {:?} to {:?})",
                capabilities.low_api_version.map(|v| (v.major, v.minor)),
                capabilities.high_api_version.map(|v| (v.major, v.minor))
            ));
        }
        let Some(cache) = capabilities.cache_capabilities else {
            return Err("the server has no cache (no cache capabilities)".to_owned());
        };
        let sha256 = reapi::digest_function::Value::Sha256 as i32;
        if !cache.digest_functions.is_empty() && !cache.digest_functions.contains(&sha256) {
            return Err("the server does not support SHA-256 digests".to_owned());
        }
        let announced = u64::try_from(cache.max_batch_total_size_bytes).unwrap_or(0);
        let limit = if announced == 0 {
            MESSAGE_LIMIT
        } else {
            announced.min(MESSAGE_LIMIT)
        };
        self.batch_limit = limit.saturating_sub(BATCH_OVERHEAD).max(1);
        Ok(())
    }

    fn resource(&self, blob: &Blob) -> String {
        let name = format!("blobs/{}/{}", blob.hash.to_hex(), blob.size);
        if self.instance.is_empty() {
            name
        } else {
            format!("{}/{name}", self.instance)
        }
    }

    fn cas(&self) -> ContentAddressableStorageClient<Channel> {
        ContentAddressableStorageClient::new(self.channel.clone())
            .max_decoding_message_size(DECODING_LIMIT)
            .max_encoding_message_size(DECODING_LIMIT)
    }
}

/// An error and its sources, in one line.
fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A name for one upload (ByteStream wants a UUID): random bytes from the kernel, else
/// the time and the process.
fn upload_id() -> String {
    let mut bytes = [0u8; 16];
    let read = File::open("/dev/urandom").and_then(|mut f| f.read_exact(&mut bytes));
    if read.is_err() {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap_or_default()
            .as_nanos();
        bytes[..16].copy_from_slice(&now.to_le_bytes());
        bytes[0] ^= (std::process::id() & 0xff) as u8;
    }
    bytes[6] = (bytes[6] & 0x0f) | 0x40;
    bytes[8] = (bytes[8] & 0x3f) | 0x80;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

impl Transport for GrpcTransport {
    fn get_action_result(&self, action: &Blob) -> Result<Option<reapi::ActionResult>, Failure> {
        let mut client =
            ActionCacheClient::new(self.channel.clone()).max_decoding_message_size(DECODING_LIMIT);
        let request = self.request(reapi::GetActionResultRequest {
            instance_name: self.instance.clone(),
            action_digest: Some(action.to_proto()),
            digest_function: reapi::digest_function::Value::Sha256 as i32,
            ..Default::default()
        });
        match self.runtime.block_on(client.get_action_result(request)) {
            Ok(response) => Ok(Some(response.into_inner())),
            Err(status) if status.code() == tonic::Code::NotFound => Ok(None),
            Err(status) => Err(failure(&status)),
        }
    }

    fn update_action_result(
        &self,
        action: &Blob,
        result: &reapi::ActionResult,
    ) -> Result<(), Failure> {
        let mut client =
            ActionCacheClient::new(self.channel.clone()).max_encoding_message_size(DECODING_LIMIT);
        let request = self.request(reapi::UpdateActionResultRequest {
            instance_name: self.instance.clone(),
            action_digest: Some(action.to_proto()),
            action_result: Some(result.clone()),
            digest_function: reapi::digest_function::Value::Sha256 as i32,
            ..Default::default()
        });
        self.runtime
            .block_on(client.update_action_result(request))
            .map(|_| ())
            .map_err(|status| failure(&status))
    }

    fn find_missing(&self, blobs: &[Blob]) -> Result<Vec<Blob>, Failure> {
        let mut client = self.cas();
        let request = self.request(reapi::FindMissingBlobsRequest {
            instance_name: self.instance.clone(),
            blob_digests: blobs.iter().map(|blob| blob.to_proto()).collect(),
            digest_function: reapi::digest_function::Value::Sha256 as i32,
        });
        let response = self
            .runtime
            .block_on(client.find_missing_blobs(request))
            .map_err(|status| failure(&status))?
            .into_inner();
        response
            .missing_blob_digests
            .iter()
            .map(|digest| {
                Blob::from_proto(digest)
                    .ok_or_else(|| Failure::Refused("the server named a malformed digest".into()))
            })
            .collect()
    }

    fn batch_limit(&self) -> u64 {
        self.batch_limit
    }

    fn upload_small(&self, blobs: Vec<(Blob, Vec<u8>)>) -> Result<(), Failure> {
        let mut client = self.cas();
        let request = self.request(reapi::BatchUpdateBlobsRequest {
            instance_name: self.instance.clone(),
            requests: blobs
                .into_iter()
                .map(|(blob, data)| reapi::batch_update_blobs_request::Request {
                    digest: Some(blob.to_proto()),
                    data,
                    ..Default::default()
                })
                .collect(),
            digest_function: reapi::digest_function::Value::Sha256 as i32,
        });
        let response = self
            .runtime
            .block_on(client.batch_update_blobs(request))
            .map_err(|status| failure(&status))?
            .into_inner();
        for answer in &response.responses {
            if let Some(status) = &answer.status
                && status.code != 0
            {
                return Err(batch_failure(status));
            }
        }
        Ok(())
    }

    fn upload_large(&self, blob: &Blob, mut file: File) -> Result<(), Failure> {
        let resource = if self.instance.is_empty() {
            format!(
                "uploads/{}/blobs/{}/{}",
                upload_id(),
                blob.hash.to_hex(),
                blob.size
            )
        } else {
            format!(
                "{}/uploads/{}/blobs/{}/{}",
                self.instance,
                upload_id(),
                blob.hash.to_hex(),
                blob.size
            )
        };
        let size = blob.size;
        let read_error: Arc<Mutex<Option<std::io::Error>>> = Arc::default();
        let error_slot = Arc::clone(&read_error);
        let mut offset = 0u64;
        let mut first = true;
        // Chunks are read as the request stream is polled: one in memory at a time.
        let chunks = std::iter::from_fn(move || {
            if offset >= size && !first {
                return None;
            }
            let want = usize::try_from((size - offset).min(CHUNK as u64)).unwrap_or(CHUNK);
            // Read into spare capacity: no chunk is zeroed first.
            let mut data = Vec::with_capacity(want);
            let read = (&mut file).take(want as u64).read_to_end(&mut data);
            let short = || std::io::Error::from(std::io::ErrorKind::UnexpectedEof);
            if let Err(e) = read.and_then(|n| if n == want { Ok(()) } else { Err(short()) }) {
                *error_slot.lock().unwrap_or_else(|e| e.into_inner()) = Some(e);
                return None;
            }
            let request = bytestream::WriteRequest {
                resource_name: if first {
                    resource.clone()
                } else {
                    String::new()
                },
                write_offset: i64::try_from(offset).unwrap_or(i64::MAX),
                finish_write: offset + want as u64 >= size,
                data,
            };
            first = false;
            offset += want as u64;
            Some(request)
        });
        let mut client =
            bytestream::byte_stream_client::ByteStreamClient::new(self.channel.clone())
                .max_encoding_message_size(DECODING_LIMIT);
        let request = self.request(tokio_stream::iter(chunks));
        let written = self.runtime.block_on(client.write(request));
        if let Some(e) = read_error.lock().unwrap_or_else(|e| e.into_inner()).take() {
            return Err(Failure::Refused(format!(
                "cannot read the blob to upload: {e}"
            )));
        }
        let committed = written.map_err(|status| failure(&status))?.into_inner();
        if u64::try_from(committed.committed_size).ok() != Some(size) {
            return Err(Failure::Transient(format!(
                "the server committed {} of {size} bytes",
                committed.committed_size
            )));
        }
        Ok(())
    }

    fn download(&self, blob: &Blob, sink: &mut dyn Write) -> Result<bool, Failure> {
        if blob.size <= self.batch_limit.min(BATCH_READ_LIMIT) {
            let mut client = self.cas();
            let request = self.request(reapi::BatchReadBlobsRequest {
                instance_name: self.instance.clone(),
                digests: vec![blob.to_proto()],
                digest_function: reapi::digest_function::Value::Sha256 as i32,
                ..Default::default()
            });
            let response = self
                .runtime
                .block_on(client.batch_read_blobs(request))
                .map_err(|status| failure(&status))?
                .into_inner();
            let Some(answer) = response.responses.into_iter().next() else {
                return Err(Failure::Transient("the server answered no blob".into()));
            };
            if let Some(status) = &answer.status {
                if status.code == tonic::Code::NotFound as i32 {
                    return Ok(false);
                }
                if status.code != 0 {
                    return Err(batch_failure(status));
                }
            }
            sink.write_all(&answer.data)
                .map_err(|e| Failure::Refused(format!("cannot write the blob: {e}")))?;
            return Ok(true);
        }
        let mut client =
            bytestream::byte_stream_client::ByteStreamClient::new(self.channel.clone())
                .max_decoding_message_size(DECODING_LIMIT);
        let request = self.request(bytestream::ReadRequest {
            resource_name: self.resource(blob),
            read_offset: 0,
            read_limit: 0,
        });
        self.runtime.block_on(async {
            let mut stream = match client.read(request).await {
                Ok(response) => response.into_inner(),
                Err(status) if status.code() == tonic::Code::NotFound => return Ok(false),
                Err(status) => return Err(failure(&status)),
            };
            loop {
                match stream.message().await {
                    Ok(Some(chunk)) => sink
                        .write_all(&chunk.data)
                        .map_err(|e| Failure::Refused(format!("cannot write the blob: {e}")))?,
                    Ok(None) => return Ok(true),
                    Err(status) if status.code() == tonic::Code::NotFound => return Ok(false),
                    Err(status) => return Err(failure(&status)),
                }
            }
        })
    }
}
