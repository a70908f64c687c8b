//! The session log: the program's standard output and error as line records, in one
//! file (`log.ndjson`), interleaved in the order the supervisor received them.
//!
//! Each record is one JSON line `{cursor, source, level, message, time_unix_ms}`. The
//! cursor is the record's position in the log (a 12-digit decimal, counting from 0 across
//! both streams), so "the records after cursor C" is exact whatever source a reader
//! filters on: a reader of `stdout` that resumes from its last cursor never skips a
//! `stderr` record another reader has not read, and vice versa.
//!
//! Lines are split at `\n` (a trailing `\r` is dropped). A line longer than
//! [`MAX_LINE_BYTES`] is cut into several records at that bound (at a UTF-8 character
//! boundary when there is one in the last 3 bytes). Bytes that are not UTF-8 are replaced
//! with U+FFFD, never dropped. A last line without `\n` is recorded when its stream ends.
//! The supervisor appends each record with one `write` (the file is opened for
//! appending); readers ignore a last line that does not end in `\n` yet.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::LOG_FILE;

/// The longest line a record holds, in bytes; longer lines are cut into several records.
pub const MAX_LINE_BYTES: usize = 16 * 1024;

/// The number of records a read answers when the caller gives no limit.
pub const DEFAULT_LIMIT: usize = 200;

/// The most records one read answers.
pub const MAX_LIMIT: usize = 10_000;

/// Which stream a record came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum LogSource {
    Stdout,
    Stderr,
}

impl LogSource {
    pub fn as_str(self) -> &'static str {
        match self {
            LogSource::Stdout => "stdout",
            LogSource::Stderr => "stderr",
        }
    }

    /// `stdout` or `stderr`.
    pub fn parse(text: &str) -> Option<LogSource> {
        match text {
            "stdout" => Some(LogSource::Stdout),
            "stderr" => Some(LogSource::Stderr),
            _ => None,
        }
    }

    /// `info` for standard output, `error` for standard error.
    pub fn level(self) -> &'static str {
        match self {
            LogSource::Stdout => "info",
            LogSource::Stderr => "error",
        }
    }
}

/// One line of the program's output.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct LogRecord {
    /// The record's position in the log; pass it back to read the records after it.
    pub cursor: String,
    pub source: LogSource,
    /// `info` (stdout) or `error` (stderr).
    #[schemars(extend("enum" = ["info", "error"]))]
    pub level: String,
    /// The line, without its end of line; bytes that are not UTF-8 replaced with U+FFFD.
    pub message: String,
    /// When the supervisor received the line.
    pub time_unix_ms: u64,
}

/// The text of a cursor.
pub fn cursor_text(position: u64) -> String {
    format!("{position:012}")
}

/// A cursor's position, when it is one.
pub fn parse_cursor(cursor: &str) -> Option<u64> {
    if cursor.is_empty() || !cursor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    cursor.parse().ok()
}

/// Cuts a stream's bytes into lines of at most [`MAX_LINE_BYTES`].
#[derive(Debug, Default)]
pub struct LineBuffer {
    pending: Vec<u8>,
}

impl LineBuffer {
    /// Adds bytes read from the stream; answers the lines they complete.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<String> {
        let mut lines = Vec::new();
        for &byte in bytes {
            if byte == b'\n' {
                lines.push(self.take_line());
            } else {
                self.pending.push(byte);
                if self.pending.len() >= MAX_LINE_BYTES {
                    lines.push(self.take_cut());
                }
            }
        }
        lines
    }

    /// The last line, when the stream ended without a `\n`.
    pub fn finish(&mut self) -> Option<String> {
        (!self.pending.is_empty()).then(|| self.take_line())
    }

    fn take_line(&mut self) -> String {
        let mut line = std::mem::take(&mut self.pending);
        if line.last() == Some(&b'\r') {
            line.pop();
        }
        String::from_utf8_lossy(&line).into_owned()
    }

    /// A full buffer: cut before a UTF-8 character that starts in its last 3 bytes, so a
    /// character is not split into two replacement characters.
    fn take_cut(&mut self) -> String {
        let len = self.pending.len();
        let cut = (len.saturating_sub(3)..len)
            .rev()
            .find(|&i| i > 0 && self.pending[i] & 0b1100_0000 == 0b1100_0000)
            .filter(|&i| std::str::from_utf8(&self.pending[i..]).is_err())
            .unwrap_or(len);
        let rest = self.pending.split_off(cut);
        let line = std::mem::replace(&mut self.pending, rest);
        String::from_utf8_lossy(&line).into_owned()
    }
}

/// Appends records to the log.
#[derive(Debug)]
pub struct LogWriter {
    file: File,
    next: u64,
}

impl LogWriter {
    /// Creates the session's log (empty).
    pub fn create(dir: &Path) -> io::Result<LogWriter> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(LOG_FILE))?;
        file.set_len(0)?;
        Ok(LogWriter { file, next: 0 })
    }

    /// Appends one record (one `write` of one line).
    pub fn append(
        &mut self,
        source: LogSource,
        message: String,
        time_unix_ms: u64,
    ) -> io::Result<()> {
        let record = LogRecord {
            cursor: cursor_text(self.next),
            source,
            level: source.level().to_owned(),
            message,
            time_unix_ms,
        };
        let mut line = serde_json::to_vec(&record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.file.write_all(&line)?;
        self.next += 1;
        Ok(())
    }
}

/// One read of the log.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, JsonSchema)]
pub struct LogPage {
    pub session_id: String,
    pub records: Vec<LogRecord>,
    /// Where to resume: the cursor of the last record returned when `limit` cut the page,
    /// otherwise of the last record read (the end of the log). Absent when the log holds
    /// nothing after the cursor given.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// Reads up to `limit` records after `cursor` (from the start without one), of `source`
/// only when given.
pub fn read_logs(
    dir: &Path,
    session_id: &str,
    source: Option<LogSource>,
    cursor: Option<&str>,
    limit: usize,
) -> io::Result<LogPage> {
    let after = match cursor {
        None => None,
        Some(text) => Some(parse_cursor(text).ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("`{text}` is not a log cursor (cursors are the `cursor` of a record)"),
            )
        })?),
    };
    let limit = limit.clamp(1, MAX_LIMIT);
    let mut page = LogPage {
        session_id: session_id.to_owned(),
        records: Vec::new(),
        next_cursor: None,
    };
    let file = match File::open(dir.join(LOG_FILE)) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(page),
        Err(e) => return Err(e),
    };
    let mut reader = BufReader::new(file);
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = reader.read_until(b'\n', &mut line)?;
        if read == 0 || line.last() != Some(&b'\n') {
            break;
        }
        let Ok(record) = serde_json::from_slice::<LogRecord>(&line) else {
            continue;
        };
        let Some(position) = parse_cursor(&record.cursor) else {
            continue;
        };
        if after.is_some_and(|after| position <= after) {
            continue;
        }
        page.next_cursor = Some(record.cursor.clone());
        if source.is_none_or(|s| s == record.source) {
            page.records.push(record);
            if page.records.len() == limit {
                break;
            }
        }
    }
    Ok(page)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(chunks: &[&[u8]], expected: &[&str]) {
        let mut buffer = LineBuffer::default();
        let mut lines: Vec<String> = chunks.iter().flat_map(|c| buffer.push(c)).collect();
        lines.extend(buffer.finish());
        assert_eq!(lines, expected);
    }

    #[test]
    fn lines_are_split_bounded_and_binary_is_replaced() {
        check(&[b"a\r\nb", b"c\n", b"tail"], &["a", "bc", "tail"]);
        check(&[b"\xff\xfebin\x00\n"], &["\u{fffd}\u{fffd}bin\u{0}"]);
        let long = "é".repeat(MAX_LINE_BYTES); // 2 bytes each
        let mut buffer = LineBuffer::default();
        let mut lines = buffer.push(format!("x{long}\n").as_bytes());
        lines.extend(buffer.finish());
        assert!(lines.iter().all(|l| l.len() <= MAX_LINE_BYTES));
        assert_eq!(lines.concat(), format!("x{long}"));
        assert_eq!(lines.len(), 3);
    }

    #[test]
    fn cursors_resume_exactly_whatever_the_source_filter() {
        let dir = tempfile::tempdir().unwrap();
        let mut writer = LogWriter::create(dir.path()).unwrap();
        let sources = [
            LogSource::Stdout,
            LogSource::Stderr,
            LogSource::Stdout,
            LogSource::Stderr,
            LogSource::Stdout,
        ];
        for (i, source) in sources.into_iter().enumerate() {
            writer.append(source, format!("line {i}"), 0).unwrap();
        }
        let messages = |page: &LogPage| {
            page.records
                .iter()
                .map(|r| r.message.clone())
                .collect::<Vec<_>>()
        };
        let first = read_logs(dir.path(), "s", Some(LogSource::Stdout), None, 1).unwrap();
        assert_eq!(messages(&first), ["line 0"]);
        assert_eq!(first.next_cursor.as_deref(), Some("000000000000"));
        // The stderr reader resuming from the stdout reader's cursor misses nothing after it.
        let errors = read_logs(
            dir.path(),
            "s",
            Some(LogSource::Stderr),
            first.next_cursor.as_deref(),
            10,
        )
        .unwrap();
        assert_eq!(messages(&errors), ["line 1", "line 3"]);
        assert_eq!(errors.next_cursor.as_deref(), Some("000000000004"));
        let rest = read_logs(dir.path(), "s", None, Some("000000000001"), 10).unwrap();
        assert_eq!(messages(&rest), ["line 2", "line 3", "line 4"]);
        let none = read_logs(dir.path(), "s", None, Some("000000000004"), 10).unwrap();
        assert!(none.records.is_empty() && none.next_cursor.is_none());
        assert!(read_logs(dir.path(), "s", None, Some("stdout:1"), 10).is_err());
    }
}
