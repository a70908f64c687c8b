//! The `lsp_framing` target: the input as the bytes a client sends to `once lsp`.
//!
//! Properties:
//! - `FrameReader` (the transport's `Content-Length` framing) reads the whole input in a
//!   bounded number of frames, never handing out more bytes than it read, no body over
//!   `MAX_MESSAGE_BYTES`;
//! - `decode` classifies every body without panicking; what it answers is a well-formed
//!   JSON-RPC error (an id that is a string, a number or null, an integer code, a string
//!   message), what it skips says why;
//! - `replace_lone_surrogates` leaves no lone surrogate behind (a second pass finds none);
//! - the transport's reader thread with the real language server behind it
//!   (`run_with_system` on an in-memory workspace): every frame written back is
//!   well-framed (`Content-Length` equal to the body's length) around a JSON-RPC message,
//!   and no request is answered with an internal error (how the server reports a panic
//!   it caught in a handler).

use std::cell::Cell;
use std::io::{BufRead, Read};
use std::path::PathBuf;
use std::rc::Rc;
use std::sync::Arc;

use crate::output::SharedOutput;

use once_analysis::MemorySystem;
use once_lsp::transport::{self, Frame, FrameReader, Incoming, MAX_MESSAGE_BYTES};
use serde_json::Value;

/// JSON-RPC's internal error: a panic the server caught.
const INTERNAL_ERROR: i64 = -32603;

/// The workspace the server opens.
const WORKSPACE: &[(&str, &str)] = &[
    ("/ws/once.toml", "[workspace]\n"),
    (
        "/ws/app/once.toml",
        "[[target]]\nname = \"App\"\nkind = \"sh_binary\"\nsrcs = [\"run.sh\"]\ndeps = [\"lib/Lib\"]\n",
    ),
    ("/ws/app/run.sh", "#!/bin/sh\necho run\n"),
    (
        "/ws/lib/once.toml",
        "[[target]]\nname = \"Lib\"\nkind = \"sh_library\"\nsrcs = [\"lib.sh\"]\nvisibility = [\"//...\"]\n",
    ),
    ("/ws/lib/lib.sh", "echo lib\n"),
];

pub fn lsp_framing(data: &[u8]) {
    let frames = check_frames(data);
    if let Some(repaired) = transport::replace_lone_surrogates(&String::from_utf8_lossy(data)) {
        assert_eq!(
            transport::replace_lone_surrogates(&repaired),
            None,
            "a lone surrogate is left after replacing them"
        );
    }
    check_server(data, frames);
}

/// Counts what a [`BufRead`] handed out.
struct Counted<'a> {
    input: &'a [u8],
    consumed: Rc<Cell<usize>>,
}

impl Read for Counted<'_> {
    fn read(&mut self, buffer: &mut [u8]) -> std::io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(buffer.len());
        buffer[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for Counted<'_> {
    fn fill_buf(&mut self) -> std::io::Result<&[u8]> {
        // Small chunks, so a frame straddles reads as it does on a pipe.
        let at = self.consumed.get();
        let end = self.input.len().min(at + 7);
        Ok(&self.input[at..end])
    }

    fn consume(&mut self, amount: usize) {
        let at = self.consumed.get() + amount;
        assert!(at <= self.input.len(), "consumed past the end of the input");
        self.consumed.set(at);
    }
}

/// Reads every frame; how many there were.
fn check_frames(data: &[u8]) -> usize {
    let consumed = Rc::new(Cell::new(0));
    let mut reader = FrameReader::new(Counted {
        input: data,
        consumed: consumed.clone(),
    });
    let mut handed_out = 0usize;
    let mut frames = 0usize;
    // Every frame consumes input except one resumed after a resynchronisation, which
    // is then followed by one that does.
    let most = 2 * data.len() + 2;
    while let Some(frame) = reader
        .next_frame()
        .expect("reading from memory cannot fail")
    {
        frames += 1;
        assert!(
            frames <= most,
            "{frames} frames from {} bytes: the reader does not end",
            data.len()
        );
        match frame {
            Frame::Body(body) => {
                assert!(body.len() <= MAX_MESSAGE_BYTES, "a body over the limit");
                handed_out += body.len();
                check_incoming(transport::decode(&body));
            }
            Frame::Unframed { problem, skipped } => {
                assert!(!problem.is_empty(), "an unframed message without a problem");
                let skipped = skipped.map_or(0, |s| s.len());
                assert!(skipped <= MAX_MESSAGE_BYTES, "kept more than the limit");
                handed_out += skipped;
            }
        }
        assert!(
            handed_out <= consumed.get(),
            "handed out {handed_out} bytes after reading {}",
            consumed.get()
        );
    }
    assert_eq!(
        consumed.get(),
        data.len(),
        "the reader stopped before the end"
    );
    frames
}

fn check_incoming(incoming: Incoming) {
    match incoming {
        Incoming::Message(_) => {}
        Incoming::Reply(reply) => {
            let text = reply.to_string();
            check_error(&reply, &text);
        }
        Incoming::Skip(why) => assert!(!why.is_empty(), "a body skipped without a reason"),
    }
}

/// Checks a JSON-RPC error object.
fn check_error(reply: &Value, text: &str) {
    assert_eq!(
        reply.get("jsonrpc").and_then(Value::as_str),
        Some("2.0"),
        "{text}"
    );
    assert!(
        matches!(
            reply.get("id"),
            Some(Value::String(_) | Value::Number(_) | Value::Null)
        ),
        "an error reply's id must be a string, a number or null: {text}"
    );
    let error = reply.get("error").expect("an error reply without `error`");
    assert!(error.get("code").is_some_and(Value::is_i64), "{text}");
    assert!(error.get("message").is_some_and(Value::is_string), "{text}");
}

/// The transport and the language server over the input; checks what they wrote.
fn check_server(data: &[u8], frames: usize) {
    let system = MemorySystem::default();
    for (path, contents) in WORKSPACE {
        system.write(*path, *contents);
    }
    let output = SharedOutput::default();
    let (connection, threads) =
        transport::spawn(std::io::Cursor::new(data.to_vec()), output.clone())
            .expect("cannot start the transport's threads");
    // Ends when the input ends (the reader hangs up) or the client sends `exit`.
    let _ = once_lsp::run_with_system(&connection, Some(PathBuf::from("/ws")), Arc::new(system));
    drop(connection);
    // The reader too: it may still be answering a framing error itself, and a thread left
    // running past the input is reported as a leak.
    threads.join_with_reader();
    let written = output.0.lock().map(|o| o.clone()).unwrap_or_default();
    let mut rest = &written[..];
    let mut replies = 0usize;
    while !rest.is_empty() {
        let header_end = rest
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .unwrap_or_else(|| panic!("a frame without the end of its headers: {rest:?}"));
        let header = std::str::from_utf8(&rest[..header_end]).expect("a header is not UTF-8");
        let length: usize = header
            .lines()
            .find_map(|line| line.strip_prefix("Content-Length: "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or_else(|| panic!("a frame without a Content-Length: {header:?}"));
        let body = rest
            .get(header_end + 4..header_end + 4 + length)
            .unwrap_or_else(|| panic!("a frame shorter than its Content-Length {length}"));
        rest = &rest[header_end + 4 + length..];
        let text = String::from_utf8_lossy(body);
        let message: Value = serde_json::from_slice(body)
            .unwrap_or_else(|e| panic!("a frame body that is not JSON ({e}): {text}"));
        assert_eq!(
            message.get("jsonrpc").and_then(Value::as_str),
            Some("2.0"),
            "{text}"
        );
        if message.get("method").is_some() {
            continue; // The server's own requests and notifications.
        }
        replies += 1;
        if let Some(error) = message.get("error") {
            check_error(&message, &text);
            assert_ne!(
                error.get("code").and_then(Value::as_i64),
                Some(INTERNAL_ERROR),
                "the server caught a panic: {text}"
            );
        }
    }
    assert!(
        replies <= frames,
        "{replies} replies to {frames} frames of input"
    );
}
