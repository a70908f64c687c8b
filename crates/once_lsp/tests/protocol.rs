//! In-process protocol tests over `Connection::memory()`: incremental edits, cross-file
//! republishing, requests against an in-memory workspace, and a workspace whose load panics.
//! Workspaces are inline fixtures (`once_fixture`); edits made on the "disk" while the
//! server runs stay code, as steps of the test.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use lsp_server::{Connection, Message, Notification, Request, RequestId};
use once_analysis::{
    EntryKind, FileStamp, HostPlatform, MemorySystem, StampedRead, System, Walked, WriteLock,
};
use once_fixture::Fixture;
use serde_json::{Value, json};

struct Client {
    connection: Connection,
    server: Option<std::thread::JoinHandle<()>>,
    next_id: i32,
    /// Notifications received while waiting for responses.
    pending: Vec<Notification>,
    /// The workspace the server loaded, as written.
    fixture: Fixture,
    /// The "disk" under the overlay.
    disk: MemorySystem,
    /// Requests the server sent (such as `client/registerCapability`).
    server_requests: Vec<Request>,
}

impl Client {
    fn start(fixture: &str, capabilities: Value) -> Client {
        let fixture = Fixture::parse(fixture);
        let system = fixture.system();
        let (server_side, connection) = Connection::memory();
        let disk = system.clone();
        let server = std::thread::spawn(move || {
            once_lsp::run_with_system(&server_side, None, Arc::new(system)).unwrap();
        });
        let mut client = Client {
            connection,
            server: Some(server),
            next_id: 0,
            pending: Vec::new(),
            fixture,
            disk,
            server_requests: Vec::new(),
        };
        let init = client.request(
            "initialize",
            json!({"capabilities": capabilities, "rootUri": "file:///ws"}),
        );
        assert_eq!(init["serverInfo"]["name"], "once");
        client.notify("initialized", json!({}));
        client
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        self.connection
            .sender
            .send(Request::new(id.clone(), method.into(), params).into())
            .unwrap();
        loop {
            match self.recv() {
                Message::Response(response) if response.id == id => {
                    return match response.response_result {
                        Ok(value) => value,
                        Err(error) => panic!("{method}: {error:?}"),
                    };
                }
                Message::Notification(n) => self.pending.push(n),
                Message::Request(request) => self.server_requests.push(request),
                Message::Response(_) => {}
            }
        }
    }

    fn notify(&self, method: &str, params: Value) {
        self.connection
            .sender
            .send(Notification::new(method.into(), params).into())
            .unwrap();
    }

    fn recv(&self) -> Message {
        self.connection
            .receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the server answers")
    }

    /// The next `publishDiagnostics`: (uri, diagnostics).
    fn next_diagnostics(&mut self) -> (String, Vec<Value>) {
        let n = if self.pending.is_empty() {
            loop {
                match self.recv() {
                    Message::Notification(n) => break n,
                    Message::Request(request) => self.server_requests.push(request),
                    Message::Response(_) => {}
                }
            }
        } else {
            self.pending.remove(0)
        };
        assert_eq!(n.method, "textDocument/publishDiagnostics");
        let uri = n.params["uri"].as_str().unwrap().to_owned();
        (uri, n.params["diagnostics"].as_array().unwrap().clone())
    }

    /// Asserts no notification arrives before a round trip completes.
    fn assert_quiet(&mut self) {
        let _ = self.request(
            "textDocument/documentSymbol",
            json!({"textDocument": {"uri": "file:///ws/once.toml"}}),
        );
        assert!(self.pending.is_empty(), "unexpected: {:?}", self.pending);
    }

    fn open(&mut self, path: &str, text: &str) -> (String, Vec<Value>) {
        self.notify(
            "textDocument/didOpen",
            json!({"textDocument": {"uri": uri(path), "languageId": "toml", "version": 1, "text": text}}),
        );
        self.next_diagnostics()
    }

    /// Opens a file of the fixture with its text on disk.
    fn open_as_on_disk(&mut self, path: &str) -> (String, Vec<Value>) {
        let text = self.fixture.text(path).to_owned();
        self.open(path, &text)
    }

    fn shutdown(mut self) {
        self.request("shutdown", Value::Null);
        self.notify("exit", Value::Null);
        self.server.take().unwrap().join().unwrap();
    }
}

fn uri(path: &str) -> String {
    format!("file:///ws/{path}")
}

fn codes(diagnostics: &[Value]) -> Vec<String> {
    diagnostics
        .iter()
        .map(|d| d["code"].as_str().unwrap().to_owned())
        .collect()
}

/// A library and an application depending on it.
const WORKSPACE: &str = r#"
    //- /once.toml
    [workspace]
    //- /lib/once.toml
    [[target]]
    name = "Lib"
    kind = "rust_library"
    srcs = ["src/lib.rs"]
    //- /lib/src/lib.rs
    //- /app/once.toml
    [[target]]
    name = "App"
    kind = "rust_binary"
    srcs = ["src/main.rs"]
    deps = ["lib/Lib"]
    //- /app/src/main.rs
"#;

fn change(path: &str, version: i32, range: [u32; 4], text: &str) -> Value {
    json!({
        "textDocument": {"uri": uri(path), "version": version},
        "contentChanges": [{
            "range": {"start": {"line": range[0], "character": range[1]}, "end": {"line": range[2], "character": range[3]}},
            "text": text,
        }],
    })
}

#[test]
fn incremental_edits_are_analysed_as_typed() {
    let mut client = Client::start(WORKSPACE, json!({}));
    let (u, diagnostics) = client.open_as_on_disk("app/once.toml");
    assert_eq!(u, uri("app/once.toml"));
    assert!(diagnostics.is_empty(), "{diagnostics:?}");

    // `rust_binary` → `rust_binery`: one character, typed in place.
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 2, [2, 14, 2, 15], "e"),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert_eq!(codes(&diagnostics), ["unknown_target_kind"]);
    assert_eq!(
        diagnostics[0]["range"],
        json!({"start": {"line": 2, "character": 7}, "end": {"line": 2, "character": 20}})
    );
    let related = diagnostics[0]["relatedInformation"].as_array().unwrap();
    assert!(
        related[0]["message"]
            .as_str()
            .unwrap()
            .contains("rust_binary"),
        "{related:?}"
    );

    // An edit that keeps the same diagnostics publishes nothing.
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 3, [0, 0, 0, 0], "# a comment\n"),
    );
    let (_, diagnostics) = client.next_diagnostics();
    // The range moved one line down, so this is a change.
    assert_eq!(diagnostics[0]["range"]["start"]["line"], 3);
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 4, [0, 11, 0, 11], " more"),
    );
    client.assert_quiet();

    // Fix it with a multi-line replacement.
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 5, [3, 7, 3, 20], "\"rust_binary\""),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    client.shutdown();
}

#[test]
fn deleting_a_target_republishes_its_dependents() {
    let mut client = Client::start(WORKSPACE, json!({}));
    client.open_as_on_disk("app/once.toml");
    client.open_as_on_disk("lib/once.toml");
    // Rename `Lib` to `Lob` in the library's buffer (unsaved).
    client.notify(
        "textDocument/didChange",
        change("lib/once.toml", 2, [1, 9, 1, 10], "o"),
    );
    let (u, diagnostics) = client.next_diagnostics();
    assert_eq!(u, uri("app/once.toml"), "only the dependent changed");
    assert_eq!(codes(&diagnostics), ["missing_dependency"]);
    assert_eq!(
        diagnostics[0]["range"],
        json!({"start": {"line": 4, "character": 8}, "end": {"line": 4, "character": 17}})
    );
    client.assert_quiet();
    // Closing the library buffer shows the disk again: the dependency resolves.
    client.notify(
        "textDocument/didClose",
        json!({"textDocument": {"uri": uri("lib/once.toml")}}),
    );
    let (u, diagnostics) = client.next_diagnostics();
    assert_eq!(u, uri("app/once.toml"));
    assert!(diagnostics.is_empty());
    client.shutdown();
}

#[test]
fn positions_use_the_negotiated_encoding() {
    for (capabilities, end) in [
        (
            json!({"general": {"positionEncodings": ["utf-8", "utf-16"]}}),
            21,
        ),
        (json!({}), 20),
    ] {
        let mut client = Client::start(
            r#"
            //- /once.toml
            [workspace]
            //- /app/once.toml
            [[target]]
            name = "App"
            kind = "rüst_binary"
            "#,
            capabilities,
        );
        let (_, diagnostics) = client.open_as_on_disk("app/once.toml");
        assert_eq!(codes(&diagnostics), ["unknown_target_kind"]);
        assert_eq!(
            diagnostics[0]["range"]["end"],
            json!({"line": 2, "character": end})
        );
        client.shutdown();
    }
}

#[test]
fn requests_answer_from_the_same_database() {
    let mut client = Client::start(WORKSPACE, json!({}));
    client.open_as_on_disk("app/once.toml");
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri("app/once.toml")}, "position": {"line": 4, "character": 10}}),
    );
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("lib/Lib") && text.contains("rust_library"),
        "{text}"
    );
    let definition = client.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri("app/once.toml")}, "position": {"line": 4, "character": 10}}),
    );
    assert_eq!(definition[0]["uri"], uri("lib/once.toml"));
    assert_eq!(
        definition[0]["range"]["start"],
        json!({"line": 1, "character": 7})
    );
    let references = client.request(
        "textDocument/references",
        json!({"textDocument": {"uri": uri("app/once.toml")}, "position": {"line": 4, "character": 10},
               "context": {"includeDeclaration": true}}),
    );
    assert_eq!(references.as_array().unwrap().len(), 2, "{references}");
    let symbols = client.request(
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": uri("app/once.toml")}}),
    );
    assert_eq!(symbols[0]["name"], "App");
    assert_eq!(symbols[0]["detail"], "rust_binary");

    // Completion of dependency labels inside the `deps` string.
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 2, [4, 17, 4, 17], ", \""),
    );
    client.next_diagnostics();
    let items = client.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri("app/once.toml")}, "position": {"line": 4, "character": 20}}),
    );
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert!(labels.contains(&"lib/Lib"), "{labels:?}");
    assert!(
        !labels.contains(&"./App"),
        "a target does not depend on itself: {labels:?}"
    );
    client.shutdown();
}

#[test]
fn code_actions_and_formatting() {
    let broken = "[[target]]\nname = \"App\"\nkind = \"rust_binery\"\nsrcs = [\"src/main.rs\"]\ndeps = [\"//lib:Lib\"]\n";
    let mut client = Client::start(WORKSPACE, json!({}));
    let (_, diagnostics) = client.open("app/once.toml", broken);
    let mut found = codes(&diagnostics);
    found.sort();
    assert_eq!(found, ["invalid_label", "unknown_target_kind"]);
    let actions = client.request(
        "textDocument/codeAction",
        json!({"textDocument": {"uri": uri("app/once.toml")},
               "range": {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}},
               "context": {"diagnostics": diagnostics}}),
    );
    let titles: Vec<&str> = actions
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["title"].as_str().unwrap())
        .collect();
    assert!(titles.contains(&"Use kind `rust_binary`"), "{titles:?}");
    assert!(
        titles.contains(&"Replace `//lib:Lib` with `lib/Lib`"),
        "{titles:?}"
    );
    let fix = actions
        .as_array()
        .unwrap()
        .iter()
        .find(|a| a["title"] == "Use kind `rust_binary`")
        .unwrap();
    let edit = &fix["edit"]["changes"][uri("app/once.toml")][0];
    assert_eq!(edit["newText"], "\"rust_binary\"");
    assert_eq!(edit["range"]["start"], json!({"line": 2, "character": 7}));

    client.notify("textDocument/didChange", json!({
        "textDocument": {"uri": uri("app/once.toml"), "version": 2},
        "contentChanges": [{"text": "[[target]]\n  name=\"App\"  \n\n\nkind = \"rust_binary\" # k\n"}],
    }));
    client.next_diagnostics();
    let edits = client.request("textDocument/formatting", json!({"textDocument": {"uri": uri("app/once.toml")}, "options": {"tabSize": 4, "insertSpaces": true}}));
    assert_eq!(
        edits[0]["newText"],
        "[[target]]\nname = \"App\"\n\nkind = \"rust_binary\" # k\n"
    );
    client.shutdown();
}

#[test]
fn changes_on_disk_arrive_through_watched_files() {
    let mut client = Client::start(WORKSPACE, json!({}));
    client.open_as_on_disk("app/once.toml");
    // Another tool renames the library's target on disk; the editor only reports the event.
    let lib = client.fixture.text("lib/once.toml").to_owned();
    client
        .disk
        .write("/ws/lib/once.toml", lib.replace("\"Lib\"", "\"Lob\""));
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("lib/once.toml"), "type": 2}]}),
    );
    let (u, diagnostics) = client.next_diagnostics();
    assert_eq!(u, uri("app/once.toml"));
    assert_eq!(codes(&diagnostics), ["missing_dependency"]);
    // The rename is undone on disk.
    client.disk.write("/ws/lib/once.toml", lib);
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("lib/once.toml"), "type": 2}]}),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");

    // The buffer now names a package that does not exist yet; then it is created on disk.
    client.notify(
        "textDocument/didChange",
        change("app/once.toml", 2, [4, 9, 4, 16], "new/New"),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert_eq!(codes(&diagnostics), ["missing_dependency"]);
    client.disk.write("/ws/new/src/lib.rs", "");
    client.disk.write(
        "/ws/new/once.toml",
        "[[target]]\nname = \"New\"\nkind = \"rust_library\"\nsrcs = [\"src/lib.rs\"]\n",
    );
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("new/once.toml"), "type": 1}]}),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    client.shutdown();
}

#[test]
fn the_client_watches_every_file_and_sources_reach_the_database() {
    let mut client = Client::start(
        WORKSPACE,
        json!({"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": true}}}),
    );
    client.open_as_on_disk("app/once.toml");
    let registration = client
        .server_requests
        .iter()
        .find(|r| r.method == "client/registerCapability")
        .expect("the server registers file watchers");
    let watchers = &registration.params["registrations"][0]["registerOptions"]["watchers"];
    assert_eq!(*watchers, json!([{"globPattern": "**/*"}]));

    // A source disappears on disk: `missing_source` appears.
    client
        .disk
        .remove(std::path::Path::new("/ws/app/src/main.rs"));
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("app/src/main.rs"), "type": 3}]}),
    );
    let (u, diagnostics) = client.next_diagnostics();
    assert_eq!(u, uri("app/once.toml"));
    assert_eq!(codes(&diagnostics), ["missing_source"]);

    // Events inside excluded directories are dropped without a republish.
    client.disk.write("/ws/app/target/debug/main.rs", "");
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("app/target/debug/main.rs"), "type": 1}]}),
    );
    client.assert_quiet();

    // It comes back: the diagnostic goes.
    client.disk.write("/ws/app/src/main.rs", "fn main() {}\n");
    client.notify(
        "workspace/didChangeWatchedFiles",
        json!({"changes": [{"uri": uri("app/src/main.rs"), "type": 1}]}),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert!(diagnostics.is_empty(), "{diagnostics:?}");
    client.shutdown();
}

/// An in-memory disk whose walk is a bug in once: loading the workspace panics.
#[derive(Debug)]
struct WalkPanics(MemorySystem);

impl System for WalkPanics {
    fn walk_entries(&self, root: &Path) -> io::Result<Walked> {
        panic!("walking `{}` blew up", root.display())
    }
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.0.read_to_string(path)
    }
    fn read_bytes(&self, path: &Path) -> io::Result<Vec<u8>> {
        self.0.read_bytes(path)
    }
    fn is_file(&self, path: &Path) -> bool {
        self.0.is_file(path)
    }
    fn host_platform(&self) -> HostPlatform {
        self.0.host_platform()
    }
    fn entry_kind(&self, path: &Path) -> io::Result<Option<EntryKind>> {
        self.0.entry_kind(path)
    }
    fn canonicalize(&self, path: &Path) -> io::Result<PathBuf> {
        self.0.canonicalize(path)
    }
    fn read_confined(&self, root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
        self.0.read_confined(root, relative)
    }
    fn lock_writes(&self, root: &Path) -> io::Result<WriteLock> {
        self.0.lock_writes(root)
    }
    fn write_confined(
        &self,
        lock: &WriteLock,
        root: &Path,
        relative: &str,
        contents: &[u8],
    ) -> io::Result<bool> {
        self.0.write_confined(lock, root, relative, contents)
    }
    fn stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        self.0.stamp(path)
    }
    fn link_stamp(&self, path: &Path) -> io::Result<Option<FileStamp>> {
        self.0.link_stamp(path)
    }
    fn read_link(&self, path: &Path) -> io::Result<PathBuf> {
        self.0.read_link(path)
    }
    fn now(&self) -> std::time::SystemTime {
        self.0.now()
    }
    fn read_stamped(&self, path: &Path) -> StampedRead {
        self.0.read_stamped(path)
    }
}

/// A panic while loading the workspace (after `initialize` was answered) leaves a server
/// that shows the failure once, answers every request with an internal error naming the
/// failed load, and still shuts down and exits when asked (it neither dies nor hangs).
#[test]
fn a_panic_while_loading_is_shown_and_answered_on_every_request() {
    let system = Fixture::parse("//- /once.toml\n[workspace]\n").system();
    let (server_side, connection) = Connection::memory();
    let server = std::thread::spawn(move || {
        once_lsp::run_with_system(&server_side, None, Arc::new(WalkPanics(system))).unwrap();
    });
    let send_request = |id: i32, method: &str, params: Value| {
        connection
            .sender
            .send(Request::new(RequestId::from(id), method.into(), params).into())
            .unwrap();
    };
    let recv = || {
        connection
            .receiver
            .recv_timeout(Duration::from_secs(20))
            .expect("the server answers")
    };
    let is_load_failure = |message: &str| {
        message.starts_with("once could not load the workspace: internal error")
            && message.contains("walking `/ws` blew up")
    };

    send_request(
        1,
        "initialize",
        json!({"capabilities": {}, "rootUri": "file:///ws"}),
    );
    let Message::Response(init) = recv() else {
        panic!("expected the initialize response");
    };
    assert_eq!(init.response_result.unwrap()["serverInfo"]["name"], "once");
    let Message::Notification(shown) = recv() else {
        panic!("expected window/showMessage");
    };
    assert_eq!(shown.method, "window/showMessage");
    assert_eq!(shown.params["type"], 1, "an error");
    assert!(
        is_load_failure(shown.params["message"].as_str().unwrap()),
        "{shown:?}"
    );

    send_request(
        2,
        "textDocument/documentSymbol",
        json!({"textDocument": {"uri": "file:///ws/once.toml"}}),
    );
    let Message::Response(symbols) = recv() else {
        panic!("expected a response");
    };
    let error = symbols.response_result.expect_err("an error");
    assert_eq!(error.code, lsp_server::ErrorCode::InternalError as i32);
    assert!(is_load_failure(&error.message), "{error:?}");

    send_request(3, "shutdown", Value::Null);
    let Message::Response(shutdown) = recv() else {
        panic!("expected a response");
    };
    assert_eq!(shutdown.response_result.ok(), Some(Value::Null));
    connection
        .sender
        .send(Notification::new("exit".into(), Value::Null).into())
        .unwrap();
    server.join().unwrap();
}

/// Annotated scripts get their header's diagnostics (following edits), completion of
/// directive keywords, hover and go-to-definition of `needs`; an ordinary file without
/// directives gets nothing, not even for its missing shebang.
#[test]
fn annotated_scripts_get_diagnostics_completion_hover_and_definition() {
    let mut client = Client::start(WORKSPACE, json!({}));
    let (_, plain) = client.open("tools/notes.sh", "echo no shebang and no directives\n");
    assert_eq!(plain, Vec::<Value>::new());

    let script =
        "#!/usr/bin/env bash\n# once inputs \"a.txt\"\n# once needs \"prep.sh\"\necho hi\n";
    let (uri_sent, diagnostics) = client.open("tools/gen.sh", script);
    assert_eq!(uri_sent, uri("tools/gen.sh"));
    assert_eq!(codes(&diagnostics), ["invalid_script_contract"]);
    assert_eq!(
        diagnostics[0]["range"]["start"],
        json!({"line": 1, "character": 2})
    );

    // The fix the diagnostic offers, typed: the diagnostics clear.
    client.notify(
        "textDocument/didChange",
        change("tools/gen.sh", 2, [1, 7, 1, 13], "input"),
    );
    let (_, diagnostics) = client.next_diagnostics();
    assert_eq!(diagnostics, Vec::<Value>::new());

    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri("tools/gen.sh")}, "position": {"line": 2, "character": 9}}),
    );
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(
        text.contains("`needs`") && text.contains("runs first"),
        "{text}"
    );
    let hover = client.request(
        "textDocument/hover",
        json!({"textDocument": {"uri": uri("tools/gen.sh")}, "position": {"line": 1, "character": 16}}),
    );
    let text = hover["contents"]["value"].as_str().unwrap();
    assert!(text.contains("Workspace path: `tools/a.txt`"), "{text}");

    let definition = client.request(
        "textDocument/definition",
        json!({"textDocument": {"uri": uri("tools/gen.sh")}, "position": {"line": 2, "character": 16}}),
    );
    assert_eq!(definition[0]["uri"], uri("tools/prep.sh"));

    // Completion after `# once ou` on a new header line (prose so far: the
    // diagnostics do not change, so none are published).
    client.notify(
        "textDocument/didChange",
        change("tools/gen.sh", 3, [3, 0, 3, 0], "# once ou\n"),
    );
    let items = client.request(
        "textDocument/completion",
        json!({"textDocument": {"uri": uri("tools/gen.sh")}, "position": {"line": 3, "character": 9}}),
    );
    let labels: Vec<&str> = items
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["output", "output-symlinks"]);
    assert_eq!(items[0]["textEdit"]["newText"], "output \"\"");
    client.shutdown();
}
