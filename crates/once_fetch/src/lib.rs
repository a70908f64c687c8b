//! Fetching external source over public HTTPS, for agents that adapt an external rule
//! into a project module (`once query external-source`, MCP `once_fetch_external_source`).
//!
//! The fetch is deliberately narrow, because its URL is model-controlled input:
//! - only `https://` URLs, without credentials;
//! - the host is resolved here, every address must be public (see [`address`]), and the
//!   connection is pinned to exactly the vetted addresses, so a second DNS answer cannot
//!   redirect it (DNS rebinding);
//! - redirects are not followed: a 3xx is an error naming the `Location`;
//! - at most `max_bytes` bytes are returned (`truncated` says when more arrived);
//! - the content must be UTF-8;
//! - connect, response and body timeouts bound the time; no proxy, cookies or
//!   credentials are used.
//!
//! This is the one crate besides the binaries that talks to the network; it depends on
//! nothing from the workspace.

pub mod address;

use std::fmt;
use std::io::Read;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, mpsc};
use std::time::Duration;

use sha2::{Digest, Sha256};
use ureq::http::Uri;
use ureq::tls::{Certificate, RootCerts, TlsConfig};
use ureq::unversioned::resolver::{ResolvedSocketAddrs, Resolver};
use ureq::unversioned::transport::{DefaultConnector, NextTimeout};

/// `max_bytes` when the caller gives none: 256 KiB.
pub const DEFAULT_MAX_BYTES: usize = 262_144;
/// The largest `max_bytes` accepted: 1 MiB.
pub const MAX_MAX_BYTES: usize = 1_048_576;

/// What a successful fetch returns.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedSource {
    /// The normalised URL that was fetched.
    pub url: String,
    /// The `Content-Type` header, if the server sent one.
    pub content_type: Option<String>,
    /// SHA-256 of `content`'s bytes, 64 lowercase hex characters.
    pub content_digest: String,
    /// The number of bytes in `content`.
    pub byte_count: usize,
    /// More than `max_bytes` arrived and the content was cut.
    pub truncated: bool,
    /// The (possibly cut) body.
    pub content: String,
}

/// A custom host resolver (tests only): host and port to addresses.
type ResolveFn = dyn Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>> + Send + Sync;

/// What a fetch may reach and trust. Production code uses [`FetchPolicy::strict`]; the
/// other builders exist so tests can talk to a local HTTPS server.
#[derive(Clone)]
pub struct FetchPolicy {
    allow_loopback: bool,
    root_certificates: Vec<Vec<u8>>,
    resolver: Option<Arc<ResolveFn>>,
    connect_timeout: Duration,
    response_timeout: Duration,
}

impl fmt::Debug for FetchPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FetchPolicy")
            .field("allow_loopback", &self.allow_loopback)
            .field("root_certificates", &self.root_certificates.len())
            .field("custom_resolver", &self.resolver.is_some())
            .field("connect_timeout", &self.connect_timeout)
            .field("response_timeout", &self.response_timeout)
            .finish()
    }
}

impl Default for FetchPolicy {
    fn default() -> Self {
        FetchPolicy::strict()
    }
}

impl FetchPolicy {
    /// Public addresses only, the built-in web PKI roots, the system resolver, 10 s to
    /// connect and 30 s each for the response head and the body.
    pub fn strict() -> FetchPolicy {
        FetchPolicy {
            allow_loopback: false,
            root_certificates: Vec::new(),
            resolver: None,
            connect_timeout: Duration::from_secs(10),
            response_timeout: Duration::from_secs(30),
        }
    }

    /// Also allows loopback addresses and the name `localhost`. For tests against a
    /// local server only: never use it for model-controlled URLs.
    pub fn allow_loopback_for_tests(mut self) -> FetchPolicy {
        self.allow_loopback = true;
        self
    }

    /// Trusts only the given DER certificates as roots instead of the web PKI roots.
    pub fn trust_only(mut self, der_certificates: Vec<Vec<u8>>) -> FetchPolicy {
        self.root_certificates = der_certificates;
        self
    }

    /// Resolves host names with `resolve` instead of the system resolver (tests: a name
    /// that resolves to a private address, without DNS). Addresses are still checked.
    pub fn resolve_with(
        mut self,
        resolve: impl Fn(&str, u16) -> std::io::Result<Vec<SocketAddr>> + Send + Sync + 'static,
    ) -> FetchPolicy {
        self.resolver = Some(Arc::new(resolve));
        self
    }

    /// Sets the connect timeout and the timeout for the response head and the body each.
    pub fn with_timeouts(mut self, connect: Duration, response: Duration) -> FetchPolicy {
        self.connect_timeout = connect;
        self.response_timeout = response;
        self
    }

    fn address_problem(&self, ip: IpAddr) -> Option<String> {
        if self.allow_loopback && address::is_loopback(ip) {
            return None;
        }
        address::non_public_reason(ip)
    }
}

/// Why a fetch failed. `Display` gives this error's own message; [`FetchError::message`]
/// adds the causes.
#[derive(Debug)]
pub enum FetchError {
    /// `max_bytes` is 0 or above [`MAX_MAX_BYTES`].
    InvalidMaxBytes(usize),
    /// The URL cannot be read.
    InvalidUrl { url: String, reason: String },
    /// The URL's scheme is not `https`.
    SchemeRefused { url: String, scheme: String },
    /// The host or one of its addresses is not public.
    AddressRefused { host: String, reason: String },
    /// The host name could not be resolved.
    Resolve {
        host: String,
        source: std::io::Error,
    },
    /// The server answered with a redirect, which is not followed.
    Redirect {
        status: u16,
        location: Option<String>,
    },
    /// The server answered with a status other than 2xx or 3xx.
    Status { status: u16, reason: String },
    /// The body is not UTF-8.
    NotUtf8 { valid_up_to: usize },
    /// Connecting, TLS, sending or receiving failed (including timeouts).
    Transport(ureq::Error),
    /// Reading the body failed.
    Body(std::io::Error),
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FetchError::InvalidMaxBytes(n) => write!(
                f,
                "max_bytes must be between 1 and {MAX_MAX_BYTES}, got {n}"
            ),
            FetchError::InvalidUrl { url, reason } => {
                write!(f, "`{url}` is not a valid URL: {reason}")
            }
            FetchError::SchemeRefused { url, scheme } => write!(
                f,
                "`{url}` uses the `{scheme}` scheme: only public `https://` addresses are fetched"
            ),
            FetchError::AddressRefused { host, reason } => write!(
                f,
                "external source address must be public: `{host}` {reason}"
            ),
            FetchError::Resolve { host, .. } => write!(f, "cannot resolve host `{host}`"),
            FetchError::Redirect {
                status,
                location: Some(location),
            } => write!(
                f,
                "the server answered {status}: redirect to {location} refused; redirects are not followed, fetch that HTTPS address explicitly if it is the intended source"
            ),
            FetchError::Redirect {
                status,
                location: None,
            } => write!(
                f,
                "the server answered {status}: redirect without a Location header refused"
            ),
            FetchError::Status { status, reason } => {
                write!(f, "the server answered {status} {reason}")
            }
            FetchError::NotUtf8 { valid_up_to } => write!(
                f,
                "external source is not UTF-8 text (invalid byte sequence at byte {valid_up_to}); only text is returned"
            ),
            FetchError::Transport(_) => write!(f, "the HTTPS request failed"),
            FetchError::Body(_) => write!(f, "reading the response body failed"),
        }
    }
}

impl std::error::Error for FetchError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FetchError::Resolve { source, .. } | FetchError::Body(source) => Some(source),
            FetchError::Transport(source) => Some(source),
            _ => None,
        }
    }
}

impl FetchError {
    /// The message with every cause, joined by `: `.
    pub fn message(&self) -> String {
        let mut message = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            let text = cause.to_string();
            if !message.ends_with(&text) {
                message.push_str(": ");
                message.push_str(&text);
            }
            source = cause.source();
        }
        message
    }

    /// `true` when the request was refused before any connection was made (bad input,
    /// not public, not HTTPS).
    pub fn is_refusal(&self) -> bool {
        matches!(
            self,
            FetchError::InvalidMaxBytes(_)
                | FetchError::InvalidUrl { .. }
                | FetchError::SchemeRefused { .. }
                | FetchError::AddressRefused { .. }
        )
    }
}

/// Fetches `url` under `policy`, returning at most `max_bytes` bytes of UTF-8 text.
pub fn fetch_external_source(
    url: &str,
    max_bytes: usize,
    policy: &FetchPolicy,
) -> Result<FetchedSource, FetchError> {
    if max_bytes == 0 || max_bytes > MAX_MAX_BYTES {
        return Err(FetchError::InvalidMaxBytes(max_bytes));
    }
    let target = check_url(url, policy)?;
    let addresses = vet_addresses(&target, policy)?;
    let agent = agent(&target, addresses, policy);

    let response = agent
        .get(target.uri.clone())
        .call()
        .map_err(FetchError::Transport)?;
    let status = response.status();
    if status.is_redirection() {
        let location = response
            .headers()
            .get("location")
            .map(|l| String::from_utf8_lossy(l.as_bytes()).into_owned());
        return Err(FetchError::Redirect {
            status: status.as_u16(),
            location,
        });
    }
    if !status.is_success() {
        return Err(FetchError::Status {
            status: status.as_u16(),
            reason: status.canonical_reason().unwrap_or("").to_owned(),
        });
    }
    let content_type = response
        .headers()
        .get("content-type")
        .map(|c| String::from_utf8_lossy(c.as_bytes()).into_owned());

    let mut bytes = Vec::new();
    response
        .into_body()
        .into_reader()
        .take(max_bytes as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(FetchError::Body)?;
    let truncated = bytes.len() > max_bytes;
    bytes.truncate(max_bytes);
    let content = text(bytes, truncated)?;

    Ok(FetchedSource {
        url: target.uri.to_string(),
        content_type,
        content_digest: sha256_hex(content.as_bytes()),
        byte_count: content.len(),
        truncated,
        content,
    })
}

/// The body as text. A cut inside a multi-byte character drops that partial character
/// rather than failing; any other invalid sequence is an error.
fn text(mut bytes: Vec<u8>, truncated: bool) -> Result<String, FetchError> {
    match std::str::from_utf8(&bytes) {
        Ok(_) => {}
        Err(e) if truncated && e.error_len().is_none() => bytes.truncate(e.valid_up_to()),
        Err(e) => {
            return Err(FetchError::NotUtf8 {
                valid_up_to: e.valid_up_to(),
            });
        }
    }
    String::from_utf8(bytes).map_err(|e| FetchError::NotUtf8 {
        valid_up_to: e.utf8_error().valid_up_to(),
    })
}

/// Lowercase hex SHA-256 (sha2 0.11 digests do not implement `LowerHex`).
pub fn sha256_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    Sha256::digest(bytes)
        .iter()
        .fold(String::with_capacity(64), |mut hex, byte| {
            let _ = write!(hex, "{byte:02x}");
            hex
        })
}

/// A URL that passed the syntactic checks.
struct Target {
    uri: Uri,
    host: Host,
    port: u16,
}

enum Host {
    Ip(IpAddr),
    Name(String),
}

impl Host {
    fn display(&self) -> String {
        match self {
            Host::Ip(ip) => ip.to_string(),
            Host::Name(name) => name.clone(),
        }
    }
}

/// The scheme of `url` (lowercased), if it starts with one.
fn scheme_of(url: &str) -> Option<String> {
    let (scheme, _) = url.split_once(':')?;
    let mut chars = scheme.chars();
    let valid = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then(|| scheme.to_ascii_lowercase())
}

fn check_url(url: &str, policy: &FetchPolicy) -> Result<Target, FetchError> {
    let url = url.trim();
    let invalid = |reason: &str| FetchError::InvalidUrl {
        url: url.to_owned(),
        reason: reason.to_owned(),
    };
    match scheme_of(url) {
        Some(scheme) if scheme == "https" => {}
        Some(scheme) => {
            return Err(FetchError::SchemeRefused {
                url: url.to_owned(),
                scheme,
            });
        }
        None => return Err(invalid("it has no scheme; use an `https://` address")),
    }
    let uri: Uri =
        url.parse()
            .map_err(|e: ureq::http::uri::InvalidUri| FetchError::InvalidUrl {
                url: url.to_owned(),
                reason: e.to_string(),
            })?;
    let authority = uri.authority().ok_or_else(|| invalid("it has no host"))?;
    if authority.as_str().contains('@') {
        return Err(invalid(
            "credentials in the URL are not sent; remove the `user@` part",
        ));
    }
    let raw_host = authority.host();
    if raw_host.is_empty() {
        return Err(invalid("it has no host"));
    }
    let port = authority.port_u16().unwrap_or(443);
    let host = if let Some(inner) = raw_host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Host::Ip(IpAddr::V6(inner.parse().map_err(|_| {
            invalid("the bracketed host is not an IPv6 address")
        })?))
    } else if let Ok(v4) = raw_host.parse() {
        Host::Ip(IpAddr::V4(v4))
    } else {
        let name = raw_host.trim_end_matches('.').to_ascii_lowercase();
        if name.is_empty() {
            return Err(invalid("it has no host"));
        }
        if !policy.allow_loopback && (name == "localhost" || name.ends_with(".localhost")) {
            return Err(FetchError::AddressRefused {
                host: raw_host.to_owned(),
                reason: "is a loopback name".to_owned(),
            });
        }
        Host::Name(name)
    };
    Ok(Target { uri, host, port })
}

/// Resolves the host (unless it is an IP literal) and checks every address: one
/// non-public address refuses the host, so a name cannot mix public and private answers.
fn vet_addresses(target: &Target, policy: &FetchPolicy) -> Result<Vec<SocketAddr>, FetchError> {
    let addresses = match &target.host {
        Host::Ip(ip) => vec![SocketAddr::new(*ip, target.port)],
        Host::Name(name) => {
            let resolved =
                resolve(name, target.port, policy).map_err(|source| FetchError::Resolve {
                    host: name.clone(),
                    source,
                })?;
            if resolved.is_empty() {
                return Err(FetchError::Resolve {
                    host: name.clone(),
                    source: std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        "the name has no addresses",
                    ),
                });
            }
            resolved
        }
    };
    for address in &addresses {
        if let Some(reason) = policy.address_problem(address.ip()) {
            let reason = match &target.host {
                Host::Ip(_) => format!("is {reason}"),
                Host::Name(_) => format!("resolves to {}, which is {reason}", address.ip()),
            };
            return Err(FetchError::AddressRefused {
                host: target.host.display(),
                reason,
            });
        }
    }
    Ok(addresses)
}

fn resolve(name: &str, port: u16, policy: &FetchPolicy) -> std::io::Result<Vec<SocketAddr>> {
    if let Some(resolver) = &policy.resolver {
        return resolver(name, port);
    }
    // The system resolver has no timeout of its own: wait for it on another thread.
    let (sender, receiver) = mpsc::sync_channel(1);
    let query = format!("{name}:{port}");
    std::thread::spawn(move || {
        let _ = sender.send(query.to_socket_addrs().map(Iterator::collect));
    });
    receiver
        .recv_timeout(policy.connect_timeout)
        .unwrap_or_else(|_| {
            Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                "name resolution timed out",
            ))
        })
}

/// The agent for one fetch: pinned to `addresses`, no proxy, no redirects, status codes
/// handled here.
fn agent(target: &Target, addresses: Vec<SocketAddr>, policy: &FetchPolicy) -> ureq::Agent {
    let roots = if policy.root_certificates.is_empty() {
        RootCerts::WebPki
    } else {
        RootCerts::new_with_certs(
            &policy
                .root_certificates
                .iter()
                .map(|der| Certificate::from_der(der).to_owned())
                .collect::<Vec<_>>(),
        )
    };
    let config = ureq::Agent::config_builder()
        .https_only(true)
        .proxy(None)
        .max_redirects(0)
        .http_status_as_error(false)
        .user_agent(format!("once/{}", env!("CARGO_PKG_VERSION")))
        .timeout_connect(Some(policy.connect_timeout))
        .timeout_recv_response(Some(policy.response_timeout))
        .timeout_recv_body(Some(policy.response_timeout))
        .tls_config(TlsConfig::builder().root_certs(roots).build())
        .build();
    let resolver = PinnedResolver {
        host: target.uri.host().unwrap_or_default().to_owned(),
        addresses,
    };
    ureq::Agent::with_parts(config, DefaultConnector::default(), resolver)
}

/// Answers only for the vetted host, and only with the vetted addresses.
#[derive(Debug)]
struct PinnedResolver {
    host: String,
    addresses: Vec<SocketAddr>,
}

impl Resolver for PinnedResolver {
    fn resolve(
        &self,
        uri: &Uri,
        _config: &ureq::config::Config,
        _timeout: NextTimeout,
    ) -> Result<ResolvedSocketAddrs, ureq::Error> {
        if uri.host() != Some(self.host.as_str()) {
            return Err(ureq::Error::HostNotFound);
        }
        let mut resolved = self.empty();
        // ureq keeps at most 16 addresses.
        for address in self.addresses.iter().take(16) {
            resolved.push(*address);
        }
        Ok(resolved)
    }
}
