//! The value layer: reads a syntax tree into TOML tables and values that keep
//! their source ranges, and reports the semantic errors TOML requires.
//!
//! [`document`] never panics. On errors it still returns everything it could
//! read: an entry whose value cannot be decoded (an overflowing integer, a
//! malformed date) is left out; a string with a bad escape keeps the escape
//! as written; entries under a header that cannot be defined are dropped.

mod builder;
mod literal;

use std::hash::{Hash, Hasher};

use rowan::TextRange;

use crate::{Parse, SyntaxError};

/// A whole TOML document: the root table and every error, parse errors and
/// semantic errors alike, sorted by range start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Document {
    pub root: Table,
    pub errors: Vec<SyntaxError>,
}

/// Reads the document of a parse.
pub fn document(parse: &Parse) -> Document {
    let (root, semantic_errors) = builder::build(&parse.syntax());
    let mut errors = parse.errors().to_vec();
    errors.extend(semantic_errors);
    errors.sort_by_key(|error| (error.range.start(), error.range.end()));
    Document { root, errors }
}

/// A table, with its entries in document order.
#[derive(Clone, Debug, PartialEq, Eq, Default)]
pub struct Table {
    pub entries: Vec<Entry>,
    /// The `[header]` or `[[header]]` text that defined this table, if any.
    pub header_range: Option<TextRange>,
}

impl Table {
    /// The entry for `key`, if present.
    pub fn get(&self, key: &str) -> Option<&Entry> {
        self.entries.iter().find(|entry| entry.key == key)
    }
}

/// One key of a table with its value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    /// The unescaped key (one segment of a possibly dotted key).
    pub key: String,
    /// The text of this key segment.
    pub key_range: TextRange,
    pub value: Value,
}

/// A value with the range of its text.
///
/// For a table defined by a header the range is the header; for an implicit
/// table (the `a` in `a.b = 1` or in `[a.b]`) it is the key-value or header
/// that created it; for an array of tables it is the first header.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Value {
    pub kind: ValueKind,
    pub range: TextRange,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ValueKind {
    String(String),
    Integer(i64),
    Float(Float),
    Boolean(bool),
    Datetime(Datetime),
    Array(Vec<Value>),
    Table(Table),
}

impl ValueKind {
    /// The TOML type name: `string`, `integer`, `float`, `boolean`,
    /// `datetime`, `array` or `table`.
    pub fn type_name(&self) -> &'static str {
        match self {
            ValueKind::String(_) => "string",
            ValueKind::Integer(_) => "integer",
            ValueKind::Float(_) => "float",
            ValueKind::Boolean(_) => "boolean",
            ValueKind::Datetime(_) => "datetime",
            ValueKind::Array(_) => "array",
            ValueKind::Table(_) => "table",
        }
    }
}

/// A float compared and hashed by its bits, so `nan == nan` and `0.0 != -0.0`.
#[derive(Clone, Copy, Debug)]
pub struct Float(pub f64);

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

impl Hash for Float {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// Which of TOML's four date-time types a value is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DatetimeKind {
    OffsetDateTime,
    LocalDateTime,
    LocalDate,
    LocalTime,
}

/// A valid date-time as written in the document.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Datetime {
    pub kind: DatetimeKind,
    pub text: String,
}

impl Datetime {
    /// The RFC 3339 form: `T` separator, upper-case `Z`, seconds always
    /// present, fraction without trailing zeros (at most nine digits),
    /// offsets as `+HH:MM`.
    pub fn normalized(&self) -> String {
        let Ok(parts) = literal::datetime_parts(&self.text) else {
            return self.text.clone();
        };
        let mut out = String::new();
        if let Some((year, month, day)) = parts.date {
            out.push_str(&format!("{year:04}-{month:02}-{day:02}"));
        }
        if let Some((hour, minute, second, fraction)) = parts.time {
            if parts.date.is_some() {
                out.push('T');
            }
            out.push_str(&format!("{hour:02}:{minute:02}:{second:02}"));
            let fraction = fraction
                .get(..fraction.len().min(9))
                .unwrap_or_default()
                .trim_end_matches('0');
            if !fraction.is_empty() {
                out.push('.');
                out.push_str(fraction);
            }
        }
        match parts.offset {
            Some(None) => out.push('Z'),
            Some(Some(minutes)) => {
                let sign = if minutes < 0 { '-' } else { '+' };
                let minutes = minutes.unsigned_abs();
                out.push_str(&format!("{sign}{:02}:{:02}", minutes / 60, minutes % 60));
            }
            None => {}
        }
        out
    }
}

#[cfg(test)]
mod tests;
