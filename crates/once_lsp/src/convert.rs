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
    CodeAction, CompletionKind, HoverInfo, LineCol, LocatedDiagnostic, TargetSymbol, TextEdit,
};

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

/// A completion item; it replaces the typed word through its text edit.
pub fn to_completion_item(
    text: &str,
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
            range: to_range(text, encoding, item.replace),
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

pub fn to_hover(text: &str, encoding: Encoding, hover: HoverInfo) -> Hover {
    Hover {
        contents: HoverContents::Markup(markdown(hover.markdown)),
        range: Some(to_range(text, encoding, hover.range)),
    }
}

/// A target as a document symbol.
pub fn to_document_symbol(text: &str, encoding: Encoding, symbol: TargetSymbol) -> DocumentSymbol {
    #[allow(deprecated, reason = "`deprecated` is a required field of the struct")]
    DocumentSymbol {
        name: symbol.name,
        detail: symbol.detail,
        kind: SymbolKind::OBJECT,
        tags: None,
        deprecated: None,
        range: to_range(text, encoding, symbol.range),
        selection_range: to_range(text, encoding, symbol.selection_range),
        children: None,
    }
}

pub fn to_text_edit(text: &str, encoding: Encoding, edit: TextEdit) -> lsp_types::TextEdit {
    lsp_types::TextEdit {
        range: to_range(text, encoding, edit.range),
        new_text: edit.new_text,
    }
}

/// A quick fix editing the document `uri`; it names those of the client's diagnostics
/// (`sent`) it fixes.
pub fn to_code_action(
    text: &str,
    encoding: Encoding,
    uri: &Uri,
    sent: &[lsp_types::Diagnostic],
    action: CodeAction,
) -> CodeActionOrCommand {
    let diagnostic_range = to_range(text, encoding, action.diagnostic_range);
    let code = Some(NumberOrString::String(action.code.clone()));
    let diagnostics: Vec<lsp_types::Diagnostic> = sent
        .iter()
        .filter(|d| d.range == diagnostic_range && d.code == code)
        .cloned()
        .collect();
    let edits = action
        .edits
        .into_iter()
        .map(|e| to_text_edit(text, encoding, e))
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
    text: &str,
    encoding: Encoding,
    located: &LocatedDiagnostic,
) -> lsp_types::Diagnostic {
    let d = &located.diagnostic;
    let range = located
        .range
        .map(|r| to_range(text, encoding, r))
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
