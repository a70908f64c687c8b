//! `fetch_external_source` against a local HTTPS server whose self-signed certificate
//! is generated here and trusted only by the test policy; and the refusals, none of
//! which reaches the network.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use once_fetch::{
    DEFAULT_MAX_BYTES, FetchError, FetchPolicy, MAX_MAX_BYTES, fetch_external_source, sha256_hex,
};

/// The local server: its port and the DER of its certificate.
struct Server {
    port: u16,
    certificate: Vec<u8>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(start_server)
}

fn start_server() -> Server {
    let names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "source.test".to_owned(),
    ];
    let certified = rcgen::generate_simple_self_signed(names).unwrap();
    let certificate = certified.cert.der().to_vec();
    let key = rustls::pki_types::PrivateKeyDer::Pkcs8(certified.signing_key.serialize_der().into());
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_no_client_auth()
    .with_single_cert(vec![certificate.clone().into()], key)
    .unwrap();
    let config = Arc::new(config);
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let config = config.clone();
            std::thread::spawn(move || {
                let _ = serve(config, stream);
            });
        }
    });
    Server { port, certificate }
}

fn serve(config: Arc<rustls::ServerConfig>, stream: TcpStream) -> std::io::Result<()> {
    let connection = rustls::ServerConnection::new(config).map_err(std::io::Error::other)?;
    let mut tls = rustls::StreamOwned::new(connection, stream);
    let mut reader = BufReader::new(&mut tls);
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" {
            break;
        }
    }
    let path = request_line.split(' ').nth(1).unwrap_or("/").to_owned();
    let (status, headers, body): (&str, Vec<&str>, Vec<u8>) = match path.as_str() {
        "/rule.star" => (
            "200 OK",
            vec!["Content-Type: text/plain; charset=utf-8"],
            b"def rule():\n    pass\n".to_vec(),
        ),
        "/untyped" => ("200 OK", vec![], b"no content type".to_vec()),
        "/big" => ("200 OK", vec!["Content-Type: text/plain"], vec![b'a'; 5000]),
        "/accents" => ("200 OK", vec![], "é".repeat(100).into_bytes()),
        "/binary" => (
            "200 OK",
            vec!["Content-Type: application/octet-stream"],
            vec![b'o', b'k', 0xff, 0xfe, 0x00],
        ),
        "/moved" => (
            "301 Moved Permanently",
            vec!["Location: https://example.com/elsewhere.star"],
            Vec::new(),
        ),
        "/stall" => {
            std::thread::sleep(Duration::from_secs(5));
            ("200 OK", vec![], b"late".to_vec())
        }
        _ => ("404 Not Found", vec![], b"not here".to_vec()),
    };
    let mut head = format!("HTTP/1.1 {status}\r\nConnection: close\r\n");
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str(&format!("Content-Length: {}\r\n\r\n", body.len()));
    tls.write_all(head.as_bytes())?;
    tls.write_all(&body)?;
    tls.conn.send_close_notify();
    tls.flush()
}

/// Loopback allowed, the test certificate as the only root.
fn test_policy() -> FetchPolicy {
    FetchPolicy::strict()
        .allow_loopback_for_tests()
        .trust_only(vec![server().certificate.clone()])
}

fn url(path: &str) -> String {
    format!("https://127.0.0.1:{}{path}", server().port)
}

fn fetch_error(url: &str, max_bytes: usize, policy: &FetchPolicy) -> FetchError {
    match fetch_external_source(url, max_bytes, policy) {
        Ok(fetched) => panic!("{url} was fetched: {fetched:?}"),
        Err(e) => e,
    }
}

#[test]
fn fetches_utf8_text_with_digest_and_content_type() {
    let fetched =
        fetch_external_source(&url("/rule.star"), DEFAULT_MAX_BYTES, &test_policy()).unwrap();
    let body = "def rule():\n    pass\n";
    assert_eq!(fetched.url, url("/rule.star"));
    assert_eq!(fetched.content, body);
    assert_eq!(fetched.byte_count, body.len());
    assert!(!fetched.truncated);
    assert_eq!(
        fetched.content_type.as_deref(),
        Some("text/plain; charset=utf-8")
    );
    assert_eq!(fetched.content_digest, sha256_hex(body.as_bytes()));
    assert_eq!(fetched.content_digest.len(), 64);
}

#[test]
fn a_missing_content_type_is_none() {
    let fetched = fetch_external_source(&url("/untyped"), 100, &test_policy()).unwrap();
    assert_eq!(fetched.content_type, None);
    assert_eq!(fetched.content, "no content type");
}

#[test]
fn sha256_matches_a_known_vector() {
    assert_eq!(
        sha256_hex(b"abc"),
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
    );
}

#[test]
fn long_bodies_are_truncated_to_max_bytes() {
    let fetched = fetch_external_source(&url("/big"), 1000, &test_policy()).unwrap();
    assert!(fetched.truncated);
    assert_eq!(fetched.byte_count, 1000);
    assert_eq!(fetched.content, "a".repeat(1000));
    assert_eq!(
        fetched.content_digest,
        sha256_hex("a".repeat(1000).as_bytes())
    );

    let exact = fetch_external_source(&url("/big"), 5000, &test_policy()).unwrap();
    assert!(!exact.truncated, "a body of exactly max_bytes is whole");
    assert_eq!(exact.byte_count, 5000);
}

#[test]
fn a_cut_inside_a_character_drops_the_partial_character() {
    // "é" is two bytes: 7 bytes hold three whole characters and half of a fourth.
    let fetched = fetch_external_source(&url("/accents"), 7, &test_policy()).unwrap();
    assert!(fetched.truncated);
    assert_eq!(fetched.content, "ééé");
    assert_eq!(fetched.byte_count, 6);
}

#[test]
fn non_utf8_content_is_refused() {
    let error = fetch_error(&url("/binary"), 100, &test_policy());
    assert!(
        matches!(error, FetchError::NotUtf8 { valid_up_to: 2 }),
        "{error:?}"
    );
    assert!(error.message().contains("not UTF-8"), "{}", error.message());
}

#[test]
fn redirects_are_refused_with_their_location() {
    let error = fetch_error(&url("/moved"), 100, &test_policy());
    assert!(
        matches!(error, FetchError::Redirect { status: 301, .. }),
        "{error:?}"
    );
    assert!(
        error
            .message()
            .contains("redirect to https://example.com/elsewhere.star refused"),
        "{}",
        error.message()
    );
}

#[test]
fn error_statuses_are_errors() {
    let error = fetch_error(&url("/nothing"), 100, &test_policy());
    assert_eq!(error.message(), "the server answered 404 Not Found");
}

#[test]
fn a_host_name_is_pinned_to_the_vetted_address() {
    // `source.test` does not exist in DNS: the only way to reach the server is the
    // address the policy's resolver vetted.
    let port = server().port;
    let policy = test_policy().resolve_with(move |host, p| {
        assert_eq!((host, p), ("source.test", port));
        Ok(vec![SocketAddr::from(([127, 0, 0, 1], port))])
    });
    let fetched = fetch_external_source(
        &format!("https://source.test:{port}/rule.star"),
        100,
        &policy,
    )
    .unwrap();
    assert_eq!(fetched.content, "def rule():\n    pass\n");
}

#[test]
fn the_test_certificate_is_not_trusted_by_default() {
    let policy = FetchPolicy::strict().allow_loopback_for_tests();
    let error = fetch_error(&url("/rule.star"), 100, &policy);
    assert!(matches!(error, FetchError::Transport(_)), "{error:?}");
    assert!(
        error.message().to_lowercase().contains("certificate"),
        "{}",
        error.message()
    );
}

#[test]
fn slow_servers_time_out() {
    let policy = test_policy().with_timeouts(Duration::from_secs(2), Duration::from_secs(1));
    let error = fetch_error(&url("/stall"), 100, &policy);
    assert!(matches!(error, FetchError::Transport(_)), "{error:?}");
    assert!(
        error.message().to_lowercase().contains("timeout"),
        "{}",
        error.message()
    );
}

/// Asserts a refusal under the production policy and returns its message.
fn refused(url: &str) -> String {
    let error = fetch_error(url, DEFAULT_MAX_BYTES, &FetchPolicy::strict());
    assert!(error.is_refusal(), "{url}: {error:?}");
    error.message()
}

#[test]
fn only_https_is_fetched() {
    for (url, scheme) in [
        ("http://example.com/rule.star", "http"),
        ("HTTP://example.com/", "http"),
        ("file:///etc/passwd", "file"),
        ("data:text/plain,hello", "data"),
        ("ftp://example.com/x", "ftp"),
        ("gopher://example.com/", "gopher"),
    ] {
        let message = refused(url);
        assert_eq!(
            message,
            format!(
                "`{url}` uses the `{scheme}` scheme: only public `https://` addresses are fetched"
            )
        );
    }
    assert!(refused("example.com/rule.star").contains("no scheme"));
    assert!(refused("https:///path").contains("not a valid URL"));
    assert!(refused("https://user:secret@example.com/").contains("credentials"));
}

#[test]
fn non_public_ip_literals_are_refused() {
    for (url, reason) in [
        ("https://127.0.0.1/", "`127.0.0.1` is loopback"),
        ("https://127.0.0.1:8443/x", "`127.0.0.1` is loopback"),
        ("https://[::1]/", "`::1` is loopback"),
        ("https://10.0.0.1/", "`10.0.0.1` is private (10.0.0.0/8)"),
        (
            "https://192.168.0.10/",
            "`192.168.0.10` is private (192.168.0.0/16)",
        ),
        (
            "https://172.20.1.1/",
            "`172.20.1.1` is private (172.16.0.0/12)",
        ),
        (
            "https://169.254.169.254/latest/meta-data/",
            "`169.254.169.254` is link-local (169.254.0.0/16)",
        ),
        (
            "https://[::ffff:127.0.0.1]/",
            "`::ffff:127.0.0.1` is the IPv4-mapped form of 127.0.0.1, which is loopback",
        ),
        ("https://[fe80::1]/", "`fe80::1` is link-local (fe80::/10)"),
        ("https://[fd00::1]/", "`fd00::1` is unique-local (fc00::/7)"),
        ("https://0.0.0.0/", "`0.0.0.0` is unspecified"),
        (
            "https://100.64.0.1/",
            "`100.64.0.1` is in the shared address space (CGNAT, 100.64.0.0/10)",
        ),
        ("https://224.0.0.1/", "`224.0.0.1` is multicast"),
        ("https://255.255.255.255/", "`255.255.255.255` is broadcast"),
    ] {
        assert_eq!(
            refused(url),
            format!("external source address must be public: {reason}"),
            "{url}"
        );
    }
}

#[test]
fn names_that_resolve_to_non_public_addresses_are_refused() {
    assert_eq!(
        refused("https://localhost/"),
        "external source address must be public: `localhost` is a loopback name"
    );
    assert!(refused("https://api.LOCALHOST./x").contains("loopback name"));
    // glibc reads a bare number as an IPv4 address without asking DNS.
    assert!(refused("https://2130706433/").contains("resolves to 127.0.0.1, which is loopback"));

    // A name whose resolver answers with loopback, under the production address rules.
    for answer in ["127.0.0.1", "10.1.2.3", "::1"] {
        let ip: std::net::IpAddr = answer.parse().unwrap();
        let policy =
            FetchPolicy::strict().resolve_with(move |_, port| Ok(vec![SocketAddr::new(ip, port)]));
        let error = fetch_error("https://rebind.example/rule.star", 100, &policy);
        assert!(
            matches!(error, FetchError::AddressRefused { .. }),
            "{error:?}"
        );
        assert!(
            error
                .message()
                .contains(&format!("`rebind.example` resolves to {answer}, which is")),
            "{}",
            error.message()
        );
    }
    // One non-public answer among public ones refuses the host.
    let policy = FetchPolicy::strict().resolve_with(|_, port| {
        Ok(vec![
            SocketAddr::from(([93, 184, 216, 34], port)),
            SocketAddr::from(([169, 254, 169, 254], port)),
        ])
    });
    let error = fetch_error("https://mixed.example/", 100, &policy);
    assert!(
        matches!(error, FetchError::AddressRefused { .. }),
        "{error:?}"
    );
}

#[test]
fn max_bytes_must_be_between_one_and_a_mebibyte() {
    for bad in [0, MAX_MAX_BYTES + 1] {
        let error = fetch_error("https://example.com/", bad, &FetchPolicy::strict());
        assert_eq!(
            error.message(),
            format!("max_bytes must be between 1 and 1048576, got {bad}")
        );
    }
}
