//! Builds tables from the syntax tree and enforces TOML's definition rules.
//!
//! While building, every table remembers how it came to be ([`Origin`]):
//! TOML lets a `[header]` define a table that an earlier header only implied,
//! lets dotted keys extend only the tables dotted keys created (or define one
//! a header only implied), and never lets anything extend an inline table or
//! a static array. Inline tables and
//! arrays are therefore stored finished ([`Node::Frozen`]) as soon as read.

use std::collections::HashMap;

use rowan::TextRange;

use super::literal;
use super::{Entry, Float, Table, Value, ValueKind};
use crate::SyntaxKind::{self, *};
use crate::{SyntaxElement, SyntaxError, SyntaxNode};

/// Longer keys are rejected, which bounds (with the parser's nesting limit)
/// how deeply tables nest, and so the recursion that builds and drops them.
const MAX_KEY_SEGMENTS: usize = crate::parser::MAX_NESTING;

/// Reads the root node of a parse into the root table.
pub(crate) fn build(root: &SyntaxNode) -> (Table, Vec<SyntaxError>) {
    let mut reader = Reader { errors: Vec::new() };
    let mut table = BuildTable::new(Origin::Header, root.text_range(), None);
    for child in root.children() {
        match child.kind() {
            KEY_VALUE => reader.insert_key_value(&mut table, &child),
            TABLE | ARRAY_TABLE => reader.table_section(&mut table, &child),
            _ => {}
        }
    }
    (table.finish(), reader.errors)
}

/// How a table came to be, which decides what may extend it later.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Origin {
    /// Named on the way to another header (`a` in `[a.b]`); a later `[a]`
    /// or a dotted key may still define it.
    Implied,
    /// Defined by a `[header]`, an element of `[[header]]`, or the root.
    Header,
    /// Created by a dotted key (`a` in `a.b = 1`).
    Dotted,
}

struct BuildTable {
    entries: Vec<BuildEntry>,
    index: HashMap<String, usize>,
    origin: Origin,
    range: TextRange,
    header_range: Option<TextRange>,
}

struct BuildEntry {
    key: String,
    key_range: TextRange,
    node: Node,
}

enum Node {
    /// A table still open to definitions.
    Table(BuildTable),
    /// An array of tables made by `[[header]]`, open to more elements.
    TableArray {
        tables: Vec<BuildTable>,
        range: TextRange,
    },
    /// A scalar, a static array or an inline table: nothing may change it.
    Frozen(Value),
}

impl Node {
    fn description(&self) -> &'static str {
        match self {
            Node::Table(table) => match table.origin {
                Origin::Implied | Origin::Header => "a table",
                Origin::Dotted => "a table defined by dotted keys",
            },
            Node::TableArray { .. } => "an array of tables",
            Node::Frozen(value) => match value.kind {
                ValueKind::Table(_) => "an inline table",
                ValueKind::Array(_) => "an array",
                ValueKind::String(_) => "a string",
                ValueKind::Integer(_) => "an integer",
                ValueKind::Float(_) => "a float",
                ValueKind::Boolean(_) => "a boolean",
                ValueKind::Datetime(_) => "a date-time",
            },
        }
    }
}

impl BuildTable {
    fn new(origin: Origin, range: TextRange, header_range: Option<TextRange>) -> BuildTable {
        BuildTable {
            entries: Vec::new(),
            index: HashMap::new(),
            origin,
            range,
            header_range,
        }
    }

    /// The index of `key`, adding it with `make()` if absent.
    fn entry_index(&mut self, segment: &Segment, make: impl FnOnce() -> Node) -> usize {
        if let Some(&index) = self.index.get(&segment.key) {
            return index;
        }
        let index = self.entries.len();
        self.entries.push(BuildEntry {
            key: segment.key.clone(),
            key_range: segment.range,
            node: make(),
        });
        self.index.insert(segment.key.clone(), index);
        index
    }

    fn node_mut(&mut self, index: usize) -> Option<&mut Node> {
        self.entries.get_mut(index).map(|entry| &mut entry.node)
    }

    fn finish(self) -> Table {
        Table {
            entries: self
                .entries
                .into_iter()
                .map(|entry| Entry {
                    key: entry.key,
                    key_range: entry.key_range,
                    value: entry.node.finish(),
                })
                .collect(),
            header_range: self.header_range,
        }
    }

    fn into_value(self) -> Value {
        let range = self.range;
        Value {
            kind: ValueKind::Table(self.finish()),
            range,
        }
    }
}

impl Node {
    fn finish(self) -> Value {
        match self {
            Node::Table(table) => table.into_value(),
            Node::TableArray { tables, range } => Value {
                kind: ValueKind::Array(tables.into_iter().map(BuildTable::into_value).collect()),
                range,
            },
            Node::Frozen(value) => value,
        }
    }
}

/// One segment of a dotted key, unescaped.
struct Segment {
    key: String,
    range: TextRange,
}

/// Where a table section writes: a path of entry indices from the root,
/// with the element index for arrays of tables.
#[derive(Clone, Copy)]
struct Step {
    entry: usize,
    element: Option<usize>,
}

fn table_at<'a>(root: &'a mut BuildTable, path: &[Step]) -> Option<&'a mut BuildTable> {
    let mut current = root;
    for step in path {
        current = match current.node_mut(step.entry)? {
            Node::Table(table) => table,
            Node::TableArray { tables, .. } => tables.get_mut(step.element?)?,
            Node::Frozen(_) => return None,
        };
    }
    Some(current)
}

fn dotted_name(segments: &[Segment]) -> String {
    let parts: Vec<&str> = segments
        .iter()
        .map(|segment| segment.key.as_str())
        .collect();
    parts.join(".")
}

struct Reader {
    errors: Vec<SyntaxError>,
}

impl Reader {
    fn error(&mut self, message: String, range: TextRange) {
        self.errors.push(SyntaxError { message, range });
    }

    /// A `[header]` or `[[header]]` section and its key-values.
    fn table_section(&mut self, root: &mut BuildTable, section: &SyntaxNode) {
        let Some(header) = section
            .children()
            .find(|node| matches!(node.kind(), TABLE_HEADER | ARRAY_TABLE_HEADER))
        else {
            return;
        };
        let header_range = header.text_range();
        let is_array = header.kind() == ARRAY_TABLE_HEADER;
        let path = header
            .children()
            .find(|node| node.kind() == KEY)
            .and_then(|key| self.key_segments(&key))
            .and_then(|segments| self.define_header(root, &segments, header_range, is_array));
        // Entries under a header that could not be defined are still read for
        // their own errors, into a table that is then dropped.
        let mut detached = BuildTable::new(Origin::Header, header_range, Some(header_range));
        for key_value in section.children().filter(|node| node.kind() == KEY_VALUE) {
            let target = match &path {
                Some(path) => table_at(root, path),
                None => None,
            };
            match target {
                Some(table) => self.insert_key_value(table, &key_value),
                None => self.insert_key_value(&mut detached, &key_value),
            }
        }
    }

    /// Resolves a header path, defining its table; the path to it on success.
    fn define_header(
        &mut self,
        root: &mut BuildTable,
        segments: &[Segment],
        header_range: TextRange,
        is_array: bool,
    ) -> Option<Vec<Step>> {
        let (last, parents) = segments.split_last()?;
        let mut path = Vec::with_capacity(segments.len());
        let mut current = root;
        for (depth, segment) in parents.iter().enumerate() {
            let index = current.entry_index(segment, || {
                Node::Table(BuildTable::new(Origin::Implied, header_range, None))
            });
            current = match current.node_mut(index)? {
                Node::Table(table) => {
                    path.push(Step {
                        entry: index,
                        element: None,
                    });
                    table
                }
                Node::TableArray { tables, .. } => {
                    let element = tables.len().checked_sub(1)?;
                    path.push(Step {
                        entry: index,
                        element: Some(element),
                    });
                    tables.get_mut(element)?
                }
                frozen @ Node::Frozen(_) => {
                    let message = format!(
                        "cannot define a table inside `{}`: it is {}",
                        dotted_name(segments.get(..=depth).unwrap_or_default()),
                        frozen.description()
                    );
                    self.error(message, segment.range);
                    return None;
                }
            };
        }
        let name = dotted_name(segments);
        let index = match current.index.get(&last.key).copied() {
            None if is_array => {
                let table = BuildTable::new(Origin::Header, header_range, Some(header_range));
                let node = Node::TableArray {
                    tables: vec![table],
                    range: header_range,
                };
                let index = current.entry_index(last, || node);
                path.push(Step {
                    entry: index,
                    element: Some(0),
                });
                return Some(path);
            }
            None => {
                let table = BuildTable::new(Origin::Header, header_range, Some(header_range));
                let index = current.entry_index(last, || Node::Table(table));
                path.push(Step {
                    entry: index,
                    element: None,
                });
                return Some(path);
            }
            Some(index) => index,
        };
        let problem = match (current.node_mut(index)?, is_array) {
            (Node::TableArray { tables, .. }, true) => {
                tables.push(BuildTable::new(
                    Origin::Header,
                    header_range,
                    Some(header_range),
                ));
                path.push(Step {
                    entry: index,
                    element: Some(tables.len() - 1),
                });
                return Some(path);
            }
            (Node::Table(table), false) if table.origin == Origin::Implied => {
                table.origin = Origin::Header;
                table.header_range = Some(header_range);
                table.range = header_range;
                path.push(Step {
                    entry: index,
                    element: None,
                });
                return Some(path);
            }
            (Node::Table(table), false) if table.origin == Origin::Header => {
                format!("table `{name}` is defined more than once")
            }
            (node, true) => format!(
                "cannot append to `{name}` with `[[{name}]]`: it is {}",
                node.description()
            ),
            (node, false) => format!(
                "cannot define table `{name}`: it is already {}",
                node.description()
            ),
        };
        self.error(problem, last.range);
        None
    }

    /// `key = value` into `table`, creating the tables of a dotted key.
    fn insert_key_value(&mut self, table: &mut BuildTable, key_value: &SyntaxNode) {
        let Some(segments) = key_value
            .children()
            .find(|node| node.kind() == KEY)
            .and_then(|key| self.key_segments(&key))
        else {
            return;
        };
        let Some(value_element) = key_value
            .children_with_tokens()
            .find(|element| element.kind().is_value())
        else {
            return;
        };
        let Some(value) = self.read_value(&value_element) else {
            return;
        };
        let Some((last, parents)) = segments.split_last() else {
            return;
        };
        let key_value_range = key_value.text_range();
        let mut current = table;
        for (depth, segment) in parents.iter().enumerate() {
            let index = current.entry_index(segment, || {
                Node::Table(BuildTable::new(Origin::Dotted, key_value_range, None))
            });
            let name = || dotted_name(segments.get(..=depth).unwrap_or_default());
            let problem = match current.entries.get(index).map(|entry| &entry.node) {
                Some(Node::Table(table)) if table.origin == Origin::Dotted => None,
                // A table only named by a header path: the dotted key defines it.
                Some(Node::Table(table)) if table.origin == Origin::Implied => None,
                Some(Node::Table(_)) => Some(format!(
                    "cannot add keys to table `{}` with a dotted key: it is defined by a header",
                    name()
                )),
                Some(node) => Some(format!(
                    "cannot add keys to `{}` with a dotted key: it is {}",
                    name(),
                    node.description()
                )),
                None => return,
            };
            if let Some(message) = problem {
                self.error(message, segment.range);
                return;
            }
            current = match current.node_mut(index) {
                Some(Node::Table(table)) => {
                    table.origin = Origin::Dotted;
                    table
                }
                _ => return,
            };
        }
        if current.index.contains_key(&last.key) {
            let name = dotted_name(&segments);
            self.error(format!("duplicate key `{name}`"), last.range);
            return;
        }
        current.entry_index(last, || Node::Frozen(value));
    }

    /// The unescaped segments of a key; `None` when the key is incomplete
    /// (the parser has reported that).
    fn key_segments(&mut self, key: &SyntaxNode) -> Option<Vec<Segment>> {
        let mut segments = Vec::new();
        let mut dots = 0;
        for token in key
            .children_with_tokens()
            .filter_map(SyntaxElement::into_token)
        {
            let kind = token.kind();
            if kind == DOT {
                dots += 1;
            } else if kind == BARE_KEY {
                segments.push(Segment {
                    key: token.text().to_string(),
                    range: token.text_range(),
                });
            } else if kind.is_string() {
                let key = self.decode_string(kind, token.text(), token.text_range());
                segments.push(Segment {
                    key,
                    range: token.text_range(),
                });
            }
        }
        if segments.len() > MAX_KEY_SEGMENTS {
            let message = format!("a key may have at most {MAX_KEY_SEGMENTS} dotted segments");
            self.error(message, key.text_range());
            return None;
        }
        (!segments.is_empty() && segments.len() == dots + 1).then_some(segments)
    }

    fn decode_string(&mut self, kind: SyntaxKind, text: &str, range: TextRange) -> String {
        literal::decode_string(kind, text, range.start(), &mut self.errors)
    }

    /// A scalar token, array or inline table; `None` when it cannot be decoded.
    fn read_value(&mut self, element: &SyntaxElement) -> Option<Value> {
        let range = element.text_range();
        let kind = match element {
            SyntaxElement::Node(node) => match node.kind() {
                ARRAY => ValueKind::Array(
                    node.children_with_tokens()
                        .filter(|child| child.kind().is_value())
                        .filter_map(|child| self.read_value(&child))
                        .collect(),
                ),
                INLINE_TABLE => {
                    let mut table = BuildTable::new(Origin::Header, range, None);
                    for key_value in node.children().filter(|child| child.kind() == KEY_VALUE) {
                        self.insert_key_value(&mut table, &key_value);
                    }
                    ValueKind::Table(table.finish())
                }
                _ => return None,
            },
            SyntaxElement::Token(token) => {
                let text = token.text();
                let decoded = match token.kind() {
                    kind if kind.is_string() => {
                        Ok(ValueKind::String(self.decode_string(kind, text, range)))
                    }
                    INTEGER => literal::decode_integer(text).map(ValueKind::Integer),
                    FLOAT => {
                        literal::decode_float(text).map(|float| ValueKind::Float(Float(float)))
                    }
                    BOOLEAN => Ok(ValueKind::Boolean(text == "true")),
                    DATETIME => literal::decode_datetime(text).map(ValueKind::Datetime),
                    _ => return None,
                };
                match decoded {
                    Ok(kind) => kind,
                    Err(message) => {
                        self.error(message, range);
                        return None;
                    }
                }
            }
        };
        Some(Value { kind, range })
    }
}
