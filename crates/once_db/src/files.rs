//! Files as salsa inputs, their text, and line/column conversion.
//!
//! Every path of the workspace can have a [`File`] input, created on first use
//! ([`Db::file_for_path`]), so files nobody reads cost nothing. Every read goes through
//! [`System::read_stamped`](crate::System::read_stamped) and records the stamp it saw in
//! the [`FileTable`]; a rescan compares those stamps with the disk
//! ([`crate::changes`]).

use std::sync::Arc;

use once_model::{LineCol, LineColRange, TextRange};
use rustc_hash::FxHashMap;

use crate::Db;
use crate::links::LinkTarget;
use crate::system::FileStamp;

/// One file of the workspace, identified by its workspace-relative `/`-separated path.
///
/// The contents are not stored here: [`source_text`] and
/// [`file_digest`](crate::digests::file_digest) read them through the
/// [`System`](crate::System) after touching `revision`, which
/// [`apply_changes`](crate::apply_changes) bumps on change. Whether the file exists, is a
/// directory or is unreadable is part of what those queries answer.
#[salsa::input(debug)]
pub struct File {
    #[returns(ref)]
    pub path: String,
    #[returns(copy)]
    pub revision: u64,
}

/// The text of a file, or why it could not be read (as data, never a failure).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceText {
    pub text: Arc<str>,
    pub read_error: Option<String>,
}

/// Reads a file's text through the system.
///
/// At most 2,048 texts are kept from one revision to the next (the least
/// recently used are dropped when the database moves on, their dependencies kept): the
/// queries built on a text keep what they need of it, and a text asked for again is read
/// again, under the same file revision.
#[salsa::tracked(returns(ref), lru = 2048)]
pub fn source_text(db: &dyn Db, file: File) -> SourceText {
    let read = read_file(db, file);
    match read.and_then(|bytes| {
        String::from_utf8(bytes).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "stream did not contain valid UTF-8",
            )
        })
    }) {
        Ok(text) => SourceText {
            text: text.into(),
            read_error: None,
        },
        Err(err) => SourceText {
            text: "".into(),
            read_error: Some(err.to_string()),
        },
    }
}

/// Reads a file's bytes through the system (depending on its revision) and records the
/// stamp the read saw, for rescans to compare against.
pub(crate) fn read_file(db: &dyn Db, file: File) -> std::io::Result<Vec<u8>> {
    let _ = file.revision(db);
    let root = crate::workspace::workspace_root(db);
    let read = db.system().read_stamped(&root.join(file.path(db)));
    db.record_seen(file, read.stamp);
    read.contents
}

/// What a column counts: Unicode scalar values (the analysis' columns), UTF-16 code units
/// or UTF-8 bytes (the two encodings the language server protocol offers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnUnit {
    Scalar,
    Utf16,
    Utf8,
}

impl ColumnUnit {
    /// The units a byte of UTF-8 text adds: a character counts at its first byte.
    fn of_byte(self, byte: u8) -> u32 {
        let continuation = byte & 0xC0 == 0x80;
        match self {
            ColumnUnit::Utf8 => 1,
            ColumnUnit::Scalar => u32::from(!continuation),
            // Four-byte characters are the ones outside the Basic Multilingual Plane.
            ColumnUnit::Utf16 if continuation => 0,
            ColumnUnit::Utf16 => 1 + u32::from(byte >= 0xF0),
        }
    }
}

/// Bytes between two [`Checkpoint`]s.
const CHECKPOINT_BYTES: usize = 64;

/// Scalar values and UTF-16 units before a multiple of [`CHECKPOINT_BYTES`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Checkpoint {
    scalars: u32,
    utf16: u32,
}

impl Checkpoint {
    /// The count in `unit`; UTF-8 bytes need no checkpoint (they are the offset).
    fn get(self, unit: ColumnUnit) -> u32 {
        match unit {
            ColumnUnit::Utf16 => self.utf16,
            ColumnUnit::Scalar | ColumnUnit::Utf8 => self.scalars,
        }
    }
}

/// Byte offsets of line starts, for 1-based line/column conversion.
///
/// Every conversion costs a binary search plus at most a few dozen bytes of scanning,
/// however long the line: non-ASCII text keeps running counts of scalar values and UTF-16
/// units every [`CHECKPOINT_BYTES`] bytes (ASCII text needs none, its columns are bytes).
/// Converting every diagnostic of a file is therefore linear in their number, not in
/// their number times the line length.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<u32>,
    /// Empty when the text is ASCII; else entry `i` counts the text before byte
    /// `i * CHECKPOINT_BYTES`.
    checkpoints: Vec<Checkpoint>,
    text: Arc<str>,
}

impl LineIndex {
    pub fn new(text: Arc<str>) -> LineIndex {
        let mut line_starts = vec![0];
        for (offset, byte) in text.bytes().enumerate() {
            if byte == b'\n' {
                line_starts.push(offset as u32 + 1);
            }
        }
        let mut checkpoints = Vec::new();
        if !text.is_ascii() {
            let mut at = Checkpoint {
                scalars: 0,
                utf16: 0,
            };
            for chunk in text.as_bytes().chunks(CHECKPOINT_BYTES) {
                checkpoints.push(at);
                for &byte in chunk {
                    at.scalars += ColumnUnit::Scalar.of_byte(byte);
                    at.utf16 += ColumnUnit::Utf16.of_byte(byte);
                }
            }
            checkpoints.push(at);
        }
        LineIndex {
            line_starts,
            checkpoints,
            text,
        }
    }

    /// The text the index was built from.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The number of lines (a text ending in a line feed has an empty last line).
    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// Units of `unit` in the text before byte `offset`.
    fn units_before(&self, offset: usize, unit: ColumnUnit) -> u32 {
        let offset = offset.min(self.text.len());
        if self.checkpoints.is_empty() || unit == ColumnUnit::Utf8 {
            return offset as u32;
        }
        let chunk = offset / CHECKPOINT_BYTES;
        let chunk_start = chunk * CHECKPOINT_BYTES;
        let base = self.checkpoints.get(chunk).map_or(0, |c| c.get(unit));
        let bytes = self.text.as_bytes().get(chunk_start..offset).unwrap_or(&[]);
        base + bytes.iter().map(|&b| unit.of_byte(b)).sum::<u32>()
    }

    /// The 0-based line holding byte `offset` (clamped to the text).
    fn line_of(&self, offset: u32) -> usize {
        self.line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1)
    }

    /// The last character boundary at or before `offset` (clamped to the text).
    fn floor_boundary(&self, offset: u32) -> usize {
        let mut end = (offset as usize).min(self.text.len());
        while end > 0 && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        end
    }

    /// The 1-based line and 1-based column (in Unicode scalar values) of a byte offset.
    /// Offsets past the end or inside a character clamp to the nearest valid position.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line = self.line_of(offset);
        let column = self.column_units(offset, ColumnUnit::Scalar);
        LineCol {
            line: line as u32 + 1,
            column: column + 1,
        }
    }

    /// The 0-based column of byte `offset` on its line, counted in `unit` (an offset inside
    /// a character counts from that character's start).
    pub fn column_units(&self, offset: u32, unit: ColumnUnit) -> u32 {
        let line = self.line_of(offset.min(self.text.len() as u32));
        let line_start = self.line_starts.get(line).copied().unwrap_or(0) as usize;
        let end = self.floor_boundary(offset).max(line_start);
        self.units_before(end, unit) - self.units_before(line_start, unit)
    }

    pub fn range(&self, range: TextRange) -> LineColRange {
        LineColRange {
            start: self.line_col(range.start),
            end: self.line_col(range.end),
        }
    }

    /// The byte offset of a 1-based line/column, clamped to the line's text (before its
    /// line end) and to the text.
    pub fn offset(&self, position: LineCol) -> u32 {
        let line = (position.line.max(1) - 1) as usize;
        self.offset_in_line(line, position.column.max(1) - 1, ColumnUnit::Scalar)
            .unwrap_or(self.text.len() as u32)
    }

    /// The byte offset `units` of `unit` into 0-based `line`, clamped to the line's text
    /// (before `\n` or `\r\n`); a count ending inside a character rounds up to its end.
    /// `None` when the text has no such line.
    pub fn offset_in_line(&self, line: usize, units: u32, unit: ColumnUnit) -> Option<u32> {
        let start = *self.line_starts.get(line)? as usize;
        let mut end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |&next| next as usize - 1);
        if end > start && end < self.text.len() && self.text.as_bytes()[end - 1] == b'\r' {
            end -= 1;
        }
        if unit == ColumnUnit::Utf8 || self.checkpoints.is_empty() {
            // Units are bytes (in ASCII text, whatever the unit).
            let mut at = (start + units as usize).min(end);
            while !self.text.is_char_boundary(at) {
                at += 1;
            }
            return Some(at as u32);
        }
        // Scan from the last checkpoint not past the target, but not from before the line.
        let target = self.units_before(start, unit) + units;
        let chunk = self
            .checkpoints
            .partition_point(|c| c.get(unit) <= target)
            .saturating_sub(1);
        let mut at = (chunk * CHECKPOINT_BYTES).max(start);
        let mut count = self.units_before(at, unit);
        let bytes = self.text.as_bytes();
        while let Some(&byte) = bytes.get(at)
            && at < end
        {
            if byte & 0xC0 != 0x80 && count >= target {
                break;
            }
            count += unit.of_byte(byte);
            at += 1;
        }
        Some(at.min(end) as u32)
    }
}

/// The line index of a file's current text (the least recently used past 512 are
/// dropped when the database moves on; they hold the text too).
#[salsa::tracked(returns(ref), lru = 512)]
pub fn line_index(db: &dyn Db, file: File) -> LineIndex {
    LineIndex::new(source_text(db, file).text.clone())
}

/// The path → input table, the stamp each file had when it was last read, and where each
/// link resolved since its last bump led.
#[derive(Default, Debug)]
pub(crate) struct FileTable {
    files: FxHashMap<String, File>,
    seen: FxHashMap<File, Seen>,
    links: FxHashMap<File, LinkTarget>,
}

/// What the reads of a file since its last bump saw.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Seen {
    /// Every read saw this stamp (`None`: nothing was there).
    Stamp(Option<FileStamp>),
    /// Two reads saw different stamps: the file changed while it was read, so the next
    /// rescan bumps it whatever the disk shows.
    Conflicting,
}

impl FileTable {
    pub(crate) fn get(&self, path: &str) -> Option<File> {
        self.files.get(path).copied()
    }

    pub(crate) fn insert(&mut self, path: String, file: File) {
        self.files.insert(path, file);
    }

    pub(crate) fn record_seen(&mut self, file: File, stamp: Option<FileStamp>) {
        self.seen
            .entry(file)
            .and_modify(|seen| {
                if *seen != Seen::Stamp(stamp) {
                    *seen = Seen::Conflicting;
                }
            })
            .or_insert(Seen::Stamp(stamp));
    }

    /// Forgets what reads saw (the file was bumped: the next read records anew).
    pub(crate) fn forget_seen(&mut self, file: File) {
        self.seen.remove(&file);
        self.links.remove(&file);
    }

    pub(crate) fn record_link(&mut self, file: File, target: LinkTarget) {
        self.links.insert(file, target);
    }

    /// Every link resolved since its last bump, with where it led.
    pub(crate) fn resolved_links(&self) -> Vec<(File, LinkTarget)> {
        self.links
            .iter()
            .map(|(file, target)| (*file, target.clone()))
            .collect()
    }

    /// Every file some read has seen since its last bump, with what it saw.
    pub(crate) fn seen_files(&self) -> Vec<(File, Seen)> {
        self.seen
            .iter()
            .map(|(file, seen)| (*file, *seen))
            .collect()
    }
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up real files and time real work"
)]
mod tests {
    use super::*;

    fn check(text: &str, offset: u32, expected: (u32, u32)) {
        let index = LineIndex::new(text.into());
        let actual = index.line_col(offset);
        assert_eq!(
            (actual.line, actual.column),
            expected,
            "offset {offset} in {text:?}"
        );
        assert_eq!(index.offset(actual), offset.min(text.len() as u32));
    }

    #[test]
    fn line_columns_are_one_based_and_count_characters() {
        check("", 0, (1, 1));
        check("ab\ncd", 0, (1, 1));
        check("ab\ncd", 2, (1, 3));
        check("ab\ncd", 3, (2, 1));
        check("ab\ncd", 5, (2, 3));
        check("ab\ncd", 99, (2, 3));
        check("é = 1\nx", 2, (1, 2));
        check("é = 1\nx", 3, (1, 3));
        check("a\r\nb", 3, (2, 1));
    }

    /// The line/column of every offset, and back, against a plain character count.
    #[test]
    fn conversions_agree_with_counting_characters() {
        // Long enough to span many checkpoints, with 1-, 2-, 3- and 4-byte characters.
        let line = "a é ✓ 😀 ".repeat(40);
        let text = format!("{line}\r\n{line}\n\nx😀\r\n{line}");
        let index = LineIndex::new(text.as_str().into());
        for (line0, (start, content)) in text
            .split('\n')
            .scan(0, |start, line| {
                let here = *start;
                *start += line.len() + 1;
                Some((here, line))
            })
            .enumerate()
        {
            let content = content.strip_suffix('\r').unwrap_or(content);
            for (column, (byte, c)) in content.char_indices().enumerate() {
                let offset = (start + byte) as u32;
                let expected = LineCol {
                    line: line0 as u32 + 1,
                    column: column as u32 + 1,
                };
                assert_eq!(index.line_col(offset), expected, "offset {offset}");
                assert_eq!(index.offset(expected), offset);
                let utf16: u32 = content[..byte].chars().map(|c| c.len_utf16() as u32).sum();
                assert_eq!(index.column_units(offset, ColumnUnit::Utf16), utf16);
                assert_eq!(index.column_units(offset, ColumnUnit::Utf8), byte as u32);
                for (unit, units) in [
                    (ColumnUnit::Scalar, column as u32),
                    (ColumnUnit::Utf16, utf16),
                    (ColumnUnit::Utf8, byte as u32),
                ] {
                    assert_eq!(index.offset_in_line(line0, units, unit), Some(offset));
                }
                // Inside a character: rounds up to its end.
                if c.len_utf16() == 2 {
                    assert_eq!(
                        index.offset_in_line(line0, utf16 + 1, ColumnUnit::Utf16),
                        Some(offset + c.len_utf8() as u32)
                    );
                }
            }
            // Past the end: the line's end, before `\r\n`.
            let end = (start + content.len()) as u32;
            assert_eq!(
                index.offset_in_line(line0, 10_000, ColumnUnit::Utf16),
                Some(end)
            );
            assert_eq!(
                index.offset_in_line(line0, 10_000, ColumnUnit::Utf8),
                Some(end)
            );
        }
        assert_eq!(index.offset_in_line(99, 0, ColumnUnit::Scalar), None);
    }

    /// Many conversions on one long line cost a bounded scan each: 200,000 positions on a
    /// 1 MB line took minutes when each one counted the line's characters from its start.
    #[test]
    fn conversions_on_a_long_line_do_not_rescan_it() {
        let text = "é".repeat(500_000);
        let started = std::time::Instant::now();
        let index = LineIndex::new(text.as_str().into());
        for k in 0..200_000u32 {
            let offset = k * 5;
            assert_eq!(index.line_col(offset).column, offset / 2 + 1);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
    }
}
