//! Where the cursor is in a manifest, read from its CST ([`once_graph::parse_manifest`]):
//! in a table header, at a key or in a value, and the path of the table around it (the
//! header's keys, then the keys of the inline tables and dotted keys the cursor is inside),
//! so `[target.attrs]` and `attrs = { … }` in a `[[target]]` are the same place.

use once_syntax::{SyntaxKind, SyntaxNode, SyntaxToken, TextSize};

/// What is being typed at the cursor. Offsets are byte offsets into the manifest.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Place {
    /// A table header; the replaced text starts at `from`.
    Header { from: u32 },
    /// A key of the table; the typed key starts at `from`. `present` are the keys already
    /// written in the table around the cursor.
    Key { from: u32, present: Vec<String> },
    /// The value of `key`: `string` is where the content of the open string under the cursor
    /// starts, `from` where the typed value starts.
    Value {
        key: String,
        string: Option<u32>,
        from: u32,
    },
}

/// The cursor's place and the table it is in.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Cursor {
    /// The key path of the table: `["target"]` in a `[[target]]`, `["target", "attrs"]` in
    /// `[target.attrs]` or in `attrs = { … }`, empty at the top level.
    pub(super) table: Vec<String>,
    pub(super) place: Place,
}

/// The cursor at `offset` of the tree `root`, or `None` where nothing can be completed
/// (inside a comment, after a complete value on its line).
pub(super) fn cursor_at(root: &SyntaxNode, offset: u32) -> Option<Cursor> {
    let token = root.token_at_offset(TextSize::from(offset)).left_biased()?;
    if token.kind() == SyntaxKind::COMMENT || u32::from(token.text_range().start()) >= offset {
        // On a comment, or before the first token: only a key at the very start.
        let at_start = token.kind() != SyntaxKind::COMMENT && offset == 0;
        return at_start.then(|| Cursor {
            table: Vec::new(),
            place: Place::Key {
                from: offset,
                present: present_keys(root, &[], offset),
            },
        });
    }
    if let Some(header) = token.parent_ancestors().find(|n| {
        matches!(
            n.kind(),
            SyntaxKind::TABLE_HEADER | SyntaxKind::ARRAY_TABLE_HEADER
        )
    }) {
        let from = u32::from(header.text_range().start());
        return Some(Cursor {
            table: Vec::new(),
            place: Place::Header { from },
        });
    }
    let mut table = table_path(&token);
    // The key-value pairs around the cursor, outermost first, and whether the cursor is
    // directly in an inline table (between its pairs) rather than in the innermost pair.
    let containers: Vec<SyntaxNode> = token
        .parent_ancestors()
        .take_while(|n| !matches!(n.kind(), SyntaxKind::TABLE | SyntaxKind::ARRAY_TABLE))
        .filter(|n| matches!(n.kind(), SyntaxKind::KEY_VALUE | SyntaxKind::INLINE_TABLE))
        .collect();
    let between_pairs = containers
        .first()
        .is_none_or(|n| n.kind() == SyntaxKind::INLINE_TABLE);
    let mut pairs: Vec<&SyntaxNode> = containers
        .iter()
        .filter(|n| n.kind() == SyntaxKind::KEY_VALUE)
        .collect();
    pairs.reverse();
    let innermost = if between_pairs { None } else { pairs.pop() };
    for pair in &pairs {
        table.extend(key_segments(pair).into_iter().map(|(segment, _)| segment));
    }
    let Some(innermost) = innermost else {
        let container = token.parent_ancestors().find(|n| {
            matches!(
                n.kind(),
                SyntaxKind::INLINE_TABLE | SyntaxKind::TABLE | SyntaxKind::ARRAY_TABLE
            )
        });
        let present = present_keys(&container.unwrap_or_else(|| root.clone()), &[], offset);
        return starts_a_key(&token).then_some(Cursor {
            table,
            place: Place::Key {
                from: offset,
                present,
            },
        });
    };
    let outer = table.len();
    let mut place = place_in_pair(innermost, &token, offset, &mut table)?;
    if let (Place::Key { present, .. }, Some(container)) = (&mut place, innermost.parent()) {
        *present = present_keys(&container, &table[outer..], offset);
    }
    Some(Cursor { table, place })
}

/// Whether only whitespace stands between the token's end and the start of its line or
/// the `{` or `,` before it in an inline table: a new key may start there.
fn starts_a_key(token: &SyntaxToken) -> bool {
    let mut current = Some(token.clone());
    while let Some(t) = current {
        match t.kind() {
            SyntaxKind::NEWLINE | SyntaxKind::L_BRACE | SyntaxKind::COMMA => return true,
            SyntaxKind::WHITESPACE => current = t.prev_token(),
            _ => return false,
        }
    }
    true
}

/// The keys written in `container` below the dotted `prefix`, but for the one at `offset`.
fn present_keys(container: &SyntaxNode, prefix: &[String], offset: u32) -> Vec<String> {
    container
        .children()
        .filter(|n| n.kind() == SyntaxKind::KEY_VALUE)
        .filter(|n| !n.text_range().contains_inclusive(TextSize::from(offset)))
        .filter_map(|pair| {
            let segments: Vec<String> = key_segments(&pair).into_iter().map(|(s, _)| s).collect();
            let rest = segments.strip_prefix(prefix)?;
            rest.first().cloned()
        })
        .collect()
}

/// The key path of the `[table]` or `[[table]]` holding the token; empty at the top level.
fn table_path(token: &SyntaxToken) -> Vec<String> {
    let Some(table) = token
        .parent_ancestors()
        .find(|n| matches!(n.kind(), SyntaxKind::TABLE | SyntaxKind::ARRAY_TABLE))
    else {
        return Vec::new();
    };
    table
        .children()
        .find(|n| {
            matches!(
                n.kind(),
                SyntaxKind::TABLE_HEADER | SyntaxKind::ARRAY_TABLE_HEADER
            )
        })
        .map(|header| key_segments(&header).into_iter().map(|(s, _)| s).collect())
        .unwrap_or_default()
}

/// The segments of the key of a pair or header, unquoted, with their start offsets.
fn key_segments(node: &SyntaxNode) -> Vec<(String, u32)> {
    let Some(key) = node.children().find(|n| n.kind() == SyntaxKind::KEY) else {
        return Vec::new();
    };
    key.children_with_tokens()
        .filter_map(|e| e.into_token())
        .filter(|t| t.kind().is_key_segment())
        .map(|t| {
            let text = t.text();
            let unquoted = text.trim_matches(|c| c == '"' || c == '\'');
            (unquoted.to_owned(), u32::from(t.text_range().start()))
        })
        .collect()
}

/// The place of the cursor in its innermost pair; dotted key segments before the last
/// join `table`.
fn place_in_pair(
    pair: &SyntaxNode,
    token: &SyntaxToken,
    offset: u32,
    table: &mut Vec<String>,
) -> Option<Place> {
    let mut segments = key_segments(pair);
    let (key, key_start) = segments.pop()?;
    table.extend(segments.into_iter().map(|(s, _)| s));
    let eq_end = pair
        .children_with_tokens()
        .filter_map(|e| e.into_token())
        .find(|t| t.kind() == SyntaxKind::EQ)
        .map(|eq| u32::from(eq.text_range().end()));
    if eq_end.is_none_or(|end| offset < end) {
        return Some(Place::Key {
            from: key_start,
            present: Vec::new(),
        });
    }
    let start = u32::from(token.text_range().start());
    let string = (is_open_string_at(token, offset)).then_some(start + 1);
    let typed = !token.kind().is_trivia() && !is_punctuation(token.kind());
    Some(Place::Value {
        key,
        string,
        from: if typed { start } else { offset },
    })
}

/// Whether `offset` is inside the content of a one-line string token (after its opening
/// quote, and before its closing one if it has one).
fn is_open_string_at(token: &SyntaxToken, offset: u32) -> bool {
    let kind = token.kind();
    if !matches!(kind, SyntaxKind::BASIC_STRING | SyntaxKind::LITERAL_STRING) {
        return false;
    }
    let range = token.text_range();
    let text = token.text();
    let quote = if kind == SyntaxKind::BASIC_STRING {
        '"'
    } else {
        '\''
    };
    let closed = text.len() >= 2 && text.ends_with(quote) && !text.ends_with("\\\"");
    offset > u32::from(range.start()) && (!closed || offset < u32::from(range.end()))
}

fn is_punctuation(kind: SyntaxKind) -> bool {
    use SyntaxKind::*;
    matches!(
        kind,
        EQ | DOT | COMMA | L_BRACK | R_BRACK | L_BRACE | R_BRACE
    )
}

/// A key of a manifest under the cursor, in a pair or a header.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct KeyAt {
    /// The key path of the table the key belongs to.
    pub(super) table: Vec<String>,
    pub(super) name: String,
    /// Byte offsets of the key's text.
    pub(super) start: u32,
    pub(super) end: u32,
}

/// The key segment touching `offset`, with the path of the table it is a key of.
pub(super) fn key_at(root: &SyntaxNode, offset: u32) -> Option<KeyAt> {
    let token = root
        .token_at_offset(TextSize::from(offset))
        .find(|t| t.kind().is_key_segment())?;
    let owner = token.parent()?.parent()?;
    let start = u32::from(token.text_range().start());
    let end = u32::from(token.text_range().end());
    let segments = key_segments(&owner);
    let index = segments.iter().position(|(_, s)| *s == start)?;
    let mut table = match owner.kind() {
        SyntaxKind::TABLE_HEADER | SyntaxKind::ARRAY_TABLE_HEADER => Vec::new(),
        SyntaxKind::KEY_VALUE => {
            let mut table = table_path(&token);
            let outer: Vec<SyntaxNode> = owner
                .ancestors()
                .skip(1)
                .take_while(|n| !matches!(n.kind(), SyntaxKind::TABLE | SyntaxKind::ARRAY_TABLE))
                .filter(|n| n.kind() == SyntaxKind::KEY_VALUE)
                .collect();
            for pair in outer.iter().rev() {
                table.extend(key_segments(pair).into_iter().map(|(s, _)| s));
            }
            table
        }
        _ => return None,
    };
    let mut segments = segments.into_iter().map(|(s, _)| s);
    table.extend(segments.by_ref().take(index));
    Some(KeyAt {
        table,
        name: segments.next()?,
        start,
        end,
    })
}
