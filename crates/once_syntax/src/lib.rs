//! Lossless, error-tolerant syntax trees for TOML 1.1, and a reader that turns
//! them into TOML values with source ranges.
//!
//! [`parse`] never fails: it returns a rowan tree holding every byte of the
//! input plus the lexical and grammar errors it met. [`value::document`]
//! reads that tree into tables and values and adds the semantic errors TOML
//! requires (duplicate keys, redefined tables, invalid numbers, ...).
//!
//! ```
//! let parse = once_syntax::parse("name = \"once\"\n");
//! assert!(parse.errors().is_empty());
//! let document = once_syntax::value::document(&parse);
//! assert!(document.root.get("name").is_some());
//! ```

mod lexer;
mod parser;
mod syntax_kind;
pub mod value;

use std::fmt::Write as _;

pub use rowan::{TextRange, TextSize};
pub use syntax_kind::{SyntaxElement, SyntaxKind, SyntaxNode, SyntaxToken, TomlLanguage};

/// The result of parsing: a green tree and the errors found while building it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Parse {
    green: rowan::GreenNode,
    errors: Vec<SyntaxError>,
}

impl Parse {
    /// The root of the syntax tree, a [`SyntaxKind::ROOT`] node.
    pub fn syntax(&self) -> SyntaxNode {
        SyntaxNode::new_root(self.green.clone())
    }

    /// The green (immutable, position-free) tree.
    pub fn green(&self) -> &rowan::GreenNode {
        &self.green
    }

    /// Lexical and grammar errors, in source order.
    pub fn errors(&self) -> &[SyntaxError] {
        &self.errors
    }

    /// The tree as indented `KIND@start..end` lines, tokens with their text.
    pub fn debug_tree(&self) -> String {
        let mut out = String::new();
        let mut depth = 0usize;
        for event in self.syntax().preorder_with_tokens() {
            match event {
                rowan::WalkEvent::Enter(element) => {
                    let indent = "  ".repeat(depth);
                    let kind = element.kind();
                    let range = element.text_range();
                    match element {
                        rowan::NodeOrToken::Node(_) => {
                            let _ = writeln!(out, "{indent}{kind:?}@{range:?}");
                            depth += 1;
                        }
                        rowan::NodeOrToken::Token(token) => {
                            let _ = writeln!(out, "{indent}{kind:?}@{range:?} {:?}", token.text());
                        }
                    }
                }
                rowan::WalkEvent::Leave(rowan::NodeOrToken::Node(_)) => {
                    depth = depth.saturating_sub(1)
                }
                rowan::WalkEvent::Leave(rowan::NodeOrToken::Token(_)) => {}
            }
        }
        out
    }
}

/// A problem in the source text, with the range it covers.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SyntaxError {
    pub message: String,
    pub range: TextRange,
}

impl std::fmt::Display for SyntaxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at {:?}", self.message, self.range)
    }
}

/// Parses TOML text. Never panics; the tree always reproduces `text` exactly.
pub fn parse(text: &str) -> Parse {
    let (green, mut errors) = parser::parse_text(text);
    errors.sort_by_key(|error| (error.range.start(), error.range.end()));
    Parse { green, errors }
}
