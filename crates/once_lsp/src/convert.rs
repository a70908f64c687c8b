//! Every conversion between the protocol and the analysis: positions in the negotiated
//! encoding, URIs and workspace paths, and the analysis' plain data (completion items,
//! hovers, symbols, code actions, edits, diagnostics) as `lsp_types` values.
//!
//! The analysis speaks 1-based lines and columns in Unicode scalar values; the protocol
//! speaks 0-based lines and columns in UTF-16 code units (or UTF-8 bytes when the client
//! offers it and we pick it).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use lsp_types::{
    CodeActionOrCommand, CompletionItemKind, CompletionTextEdit, DiagnosticRelatedInformation,
    DiagnosticSeverity, DocumentSymbol, Hover, HoverContents, Location, MarkupContent, MarkupKind,
    NumberOrString, Position, Range, SymbolKind, Uri, WorkspaceEdit,
};
use once_analysis::ide::LineColRange;
use once_analysis::{
    CodeAction, ColumnUnit, CompletionKind, HoverInfo, LineCol, LineIndex, LocatedDiagnostic,
    TargetSymbol, TextEdit,
};

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

/// A completion item; it replaces the typed word through its text edit.
pub fn to_completion_item(
    index: &LineIndex,
    encoding: Encoding,
    item: once_analysis::CompletionItem,
) -> lsp_types::CompletionItem {
    lsp_types::CompletionItem {
        label: item.label.clone(),
        kind: Some(completion_item_kind(item.kind)),
        detail: item.detail,
        documentation: item
            .documentation
            .map(|value| lsp_types::Documentation::MarkupContent(markdown(value))),
        sort_text: Some(item.sort_text),
        filter_text: Some(item.label),
        text_edit: Some(CompletionTextEdit::Edit(lsp_types::TextEdit {
            range: to_range(index, encoding, item.replace),
            new_text: item.insert_text,
        })),
        ..Default::default()
    }
}

fn completion_item_kind(kind: CompletionKind) -> CompletionItemKind {
    match kind {
        CompletionKind::Kind => CompletionItemKind::CLASS,
        CompletionKind::Attribute => CompletionItemKind::PROPERTY,
        CompletionKind::Value => CompletionItemKind::VALUE,
        CompletionKind::Label => CompletionItemKind::REFERENCE,
        CompletionKind::Key => CompletionItemKind::FIELD,
        CompletionKind::Table => CompletionItemKind::MODULE,
    }
}

fn markdown(value: String) -> MarkupContent {
    MarkupContent {
        kind: MarkupKind::Markdown,
        value,
    }
}

pub fn to_hover(index: &LineIndex, encoding: Encoding, hover: HoverInfo) -> Hover {
    Hover {
        contents: HoverContents::Markup(markdown(hover.markdown)),
        range: Some(to_range(index, encoding, hover.range)),
    }
}

/// A target as a document symbol.
pub fn to_document_symbol(
    index: &LineIndex,
    encoding: Encoding,
    symbol: TargetSymbol,
) -> DocumentSymbol {
    #[allow(deprecated, reason = "`deprecated` is a required field of the struct")]
    DocumentSymbol {
        name: symbol.name,
        detail: symbol.detail,
        kind: SymbolKind::OBJECT,
        tags: None,
        deprecated: None,
        range: to_range(index, encoding, symbol.range),
        selection_range: to_range(index, encoding, symbol.selection_range),
        children: None,
    }
}

pub fn to_text_edit(index: &LineIndex, encoding: Encoding, edit: TextEdit) -> lsp_types::TextEdit {
    lsp_types::TextEdit {
        range: to_range(index, encoding, edit.range),
        new_text: edit.new_text,
    }
}

/// A quick fix editing the document `uri`; it names those of the client's diagnostics
/// (`sent`) it fixes.
pub fn to_code_action(
    index: &LineIndex,
    encoding: Encoding,
    uri: &Uri,
    sent: &[lsp_types::Diagnostic],
    action: CodeAction,
) -> CodeActionOrCommand {
    let diagnostic_range = to_range(index, encoding, action.diagnostic_range);
    let code = Some(NumberOrString::String(action.code.clone()));
    let diagnostics: Vec<lsp_types::Diagnostic> = sent
        .iter()
        .filter(|d| d.range == diagnostic_range && d.code == code)
        .cloned()
        .collect();
    let edits = action
        .edits
        .into_iter()
        .map(|e| to_text_edit(index, encoding, e))
        .collect();
    #[allow(
        clippy::mutable_key_type,
        reason = "lsp_types::Uri is the map key the protocol uses"
    )]
    let changes = HashMap::from([(uri.clone(), edits)]);
    CodeActionOrCommand::CodeAction(lsp_types::CodeAction {
        title: action.title,
        kind: Some(lsp_types::CodeActionKind::QUICKFIX),
        diagnostics: (!diagnostics.is_empty()).then_some(diagnostics),
        edit: Some(WorkspaceEdit {
            changes: Some(changes),
            ..Default::default()
        }),
        is_preferred: Some(action.preferred),
        ..Default::default()
    })
}

/// A located diagnostic as a protocol diagnostic; repairs become related information.
pub fn to_diagnostic(
    uri: &Uri,
    index: &LineIndex,
    encoding: Encoding,
    located: &LocatedDiagnostic,
) -> lsp_types::Diagnostic {
    let d = &located.diagnostic;
    let range = located
        .range
        .map(|r| to_range(index, encoding, r))
        .unwrap_or_default();
    let related: Vec<DiagnosticRelatedInformation> = d
        .repairs
        .iter()
        .map(|repair| DiagnosticRelatedInformation {
            location: Location {
                uri: uri.clone(),
                range,
            },
            message: repair.clone(),
        })
        .collect();
    lsp_types::Diagnostic {
        range,
        severity: Some(match d.severity {
            once_analysis::ide::Severity::Error => DiagnosticSeverity::ERROR,
            once_analysis::ide::Severity::Warning => DiagnosticSeverity::WARNING,
            once_analysis::ide::Severity::Info => DiagnosticSeverity::INFORMATION,
        }),
        code: Some(NumberOrString::String(d.code.as_str().to_owned())),
        source: Some("once".into()),
        message: d.message.clone(),
        related_information: (!related.is_empty()).then_some(related),
        ..Default::default()
    }
}

/// The workspace-relative `/`-separated path of a `file:` URI inside `root`.
pub fn relative_path(root: &Path, uri: &Uri) -> Option<String> {
    let path = uri_to_path(uri)?;
    let relative = match path.strip_prefix(root) {
        Ok(relative) => relative.to_path_buf(),
        // Clients may name the workspace through a symbolic link.
        Err(_) => path
            .parent()
            .and_then(|p| p.canonicalize().ok())?
            .join(path.file_name()?)
            .strip_prefix(root)
            .ok()?
            .to_path_buf(),
    };
    let parts: Option<Vec<&str>> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect();
    Some(parts?.join("/"))
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
