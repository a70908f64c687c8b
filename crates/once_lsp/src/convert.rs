//! `to_proto`/`from_proto`: positions in the negotiated encoding, URIs, and the analysis'
//! plain data as `lsp_types` values.
//!
//! The analysis speaks 1-based lines and columns in Unicode scalar values; the protocol
//! speaks 0-based lines and columns in UTF-16 code units (or UTF-8 bytes when the client
//! offers it and we pick it).

use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{Position, Range, Uri};
use once_analysis::LineCol;
use once_analysis::ide::LineColRange;

/// The position encoding agreed in `initialize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16,
}

fn line_text(text: &str, line0: usize) -> &str {
    let line = text.split('\n').nth(line0).unwrap_or("");
    line.strip_suffix('\r').unwrap_or(line)
}

/// A protocol position → the analysis' line/column in `text`.
pub fn from_position(text: &str, encoding: Encoding, position: Position) -> LineCol {
    let line = line_text(text, position.line as usize);
    let mut units = 0u32;
    let mut column = 0u32;
    for c in line.chars() {
        if units >= position.character {
            break;
        }
        units += match encoding {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
        };
        column += 1;
    }
    LineCol {
        line: position.line + 1,
        column: column + 1,
    }
}

/// The analysis' line/column in `text` → a protocol position.
pub fn to_position(text: &str, encoding: Encoding, at: LineCol) -> Position {
    let line0 = at.line.saturating_sub(1);
    let line = line_text(text, line0 as usize);
    let character = line
        .chars()
        .take(at.column.saturating_sub(1) as usize)
        .map(|c| match encoding {
            Encoding::Utf8 => c.len_utf8() as u32,
            Encoding::Utf16 => c.len_utf16() as u32,
        })
        .sum();
    Position::new(line0, character)
}

pub fn to_range(text: &str, encoding: Encoding, range: LineColRange) -> Range {
    Range::new(
        to_position(text, encoding, range.start),
        to_position(text, encoding, range.end),
    )
}

pub fn from_range(text: &str, encoding: Encoding, range: Range) -> LineColRange {
    LineColRange {
        start: from_position(text, encoding, range.start),
        end: from_position(text, encoding, range.end),
    }
}

/// The byte offset of a protocol position in `text` (clamped).
pub fn offset(text: &str, encoding: Encoding, position: Position) -> usize {
    let at = from_position(text, encoding, position);
    let mut start = 0;
    for _ in 1..at.line {
        match text[start..].find('\n') {
            Some(nl) => start += nl + 1,
            None => return text.len(),
        }
    }
    let line_end = text[start..].find('\n').map_or(text.len(), |nl| start + nl);
    let line = &text[start..line_end];
    start
        + line
            .char_indices()
            .nth(at.column.saturating_sub(1) as usize)
            .map_or(line.len(), |(i, _)| i)
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
        let text = "a = \"😀é\"\nb";
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
            text.len()
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
