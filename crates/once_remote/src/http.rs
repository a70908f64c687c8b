//! Bazel's HTTP cache protocol (`http://`, `https://`), as bazel-remote, BuildBuddy and
//! any WebDAV server with `PUT` speak it: an action's entry at `<prefix>/ac/<hash>` (an
//! encoded `ActionResult`), a blob at `<prefix>/cas/<hash>`; `GET` reads, `PUT` writes,
//! `HEAD` asks whether it is there, 404 means absent.
//!
//! Unlike `once_fetch`, which guards model-chosen URLs, this client reaches whatever
//! host the user configured, loopback and private addresses included: the URL comes from
//! the workspace's owner or the machine's environment, not from a prompt. Redirects are
//! not followed (a cache that moved is an error to fix in the configuration); TLS uses
//! the system's roots. Bodies stream from and to files, so memory stays bounded.

use std::fs::File;
use std::io::{Read, Write};
use std::sync::Arc;
use std::time::Duration;

use bazel_remote_apis::build::bazel::remote::execution::v2::ActionResult;
use prost::Message as _;
use ureq::tls::{Certificate, RootCerts, TlsConfig};

use crate::mapping::Blob;
use crate::settings::{Credentials, RemoteSettings};
use crate::transport::{Failure, Transport};

/// The largest ActionCache entry read.
const ENTRY_LIMIT: u64 = 16 << 20;
/// Blobs up to this size are uploaded from memory.
const SMALL_BLOB: u64 = 1 << 20;

pub struct HttpTransport {
    agent: ureq::Agent,
    /// The URL without its trailing `/`.
    base: String,
    credentials: Option<Credentials>,
}

/// What a response status means.
fn status_failure(what: &str, status: u16) -> Failure {
    let message = format!("{what}: HTTP {status}");
    if status >= 500 || status == 429 || status == 408 {
        Failure::Transient(message)
    } else {
        Failure::Refused(message)
    }
}

fn transport_failure(what: &str, error: &ureq::Error) -> Failure {
    Failure::Transient(format!("{what}: {error}"))
}

/// The system's root certificates.
fn system_roots() -> RootCerts {
    let loaded = rustls_native_certs::load_native_certs();
    if loaded.certs.is_empty() {
        return RootCerts::WebPki;
    }
    let certs: Vec<Certificate<'static>> = loaded
        .certs
        .iter()
        .map(|der| Certificate::from_der(der.as_ref()).to_owned())
        .collect();
    RootCerts::Specific(Arc::new(certs))
}

impl HttpTransport {
    pub fn new(settings: &RemoteSettings) -> HttpTransport {
        let tls = if settings.url.starts_with("https://") {
            TlsConfig::builder().root_certs(system_roots()).build()
        } else {
            TlsConfig::default()
        };
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .max_redirects(0)
            .http_status_as_error(false)
            .user_agent(format!("once/{}", env!("CARGO_PKG_VERSION")))
            .timeout_connect(Some(Duration::from_secs(5)))
            .timeout_per_call(Some(settings.timeout))
            .tls_config(tls)
            .build()
            .into();
        HttpTransport {
            agent,
            base: settings.url.trim_end_matches('/').to_owned(),
            credentials: settings.credentials.clone(),
        }
    }

    fn url(&self, kind: &str, blob: &Blob) -> String {
        format!("{}/{kind}/{}", self.base, blob.hash.to_hex())
    }

    fn with_credentials<B>(&self, request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        match &self.credentials {
            Some(credentials) => {
                request.header(credentials.name.as_str(), credentials.value.as_str())
            }
            None => request,
        }
    }

    fn put(&self, kind: &str, blob: &Blob, body: &[u8]) -> Result<(), Failure> {
        let request = self.with_credentials(self.agent.put(self.url(kind, blob)));
        let response = request
            .send(body)
            .map_err(|e| transport_failure("PUT", &e))?;
        match response.status().as_u16() {
            200..=299 => Ok(()),
            status => Err(status_failure("PUT", status)),
        }
    }
}

impl Transport for HttpTransport {
    fn get_action_result(&self, action: &Blob) -> Result<Option<ActionResult>, Failure> {
        let request = self.with_credentials(self.agent.get(self.url("ac", action)));
        let mut response = request.call().map_err(|e| transport_failure("GET", &e))?;
        match response.status().as_u16() {
            200 => {}
            404 => return Ok(None),
            status => return Err(status_failure("GET", status)),
        }
        let bytes = response
            .body_mut()
            .with_config()
            .limit(ENTRY_LIMIT)
            .read_to_vec()
            .map_err(|e| transport_failure("GET", &e))?;
        // An entry that is not an `ActionResult` is nobody's entry here: a miss.
        Ok(ActionResult::decode(bytes.as_slice()).ok())
    }

    fn update_action_result(&self, action: &Blob, result: &ActionResult) -> Result<(), Failure> {
        self.put("ac", action, &result.encode_to_vec())
    }

    fn find_missing(&self, blobs: &[Blob]) -> Result<Vec<Blob>, Failure> {
        let mut missing = Vec::new();
        for blob in blobs {
            let request = self.with_credentials(self.agent.head(self.url("cas", blob)));
            let response = request.call().map_err(|e| transport_failure("HEAD", &e))?;
            match response.status().as_u16() {
                200..=299 => {}
                404 => missing.push(*blob),
                status => return Err(status_failure("HEAD", status)),
            }
        }
        Ok(missing)
    }

    fn batch_limit(&self) -> u64 {
        SMALL_BLOB
    }

    fn upload_small(&self, blobs: Vec<(Blob, Vec<u8>)>) -> Result<(), Failure> {
        for (blob, data) in &blobs {
            self.put("cas", blob, data)?;
        }
        Ok(())
    }

    fn upload_large(&self, blob: &Blob, file: File) -> Result<(), Failure> {
        let request = self
            .with_credentials(self.agent.put(self.url("cas", blob)))
            .header("content-length", blob.size.to_string());
        let mut reader = file.take(blob.size);
        let response = request
            .send(ureq::SendBody::from_reader(&mut reader))
            .map_err(|e| transport_failure("PUT", &e))?;
        match response.status().as_u16() {
            200..=299 => Ok(()),
            status => Err(status_failure("PUT", status)),
        }
    }

    fn download(&self, blob: &Blob, sink: &mut dyn Write) -> Result<bool, Failure> {
        let request = self.with_credentials(self.agent.get(self.url("cas", blob)));
        let response = request.call().map_err(|e| transport_failure("GET", &e))?;
        match response.status().as_u16() {
            200 => {}
            404 => return Ok(false),
            status => return Err(status_failure("GET", status)),
        }
        // One byte more than the blob: a longer body is wrong content, and is seen so.
        let mut reader = response
            .into_body()
            .into_with_config()
            .limit(blob.size.saturating_add(1))
            .reader();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = match reader.read(&mut buffer) {
                Ok(0) => return Ok(true),
                Ok(read) => read,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Failure::Transient(format!("GET: {e}"))),
            };
            sink.write_all(&buffer[..read])
                .map_err(|e| Failure::Refused(format!("cannot write the blob: {e}")))?;
        }
    }
}
