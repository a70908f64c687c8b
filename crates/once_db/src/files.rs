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
#[salsa::tracked(returns(ref))]
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

/// Byte offsets of line starts, for 1-based line/column conversion.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineIndex {
    line_starts: Vec<u32>,
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
        LineIndex { line_starts, text }
    }

    /// The 1-based line and 1-based column (in Unicode scalar values) of a byte offset.
    /// Offsets past the end or inside a character clamp to the nearest valid position.
    pub fn line_col(&self, offset: u32) -> LineCol {
        let offset = offset.min(self.text.len() as u32);
        let line = self
            .line_starts
            .partition_point(|&start| start <= offset)
            .saturating_sub(1);
        let line_start = self.line_starts.get(line).copied().unwrap_or(0);
        let mut end = offset as usize;
        while end > line_start as usize && !self.text.is_char_boundary(end) {
            end -= 1;
        }
        let column = self
            .text
            .get(line_start as usize..end)
            .map_or(0, |s| s.chars().count());
        LineCol {
            line: line as u32 + 1,
            column: column as u32 + 1,
        }
    }

    pub fn range(&self, range: TextRange) -> LineColRange {
        LineColRange {
            start: self.line_col(range.start),
            end: self.line_col(range.end),
        }
    }

    /// The byte offset of a 1-based line/column, clamped to the text.
    pub fn offset(&self, position: LineCol) -> u32 {
        let line = (position.line.max(1) - 1) as usize;
        let Some(&start) = self.line_starts.get(line) else {
            return self.text.len() as u32;
        };
        let end = self
            .line_starts
            .get(line + 1)
            .map_or(self.text.len(), |&e| e as usize);
        let line_text = self.text.get(start as usize..end).unwrap_or("");
        let byte = line_text
            .char_indices()
            .nth((position.column.max(1) - 1) as usize)
            .map_or(line_text.len(), |(i, _)| i);
        start + byte as u32
    }
}

/// The line index of a file's current text.
#[salsa::tracked(returns(ref))]
pub fn line_index(db: &dyn Db, file: File) -> LineIndex {
    LineIndex::new(source_text(db, file).text.clone())
}

/// The path → input table, and the stamp each file had when it was last read.
#[derive(Default, Debug)]
pub(crate) struct FileTable {
    files: FxHashMap<String, File>,
    seen: FxHashMap<File, Seen>,
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
}
