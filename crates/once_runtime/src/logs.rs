//! The session log: the program's standard output and error as line records, in one
//! file (`log.ndjson`), interleaved in the order the supervisor received them.
//!
//! Each record is one JSON line `{cursor, source, level, message, time}` (`time` in
//! milliseconds since the Unix epoch). The
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
//! appending); readers ignore a last line that does not end in `\n` yet. The log rotates
//! at [`SEGMENT_BYTES`] and keeps [`KEPT_SEGMENTS`] rotated files ([`LogWriter`]); a read
//! whose cursor points into a removed file says how many records it lost.

use std::fs::File;
use std::io::{self, BufRead as _, BufReader, Write as _};
use std::path::Path;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::{LOG_FILE, STDERR_FILE, STDOUT_FILE};

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
    /// When the supervisor received the line, in milliseconds since the Unix epoch.
    #[serde(rename = "time")]
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

/// The size at which the current log file is rotated.
pub const SEGMENT_BYTES: u64 = 8 * 1024 * 1024;

/// How many rotated files are kept beside the current one (so a log holds between 24
/// and 32 MiB of the latest output).
pub const KEPT_SEGMENTS: usize = 3;

/// The name of a rotated log file whose first record is at `first`.
fn segment_name(first: u64) -> String {
    format!("log-{first:012}.ndjson")
}

/// The first position of a rotated log file, from its name.
fn segment_first(name: &str) -> Option<u64> {
    parse_cursor(name.strip_prefix("log-")?.strip_suffix(".ndjson")?)
}

/// The rotated files of a session, oldest first, with their first positions.
fn rotated_segments(dir: &Path) -> io::Result<Vec<(u64, std::path::PathBuf)>> {
    let mut segments: Vec<(u64, std::path::PathBuf)> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let first = segment_first(entry.file_name().to_str()?)?;
            Some((first, entry.path()))
        })
        .collect();
    segments.sort();
    Ok(segments)
}

/// Appends records to the log, rotating it at [`SEGMENT_BYTES`]: the current file
/// `log.ndjson` is renamed `log-<position of its first record>.ndjson` and a new one
/// started; past [`KEPT_SEGMENTS`] rotated files, the oldest is removed. Positions go on
/// counting across files, so a cursor stays valid, and a reader whose cursor points
/// into a removed file is told how many records it missed ([`LogPage::rotated_away`]).
#[derive(Debug)]
pub struct LogWriter {
    dir: std::path::PathBuf,
    file: File,
    /// The plain text of each stream (`stdout.log`, `stderr.log`), rotated with the
    /// records: the previous file is kept as `<name>.1`.
    stdout: File,
    stderr: File,
    next: u64,
    /// The position of the current file's first record.
    first: u64,
    bytes: u64,
    segment_bytes: u64,
}

impl LogWriter {
    /// Creates the session's log (empty).
    pub fn create(dir: &Path) -> io::Result<LogWriter> {
        LogWriter::with_segment_bytes(dir, SEGMENT_BYTES)
    }

    /// A writer rotating at `segment_bytes` (tests rotate small logs).
    pub fn with_segment_bytes(dir: &Path, segment_bytes: u64) -> io::Result<LogWriter> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(dir.join(LOG_FILE))?;
        file.set_len(0)?;
        let plain = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(dir.join(name))
        };
        Ok(LogWriter {
            dir: dir.to_path_buf(),
            file,
            stdout: plain(STDOUT_FILE)?,
            stderr: plain(STDERR_FILE)?,
            next: 0,
            first: 0,
            bytes: 0,
            segment_bytes,
        })
    }

    fn rotate(&mut self) -> io::Result<()> {
        std::fs::rename(
            self.dir.join(LOG_FILE),
            self.dir.join(segment_name(self.first)),
        )?;
        self.file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .write(true)
            .open(self.dir.join(LOG_FILE))?;
        self.first = self.next;
        self.bytes = 0;
        for name in [STDOUT_FILE, STDERR_FILE] {
            std::fs::rename(self.dir.join(name), self.dir.join(format!("{name}.1")))?;
        }
        let plain = |name: &str| {
            std::fs::OpenOptions::new()
                .create(true)
                .truncate(true)
                .write(true)
                .open(self.dir.join(name))
        };
        self.stdout = plain(STDOUT_FILE)?;
        self.stderr = plain(STDERR_FILE)?;
        let segments = rotated_segments(&self.dir)?;
        let excess = segments.len().saturating_sub(KEPT_SEGMENTS);
        for (_, path) in &segments[..excess] {
            std::fs::remove_file(path)?;
        }
        Ok(())
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
        let length = u64::try_from(line.len()).unwrap_or(u64::MAX);
        if self.bytes > 0 && self.bytes.saturating_add(length) > self.segment_bytes {
            self.rotate()?;
        }
        self.file.write_all(&line)?;
        let plain = match source {
            LogSource::Stdout => &mut self.stdout,
            LogSource::Stderr => &mut self.stderr,
        };
        plain.write_all(record.message.as_bytes())?;
        plain.write_all(b"\n")?;
        self.bytes = self.bytes.saturating_add(length);
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
    /// How many records after the cursor (of either stream) were removed by log rotation
    /// before this read; 0 when nothing was lost.
    pub rotated_away: u64,
}

/// Reads up to `limit` records after `cursor` (from the start without one), of `source`
/// only when given, from the rotated files and the current one.
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
    // A rotation between listing the files and reading them shows as a gap in the
    // positions: read again (a rotation takes a moment, at most every 8 MiB of output).
    for _ in 0..5 {
        if let Some(page) = read_once(dir, session_id, source, after, limit)? {
            return Ok(page);
        }
    }
    Err(io::Error::other(
        "the log kept rotating while it was read; read again",
    ))
}

/// One attempt of [`read_logs`]; `None` when a rotation raced it.
fn read_once(
    dir: &Path,
    session_id: &str,
    source: Option<LogSource>,
    after: Option<u64>,
    limit: usize,
) -> io::Result<Option<LogPage>> {
    let mut page = LogPage {
        session_id: session_id.to_owned(),
        records: Vec::new(),
        next_cursor: None,
        rotated_away: 0,
    };
    let wanted = after.map_or(0, |after| after + 1);
    let mut files = rotated_segments(dir)?;
    files.push((u64::MAX, dir.join(LOG_FILE)));
    // Skip the rotated files wholly before the cursor (the next one starts at or before
    // the first position wanted).
    let start = files
        .windows(2)
        .take_while(|pair| pair[1].0 <= wanted)
        .count();
    let mut expected: Option<u64> = None;
    for (_, path) in &files[start..] {
        let file = match File::open(path) {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
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
            match expected {
                None if position > wanted => {
                    // Lost to rotation, unless a file appeared since the listing (a
                    // rotation renamed the current file meanwhile): then read again.
                    let appeared = rotated_segments(dir)?.into_iter().any(|(first, path)| {
                        first < position && !files.iter().any(|(_, listed)| *listed == path)
                    });
                    if appeared {
                        return Ok(None);
                    }
                    page.rotated_away = position - wanted;
                }
                Some(expected) if position != expected => return Ok(None),
                _ => {}
            }
            expected = Some(position + 1);
            if position < wanted {
                continue;
            }
            page.next_cursor = Some(record.cursor.clone());
            if source.is_none_or(|s| s == record.source) {
                page.records.push(record);
                if page.records.len() == limit {
                    return Ok(Some(page));
                }
            }
        }
    }
    Ok(Some(page))
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
        assert_eq!(none.rotated_away, 0);
        assert!(read_logs(dir.path(), "s", None, Some("stdout:1"), 10).is_err());
    }

    #[test]
    fn rotation_keeps_positions_and_reports_what_was_lost() {
        let dir = tempfile::tempdir().unwrap();
        // Each record is about 100 bytes: 3 records per file.
        let mut writer = LogWriter::with_segment_bytes(dir.path(), 300).unwrap();
        for i in 0..20 {
            let source = if i % 2 == 0 {
                LogSource::Stdout
            } else {
                LogSource::Stderr
            };
            writer
                .append(source, format!("line {i:02}"), 1_000_000_000_000)
                .unwrap();
        }
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        // The records' files, and each stream's plain text with its previous file.
        let records = names.iter().filter(|n| n.ends_with(".ndjson")).count();
        assert_eq!(records, 1 + KEPT_SEGMENTS, "{names:?}");
        for plain in ["stdout.log", "stdout.log.1", "stderr.log", "stderr.log.1"] {
            assert!(names.iter().any(|n| n == plain), "{names:?}");
        }
        let stdout = std::fs::read_to_string(dir.path().join("stdout.log")).unwrap();
        assert!(stdout.ends_with("line 18\n"), "{stdout:?}");
        let all = read_logs(dir.path(), "s", None, None, 100).unwrap();
        let first = parse_cursor(&all.records[0].cursor).unwrap();
        // Everything before the oldest kept file is gone, and said so.
        assert!(first > 0);
        assert_eq!(all.rotated_away, first);
        let positions: Vec<u64> = all
            .records
            .iter()
            .map(|r| parse_cursor(&r.cursor).unwrap())
            .collect();
        assert_eq!(positions, (first..20).collect::<Vec<_>>());
        // A cursor inside the kept files resumes exactly, across files, losing nothing.
        let cursor = cursor_text(first + 1);
        let rest = read_logs(dir.path(), "s", Some(LogSource::Stderr), Some(&cursor), 100).unwrap();
        assert_eq!(rest.rotated_away, 0);
        let expected: Vec<String> = (first + 2..20)
            .filter(|i| i % 2 == 1)
            .map(|i| format!("line {i:02}"))
            .collect();
        let got: Vec<String> = rest.records.iter().map(|r| r.message.clone()).collect();
        assert_eq!(got, expected);
        assert_eq!(rest.next_cursor.as_deref(), Some("000000000019"));
        // A cursor older than the oldest kept record: told how many were lost.
        let stale = read_logs(dir.path(), "s", None, Some("000000000000"), 1).unwrap();
        assert_eq!(stale.rotated_away, first - 1);
        assert_eq!(stale.records[0].cursor, cursor_text(first));
    }
}
