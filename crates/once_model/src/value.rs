//! Attribute values as a manifest writes them: the TOML value space, comparable and hashable.

use std::fmt;

/// A float compared and hashed by its bits, so that values stay `Eq + Hash` (NaN equals NaN).
#[derive(Clone, Copy, Debug)]
pub struct Float(pub f64);

impl PartialEq for Float {
    fn eq(&self, other: &Float) -> bool {
        self.0.to_bits() == other.0.to_bits()
    }
}

impl Eq for Float {}

impl std::hash::Hash for Float {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.to_bits().hash(state);
    }
}

/// One attribute value. Tables keep their declaration order.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum AttrValue {
    String(String),
    Int(i64),
    Float(Float),
    Bool(bool),
    /// A TOML date, time or date-time, kept in its written form.
    Datetime(String),
    List(Vec<AttrValue>),
    Dict(Vec<(String, AttrValue)>),
}

impl AttrValue {
    /// The value's type as users read it in messages: `string`, `int`, `list`, ….
    pub fn type_name(&self) -> &'static str {
        match self {
            AttrValue::String(_) => "string",
            AttrValue::Int(_) => "int",
            AttrValue::Float(_) => "float",
            AttrValue::Bool(_) => "bool",
            AttrValue::Datetime(_) => "datetime",
            AttrValue::List(_) => "list",
            AttrValue::Dict(_) => "table",
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            AttrValue::String(s) => Some(s),
            _ => None,
        }
    }
}

impl fmt::Display for AttrValue {
    /// Renders the value in TOML inline syntax.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AttrValue::String(s) => write_toml_string(f, s),
            AttrValue::Int(i) => write!(f, "{i}"),
            AttrValue::Float(x) => {
                let x = x.0;
                if x.is_nan() {
                    f.write_str("nan")
                } else if x.is_infinite() {
                    f.write_str(if x > 0.0 { "inf" } else { "-inf" })
                } else {
                    // The shortest text that reads back as `x`, always with a `.` or an
                    // exponent (`1.0`, `0.1`, `1e308`), so TOML never reads an integer.
                    write!(f, "{x:?}")
                }
            }
            AttrValue::Bool(b) => write!(f, "{b}"),
            AttrValue::Datetime(d) => f.write_str(d),
            AttrValue::List(items) => {
                f.write_str("[")?;
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write!(f, "{item}")?;
                }
                f.write_str("]")
            }
            AttrValue::Dict(entries) => {
                if entries.is_empty() {
                    return f.write_str("{}");
                }
                f.write_str("{ ")?;
                for (i, (key, value)) in entries.iter().enumerate() {
                    if i > 0 {
                        f.write_str(", ")?;
                    }
                    write_toml_key(f, key)?;
                    write!(f, " = {value}")?;
                }
                f.write_str(" }")
            }
        }
    }
}

/// Writes `s` as a TOML basic string with every needed escape.
pub fn write_toml_string(f: &mut impl fmt::Write, s: &str) -> fmt::Result {
    f.write_char('"')?;
    for c in s.chars() {
        match c {
            '"' => f.write_str("\\\"")?,
            '\\' => f.write_str("\\\\")?,
            '\n' => f.write_str("\\n")?,
            '\t' => f.write_str("\\t")?,
            '\r' => f.write_str("\\r")?,
            c if (c as u32) < 0x20 || c == '\u{7f}' => write!(f, "\\u{:04X}", c as u32)?,
            c => f.write_char(c)?,
        }
    }
    f.write_char('"')
}

/// Writes a key bare when it may be bare, quoted otherwise.
pub fn write_toml_key(f: &mut impl fmt::Write, key: &str) -> fmt::Result {
    let bare = !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if bare {
        f.write_str(key)
    } else {
        write_toml_string(f, key)
    }
}
