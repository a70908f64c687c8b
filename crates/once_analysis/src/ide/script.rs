//! Editor answers for annotated scripts (any workspace file that is neither a manifest
//! nor a Starlark module): completion of `once` directive keywords in header comments,
//! hover on a directive's keyword (what it declares) and value (the workspace path it
//! names), and go-to-definition from a `needs` value to the script it names. All from the
//! tracked `script_contract` query, so an edit re-parses only the edited script.

use once_db::{Db as _, RootDatabase};
use once_graph::script::{KEYWORDS, keyword_docs, script_contract};
use once_model::{LineCol, LineColRange, TextRange};

use super::{CompletionItem, CompletionKind, FileRange, HoverInfo};

/// The comment prefixes of a header line, longest first.
const PREFIXES: &[&str] = &["//", "--", "#", ";", "%"];

/// Whether `path` is a file the script answers apply to.
pub(super) fn is_script(path: &str) -> bool {
    let name = path.rsplit('/').next().unwrap_or(path);
    name != "once.toml" && !name.ends_with(".star") && !name.is_empty()
}

/// Keyword completions when the cursor is where a directive's keyword goes: in a comment
/// line after `once `, before anything else but the keyword typed so far.
pub(super) fn completions(db: &RootDatabase, path: &str, at: LineCol) -> Vec<CompletionItem> {
    let file = db.file_for_path(path);
    let index = once_db::line_index(db, file);
    let offset = index.offset(at) as usize;
    let text = index.text();
    let line_start = text[..offset.min(text.len())]
        .rfind('\n')
        .map_or(0, |i| i + 1);
    if line_start == 0 {
        return Vec::new();
    }
    let before = &text[line_start..offset.min(text.len())];
    let trimmed = before.trim_start();
    let Some(prefix) = PREFIXES.iter().find(|p| trimmed.starts_with(**p)) else {
        return Vec::new();
    };
    let after_prefix = trimmed[prefix.len()..].trim_start();
    let Some(rest) = after_prefix.strip_prefix("once") else {
        return Vec::new();
    };
    if !rest.starts_with(char::is_whitespace) {
        return Vec::new();
    }
    let typed = rest.trim_start();
    if typed.contains(|c: char| c.is_whitespace() || c == '"') {
        return Vec::new();
    }
    let replace_start = offset - typed.len();
    let replace = index.range(TextRange::new(replace_start as u32, offset as u32));
    KEYWORDS
        .iter()
        .filter(|keyword| keyword.starts_with(typed))
        .enumerate()
        .map(|(order, keyword)| CompletionItem {
            label: (*keyword).to_owned(),
            kind: CompletionKind::Key,
            detail: Some("once directive".to_owned()),
            documentation: keyword_docs(keyword).map(str::to_owned),
            insert_text: format!("{keyword} \"\""),
            replace,
            sort_text: format!("{order:02}"),
        })
        .collect()
}

/// Hover on a directive's keyword or value.
pub(super) fn hover(db: &RootDatabase, path: &str, at: LineCol) -> Option<HoverInfo> {
    let file = db.file_for_path(path);
    let index = once_db::line_index(db, file);
    let offset = index.offset(at);
    let parse = script_contract(db, file);
    let inside = |range: TextRange| range.start <= offset && offset <= range.end;
    for directive in &parse.directives {
        if inside(directive.keyword_range) {
            let docs = keyword_docs(&directive.keyword)?;
            return Some(HoverInfo {
                markdown: format!("**once directive** `{}`\n\n{docs}", directive.keyword),
                range: index.range(directive.keyword_range),
            });
        }
        if let (Some(value), Some(range)) = (&directive.value, directive.value_range)
            && inside(range)
        {
            let markdown = match directive.keyword.as_str() {
                "input" | "output" | "needs" | "cwd" => {
                    let resolved = resolve(path, value)
                        .unwrap_or_else(|| "(outside the workspace)".to_owned());
                    format!(
                        "**{}** `{value}`\n\nWorkspace path: `{resolved}`",
                        directive.keyword
                    )
                }
                "env" => format!(
                    "**env** `{value}`\n\nThe variable's value is passed to the script and joins its cache key."
                ),
                _ => format!("**{}** `{value}`", directive.keyword),
            };
            return Some(HoverInfo {
                markdown,
                range: index.range(range),
            });
        }
    }
    None
}

/// From a `needs` value to the script it names.
pub(super) fn definition(db: &RootDatabase, path: &str, at: LineCol) -> Vec<FileRange> {
    let file = db.file_for_path(path);
    let index = once_db::line_index(db, file);
    let offset = index.offset(at);
    script_contract(db, file)
        .directives
        .iter()
        .filter(|d| d.keyword == "needs")
        .filter_map(|d| {
            let range = d.value_range?;
            (range.start <= offset && offset <= range.end).then_some(d.value.as_deref()?)
        })
        .filter_map(|value| resolve(path, value))
        .map(|file| FileRange {
            file,
            range: LineColRange {
                start: LineCol { line: 1, column: 1 },
                end: LineCol { line: 1, column: 1 },
            },
        })
        .collect()
}

/// `value` relative to the directory of the script at `path`, as a workspace path.
fn resolve(path: &str, value: &str) -> Option<String> {
    if value.starts_with('/') {
        return None;
    }
    let directory = path.rsplit_once('/').map_or("", |(dir, _)| dir);
    let joined = once_model::paths::lexical_join(directory, value)?;
    Some(if joined.is_empty() {
        ".".to_owned()
    } else {
        joined
    })
}
