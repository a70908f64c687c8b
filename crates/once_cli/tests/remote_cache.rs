//! The remote cache against real servers this test starts on loopback (never a mock):
//! BuildGrid 0.9.1 (REAPI v2 over gRPC: disk CAS, ActionCache, ByteStream) and nginx
//! (Bazel's HTTP cache protocol through WebDAV `PUT`), both installed by
//! `./.ci/remote-cache-servers` (which `./.ci/test` runs). A server that cannot be found
//! or started fails the test with a message naming that script; nothing is skipped.
//!
//! Each server is started once per test and serves every scenario in turn: two clean
//! clients of one workspace share results (the second runs nothing, its outputs are the
//! first's bytes), a blob above the gRPC batch limit round-trips through ByteStream, a
//! read-only client writes nothing, credentials never reach a store or the output, a
//! server sending wrong bytes is a miss with a warning (the output is rebuilt right), and
//! a server that refuses writes, is down or dies mid-build leaves a correct build whose
//! remote failures are counted and reported. Both servers are then started again with
//! TLS (`grpcs://`, `https://`) and a certificate the test makes for loopback: a client
//! that does not trust it builds right and names the certificate, clients that trust it
//! through `SSL_CERT_FILE` share results as over plain connections.

// The timings of the scenarios are printed for `--nocapture` runs.
#![allow(clippy::print_stderr)]

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

#[path = "support/binary.rs"]
mod binary;
use binary::{copy_tree, text, write};

use serde_json::Value;

/// The big output: larger than any gRPC batch (4 MiB), so it goes through ByteStream.
const BIG: usize = 6 * 1024 * 1024 + 17;

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A server process, killed when dropped.
struct Server {
    child: Child,
    _directory: tempfile::TempDir,
    /// Its data directory (nginx's root).
    data: PathBuf,
    url: String,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("cannot bind a loopback port");
    listener.local_addr().unwrap().port()
}

fn missing(what: &str) -> ! {
    panic!(
        "{what}: install the remote-cache test servers with `./.ci/remote-cache-servers` \
         (`./.ci/test` runs it first)"
    )
}

/// A certificate of its own for `127.0.0.1` and `localhost` (self-signed: the client
/// trusts it through `SSL_CERT_FILE`, as a team trusts its private CA).
struct Tls {
    directory: tempfile::TempDir,
}

impl Tls {
    fn new() -> Tls {
        let names = vec!["127.0.0.1".to_owned(), "localhost".to_owned()];
        let certified = rcgen::generate_simple_self_signed(names).unwrap();
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("cert.pem"), certified.cert.pem()).unwrap();
        std::fs::write(
            directory.path().join("key.pem"),
            certified.signing_key.serialize_pem(),
        )
        .unwrap();
        Tls { directory }
    }

    fn cert(&self) -> PathBuf {
        self.directory.path().join("cert.pem")
    }

    fn key(&self) -> PathBuf {
        self.directory.path().join("key.pem")
    }
}

/// BuildGrid with a disk CAS, an in-memory ActionCache and ByteStream, no auth, on a
/// free port, over TLS with `tls`; ready once its gRPC health check answers SERVING.
fn start_buildgrid(tls: Option<&Tls>) -> Server {
    let bgd = repository().join(".venv-buildgrid/bin/bgd");
    if !bgd.is_file() {
        missing(&format!(
            "BuildGrid is not installed (no `{}`)",
            bgd.display()
        ));
    }
    let directory = tempfile::tempdir().unwrap();
    let data = directory.path().join("cas");
    let port = free_port();
    let config = directory.path().join("buildgrid.yml");
    let channel = match tls {
        None => "    insecure-mode: true".to_owned(),
        Some(tls) => format!(
            "    insecure-mode: false\n    credentials:\n      tls-server-key: {}\n      \
             tls-server-cert: {}",
            tls.key().display(),
            tls.cert().display()
        ),
    };
    let text = server_config(
        "buildgrid.yml",
        &[
            ("@PORT@", port.to_string()),
            ("@CHANNEL@", channel),
            ("@CAS@", data.display().to_string()),
        ],
    );
    std::fs::write(&config, text).unwrap();
    let log = std::fs::File::create(directory.path().join("buildgrid.log")).unwrap();
    let child = Command::new(&bgd)
        .args(["server", "start"])
        .arg(&config)
        .stdin(Stdio::null())
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .spawn()
        .unwrap_or_else(|e| missing(&format!("cannot start `{}`: {e}", bgd.display())));
    let mut server = Server {
        child,
        data,
        url: format!(
            "{}://127.0.0.1:{port}",
            if tls.is_some() { "grpcs" } else { "grpc" }
        ),
        _directory: directory,
    };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    loop {
        let serving = runtime.block_on(async {
            let scheme = if tls.is_some() { "https" } else { "http" };
            let mut endpoint =
                tonic::transport::Endpoint::from_shared(format!("{scheme}://127.0.0.1:{port}"))
                    .ok()?;
            if let Some(tls) = tls {
                let pem = std::fs::read(tls.cert()).ok()?;
                endpoint = endpoint
                    .tls_config(
                        tonic::transport::ClientTlsConfig::new()
                            .ca_certificate(tonic::transport::Certificate::from_pem(pem)),
                    )
                    .ok()?;
            }
            let channel = endpoint.connect().await.ok()?;
            let mut client = tonic_health::pb::health_client::HealthClient::new(channel);
            let answer = client
                .check(tonic_health::pb::HealthCheckRequest::default())
                .await
                .ok()?;
            Some(answer.into_inner().status)
        });
        if serving == Some(tonic_health::pb::health_check_response::ServingStatus::Serving as i32) {
            eprintln!("BuildGrid ready in {:?}", started.elapsed());
            return server;
        }
        if let Ok(Some(status)) = server.child.try_wait() {
            let log = std::fs::read_to_string(server._directory.path().join("buildgrid.log"))
                .unwrap_or_default();
            panic!("BuildGrid exited ({status}) before it was ready:\n{log}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "BuildGrid did not become ready in 60 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// The server configuration `name` of `test_data/remote-cache` (shared with `cargo
/// xtask bench-remote`), without its comment lines, `fills` put in.
fn server_config(name: &str, fills: &[(&str, String)]) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test_data/remote-cache")
        .join(name);
    let template = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read `{}`: {e}", path.display()));
    let mut text: String = template
        .lines()
        .filter(|line| !line.starts_with('#'))
        .map(|line| format!("{line}\n"))
        .collect();
    for (placeholder, value) in fills {
        text = text.replace(placeholder, value);
    }
    assert!(
        !text.contains('@'),
        "`{name}`: a placeholder is left: {text}"
    );
    text
}

/// nginx serving `/team/` with WebDAV `PUT` and `/readonly/` without it (a server that
/// refuses writes), foreground, one process, its own prefix, over TLS with `tls`; ready
/// once it answers.
fn start_nginx(tls: Option<&Tls>) -> Server {
    let nginx = ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .into_iter()
        .map(PathBuf::from)
        .find(|path| path.is_file())
        .unwrap_or_else(|| missing("nginx is not installed"));
    let directory = tempfile::tempdir().unwrap();
    let prefix = directory.path();
    let data = prefix.join("root");
    for sub in ["root/team", "root/readonly", "tmp", "logs"] {
        std::fs::create_dir_all(prefix.join(sub)).unwrap();
    }
    let port = free_port();
    let listen = match tls {
        None => format!("listen 127.0.0.1:{port};"),
        Some(tls) => format!(
            "listen 127.0.0.1:{port} ssl;\n    ssl_certificate {};\n    ssl_certificate_key {};",
            tls.cert().display(),
            tls.key().display()
        ),
    };
    let config = prefix.join("nginx.conf");
    let text = server_config(
        "nginx.conf",
        &[
            ("@PREFIX@", prefix.display().to_string()),
            ("@LISTEN@", listen),
        ],
    );
    std::fs::write(&config, text).unwrap();
    let child = Command::new(&nginx)
        .arg("-p")
        .arg(prefix)
        .arg("-c")
        .arg(&config)
        .arg("-e")
        .arg(prefix.join("logs/error.log"))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| missing(&format!("cannot start `{}`: {e}", nginx.display())));
    let mut server = Server {
        child,
        data,
        url: format!(
            "{}://127.0.0.1:{port}/team",
            if tls.is_some() { "https" } else { "http" }
        ),
        _directory: directory,
    };
    let started = Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = server.child.try_wait() {
            let log = std::fs::read_to_string(server._directory.path().join("logs/error.log"))
                .unwrap_or_default();
            panic!("nginx exited ({status}) before it was ready:\n{log}");
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "nginx did not start"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// `gen/Gen` writes a small file (from its source) and a big one; `use/Use` reads the
/// small one; `slow/Slow` sleeps, for the server that dies mid-build.
fn workspace(input: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[workspace]\ninclude = [\"gen\", \"use\", \"slow\", \"all\"]\n",
    );
    write(
        root,
        "all/once.toml",
        "[[target]]\nname = \"All\"\nkind = \"filegroup\"\ndeps = [\"use/Use\"]\n",
    );
    write(
        root,
        "gen/once.toml",
        &format!(
            r#"[[target]]
name = "Gen"
kind = "command"
srcs = ["in.txt"]
visibility = ["public"]

[target.attrs]
cmd = "cat in.txt > \"$OUT/gen.txt\" && head -c {BIG} /dev/zero | tr '\\0' x > \"$OUT/big.bin\" && echo generated"
outputs = ["gen.txt", "big.bin"]
"#
        ),
    );
    write(root, "gen/in.txt", input);
    write(
        root,
        "use/once.toml",
        r#"[[target]]
name = "Use"
kind = "command"
deps = ["gen/Gen"]

[target.attrs]
cmd = "tr a-z A-Z < ../.once/out/gen/Gen/out/gen.txt > \"$OUT/use.txt\""
outputs = ["use.txt"]
"#,
    );
    write(
        root,
        "slow/once.toml",
        r#"[[target]]
name = "Slow"
kind = "command"
srcs = ["in.txt"]

[target.attrs]
cmd = "sleep 2 && cat in.txt > \"$OUT/slow.txt\""
outputs = ["slow.txt"]
"#,
    );
    write(root, "slow/in.txt", input);
    dir
}

/// A clean client: its own checkout (a copy of `source`) and its own store.
struct Machine {
    checkout: tempfile::TempDir,
    store: tempfile::TempDir,
    /// The certificates it trusts (`SSL_CERT_FILE`); the system's when `None`.
    trusts: Option<PathBuf>,
}

impl Machine {
    fn of(source: &Path) -> Machine {
        let checkout = tempfile::tempdir().unwrap();
        copy_tree(source, checkout.path());
        Machine {
            checkout,
            store: tempfile::tempdir().unwrap(),
            trusts: None,
        }
    }

    fn trusting(source: &Path, tls: &Tls) -> Machine {
        Machine {
            trusts: Some(tls.cert()),
            ..Machine::of(source)
        }
    }

    fn root(&self) -> &Path {
        self.checkout.path()
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
        command
            .arg("-C")
            .arg(self.root())
            .args(args)
            .arg("--store")
            .arg(self.store.path())
            .env_remove("ONCE_WORKSPACE");
        for name in [
            "ONCE_REMOTE_CACHE",
            "ONCE_REMOTE_CACHE_INSTANCE",
            "ONCE_REMOTE_CACHE_READ_ONLY",
            "ONCE_REMOTE_CACHE_TOKEN",
            "ONCE_REMOTE_CACHE_HEADER",
            "ONCE_REMOTE_CACHE_CREDENTIALS_FILE",
            "SSL_CERT_FILE",
            "SSL_CERT_DIR",
        ] {
            command.env_remove(name);
        }
        if let Some(certificates) = &self.trusts {
            command.env("SSL_CERT_FILE", certificates);
        }
        command
    }

    fn build(&self, targets: &[&str], flags: &[&str]) -> Output {
        let mut args = vec!["build"];
        args.extend(targets);
        args.extend(flags);
        let output = self.command(&args).output().unwrap();
        assert!(
            output.status.success(),
            "the build failed:\n{}{}",
            text(&output.stdout),
            text(&output.stderr)
        );
        output
    }

    /// `once cache stats`'s usage counters.
    fn usage(&self) -> Value {
        let output = self
            .command(&["--format", "json", "cache", "stats"])
            .output()
            .unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        answer["usage"].clone()
    }

    fn output(&self, path: &str) -> Vec<u8> {
        std::fs::read(self.root().join(".once/out").join(path)).unwrap()
    }
}

fn count(usage: &Value, name: &str) -> u64 {
    usage[name]
        .as_u64()
        .unwrap_or_else(|| panic!("no `{name}` in {usage}"))
}

/// Every file under `directory` (recursively) whose bytes contain `needle`.
fn files_containing(directory: &Path, needle: &[u8]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(entries) = std::fs::read_dir(directory) else {
        return found;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if kind.is_dir() {
            found.extend(files_containing(&path, needle));
        } else if kind.is_file()
            && let Ok(bytes) = std::fs::read(&path)
            && bytes.windows(needle.len()).any(|window| window == needle)
        {
            found.push(path);
        }
    }
    found
}

/// How many files are under `directory` (recursively).
fn file_count(directory: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(directory) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(kind) if kind.is_dir() => file_count(&entry.path()),
            Ok(kind) if kind.is_file() => 1,
            _ => 0,
        })
        .sum()
}

/// `count` independent actions (`many/M0`, …), for the circuit breaker.
fn independent(count: usize) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"many\"]\n");
    let mut manifest = String::new();
    for index in 0..count {
        manifest.push_str(&format!(
            "[[target]]\nname = \"M{index}\"\nkind = \"command\"\n\n[target.attrs]\n\
             cmd = \"echo {index} > \\\"$OUT/m.txt\\\"\"\noutputs = [\"m.txt\"]\n\n"
        ));
    }
    write(root, "many/once.toml", &manifest);
    dir
}

/// A build of six independent actions against `url`, where nothing answers: it succeeds,
/// and the circuit breaker stops the remote after a few failures instead of paying one
/// per action. Answers the counters.
fn check_breaker(url: &str) -> Value {
    let machine = Machine::of(independent(6).path());
    let started = Instant::now();
    let output = machine.build(&["many/..."], &["--remote-cache", url]);
    eprintln!("six actions against a dead server: {:?}", started.elapsed());
    for index in 0..6 {
        assert_eq!(
            machine.output(&format!("many/M{index}/out/m.txt")),
            format!("{index}\n").as_bytes()
        );
    }
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("lookups stopped for this command")
            && stderr.contains("uploads stopped for this command"),
        "{stderr}"
    );
    let usage = machine.usage();
    assert_eq!(
        (count(&usage, "misses"), count(&usage, "uploads")),
        (6, 0),
        "{usage}"
    );
    assert!(count(&usage, "skipped") >= 1, "{usage}");

    // The same build again: every action is a local hit, the remote is never asked, so
    // its being down is not reported (the connection started ahead is never waited for).
    let again = machine.build(&["many/..."], &["--remote-cache", url]);
    let stderr = text(&again.stderr);
    assert!(!stderr.contains("remote cache"), "{stderr}");
    let after = machine.usage();
    for counter in [
        "read_failures",
        "upload_failures",
        "skipped",
        "remote_lookups",
    ] {
        assert_eq!(count(&after, counter), count(&usage, counter), "{after}");
    }
    usage
}

/// A clean client asking for `gen/Gen` and `use/Use` of `source` after the server's copy
/// of one of `Gen`'s outputs was overwritten with other bytes of the same size: `Gen` is
/// rebuilt (with a warning), the wrong bytes are never restored, and `Use` (whose key
/// depends on the unchanged `gen.txt`) is still a hit.
fn check_corruption(server: &Server, source: &Path) {
    let f = Machine::of(source);
    let output = f.build(
        &["gen/Gen", "use/Use"],
        &["--remote-cache", server.url.as_str()],
    );
    assert_eq!(f.output("gen/Gen/out/gen.txt"), b"hello\n");
    assert_eq!(f.output("gen/Gen/out/big.bin"), vec![b'x'; BIG]);
    assert_eq!(f.output("use/Use/out/use.txt"), b"HELLO\n");
    let stderr = text(&output.stderr);
    assert!(stderr.contains("wrong content"), "{stderr}");
    let usage = f.usage();
    assert_eq!(
        (
            count(&usage, "corrupt"),
            count(&usage, "misses"),
            count(&usage, "remote_hits")
        ),
        (1, 1, 1),
        "{usage}"
    );
}

/// `machine`, a read-only client, builds `gen/Gen` with `flags`: it runs it (a miss) and
/// neither uploads nor changes a file of the server's.
fn check_runs_and_writes_nothing(server: &Server, machine: &Machine, flags: &[&str]) {
    let files_before = file_count(&server.data);
    machine.build(&["gen/Gen"], flags);
    assert_eq!(
        file_count(&server.data),
        files_before,
        "a read-only client wrote to the server's directory"
    );
    let usage = machine.usage();
    assert_eq!(
        (
            count(&usage, "misses"),
            count(&usage, "uploads"),
            count(&usage, "bytes_up")
        ),
        (1, 0, 0),
        "{usage}"
    );
}

/// The scenarios every server must pass: sharing between two clean clients (with the
/// big blob), read-only, and credentials that never show.
fn check_sharing(server: &Server) -> tempfile::TempDir {
    let source = workspace("hello\n");
    let remote = ["--remote-cache", server.url.as_str()];
    let a = Machine::of(source.path());
    let started = Instant::now();
    a.build(&["use/Use"], &remote);
    eprintln!(
        "{}: cold build with uploads: {:?}",
        server.url,
        started.elapsed()
    );
    let usage = a.usage();
    assert_eq!(
        (count(&usage, "misses"), count(&usage, "uploads")),
        (2, 2),
        "machine A ran and uploaded both actions: {usage}"
    );
    assert_eq!(count(&usage, "upload_failures"), 0, "{usage}");
    assert!(count(&usage, "bytes_up") >= BIG as u64, "{usage}");

    // Machine B asks for `use/Use`: both actions are remote hits, and only what it asked
    // for is downloaded (not `gen/Gen`'s outputs, which only fed a hit).
    let b = Machine::of(source.path());
    let started = Instant::now();
    let built = b.build(&["use/Use"], &remote);
    eprintln!("{}: remote-hit build: {:?}", server.url, started.elapsed());
    let usage = b.usage();
    assert_eq!(
        (count(&usage, "remote_hits"), count(&usage, "misses")),
        (2, 0),
        "machine B ran nothing: {usage}\n{}",
        text(&built.stderr)
    );
    assert!(
        count(&usage, "bytes_down") < 1024,
        "only use.txt came down: {usage}"
    );
    assert_eq!(
        b.output("use/Use/out/use.txt"),
        a.output("use/Use/out/use.txt")
    );
    assert!(!b.root().join(".once/out/gen/Gen/out/big.bin").exists());
    // A filegroup has no action of its own: its outputs are its dependencies', which a
    // clean client asking for it gets (and nothing that only fed them).
    let g = Machine::of(source.path());
    g.build(&["all/All"], &remote);
    let usage = g.usage();
    assert_eq!(
        (count(&usage, "remote_hits"), count(&usage, "misses")),
        (2, 0),
        "{usage}"
    );
    assert_eq!(g.output("use/Use/out/use.txt"), b"HELLO\n");
    assert!(!g.root().join(".once/out/gen/Gen/out/big.bin").exists());

    // Asking for `gen/Gen` brings its outputs, the big one through ByteStream on gRPC.
    b.build(&["gen/Gen"], &remote);
    let usage = b.usage();
    assert_eq!(count(&usage, "misses"), 0, "{usage}");
    assert!(count(&usage, "bytes_down") >= BIG as u64, "{usage}");
    for output in [
        "gen/Gen/out/gen.txt",
        "gen/Gen/out/big.bin",
        "use/Use/out/use.txt",
    ] {
        assert!(a.output(output) == b.output(output), "{output} differs");
    }
    assert_eq!(b.output("use/Use/out/use.txt"), b"HELLO\n");
    assert_eq!(b.output("gen/Gen/out/big.bin").len(), BIG);

    // Machine C changes `use/Use`'s command: it runs, so `gen/Gen`'s outputs (a remote
    // hit) are brought in place first.
    let c = Machine::of(source.path());
    write(
        c.root(),
        "use/once.toml",
        "[[target]]\nname = \"Use\"\nkind = \"command\"\ndeps = [\"gen/Gen\"]\n\n[target.attrs]\n\
         cmd = \"wc -c < ../.once/out/gen/Gen/out/big.bin > \\\"$OUT/use.txt\\\"\"\noutputs = [\"use.txt\"]\n",
    );
    c.build(&["use/Use"], &remote);
    let usage = c.usage();
    assert_eq!(
        (count(&usage, "remote_hits"), count(&usage, "misses")),
        (1, 1),
        "{usage}"
    );
    assert_eq!(
        String::from_utf8_lossy(&c.output("use/Use/out/use.txt")).trim(),
        BIG.to_string()
    );

    // A read-only client of a new revision runs it and writes nothing: a second client of
    // that revision finds nothing either.
    let changed = workspace("read only\n");
    let r = Machine::of(changed.path());
    let read_only = [remote[0], remote[1], "--remote-cache-read-only"];
    check_runs_and_writes_nothing(server, &r, &read_only);
    let d = Machine::of(changed.path());
    d.build(&["gen/Gen"], &read_only);
    assert_eq!(
        count(&d.usage(), "remote_hits"),
        0,
        "the read-only client wrote"
    );

    // The same with the server on the command line and `read_only` in the workspace's
    // `[cache]`: the connection made while planning (from the command line alone) is not
    // the one the execution uses, which the plan's settings make read-only.
    let declared = workspace("read only, declared\n");
    std::fs::write(
        declared.path().join("once.toml"),
        "[workspace]\ninclude = [\"gen\", \"use\", \"slow\", \"all\"]\n\n\
         [cache]\nread_only = true\n",
    )
    .unwrap();
    check_runs_and_writes_nothing(server, &Machine::of(declared.path()), &remote);

    // Credentials from the environment reach the server, never a file or the output.
    let secret = "s3cr3t-token-for-the-remote-cache";
    let token_workspace = workspace("token\n");
    let e = Machine::of(token_workspace.path());
    let output = e
        .command(&["build", "use/Use", remote[0], remote[1]])
        .env("ONCE_REMOTE_CACHE_TOKEN", secret)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(count(&e.usage(), "uploads"), 2);
    let shown = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(!shown.contains(secret), "{shown}");
    for directory in [e.store.path(), e.root()] {
        let found = files_containing(directory, secret.as_bytes());
        assert!(found.is_empty(), "the token was written to {found:?}");
    }
    source
}

#[test]
fn buildgrid_shares_results_over_grpc() {
    let server = start_buildgrid(None);
    let source = check_sharing(&server);

    // Configured in once.toml rather than on the command line, through an instance
    // prefix-free URL: the same entries.
    let configured = Machine::of(source.path());
    write(
        configured.root(),
        "once.toml",
        &format!(
            "[workspace]\ninclude = [\"gen\", \"use\", \"slow\", \"all\"]\n\n[cache]\nremote = \"{}\"\n",
            server.url
        ),
    );
    configured.build(&["use/Use"], &[]);
    let usage = configured.usage();
    assert_eq!(count(&usage, "remote_hits"), 2, "{usage}");

    // BuildGrid's copy of the big output (read through ByteStream) is overwritten with
    // other bytes of its size: detected, never restored. (BuildGrid keeps the first copy
    // of a blob it has, so its copy is not repaired by the upload that follows.)
    let big = sha256_hex(&vec![b'x'; BIG]);
    let blob = server
        .data
        .join("cas/objects")
        .join(&big[..2])
        .join(&big[2..]);
    assert!(blob.is_file(), "no blob at {}", blob.display());
    std::fs::write(&blob, vec![b'y'; BIG]).unwrap();
    check_corruption(&server, source.path());

    // Results made without the sandbox are never shared: no lookup, no upload.
    let unsandboxed = Machine::of(workspace("unsandboxed\n").path());
    unsandboxed.build(
        &["use/Use"],
        &["--sandbox", "off", "--remote-cache", server.url.as_str()],
    );
    let usage = unsandboxed.usage();
    assert_eq!(
        (
            count(&usage, "remote_lookups"),
            count(&usage, "uploads"),
            count(&usage, "misses")
        ),
        (0, 0, 2),
        "{usage}"
    );

    // The server dies while an action runs: the build is right, the failed upload
    // reported and counted.
    let url = server.url.clone();
    let dying = Machine::of(workspace("dies\n").path());
    let child = dying
        .command(&["build", "slow/Slow", "--remote-cache", url.as_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    drop(server);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(dying.output("slow/Slow/out/slow.txt"), b"dies\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the remote cache") && stderr.contains("uploads failed"),
        "{stderr}"
    );
    assert_eq!(count(&dying.usage(), "upload_failures"), 1);

    // The dead server again, for six actions: connecting fails once and switches the
    // remote off for the command (both directions).
    let usage = check_breaker(&url);
    assert_eq!(count(&usage, "read_failures"), 1, "{usage}");
    assert_eq!(count(&usage, "skipped"), 11, "{usage}");
}

#[test]
fn nginx_shares_results_over_http_and_wrong_bytes_are_misses() {
    let server = start_nginx(None);
    let source = check_sharing(&server);

    // The server's copy of `gen.txt` is overwritten: a new client asking for `Gen`
    // rebuilds it (with a warning), never restores the wrong bytes, and `Use` (same input
    // digest) still hits.
    let blob = server.data.join("team/cas").join(sha256_hex(b"hello\n"));
    assert!(blob.is_file(), "no blob at {}", blob.display());
    std::fs::write(&blob, b"EVIL!\n").unwrap();
    check_corruption(&server, source.path());
    // The rebuilt blob was uploaded again over the wrong one.
    assert_eq!(std::fs::read(&blob).unwrap(), b"hello\n");

    // A server that refuses writes (no WebDAV on `/readonly/`): the build succeeds, the
    // failures are reported and counted.
    let refusing = Machine::of(workspace("refused\n").path());
    let url = server.url.replace("/team", "/readonly");
    let output = refusing.build(&["use/Use"], &["--remote-cache", url.as_str()]);
    let stderr = text(&output.stderr);
    assert!(stderr.contains("uploads failed"), "{stderr}");
    assert!(count(&refusing.usage(), "upload_failures") >= 1);

    // The server dies while an action runs: the build is right, the failed upload
    // reported and counted.
    let url = server.url.clone();
    let dying = Machine::of(workspace("dies\n").path());
    let child = dying
        .command(&["build", "slow/Slow", "--remote-cache", url.as_str()])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(800));
    drop(server);
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(dying.output("slow/Slow/out/slow.txt"), b"dies\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the remote cache") && stderr.contains("uploads failed"),
        "{stderr}"
    );
    assert_eq!(count(&dying.usage(), "upload_failures"), 1);

    // Six actions against the dead server: three failed lookups and three failed
    // uploads in a row open the breakers, the rest is skipped.
    let usage = check_breaker(&url);
    assert!((3..6).contains(&count(&usage, "read_failures")), "{usage}");

    // A server that is down from the start: the same.
    let down = Machine::of(workspace("down\n").path());
    let url = format!("http://127.0.0.1:{}/team", free_port());
    let started = Instant::now();
    let output = down.build(&["use/Use"], &["--remote-cache", url.as_str()]);
    eprintln!(
        "build against a server that is down: {:?}",
        started.elapsed()
    );
    assert_eq!(down.output("use/Use/out/use.txt"), b"DOWN\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("the remote cache") && stderr.contains("failed"),
        "{stderr}"
    );
}

fn sha256_hex(bytes: &[u8]) -> String {
    let output = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            use std::io::Write as _;
            child.stdin.take().unwrap().write_all(bytes)?;
            child.wait_with_output()
        })
        .unwrap();
    text(&output.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned()
}

/// TLS with a certificate of the team's own: a client that does not trust it builds right
/// and says why the remote was not used; clients trusting it (through `SSL_CERT_FILE`)
/// share results, the big blob included (ByteStream on gRPC).
fn check_tls(server: &Server, tls: &Tls) {
    let source = workspace("secure\n");
    let remote = ["--remote-cache", server.url.as_str()];

    let stranger = Machine::of(source.path());
    let output = stranger.build(&["gen/Gen"], &remote);
    assert_eq!(stranger.output("gen/Gen/out/gen.txt"), b"secure\n");
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains(&format!("the remote cache {}", server.url))
            && stderr.contains("certificate"),
        "{stderr}"
    );
    let usage = stranger.usage();
    assert_eq!(
        (count(&usage, "uploads"), count(&usage, "remote_hits")),
        (0, 0),
        "{usage}"
    );

    let a = Machine::trusting(source.path(), tls);
    a.build(&["gen/Gen"], &remote);
    let usage = a.usage();
    assert_eq!(
        (
            count(&usage, "misses"),
            count(&usage, "uploads"),
            count(&usage, "upload_failures")
        ),
        (1, 1, 0),
        "{usage}"
    );
    let b = Machine::trusting(source.path(), tls);
    b.build(&["gen/Gen"], &remote);
    let usage = b.usage();
    assert_eq!(
        (count(&usage, "remote_hits"), count(&usage, "misses")),
        (1, 0),
        "{usage}"
    );
    assert!(count(&usage, "bytes_down") >= BIG as u64, "{usage}");
    for output in ["gen/Gen/out/gen.txt", "gen/Gen/out/big.bin"] {
        assert!(a.output(output) == b.output(output), "{output} differs");
    }
}

#[test]
fn tls_to_both_servers_with_a_private_certificate() {
    let tls = Tls::new();
    for server in [start_buildgrid(Some(&tls)), start_nginx(Some(&tls))] {
        check_tls(&server, &tls);
    }
}
