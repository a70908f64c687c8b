//! The stdio transport: `Content-Length` framing that survives whatever a client sends.
//!
//! `lsp-server`'s own stdio transport ends the connection on the first malformed message.
//! This one feeds the same [`Connection`] channels from a reader thread that never gives
//! up before the input ends or the client sends `exit`:
//! - a body that is not JSON is answered with a parse error (`-32700`, id `null`);
//! - JSON that is not a message is answered with an invalid-request error (`-32600`, with
//!   the request's id when it has one); a malformed notification or response is logged;
//! - a message that cannot be framed (no `Content-Length`, a negative or non-numeric one,
//!   one over [`MAX_MESSAGE_BYTES`], a garbled header line) is skipped up to the next
//!   `Content-Length:` header, logged, and answered with `-32600` when its request id can
//!   be recovered (`null` when nothing in it could be read);
//! - lone UTF-16 surrogate escapes (`"\ud83d"`, which editors send when a buffer holds
//!   half a pair) become U+FFFD, and bytes that are not UTF-8 are read lossily.
//!
//! Errors the reader answers itself go straight to the output, under the same lock as
//! the writer thread's messages, so frames never interleave.

use std::io::{self, BufRead, Read, Write};
use std::sync::{Arc, Mutex, MutexGuard};
use std::thread::JoinHandle;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use serde_json::{Value, json};

/// Messages longer than this are skipped without being buffered.
pub const MAX_MESSAGE_BYTES: usize = 64 * 1024 * 1024;

/// Header lines longer than this are a framing error.
const MAX_HEADER_LINE_BYTES: usize = 8 * 1024;

/// The header that starts every frame, matched case-insensitively when resynchronising.
const CONTENT_LENGTH: &[u8] = b"content-length:";

/// The transport's threads; [`IoThreads::join`] waits until every reply was written.
pub struct IoThreads {
    writer: JoinHandle<()>,
    reader: JoinHandle<()>,
}

impl IoThreads {
    /// Waits for the writer to drain (it ends once the [`Connection`] is dropped). The
    /// reader is not joined: after anything but `exit` it may be blocked on input.
    pub fn join(self) {
        let _ = self.writer.join();
    }

    /// Waits for both threads, for an input that ends by itself (an in-memory one): the
    /// reader stops at the end of the input, at `exit`, or at its first message after the
    /// [`Connection`] was dropped, and only then has every error reply it answers itself
    /// been written. On stdin this can wait for as long as the client keeps it open.
    pub fn join_with_reader(self) {
        let _ = self.reader.join();
        let _ = self.writer.join();
    }
}

/// A connection over stdin/stdout.
pub fn stdio() -> io::Result<(Connection, IoThreads)> {
    spawn(io::BufReader::new(io::stdin()), io::stdout())
}

/// A connection reading frames from `input` and writing them to `output`.
pub fn spawn(
    input: impl BufRead + Send + 'static,
    output: impl Write + Send + 'static,
) -> io::Result<(Connection, IoThreads)> {
    let output: SharedOutput = Arc::new(Mutex::new(Box::new(output)));
    let (incoming_sender, incoming) = crossbeam_channel::bounded::<Message>(0);
    let (outgoing, outgoing_receiver) = crossbeam_channel::unbounded::<Message>();
    let writer = {
        let output = output.clone();
        std::thread::Builder::new()
            .name("once-lsp-writer".into())
            .spawn(move || {
                for message in outgoing_receiver {
                    if message.write(&mut *lock(&output)).is_err() {
                        return;
                    }
                }
            })?
    };
    let reader = std::thread::Builder::new()
        .name("once-lsp-reader".into())
        .spawn(move || read_loop(FrameReader::new(input), &incoming_sender, &output))?;
    let connection = Connection {
        sender: outgoing,
        receiver: incoming,
    };
    Ok((connection, IoThreads { writer, reader }))
}

type SharedOutput = Arc<Mutex<Box<dyn Write + Send>>>;

fn lock(output: &SharedOutput) -> MutexGuard<'_, Box<dyn Write + Send>> {
    output
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Reads frames until the input ends, `exit` arrives or the server is gone.
fn read_loop(
    mut frames: FrameReader<impl BufRead>,
    server: &crossbeam_channel::Sender<Message>,
    output: &SharedOutput,
) {
    let reply = |error: Value| {
        let body = error.to_string();
        let mut output = lock(output);
        let written = write!(output, "Content-Length: {}\r\n\r\n{body}", body.len());
        let _ = written.and_then(|()| output.flush());
    };
    loop {
        let frame = match frames.next_frame() {
            Ok(Some(frame)) => frame,
            Ok(None) => return,
            Err(error) => {
                log(&format!("cannot read the input: {error}"));
                return;
            }
        };
        match frame {
            Frame::Body(body) => match decode(&body) {
                Incoming::Message(message) => {
                    let is_exit =
                        matches!(&message, Message::Notification(n) if n.method == "exit");
                    if server.send(message).is_err() || is_exit {
                        return;
                    }
                }
                Incoming::Reply(error) => reply(error),
                Incoming::Skip(why) => log(&why),
            },
            Frame::Unframed { problem, skipped } => {
                log(&format!("skipped a message: {problem}"));
                if let Some(error) = unframed_reply(&problem, skipped.as_deref()) {
                    reply(error);
                }
            }
        }
    }
}

/// The answer to a message that could not be framed: an invalid-request error with its id
/// when the skipped bytes are a request, none when they are another message, and one with
/// a `null` id when nothing could be read.
fn unframed_reply(problem: &str, skipped: Option<&[u8]>) -> Option<Value> {
    let message = format!("invalid request: {problem}");
    let value = skipped.and_then(|bytes| parse_json(bytes).ok());
    match value {
        Some(Value::Object(object)) => object
            .get("id")
            .filter(|_| object.contains_key("method"))
            .map(|id| error_reply(reply_id(id), ErrorCode::InvalidRequest, &message)),
        _ => Some(error_reply(
            Value::Null,
            ErrorCode::InvalidRequest,
            &message,
        )),
    }
}

/// What one well-framed body is.
#[derive(Debug)]
pub enum Incoming {
    Message(Message),
    /// Not a message the server can take: answer with this error.
    Reply(Value),
    /// A malformed notification or response: log why and go on.
    Skip(String),
}

/// Decodes one body into a message, an error reply or a reason to skip it.
pub fn decode(body: &[u8]) -> Incoming {
    let value = match parse_json(body) {
        Ok(value) => value,
        Err(error) => {
            return Incoming::Reply(error_reply(
                Value::Null,
                ErrorCode::ParseError,
                &format!("parse error: {error}"),
            ));
        }
    };
    let Value::Object(object) = &value else {
        return Incoming::Reply(error_reply(
            Value::Null,
            ErrorCode::InvalidRequest,
            "invalid request: a message must be a JSON object",
        ));
    };
    let id = object.get("id").filter(|id| !id.is_null()).cloned();
    let is_response = object.contains_key("result") || object.contains_key("error");
    let method = object
        .get("method")
        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned));
    match (id, method) {
        (Some(id), Some(_)) => match serde_json::from_value::<Request>(value) {
            Ok(request) => Incoming::Message(Message::Request(request)),
            Err(error) => Incoming::Reply(error_reply(
                reply_id(&id),
                ErrorCode::InvalidRequest,
                &format!("invalid request: {error}"),
            )),
        },
        (None, Some(method)) => match serde_json::from_value::<Notification>(value) {
            Ok(notification) => Incoming::Message(Message::Notification(notification)),
            Err(error) => Incoming::Skip(format!(
                "skipped a malformed notification {method}: {error}"
            )),
        },
        (Some(_), None) | (None, None) if is_response => {
            match serde_json::from_value::<Response>(value) {
                Ok(response) => Incoming::Message(Message::Response(response)),
                Err(error) => Incoming::Skip(format!("skipped a malformed response: {error}")),
            }
        }
        (id, None) => Incoming::Reply(error_reply(
            id.as_ref().map_or(Value::Null, reply_id),
            ErrorCode::InvalidRequest,
            "invalid request: a message needs a `method` (or a `result` or `error` for a response)",
        )),
    }
}

/// A request id as an error reply may echo it: a string or a number, else `null`.
fn reply_id(id: &Value) -> Value {
    match id {
        Value::String(_) | Value::Number(_) => id.clone(),
        _ => Value::Null,
    }
}

fn error_reply(id: Value, code: ErrorCode, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code as i32, "message": message } })
}

/// Parses JSON leniently about text: invalid UTF-8 is read lossily and lone surrogate
/// escapes become U+FFFD; syntax errors stay errors.
fn parse_json(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&text).or_else(|error| match replace_lone_surrogates(&text) {
        Some(repaired) => serde_json::from_str(&repaired),
        None => Err(error),
    })
}

/// `text` with every `\uXXXX` escape of a lone surrogate (a high one not followed by a
/// low one, or a low one alone) replaced by `\uFFFD`; `None` when there is none.
/// Escaped backslashes (`\\ud83d` is text, not an escape) are skipped over.
pub fn replace_lone_surrogates(text: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let surrogate_at = |i: usize| -> Option<u16> {
        let digits = bytes.get(i + 2..i + 6)?;
        if bytes.get(i) != Some(&b'\\') || bytes.get(i + 1) != Some(&b'u') {
            return None;
        }
        let code = u16::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
        (0xD800..=0xDFFF).contains(&code).then_some(code)
    };
    let mut lone = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] != b'\\' {
            i += 1;
            continue;
        }
        match surrogate_at(i) {
            Some(0xD800..=0xDBFF) => {
                if surrogate_at(i + 6).is_some_and(|low| (0xDC00..=0xDFFF).contains(&low)) {
                    i += 12;
                } else {
                    lone.push(i);
                    i += 6;
                }
            }
            Some(_low) => {
                lone.push(i);
                i += 6;
            }
            // Any other escape, `\\` included, is two bytes we need not look into.
            None => i += 2,
        }
    }
    if lone.is_empty() {
        return None;
    }
    let mut repaired = String::with_capacity(text.len());
    let mut copied = 0;
    for at in lone {
        repaired.push_str(&text[copied..at]);
        repaired.push_str("\\uFFFD");
        copied = at + 6;
    }
    repaired.push_str(&text[copied..]);
    Some(repaired)
}

/// One unit read off the input.
#[derive(Debug, PartialEq)]
pub enum Frame {
    /// A well-framed body.
    Body(Vec<u8>),
    /// Bytes that could not be framed, skipped up to the next `Content-Length:` header or
    /// the end of the input. `skipped` holds them unless they exceeded the size limit.
    Unframed {
        problem: String,
        skipped: Option<Vec<u8>>,
    },
}

/// Reads `Content-Length` frames, resynchronising on the next header after a bad one.
pub struct FrameReader<R> {
    input: R,
    /// After a resync: the rest of the `Content-Length:` line found mid-stream.
    resumed: Option<Vec<u8>>,
}

enum Line {
    End,
    Text(Vec<u8>),
    TooLong,
}

impl<R: BufRead> FrameReader<R> {
    pub fn new(input: R) -> FrameReader<R> {
        FrameReader {
            input,
            resumed: None,
        }
    }

    /// The next frame; `None` at the end of the input.
    pub fn next_frame(&mut self) -> io::Result<Option<Frame>> {
        let mut length = None;
        let mut problem = None;
        let mut headers = 0;
        loop {
            let line = match self.resumed.take() {
                Some(rest) => [CONTENT_LENGTH, &rest].concat(),
                None => match self.read_line()? {
                    Line::End if headers == 0 => return Ok(None),
                    Line::End => {
                        return Ok(Some(Frame::Unframed {
                            problem: "the input ended inside the headers".into(),
                            skipped: None,
                        }));
                    }
                    Line::TooLong => {
                        let problem = format!(
                            "a header line is longer than {} KiB",
                            MAX_HEADER_LINE_BYTES / 1024
                        );
                        return self.resync(problem, Vec::new()).map(Some);
                    }
                    Line::Text(line) => line,
                },
            };
            let line = trim_line_end(&line);
            if line.is_empty() {
                if headers == 0 {
                    continue; // A stray blank line between messages.
                }
                break;
            }
            headers += 1;
            if let Some(value) = strip_prefix_ignore_case(line, CONTENT_LENGTH) {
                let value = String::from_utf8_lossy(value);
                match value.trim().parse::<u64>() {
                    Ok(n) => length = Some(n),
                    Err(_) => problem = Some(format!("invalid Content-Length `{}`", value.trim())),
                }
            } else if !is_header(line) {
                // Not a header: perhaps the tail of a body that was longer than its
                // Content-Length said, which may run into the next header.
                let problem = "a malformed header line".to_owned();
                return match find_ignore_case(line, CONTENT_LENGTH) {
                    Some(at) => {
                        let mut rest = line[at + CONTENT_LENGTH.len()..].to_vec();
                        rest.push(b'\n');
                        self.resumed = Some(rest);
                        Ok(Some(Frame::Unframed {
                            problem,
                            skipped: Some(line[..at].to_vec()),
                        }))
                    }
                    None => self.resync(problem, line.to_vec()).map(Some),
                };
            }
        }
        let length = match (problem, length) {
            (Some(problem), _) => return self.resync(problem, Vec::new()).map(Some),
            (None, None) => {
                return self
                    .resync("no Content-Length header".into(), Vec::new())
                    .map(Some);
            }
            (None, Some(n)) if n > MAX_MESSAGE_BYTES as u64 => {
                let problem = format!(
                    "Content-Length {n} exceeds the {} MiB limit",
                    MAX_MESSAGE_BYTES / (1024 * 1024)
                );
                return self.resync(problem, Vec::new()).map(Some);
            }
            (None, Some(n)) => n,
        };
        let mut body = Vec::new();
        (&mut self.input).take(length).read_to_end(&mut body)?;
        if (body.len() as u64) < length {
            return Ok(Some(Frame::Unframed {
                problem: format!(
                    "the input ended {} bytes into a {length}-byte message",
                    body.len()
                ),
                skipped: Some(body),
            }));
        }
        Ok(Some(Frame::Body(body)))
    }

    /// Reads one line (through `\n`), refusing to buffer more than a header line's limit.
    fn read_line(&mut self) -> io::Result<Line> {
        let mut line = Vec::new();
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                return Ok(if line.is_empty() {
                    Line::End
                } else {
                    Line::Text(line)
                });
            }
            let (chunk, done) = match available.iter().position(|&b| b == b'\n') {
                Some(at) => (&available[..=at], true),
                None => (available, false),
            };
            let too_long = line.len() + chunk.len() > MAX_HEADER_LINE_BYTES;
            if !too_long {
                line.extend_from_slice(chunk);
            }
            let consumed = chunk.len();
            self.input.consume(consumed);
            if too_long {
                return Ok(Line::TooLong);
            }
            if done {
                return Ok(Line::Text(line));
            }
        }
    }

    /// Skips input up to the end of the JSON object that starts it, the next
    /// `Content-Length:` (kept for the next frame) or the end of the input, whichever comes
    /// first, returning what was skipped (`None` past the size limit). Ending at the
    /// object answers a request sent without a usable length at once, rather than when
    /// the client sends its next message.
    fn resync(&mut self, problem: String, mut skipped: Vec<u8>) -> io::Result<Frame> {
        let mut kept = true;
        let mut matched = 0;
        let mut object = ObjectEnd::default();
        for &byte in &skipped {
            object.feed(byte);
        }
        loop {
            let available = match self.input.fill_buf() {
                Ok(available) => available,
                Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
                Err(error) => return Err(error),
            };
            if available.is_empty() {
                break;
            }
            let mut found = None;
            let mut object_end = None;
            for (i, &byte) in available.iter().enumerate() {
                let lower = byte.to_ascii_lowercase();
                if lower == CONTENT_LENGTH[matched] {
                    matched += 1;
                } else {
                    // `c` occurs only at the start of the needle, so this restart is exact.
                    matched = usize::from(lower == CONTENT_LENGTH[0]);
                }
                if matched == CONTENT_LENGTH.len() {
                    found = Some(i + 1);
                    break;
                }
                if object.feed(byte) {
                    object_end = Some(i + 1);
                    break;
                }
            }
            let end = found.or(object_end).unwrap_or(available.len());
            if kept && skipped.len() + end <= MAX_MESSAGE_BYTES {
                skipped.extend_from_slice(&available[..end]);
            } else {
                kept = false;
                skipped = Vec::new();
            }
            self.input.consume(end);
            if object_end.is_some() {
                break;
            }
            if found.is_some() {
                skipped.truncate(skipped.len().saturating_sub(CONTENT_LENGTH.len()));
                self.resumed = Some(match self.read_line()? {
                    Line::Text(rest) => rest,
                    Line::End | Line::TooLong => Vec::new(),
                });
                break;
            }
        }
        Ok(Frame::Unframed {
            problem,
            skipped: kept.then_some(skipped),
        })
    }
}

/// Finds where a JSON object that starts a byte stream (after whitespace) ends, by
/// counting brackets outside strings; gives up on anything that does not start with `{`.
#[derive(Default)]
struct ObjectEnd {
    started: bool,
    gave_up: bool,
    depth: usize,
    in_string: bool,
    escaped: bool,
}

impl ObjectEnd {
    /// Takes the next byte; true when it closes the object.
    fn feed(&mut self, byte: u8) -> bool {
        if self.gave_up {
            return false;
        }
        if !self.started {
            match byte {
                b'{' => {
                    self.started = true;
                    self.depth = 1;
                }
                b' ' | b'\t' | b'\r' | b'\n' => {}
                _ => self.gave_up = true,
            }
            return false;
        }
        if self.in_string {
            match byte {
                _ if self.escaped => self.escaped = false,
                b'\\' => self.escaped = true,
                b'"' => self.in_string = false,
                _ => {}
            }
            return false;
        }
        match byte {
            b'"' => self.in_string = true,
            b'{' | b'[' => self.depth += 1,
            b'}' | b']' => {
                self.depth = self.depth.saturating_sub(1);
                if self.depth == 0 {
                    self.gave_up = true;
                    return true;
                }
            }
            _ => {}
        }
        false
    }
}

fn trim_line_end(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// `Name: value` with a header name of token characters.
fn is_header(line: &[u8]) -> bool {
    let Some(colon) = line.iter().position(|&b| b == b':') else {
        return false;
    };
    colon > 0
        && line[..colon]
            .iter()
            .all(|&b| b.is_ascii_alphanumeric() || b"-_.!#$%&'*+^`|~".contains(&b))
}

fn strip_prefix_ignore_case<'a>(line: &'a [u8], prefix: &[u8]) -> Option<&'a [u8]> {
    let head = line.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &line[prefix.len()..])
}

fn find_ignore_case(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack
        .windows(needle.len())
        .position(|window| window.eq_ignore_ascii_case(needle))
}

#[allow(clippy::print_stderr, reason = "stderr is the language server's log")]
fn log(message: &str) {
    // A hostile body must not flood the log: one line, bounded.
    let mut line: String = message.chars().take(300).collect();
    if line.len() < message.len() {
        line.push('…');
    }
    eprintln!("once lsp: {}", line.replace(['\n', '\r'], " "));
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn frame(body: &str) -> String {
        format!("Content-Length: {}\r\n\r\n{body}", body.len())
    }

    /// Every unit read off `input`, as the reader thread would handle it.
    fn check(input: &str, expected: Expect) {
        let mut frames = FrameReader::new(io::Cursor::new(input.as_bytes().to_vec()));
        let mut out = String::new();
        while let Some(frame) = frames.next_frame().unwrap() {
            let line = match frame {
                Frame::Body(body) => match decode(&body) {
                    Incoming::Message(Message::Request(r)) => {
                        format!("request {} {} {}", r.id, r.method, r.params)
                    }
                    Incoming::Message(Message::Notification(n)) => {
                        format!("notification {} {}", n.method, n.params)
                    }
                    Incoming::Message(Message::Response(r)) => format!("response {}", r.id),
                    Incoming::Reply(error) => format!("reply {error}"),
                    Incoming::Skip(why) => format!("skip: {why}"),
                },
                Frame::Unframed { problem, skipped } => {
                    let reply = unframed_reply(&problem, skipped.as_deref())
                        .map_or("no reply".to_owned(), |r| format!("reply {r}"));
                    format!("unframed ({problem}): {reply}")
                }
            };
            out.push_str(&line);
            out.push('\n');
        }
        expected.assert_eq(&out);
    }

    const PING: &str = r#"{"jsonrpc":"2.0","id":9,"method":"ping"}"#;

    #[test]
    fn well_framed_messages() {
        check(
            &[
                frame(PING),
                "content-length: 42\r\nContent-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}\n"
                    .into(),
                // Bare `\n` line ends and a stray blank line are tolerated.
                "\r\n".into(),
                format!("Content-Length: {}\n\n{}", PING.len(), PING),
                frame(r#"{"jsonrpc":"2.0","id":"a","result":null}"#),
            ]
            .concat(),
            expect![[r#"
                request 9 ping null
                notification initialized null
                request 9 ping null
                response "a"
            "#]],
        );
    }

    #[test]
    fn malformed_bodies_are_answered_or_skipped() {
        check(
            &[
                frame("{"),
                frame("null"),
                frame("[1, 2]"),
                frame(r#"{"jsonrpc":"2.0","id":3.5,"method":"textDocument/hover"}"#),
                frame(r#"{"jsonrpc":"2.0","id":4,"method":7}"#),
                frame(r#"{"jsonrpc":"2.0","id":5}"#),
                frame(r#"{"jsonrpc":"2.0","method":["x"]}"#),
                frame(r#"{"jsonrpc":"2.0","id":{"a":1},"method":"x"}"#),
                frame(r#"{"jsonrpc":"2.0","result":1}"#),
                frame(PING),
            ]
            .concat(),
            expect![[r#"
                reply {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: EOF while parsing an object at line 1 column 1"}}
                reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a message must be a JSON object"}}
                reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a message must be a JSON object"}}
                reply {"jsonrpc":"2.0","id":3.5,"error":{"code":-32600,"message":"invalid request: data did not match any variant of untagged enum IdRepr"}}
                reply {"jsonrpc":"2.0","id":4,"error":{"code":-32600,"message":"invalid request: invalid type: number, expected a string"}}
                reply {"jsonrpc":"2.0","id":5,"error":{"code":-32600,"message":"invalid request: a message needs a `method` (or a `result` or `error` for a response)"}}
                skip: skipped a malformed notification ["x"]: invalid type: sequence, expected a string
                reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: data did not match any variant of untagged enum IdRepr"}}
                skip: skipped a malformed response: missing field `id`
                request 9 ping null
            "#]],
        );
    }

    #[test]
    fn framing_errors_resynchronise_on_the_next_header() {
        check(
            &[
                // No Content-Length: the request's id is still found and answered.
                "Content-Type: x\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}".into(),
                frame(PING),
                "Content-Length: -5\r\n\r\n{\"jsonrpc\":\"2.0\",\"method\":\"initialized\"}".into(),
                frame(PING),
                "Content-Length: 18446744073709551615\r\n\r\n{}".into(),
                frame(PING),
                "Content-Length: 18446744073709551616\r\n\r\n{}".into(),
                frame(PING),
                "Content-Length: 100000000000\r\n\r\n{\"id\":2,\"method\":\"x\"}".into(),
                frame(PING),
                // A length shorter than the body: its tail runs into the next header.
                "Content-Length: 5\r\n\r\n{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}"
                    .into(),
                frame(PING),
                "garbage\r\n".into(),
                frame(PING),
                format!("X-Long: {}\r\n\r\n", "a".repeat(10_000)),
                frame(PING),
            ]
            .concat(),
            expect![[r#"
                unframed (no Content-Length header): reply {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: no Content-Length header"}}
                request 9 ping null
                unframed (invalid Content-Length `-5`): no reply
                request 9 ping null
                unframed (Content-Length 18446744073709551615 exceeds the 64 MiB limit): no reply
                request 9 ping null
                unframed (invalid Content-Length `18446744073709551616`): no reply
                request 9 ping null
                unframed (Content-Length 100000000000 exceeds the 64 MiB limit): reply {"jsonrpc":"2.0","id":2,"error":{"code":-32600,"message":"invalid request: Content-Length 100000000000 exceeds the 64 MiB limit"}}
                request 9 ping null
                reply {"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error: EOF while parsing a string at line 1 column 5"}}
                unframed (a malformed header line): reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a malformed header line"}}
                request 9 ping null
                unframed (a malformed header line): reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a malformed header line"}}
                request 9 ping null
                unframed (a header line is longer than 8 KiB): reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a header line is longer than 8 KiB"}}
                request 9 ping null
            "#]],
        );
    }

    #[test]
    fn a_skipped_object_ends_at_its_closing_brace() {
        // Brackets and quotes inside strings do not count; what follows is a new frame.
        check(
            r#"Content-Length: -5

{"jsonrpc":"2.0","id":1,"method":"a","params":{"t":"}{\"[","u":[{}]}}garbage"#,
            expect![[r#"
                unframed (invalid Content-Length `-5`): reply {"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"invalid request: invalid Content-Length `-5`"}}
                unframed (a malformed header line): reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: a malformed header line"}}
            "#]],
        );
    }

    #[test]
    fn the_input_may_end_anywhere() {
        check(
            "Content-Length: 10\r\n",
            expect![[r#"
                unframed (the input ended inside the headers): reply {"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"invalid request: the input ended inside the headers"}}
            "#]],
        );
        check(
            "Content-Length: 10\r\n\r\n{}",
            expect![[r#"
                unframed (the input ended 2 bytes into a 10-byte message): no reply
            "#]],
        );
        check("", expect![""]);
    }

    #[test]
    fn lone_surrogates_become_replacement_characters() {
        let check = |text: &str, expected: Expect| {
            expected.assert_eq(&format!("{:?}", replace_lone_surrogates(text)));
        };
        check(r#""\ud83d""#, expect![[r#"Some("\"\\uFFFD\"")"#]]);
        check(r#""a\ud83d\ude00b""#, expect!["None"]);
        check(
            r#""\ude00\ud83d""#,
            expect![[r#"Some("\"\\uFFFD\\uFFFD\"")"#]],
        );
        check(
            r#""\ud83d\ud83d\ude00""#,
            expect![[r#"Some("\"\\uFFFD\\ud83d\\ude00\"")"#]],
        );
        check(r#""\\ud83d""#, expect!["None"]);
        check(r#""\\\ud83dx""#, expect![[r#"Some("\"\\\\\\uFFFDx\"")"#]]);
        check(r#""\ud83d"#, expect![[r#"Some("\"\\uFFFD")"#]]);
        check(r#""\ud8"#, expect!["None"]);
        let body = r#"{"jsonrpc":"2.0","method":"m","params":{"text":"a\ud83db"}}"#;
        let Incoming::Message(Message::Notification(n)) = decode(body.as_bytes()) else {
            panic!("a lone surrogate is accepted");
        };
        assert_eq!(n.params["text"], "a\u{FFFD}b");
        // Bytes that are not UTF-8 are read lossily.
        let Incoming::Message(Message::Notification(n)) =
            decode(b"{\"method\":\"m\",\"params\":\"a\xffb\"}")
        else {
            panic!("invalid UTF-8 is accepted");
        };
        assert_eq!(n.params, "a\u{FFFD}b");
    }

    /// A writer the test reads back after the threads ended.
    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .extend_from_slice(bytes);
            Ok(bytes.len())
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The reader answers bodies that are not JSON itself, after the connection is gone
    /// too: joining it (an in-memory input ends) waits for every such reply, so nothing
    /// is read back half-written and no thread outlives the input (libFuzzer's leak
    /// check reported the reader's thread-locals when it did).
    #[test]
    fn joining_the_reader_waits_for_the_replies_it_writes_itself() {
        let input: String = (0..300).map(|_| frame("not json")).collect();
        let output = Shared::default();
        let (connection, threads) =
            spawn(io::Cursor::new(input.into_bytes()), output.clone()).unwrap();
        drop(connection);
        threads.join_with_reader();
        let written = String::from_utf8(output.0.lock().unwrap().clone()).unwrap();
        assert_eq!(written.matches("Content-Length:").count(), 300);
        assert_eq!(written.matches("-32700").count(), 300, "{written}");
    }
}
