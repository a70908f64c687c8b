//! `to_proto`/`from_proto`: positions in the negotiated encoding, URIs, and the analysis'
//! plain data as `lsp_types` values.
//!
//! The analysis speaks 1-based lines and columns in Unicode scalar values; the protocol
//! speaks 0-based lines and columns in UTF-16 code units (or UTF-8 bytes when the client
//! offers it and we pick it).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{Position, Range, Uri};
use once_analysis::ide::LineColRange;
use once_analysis::{ColumnUnit, LineCol, LineIndex};

/// The position encoding agreed in `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

impl Encoding {
    fn unit(self) -> ColumnUnit {
        match self {
            Encoding::Utf8 => ColumnUnit::Utf8,
            Encoding::Utf16 => ColumnUnit::Utf16,
        }
    }
}

/// A protocol position → the analysis' line/column in the indexed text.
///
/// Every conversion goes through a [`LineIndex`] built once per text, so converting all
/// of a document's diagnostics costs a lookup each, not a scan of the text each.
pub fn from_position(index: &LineIndex, encoding: Encoding, position: Position) -> LineCol {
    let column = index
        .offset_in_line(position.line as usize, position.character, encoding.unit())
        .map_or(0, |offset| index.column_units(offset, ColumnUnit::Scalar));
    LineCol {
        line: position.line + 1,
        column: column + 1,
    }
}

/// The analysis' line/column in the indexed text → a protocol position.
pub fn to_position(index: &LineIndex, encoding: Encoding, at: LineCol) -> Position {
    let line0 = at.line.saturating_sub(1);
    let character = index
        .offset_in_line(
            line0 as usize,
            at.column.saturating_sub(1),
            ColumnUnit::Scalar,
        )
        .map_or(0, |offset| index.column_units(offset, encoding.unit()));
    Position::new(line0, character)
}

pub fn to_range(index: &LineIndex, encoding: Encoding, range: LineColRange) -> Range {
    Range::new(
        to_position(index, encoding, range.start),
        to_position(index, encoding, range.end),
    )
}

pub fn from_range(index: &LineIndex, encoding: Encoding, range: Range) -> LineColRange {
    LineColRange {
        start: from_position(index, encoding, range.start),
        end: from_position(index, encoding, range.end),
    }
}

/// The byte offset of a protocol position in the indexed text (clamped).
pub fn offset(index: &LineIndex, encoding: Encoding, position: Position) -> usize {
    index
        .offset_in_line(position.line as usize, position.character, encoding.unit())
        .map_or(index.text().len(), |offset| offset as usize)
}

/// A `file:` URI → a path (percent-decoded).
pub fn uri_to_path(uri: &Uri) -> Option<PathBuf> {
    let text = uri.as_str();
    let rest = text.strip_prefix("file://")?;
    // `file://host/path` is not for us; `file:///path` is.
    let path = rest.strip_prefix("localhost").unwrap_or(rest);
    if !path.starts_with('/') {
        return None;
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Ok(byte) = u8::from_str_radix(&path[i + 1..i + 3], 16)
        {
            out.push(byte);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8(out).ok().map(PathBuf::from)
}

/// A path → a `file:` URI (percent-encoding what URIs do not allow).
pub fn path_to_uri(path: &Path) -> Option<Uri> {
    let mut text = String::from("file://");
    for byte in path.to_string_lossy().bytes() {
        if byte.is_ascii_alphanumeric() || b"/-._~".contains(&byte) {
            text.push(byte as char);
        } else {
            text.push_str(&format!("%{byte:02X}"));
        }
    }
    Uri::from_str(&text).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf16_and_utf8_columns() {
        let index = LineIndex::new("a = \"😀é\"\nb".into());
        let text = &index;
        // After the emoji: 1 scalar, 2 UTF-16 units, 4 UTF-8 bytes.
        let at = LineCol { line: 1, column: 7 };
        assert_eq!(to_position(text, Encoding::Utf16, at), Position::new(0, 7));
        assert_eq!(to_position(text, Encoding::Utf8, at), Position::new(0, 9));
        assert_eq!(
            from_position(text, Encoding::Utf16, Position::new(0, 7)),
            at
        );
        assert_eq!(from_position(text, Encoding::Utf8, Position::new(0, 9)), at);
        assert_eq!(offset(text, Encoding::Utf16, Position::new(0, 7)), 9);
        assert_eq!(
            offset(text, Encoding::Utf16, Position::new(1, 1)),
            text.text().len()
        );
    }

    /// A position on line `n` costs a lookup, not a walk over `n` lines: converting one
    /// diagnostic per line of a 100,000-line document (the ranges the server publishes)
    /// took minutes when each conversion split the text from its start.
    #[test]
    fn converting_a_position_per_line_is_linear() {
        let index = LineIndex::new("=\n".repeat(100_000).into());
        let started = std::time::Instant::now();
        for line in 1..=100_000 {
            let at = LineCol { line, column: 2 };
            let position = to_position(&index, Encoding::Utf16, at);
            assert_eq!(position, Position::new(line - 1, 1));
            assert_eq!(from_position(&index, Encoding::Utf16, position), at);
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "took {:?}",
            started.elapsed()
        );
    }

    #[test]
    fn uris_round_trip() {
        let path = Path::new("/tmp/a b/once.toml");
        let uri = path_to_uri(path).unwrap();
        assert_eq!(uri.as_str(), "file:///tmp/a%20b/once.toml");
        assert_eq!(uri_to_path(&uri).as_deref(), Some(path));
    }
}
