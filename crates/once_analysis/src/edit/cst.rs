//! Reading the layout of a manifest's CST for format-preserving edits: the top-level
//! sections, the `[[target]]` groups (the target's table and its `[target.*]` sub-tables),
//! the key-values of a section, and the byte ranges of whole lines to remove or insert at.
//!
//! Edits are splices of text at these ranges; the caller re-parses after each edit.

use once_syntax::{SyntaxElement, SyntaxKind, SyntaxNode, TextRange};

/// A `[table]` or `[[array]]` section at the top level.
#[derive(Clone, Debug)]
pub struct Section {
    pub key: Vec<String>,
    pub array: bool,
    pub node: SyntaxNode,
}

/// One `key = value` of a section.
#[derive(Clone, Debug)]
pub struct KeyValue {
    pub key: Vec<String>,
    /// The value's text.
    pub value: TextRange,
    /// From the start of its line through its trailing comment and line end.
    pub line: TextRange,
}

/// One `[[target]]` table and the `[target.…]` sub-tables that follow it.
#[derive(Clone, Debug)]
pub struct TargetGroup {
    pub main: Section,
    pub subs: Vec<Section>,
    pub name: Option<String>,
}

/// The parsed layout of a manifest.
pub struct Layout {
    pub text: String,
    pub sections: Vec<Section>,
    pub groups: Vec<TargetGroup>,
    /// Whether a root-level `target = …` key declares targets inline.
    pub inline_targets: bool,
}

impl Layout {
    pub fn new(text: &str) -> Layout {
        let parse = once_syntax::parse(text);
        let root = parse.syntax();
        let mut sections = Vec::new();
        let mut inline_targets = false;
        for node in root.children() {
            match node.kind() {
                SyntaxKind::TABLE | SyntaxKind::ARRAY_TABLE => {
                    let key = node
                        .children()
                        .find(|c| {
                            matches!(
                                c.kind(),
                                SyntaxKind::TABLE_HEADER | SyntaxKind::ARRAY_TABLE_HEADER
                            )
                        })
                        .and_then(|h| h.children().find(|c| c.kind() == SyntaxKind::KEY))
                        .map(|k| key_segments(&k))
                        .unwrap_or_default();
                    sections.push(Section {
                        key,
                        array: node.kind() == SyntaxKind::ARRAY_TABLE,
                        node,
                    });
                }
                SyntaxKind::KEY_VALUE => {
                    if let Some(key) = node.children().find(|c| c.kind() == SyntaxKind::KEY)
                        && key_segments(&key).first().is_some_and(|k| k == "target")
                    {
                        inline_targets = true;
                    }
                }
                _ => {}
            }
        }
        let mut groups: Vec<TargetGroup> = Vec::new();
        let mut open = false;
        for section in &sections {
            if section.array && section.key == ["target"] {
                groups.push(TargetGroup {
                    main: section.clone(),
                    subs: Vec::new(),
                    name: None,
                });
                open = true;
            } else if open && section.key.len() > 1 && section.key[0] == "target" {
                if let Some(group) = groups.last_mut() {
                    group.subs.push(section.clone());
                }
            } else {
                open = false;
            }
        }
        let mut layout = Layout {
            text: text.to_owned(),
            sections,
            groups,
            inline_targets,
        };
        for index in 0..layout.groups.len() {
            let name = layout
                .key_values(&layout.groups[index].main.node)
                .into_iter()
                .find(|kv| kv.key == ["name"])
                .and_then(|kv| value_from_text(layout.slice(kv.value)))
                .and_then(|v| v.as_str().map(str::to_owned));
            layout.groups[index].name = name;
        }
        layout
    }

    pub fn slice(&self, range: TextRange) -> &str {
        &self.text[usize::from(range.start())..usize::from(range.end())]
    }

    pub fn group(&self, name: &str) -> Option<usize> {
        self.groups
            .iter()
            .position(|g| g.name.as_deref() == Some(name))
    }

    /// The key-values directly in a section, in order.
    pub fn key_values(&self, node: &SyntaxNode) -> Vec<KeyValue> {
        node.children()
            .filter(|c| c.kind() == SyntaxKind::KEY_VALUE)
            .filter_map(|kv| {
                let key = kv.children().find(|c| c.kind() == SyntaxKind::KEY)?;
                let mut after_eq = false;
                let mut value = None;
                for element in kv.children_with_tokens() {
                    if element.kind() == SyntaxKind::EQ {
                        after_eq = true;
                    } else if after_eq && !is_trivia(&element) {
                        value = Some(element.text_range());
                        break;
                    }
                }
                Some(KeyValue {
                    key: key_segments(&key),
                    value: value?,
                    line: self.line_of(kv.text_range()),
                })
            })
            .collect()
    }

    /// Extends `range` to whole lines: back over indentation to the line start, forward
    /// over spaces and a comment through the line end.
    pub fn line_of(&self, range: TextRange) -> TextRange {
        let bytes = self.text.as_bytes();
        let mut start = usize::from(range.start());
        while start > 0 && matches!(bytes[start - 1], b' ' | b'\t') {
            start -= 1;
        }
        let mut end = usize::from(range.end());
        while end < bytes.len() && matches!(bytes[end], b' ' | b'\t') {
            end += 1;
        }
        if end < bytes.len() && bytes[end] == b'#' {
            while end < bytes.len() && bytes[end] != b'\n' {
                end += 1;
            }
        }
        if end < bytes.len() && bytes[end] == b'\r' {
            end += 1;
        }
        if end < bytes.len() && bytes[end] == b'\n' {
            end += 1;
        }
        text_range(start, end)
    }

    /// Where a section's text starts, including the comment lines directly above its
    /// header (no blank line between: they describe it).
    pub fn attached_start(&self, section: &Section) -> usize {
        let mut start = usize::from(self.line_of(section.header_range()).start());
        loop {
            let before = &self.text[..start];
            let Some(previous) = before.strip_suffix('\n') else {
                break;
            };
            let previous = previous.strip_suffix('\r').unwrap_or(previous);
            let line_start = previous.rfind('\n').map_or(0, |i| i + 1);
            if previous[line_start..].trim_start().starts_with('#') {
                start = line_start;
            } else {
                break;
            }
        }
        start
    }

    /// The text of a section (with its attached comments) through the start of whatever
    /// follows it: the next section's attached comments, or the end of the text.
    pub fn section_span(&self, first: &Section, last: &Section) -> TextRange {
        let start = self.attached_start(first);
        let last_end = usize::from(last.node.text_range().end());
        let end = self
            .sections
            .iter()
            .find(|s| usize::from(s.node.text_range().start()) >= last_end)
            .map_or(self.text.len(), |next| self.attached_start(next));
        text_range(start, end.max(start))
    }

    /// Where a new key-value line goes: after the section's last key-value line, or after
    /// its header line; and the indentation of its key-values.
    pub fn insertion_point(&self, section: &Section) -> (usize, String) {
        let kvs = self.key_values(&section.node);
        match kvs.last() {
            Some(kv) => {
                let indent: String = self
                    .slice(kv.line)
                    .chars()
                    .take_while(|c| *c == ' ' || *c == '\t')
                    .collect();
                (usize::from(kv.line.end()), indent)
            }
            None => (
                usize::from(self.line_of(section.header_range()).end()),
                String::new(),
            ),
        }
    }
}

impl Section {
    pub fn header_range(&self) -> TextRange {
        self.node
            .children()
            .find(|c| {
                matches!(
                    c.kind(),
                    SyntaxKind::TABLE_HEADER | SyntaxKind::ARRAY_TABLE_HEADER
                )
            })
            .map_or(self.node.text_range(), |h| h.text_range())
    }
}

fn is_trivia(element: &SyntaxElement) -> bool {
    matches!(
        element.kind(),
        SyntaxKind::WHITESPACE | SyntaxKind::NEWLINE | SyntaxKind::COMMENT
    )
}

pub fn text_range(start: usize, end: usize) -> TextRange {
    TextRange::new((start as u32).into(), (end as u32).into())
}

/// The unescaped segments of a (possibly dotted) key.
fn key_segments(key: &SyntaxNode) -> Vec<String> {
    key.children_with_tokens()
        .filter_map(|e| e.into_token())
        .filter_map(|t| {
            let text = t.text();
            match t.kind() {
                SyntaxKind::BASIC_STRING => Some(
                    text.trim_matches('"')
                        .replace("\\\"", "\"")
                        .replace("\\\\", "\\"),
                ),
                SyntaxKind::LITERAL_STRING => Some(text.trim_matches('\'').to_owned()),
                SyntaxKind::WHITESPACE | SyntaxKind::DOT => None,
                _ => Some(text.to_owned()),
            }
        })
        .collect()
}

/// The value of a TOML value's text, when it is a valid value.
pub fn value_from_text(text: &str) -> Option<once_model::AttrValue> {
    let parse = once_syntax::parse(&format!("v = {text}\n"));
    let document = once_syntax::value::document(&parse);
    if !document.errors.is_empty() {
        return None;
    }
    document
        .root
        .get("v")
        .map(|entry| once_graph::attr_value(&entry.value))
}

/// Applies non-overlapping splices `(range, replacement)` to `text`.
pub fn splice(text: &str, mut edits: Vec<(TextRange, String)>) -> String {
    edits.sort_by_key(|(range, _)| std::cmp::Reverse((range.start(), range.end())));
    let mut out = text.to_owned();
    for (range, replacement) in edits {
        out.replace_range(
            usize::from(range.start())..usize::from(range.end()),
            &replacement,
        );
    }
    out
}
