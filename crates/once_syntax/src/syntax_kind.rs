//! The kinds of tokens and nodes in a TOML syntax tree, and the rowan
//! [`Language`](rowan::Language) tying them together.

/// Every kind of token and node the TOML parser produces.
///
/// Tokens come first, then nodes; `__LAST` bounds the range for the
/// `u16` conversion.
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[repr(u16)]
pub enum SyntaxKind {
    // Trivia.
    /// Spaces and tabs.
    WHITESPACE = 0,
    /// `\n` or `\r\n`.
    NEWLINE,
    /// `# ...` up to, not including, the line end.
    COMMENT,
    /// A byte order mark at the very start of the document.
    BOM,

    // Punctuation.
    EQ,
    DOT,
    COMMA,
    L_BRACK,
    R_BRACK,
    L_BRACE,
    R_BRACE,

    // Keys and scalar values.
    /// A bare key segment: `[A-Za-z0-9_-]+`.
    BARE_KEY,
    /// `"..."`
    BASIC_STRING,
    /// `"""..."""`
    MULTI_LINE_BASIC_STRING,
    /// `'...'`
    LITERAL_STRING,
    /// `'''...'''`
    MULTI_LINE_LITERAL_STRING,
    /// Anything shaped like an integer; validated by the value layer.
    INTEGER,
    /// Anything shaped like a float (`.`, exponent, `inf`, `nan`).
    FLOAT,
    /// `true` or `false`.
    BOOLEAN,
    /// Anything shaped like a date, time or date-time.
    DATETIME,
    /// Text the lexer could not make sense of.
    ERROR_TOKEN,

    // Nodes.
    /// The whole document.
    ROOT,
    /// A `[table]` header with the key-values that follow it.
    TABLE,
    /// A `[[array.of.tables]]` header with the key-values that follow it.
    ARRAY_TABLE,
    /// `[key]`
    TABLE_HEADER,
    /// `[[key]]`
    ARRAY_TABLE_HEADER,
    /// `key = value`
    KEY_VALUE,
    /// A possibly dotted key: segments, dots and the whitespace between.
    KEY,
    /// `[ value, ... ]`
    ARRAY,
    /// `{ key = value, ... }`
    INLINE_TABLE,
    /// Tokens skipped during error recovery.
    ERROR,

    #[doc(hidden)]
    __LAST,
}

use SyntaxKind::*;

impl SyntaxKind {
    /// Whitespace, newlines, comments and the byte order mark.
    pub fn is_trivia(self) -> bool {
        matches!(self, WHITESPACE | NEWLINE | COMMENT | BOM)
    }

    /// Any of the four string token kinds.
    pub fn is_string(self) -> bool {
        matches!(
            self,
            BASIC_STRING | MULTI_LINE_BASIC_STRING | LITERAL_STRING | MULTI_LINE_LITERAL_STRING
        )
    }

    /// `"""…"""` or `'''…'''`.
    pub fn is_multi_line_string(self) -> bool {
        matches!(self, MULTI_LINE_BASIC_STRING | MULTI_LINE_LITERAL_STRING)
    }

    /// A token or node that can stand in value position.
    pub fn is_value(self) -> bool {
        self.is_string()
            || matches!(
                self,
                INTEGER | FLOAT | BOOLEAN | DATETIME | ARRAY | INLINE_TABLE
            )
    }

    /// A token that can be one segment of a key.
    pub fn is_key_segment(self) -> bool {
        matches!(self, BARE_KEY | BASIC_STRING | LITERAL_STRING)
    }

    /// A short human description, for error messages.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            WHITESPACE => "whitespace",
            NEWLINE => "a line end",
            COMMENT => "a comment",
            BOM => "a byte order mark",
            EQ => "`=`",
            DOT => "`.`",
            COMMA => "`,`",
            L_BRACK => "`[`",
            R_BRACK => "`]`",
            L_BRACE => "`{`",
            R_BRACE => "`}`",
            BARE_KEY => "a key",
            BASIC_STRING | LITERAL_STRING => "a string",
            MULTI_LINE_BASIC_STRING | MULTI_LINE_LITERAL_STRING => "a multi-line string",
            INTEGER => "an integer",
            FLOAT => "a float",
            BOOLEAN => "a boolean",
            DATETIME => "a date-time",
            ERROR_TOKEN => "invalid text",
            _ => "a syntax node",
        }
    }
}

impl From<SyntaxKind> for rowan::SyntaxKind {
    fn from(kind: SyntaxKind) -> Self {
        rowan::SyntaxKind(kind as u16)
    }
}

/// The rowan language of TOML trees.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum TomlLanguage {}

impl rowan::Language for TomlLanguage {
    type Kind = SyntaxKind;

    fn kind_from_raw(raw: rowan::SyntaxKind) -> SyntaxKind {
        ALL_KINDS.get(usize::from(raw.0)).copied().unwrap_or(ERROR)
    }

    fn kind_to_raw(kind: SyntaxKind) -> rowan::SyntaxKind {
        kind.into()
    }
}

/// Every kind in discriminant order, so raw values map back without `unsafe`.
const ALL_KINDS: [SyntaxKind; __LAST as usize] = [
    WHITESPACE,
    NEWLINE,
    COMMENT,
    BOM,
    EQ,
    DOT,
    COMMA,
    L_BRACK,
    R_BRACK,
    L_BRACE,
    R_BRACE,
    BARE_KEY,
    BASIC_STRING,
    MULTI_LINE_BASIC_STRING,
    LITERAL_STRING,
    MULTI_LINE_LITERAL_STRING,
    INTEGER,
    FLOAT,
    BOOLEAN,
    DATETIME,
    ERROR_TOKEN,
    ROOT,
    TABLE,
    ARRAY_TABLE,
    TABLE_HEADER,
    ARRAY_TABLE_HEADER,
    KEY_VALUE,
    KEY,
    ARRAY,
    INLINE_TABLE,
    ERROR,
];

/// A node of a TOML syntax tree.
pub type SyntaxNode = rowan::SyntaxNode<TomlLanguage>;
/// A token of a TOML syntax tree.
pub type SyntaxToken = rowan::SyntaxToken<TomlLanguage>;
/// A node or a token.
pub type SyntaxElement = rowan::SyntaxElement<TomlLanguage>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_round_trip() {
        for (index, kind) in ALL_KINDS.iter().enumerate() {
            assert_eq!(*kind as usize, index);
            let raw: rowan::SyntaxKind = (*kind).into();
            assert_eq!(<TomlLanguage as rowan::Language>::kind_from_raw(raw), *kind);
        }
    }
}
