//! `once lsp` survives whatever a client sends: bodies that are not JSON or not messages,
//! broken or missing `Content-Length` headers, absurd lengths, lone surrogates in edited
//! text. After each, the next request is answered; the server exits (with 0) only on
//! `shutdown` and `exit`.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use serde_json::{Value, json};

const TIMEOUT: Duration = Duration::from_secs(30);

fn frame(body: &str) -> Vec<u8> {
    format!("Content-Length: {}\r\n\r\n{body}", body.len()).into_bytes()
}

fn send_raw(stdin: &mut ChildStdin, bytes: &[u8]) {
    stdin.write_all(bytes).unwrap();
    stdin.flush().unwrap();
}

fn send(stdin: &mut ChildStdin, message: &Value) {
    send_raw(stdin, &frame(&message.to_string()));
}

/// Every message the server writes, parsed; the reader panics on a malformed frame.
fn read_messages(stdout: impl Read + Send + 'static) -> mpsc::Receiver<Value> {
    let (sender, receiver) = mpsc::channel();
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        loop {
            let mut length = None;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    return;
                }
                let line = line.trim_end();
                if line.is_empty() {
                    break;
                }
                let value = line.strip_prefix("Content-Length: ").expect("one header");
                length = Some(value.parse::<usize>().unwrap());
            }
            let mut body = vec![0; length.expect("a Content-Length header")];
            reader.read_exact(&mut body).unwrap();
            if sender.send(serde_json::from_slice(&body).unwrap()).is_err() {
                return;
            }
        }
    });
    receiver
}

struct Client {
    stdin: ChildStdin,
    messages: mpsc::Receiver<Value>,
    next_id: i64,
}

impl Client {
    /// The next message that is not a notification.
    fn reply(&self) -> Value {
        loop {
            let message = self
                .messages
                .recv_timeout(TIMEOUT)
                .expect("the server answers in time");
            if message.get("method").is_none() {
                return message;
            }
        }
    }

    /// A request that must be answered: the server is alive and in sync.
    fn symbols(&mut self, uri: &str) -> Value {
        let (result, others) = self.symbols_after_errors(uri);
        assert!(others.is_empty(), "unexpected replies: {others:?}");
        result
    }

    /// The answer to a symbols request, and the error codes of the replies before it.
    fn symbols_after_errors(&mut self, uri: &str) -> (Value, Vec<i64>) {
        self.next_id += 1;
        let id = self.next_id + 1000;
        send(
            &mut self.stdin,
            &json!({"jsonrpc": "2.0", "id": id, "method": "textDocument/documentSymbol",
                    "params": {"textDocument": {"uri": uri}}}),
        );
        let mut others = Vec::new();
        loop {
            let reply = self.reply();
            if reply["id"] == id {
                return (reply["result"].clone(), others);
            }
            others.push(reply["error"]["code"].as_i64().expect("an error reply"));
        }
    }
}

#[test]
fn the_language_server_survives_bad_input() {
    let workspace = tempfile::tempdir().unwrap();
    let root = workspace.path().canonicalize().unwrap();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    let manifest = "[[target]]\nname = \"Files\"\nkind = \"filegroup\"\nsrcs = [\"once.toml\"]\n";
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/once.toml"), manifest).unwrap();
    let uri = format!("file://{}/pkg/once.toml", root.display());

    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(&root)
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut client = Client {
        stdin: child.stdin.take().unwrap(),
        messages: read_messages(child.stdout.take().unwrap()),
        next_id: 0,
    };
    let stderr = child.stderr.take().unwrap();
    let log = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = BufReader::new(stderr).read_to_string(&mut text);
        text
    });

    // Before `initialize`, requests get an error and the server waits.
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "id": 1, "method": "textDocument/hover", "params": {}}),
    );
    assert_eq!(client.reply()["error"]["code"], -32002);
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {"capabilities": {}}}),
    );
    assert_eq!(client.reply()["result"]["serverInfo"]["name"], "once");
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "method": "initialized", "params": {}}),
    );
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {
            "textDocument": {"uri": uri, "languageId": "toml", "version": 1, "text": manifest}}}),
    );
    assert_eq!(client.symbols(&uri)[0]["name"], "Files");

    // (input, the error codes of the replies it gets)
    let ping = r#"{"jsonrpc":"2.0","id":77,"method":"textDocument/documentSymbol","params":{"textDocument":{"uri":"x"}}}"#;
    let cases: Vec<(Vec<u8>, Vec<i64>)> = vec![
        (frame("{"), vec![-32700]),
        (frame("null"), vec![-32600]),
        (frame("[]"), vec![-32600]),
        (
            frame(r#"{"jsonrpc":"2.0","id":5,"method":"textDocument/hover","params":7}"#),
            vec![-32602],
        ),
        (
            frame(r#"{"jsonrpc":"2.0","id":2147483648,"method":"textDocument/hover"}"#),
            vec![-32600],
        ),
        (
            frame(r#"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"bad":1}}"#),
            vec![],
        ),
        (
            format!("Content-Type: x\r\n\r\n{ping}").into_bytes(),
            vec![-32600],
        ),
        (
            format!("Content-Length: -5\r\n\r\n{ping}").into_bytes(),
            vec![-32600],
        ),
        (
            format!("Content-Length: 18446744073709551615\r\n\r\n{ping}").into_bytes(),
            vec![-32600],
        ),
        (
            format!("Content-Length: 100000000000\r\n\r\n{ping}").into_bytes(),
            vec![-32600],
        ),
        // A length shorter than the body: the body's head is not JSON, its tail is no header.
        (
            format!("Content-Length: 9\r\n\r\n{ping}").into_bytes(),
            vec![-32700, -32600],
        ),
    ];
    for (input, codes) in &cases {
        send_raw(&mut client.stdin, input);
        let shown = String::from_utf8_lossy(input).into_owned();
        // The next request is read from the right place and answered.
        let (symbols, errors) = client.symbols_after_errors(&uri);
        assert_eq!(&errors, codes, "{shown}");
        assert_eq!(symbols[0]["name"], "Files", "after {shown}");
    }

    // An editor may send half a surrogate pair: the text keeps a U+FFFD and the document
    // keeps working.
    let edited = r##"{"jsonrpc":"2.0","method":"textDocument/didChange","params":{"textDocument":{"uri":"URI","version":2},"contentChanges":[{"text":"# \ud83d\n[[target]]\nname = \"Renamed\"\nkind = \"filegroup\"\nsrcs = [\"once.toml\"]\n"}]}}"##
        .replace("URI", &uri);
    send_raw(&mut client.stdin, &frame(&edited));
    assert_eq!(client.symbols(&uri)[0]["name"], "Renamed");
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "method": "textDocument/didChange", "params": {
            "textDocument": {"uri": uri, "version": 3},
            "contentChanges": [{"range": {"start": {"line": 0, "character": 2}, "end": {"line": 0, "character": 3}}, "text": "ok"}]}}),
    );
    assert_eq!(client.symbols(&uri)[0]["name"], "Renamed");

    // After `shutdown`, requests get an error until `exit`, which ends the server with 0.
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "id": 3, "method": "shutdown"}),
    );
    let reply = client.reply();
    assert_eq!(reply["id"], 3);
    assert_eq!(reply["result"], Value::Null);
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "id": 4, "method": "textDocument/documentSymbol", "params": {}}),
    );
    assert_eq!(client.reply()["error"]["code"], -32600);
    send(
        &mut client.stdin,
        &json!({"jsonrpc": "2.0", "method": "exit"}),
    );
    let mut status = None;
    for _ in 0..500 {
        status = child.try_wait().unwrap();
        if status.is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let Some(status) = status else {
        let _ = child.kill();
        panic!("the server did not exit after `exit`");
    };
    let log = log.join().unwrap();
    assert_eq!(status.code(), Some(0), "{log}");
    for expected in [
        "textDocument/didChange: ",
        "skipped a message: no Content-Length header",
        "skipped a message: invalid Content-Length `-5`",
        "exceeds the 64 MiB limit",
    ] {
        assert!(log.contains(expected), "the log says {expected:?}: {log}");
    }
}
