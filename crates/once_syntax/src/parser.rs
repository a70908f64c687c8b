//! A hand-written recursive-descent parser producing a lossless rowan tree.
//!
//! Every byte of the input ends up in exactly one token. Grammar errors are
//! collected beside the tree; on a bad line the parser wraps the rest of the
//! line in an [`ERROR`](SyntaxKind::ERROR) node and resumes on the next line.
//! Unclosed arrays and inline tables stop at the next line that looks like a
//! new key-value or table header, so they do not swallow the rest of the file.

use rowan::{GreenNode, GreenNodeBuilder, TextRange, TextSize};

use crate::SyntaxError;
use crate::SyntaxKind::{self, *};
use crate::lexer::{self, Lexeme, Mode};

/// Parses `text` into a green tree and the errors found on the way.
pub(crate) fn parse_text(text: &str) -> (GreenNode, Vec<SyntaxError>) {
    let mut parser = Parser {
        text,
        pos: 0,
        depth: 0,
        builder: GreenNodeBuilder::new(),
        errors: Vec::new(),
    };
    parser.document();
    (parser.builder.finish(), parser.errors)
}

/// How deeply arrays and inline tables may nest before the parser stops
/// descending (and recursion in later passes stays bounded).
pub(crate) const MAX_NESTING: usize = 64;

struct Parser<'t> {
    text: &'t str,
    pos: usize,
    /// Open arrays and inline tables around the cursor.
    depth: usize,
    builder: GreenNodeBuilder<'static>,
    errors: Vec<SyntaxError>,
}

/// Where a key-value stands, which decides how far recovery may skip.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    /// A line of its own at the top level or in a table section.
    Line,
    /// An entry of an inline table.
    InlineTable,
}

impl Parser<'_> {
    // ---- grammar -------------------------------------------------------

    fn document(&mut self) {
        self.builder.start_node(ROOT.into());
        if self.rest().starts_with('\u{feff}') {
            self.token(BOM, '\u{feff}'.len_utf8());
        }
        self.lines_until_header();
        while self.peek(Mode::Key).is_some() {
            self.table_section();
        }
        self.builder.finish_node();
    }

    /// Key-value lines (and blank lines, comments, bad lines) up to the next
    /// table header or the end of input.
    fn lines_until_header(&mut self) {
        loop {
            self.eat_blank_lines();
            let Some(next) = self.peek(Mode::Key) else {
                return;
            };
            match next.kind {
                L_BRACK => return,
                kind if kind.is_key_segment() || kind.is_string() => {
                    self.key_value(Context::Line);
                    self.line_end();
                }
                _ => {
                    let message = format!(
                        "expected a key or a table header, found {}",
                        self.found(self.pos, next)
                    );
                    self.skip_rest_of_line(&message);
                }
            }
        }
    }

    /// `[header]` or `[[header]]` followed by its key-value lines.
    fn table_section(&mut self) {
        let is_array = self.rest().starts_with("[[");
        let (section, header) = if is_array {
            (ARRAY_TABLE, ARRAY_TABLE_HEADER)
        } else {
            (TABLE, TABLE_HEADER)
        };
        self.builder.start_node(section.into());
        self.builder.start_node(header.into());
        let open_start = self.pos;
        self.bump_kind(L_BRACK);
        if is_array {
            self.bump_kind(L_BRACK);
        }
        self.eat_whitespace();
        self.key();
        self.eat_whitespace();
        self.header_close(is_array, open_start);
        self.builder.finish_node();
        self.line_end();
        self.lines_until_header();
        self.builder.finish_node();
    }

    fn header_close(&mut self, is_array: bool, open_start: usize) {
        let closes = if is_array {
            self.rest().starts_with("]]")
        } else {
            self.rest().starts_with(']')
        };
        if closes {
            self.bump_kind(R_BRACK);
            if is_array {
                self.bump_kind(R_BRACK);
            }
            return;
        }
        if is_array && self.rest().starts_with(']') {
            let range = self.range(self.pos, 1);
            self.bump_kind(R_BRACK);
            self.error("expected `]]` to close the array of tables header", range);
            return;
        }
        let expected = if is_array { "`]]`" } else { "`]`" };
        let found = self.peek(Mode::Key);
        let message = match found {
            Some(lexeme) if lexeme.kind != NEWLINE => {
                format!(
                    "expected {expected} to close the table header, found {}",
                    self.found(self.pos, lexeme)
                )
            }
            _ => format!("unclosed table header: expected {expected}"),
        };
        let range = match found {
            Some(lexeme) if lexeme.kind != NEWLINE && lexeme.kind != COMMENT => {
                self.range(self.pos, lexeme.len)
            }
            _ => self.range(open_start, self.pos.saturating_sub(open_start)),
        };
        self.error(message, range);
    }

    /// `key = value`; the line end is left to the caller.
    fn key_value(&mut self, context: Context) {
        self.builder.start_node(KEY_VALUE.into());
        let key_start = self.pos;
        self.key();
        self.eat_whitespace();
        match self.peek(Mode::Key) {
            Some(lexeme) if lexeme.kind == EQ => {
                self.bump(lexeme);
                self.eat_whitespace();
                self.value();
            }
            found => {
                let key_end = self
                    .text
                    .get(..self.pos)
                    .unwrap_or_default()
                    .trim_end_matches([' ', '\t'])
                    .len();
                let (message, range) = match found {
                    Some(lexeme) if !matches!(lexeme.kind, NEWLINE | COMMENT) => (
                        format!(
                            "expected `=` after the key, found {}",
                            self.found(self.pos, lexeme)
                        ),
                        self.range(self.pos, lexeme.len),
                    ),
                    _ => (
                        "expected `=` and a value after the key".to_string(),
                        self.range(key_start, key_end.saturating_sub(key_start)),
                    ),
                };
                self.error(message, range);
                if context == Context::Line {
                    self.skip_rest_of_line_silently();
                }
            }
        }
        self.builder.finish_node();
    }

    /// A possibly dotted key. Whitespace after the last segment stays outside.
    fn key(&mut self) {
        self.builder.start_node(KEY.into());
        loop {
            match self.peek(Mode::Key) {
                Some(lexeme) if lexeme.kind.is_key_segment() => self.bump(lexeme),
                Some(lexeme) if lexeme.kind.is_string() => {
                    let range = self.range(self.pos, lexeme.len);
                    self.bump(lexeme);
                    self.error("a multi-line string cannot be a key", range);
                }
                found => {
                    let (message, range) = match found {
                        Some(lexeme) if !matches!(lexeme.kind, NEWLINE | COMMENT) => (
                            format!("expected a key, found {}", self.found(self.pos, lexeme)),
                            self.range(self.pos, lexeme.len),
                        ),
                        _ => ("expected a key".to_string(), self.range(self.pos, 0)),
                    };
                    if found.is_none_or(|lexeme| lexeme.error.is_none()) {
                        self.error(message, range);
                    }
                    break;
                }
            }
            let after_whitespace = self.pos + self.whitespace_len();
            if self
                .peek_at(after_whitespace, Mode::Key)
                .is_some_and(|lexeme| lexeme.kind == DOT)
            {
                self.eat_whitespace();
                self.bump_kind(DOT);
                self.eat_whitespace();
            } else {
                break;
            }
        }
        self.builder.finish_node();
    }

    /// One value; reports an error and consumes nothing if none is here.
    fn value(&mut self) {
        let Some(lexeme) = self.peek(Mode::Value) else {
            self.error("expected a value", self.range(self.pos, 0));
            return;
        };
        match lexeme.kind {
            L_BRACK | L_BRACE if self.depth >= MAX_NESTING => self.skip_too_deep(),
            L_BRACK => {
                self.depth += 1;
                self.array();
                self.depth -= 1;
            }
            L_BRACE => {
                self.depth += 1;
                self.inline_table();
                self.depth -= 1;
            }
            kind if kind.is_value() => self.bump(lexeme),
            ERROR_TOKEN => self.bump(lexeme),
            NEWLINE | COMMENT => self.error("expected a value", self.range(self.pos, 0)),
            _ => {
                let message = format!("expected a value, found {}", self.found(self.pos, lexeme));
                self.error(message, self.range(self.pos, lexeme.len));
            }
        }
    }

    fn array(&mut self) {
        self.builder.start_node(ARRAY.into());
        let open = self.range(self.pos, 1);
        self.bump_kind(L_BRACK);
        let mut expect_value = true;
        loop {
            let (next_pos, crossed_newline) = self.skip_trivia_lookahead();
            let Some(next) = self.peek_at(next_pos, Mode::Value) else {
                self.error("unclosed array: expected `]`", open);
                break;
            };
            if crossed_newline && self.looks_like_statement(next_pos) {
                self.error("unclosed array: expected `]`", open);
                break;
            }
            self.eat_trivia();
            match next.kind {
                R_BRACK => {
                    self.bump(next);
                    break;
                }
                COMMA => {
                    if expect_value {
                        self.error("expected a value before `,`", self.range(self.pos, 1));
                    }
                    self.bump(next);
                    expect_value = true;
                }
                kind if kind.is_value() || matches!(kind, L_BRACK | L_BRACE | ERROR_TOKEN) => {
                    if !expect_value {
                        self.error(
                            "expected `,` between array values",
                            self.range(self.pos, next.len),
                        );
                    }
                    self.value();
                    expect_value = false;
                }
                _ => {
                    let message = format!(
                        "expected a value or `]`, found {}",
                        self.found(self.pos, next)
                    );
                    self.error(message, self.range(self.pos, next.len));
                    self.builder.start_node(ERROR.into());
                    self.bump_silently(next);
                    self.builder.finish_node();
                }
            }
        }
        self.builder.finish_node();
    }

    fn inline_table(&mut self) {
        self.builder.start_node(INLINE_TABLE.into());
        let open = self.range(self.pos, 1);
        self.bump_kind(L_BRACE);
        let mut expect_entry = true;
        loop {
            let (next_pos, crossed_newline) = self.skip_trivia_lookahead();
            let Some(next) = self.peek_at(next_pos, Mode::Key) else {
                self.error("unclosed inline table: expected `}`", open);
                break;
            };
            let is_entry = next.kind.is_key_segment() || next.kind.is_string();
            let missing_comma = is_entry && !expect_entry;
            if crossed_newline
                && (missing_comma || !is_entry && self.looks_like_statement(next_pos))
            {
                self.error("unclosed inline table: expected `}`", open);
                break;
            }
            self.eat_trivia();
            match next.kind {
                R_BRACE => {
                    self.bump(next);
                    break;
                }
                COMMA => {
                    if expect_entry {
                        self.error("expected a key-value before `,`", self.range(self.pos, 1));
                    }
                    self.bump(next);
                    expect_entry = true;
                }
                _ if is_entry => {
                    if missing_comma {
                        self.error(
                            "expected `,` between inline table entries",
                            self.range(self.pos, next.len),
                        );
                    }
                    self.key_value(Context::InlineTable);
                    expect_entry = false;
                }
                _ => {
                    if next.error.is_none() {
                        let message = format!(
                            "expected a key-value or `}}`, found {}",
                            self.found(self.pos, next)
                        );
                        self.error(message, self.range(self.pos, next.len));
                    }
                    self.builder.start_node(ERROR.into());
                    self.bump(next);
                    self.builder.finish_node();
                }
            }
        }
        self.builder.finish_node();
    }

    /// After a key-value or header: optional whitespace and comment, then a
    /// line end. Anything else is reported and skipped to the line end.
    fn line_end(&mut self) {
        self.eat_whitespace();
        if let Some(lexeme) = self.peek(Mode::Value)
            && lexeme.kind == COMMENT
        {
            self.bump(lexeme);
        }
        match self.peek(Mode::Value) {
            None => {}
            Some(lexeme) if lexeme.kind == NEWLINE => self.bump(lexeme),
            Some(lexeme) => {
                let message = format!(
                    "expected a line end, found {}",
                    self.found(self.pos, lexeme)
                );
                self.skip_rest_of_line(&message);
            }
        }
    }

    // ---- recovery ------------------------------------------------------

    /// Reports `message` once for the rest of the line (unless its first
    /// token already carries a lexical error), wraps it in an `ERROR` node
    /// and consumes the line end.
    fn skip_rest_of_line(&mut self, message: &str) {
        let start = self.pos;
        let first_has_error = self.peek(Mode::Value).is_some_and(|lexeme| {
            lexeme.error.is_some()
                && (lexeme.kind != ERROR_TOKEN
                    || self
                        .rest()
                        .starts_with(|c: char| c.is_control() || c == '\u{feff}'))
        });
        if first_has_error {
            if let Some(lexeme) = self.peek(Mode::Value) {
                self.builder.start_node(ERROR.into());
                self.bump(lexeme);
                self.skip_line_tokens();
                self.builder.finish_node();
            }
        } else {
            self.builder.start_node(ERROR.into());
            self.skip_line_tokens();
            self.builder.finish_node();
            let end = self
                .text
                .get(..self.pos)
                .unwrap_or_default()
                .trim_end_matches([' ', '\t'])
                .len()
                .max(start);
            self.error(message.to_string(), self.range(start, end - start));
        }
        if let Some(lexeme) = self.peek(Mode::Value)
            && lexeme.kind == NEWLINE
        {
            self.bump(lexeme);
        }
    }

    fn skip_rest_of_line_silently(&mut self) {
        if self
            .peek(Mode::Value)
            .is_some_and(|lexeme| lexeme.kind != NEWLINE)
        {
            self.builder.start_node(ERROR.into());
            self.skip_line_tokens();
            self.builder.finish_node();
        }
    }

    /// Skips a nested array or inline table past the nesting limit, up to
    /// its matching close bracket, as one `ERROR` node.
    fn skip_too_deep(&mut self) {
        let start = self.pos;
        self.builder.start_node(ERROR.into());
        let mut open = 0usize;
        while let Some(lexeme) = self.peek(Mode::Value) {
            match lexeme.kind {
                L_BRACK | L_BRACE => open += 1,
                R_BRACK | R_BRACE => open = open.saturating_sub(1),
                _ => {}
            }
            self.bump_silently(lexeme);
            if open == 0 {
                break;
            }
        }
        self.builder.finish_node();
        let message = format!("arrays and inline tables nest more than {MAX_NESTING} levels deep");
        self.error(message, self.range(start, self.pos - start));
    }

    /// Consumes tokens up to, not including, the next line end.
    ///
    /// Tokens are lexed from the rest of this line only, so skipping a line costs its
    /// length once: a multi-line string opening in skipped text ends at the line end (as
    /// an `ERROR_TOKEN`) instead of being lexed through the rest of the file.
    fn skip_line_tokens(&mut self) {
        let line_end = self.pos + lexer::line_content_len(self.rest());
        while self.pos < line_end {
            let Some(line_rest) = self.text.get(self.pos..line_end) else {
                break;
            };
            let Some(lexeme) = lexer::lex(line_rest, Mode::Value) else {
                break;
            };
            if lexeme.kind.is_multi_line_string() && lexeme.error.is_some() {
                // A multi-line string opening in skipped text: keep to this line.
                self.bump_silently(Lexeme {
                    kind: ERROR_TOKEN,
                    len: line_rest.len(),
                    error: None,
                });
                continue;
            }
            self.bump_silently(lexeme);
        }
    }

    /// Whether the line at `pos` starts something that cannot continue an
    /// open array or inline table: a key-value (`key =`) or a table header.
    fn looks_like_statement(&self, pos: usize) -> bool {
        self.looks_like_key_value(pos) || self.looks_like_header(pos)
    }

    fn looks_like_key_value(&self, mut pos: usize) -> bool {
        loop {
            match self.peek_at(pos, Mode::Key) {
                Some(lexeme) if lexeme.kind.is_key_segment() => pos += lexeme.len,
                _ => return false,
            }
            pos += self.whitespace_len_at(pos);
            match self.peek_at(pos, Mode::Key) {
                Some(lexeme) if lexeme.kind == EQ => return true,
                Some(lexeme) if lexeme.kind == DOT => pos += 1 + self.whitespace_len_at(pos + 1),
                _ => return false,
            }
        }
    }

    /// `[name` or `[[name` where `name` is a bare key that is not also a value.
    fn looks_like_header(&self, pos: usize) -> bool {
        let Some(rest) = self.text.get(pos..) else {
            return false;
        };
        let Some(rest) = rest.strip_prefix('[') else {
            return false;
        };
        let rest = rest
            .strip_prefix('[')
            .unwrap_or(rest)
            .trim_start_matches([' ', '\t']);
        let name_len = rest
            .find(|c: char| !lexer::is_bare_key_char(c))
            .unwrap_or(rest.len());
        let name = rest.get(..name_len).unwrap_or_default();
        let after = rest
            .get(name_len..)
            .unwrap_or_default()
            .trim_start_matches([' ', '\t']);
        name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
            && !matches!(name, "true" | "false" | "inf" | "nan")
            && (after.starts_with(']') || after.starts_with('.'))
    }

    // ---- token plumbing ------------------------------------------------

    fn rest(&self) -> &str {
        self.text.get(self.pos..).unwrap_or_default()
    }

    fn peek(&self, mode: Mode) -> Option<Lexeme> {
        self.peek_at(self.pos, mode)
    }

    fn peek_at(&self, pos: usize, mode: Mode) -> Option<Lexeme> {
        lexer::lex(self.text.get(pos..)?, mode)
    }

    fn whitespace_len(&self) -> usize {
        self.whitespace_len_at(self.pos)
    }

    fn whitespace_len_at(&self, pos: usize) -> usize {
        self.text.get(pos..).map_or(0, |rest| {
            rest.len() - rest.trim_start_matches([' ', '\t']).len()
        })
    }

    /// The position of the next token that is not trivia, and whether a line
    /// end lies before it. Consumes nothing.
    fn skip_trivia_lookahead(&self) -> (usize, bool) {
        let mut pos = self.pos;
        let mut crossed_newline = false;
        while let Some(lexeme) = self.peek_at(pos, Mode::Value) {
            if !lexeme.kind.is_trivia() {
                break;
            }
            crossed_newline |= lexeme.kind == NEWLINE;
            pos += lexeme.len;
        }
        (pos, crossed_newline)
    }

    fn eat_whitespace(&mut self) {
        let len = self.whitespace_len();
        if len > 0 {
            self.token(WHITESPACE, len);
        }
    }

    /// Whitespace, line ends and comments.
    fn eat_trivia(&mut self) {
        while let Some(lexeme) = self.peek(Mode::Value) {
            if !lexeme.kind.is_trivia() {
                break;
            }
            self.bump(lexeme);
        }
    }

    /// Blank lines and comment lines between statements.
    fn eat_blank_lines(&mut self) {
        self.eat_trivia();
    }

    /// Adds the token at the cursor, known to be of `kind` and one byte long.
    fn bump_kind(&mut self, kind: SyntaxKind) {
        self.token(kind, 1);
    }

    /// Adds a lexed token and reports its lexical errors.
    fn bump(&mut self, lexeme: Lexeme) {
        let start = self.pos;
        if let Some(message) = lexeme.error {
            self.error(message, self.range(start, lexeme.len));
        }
        self.report_control_characters(lexeme, start);
        self.token(lexeme.kind, lexeme.len);
    }

    /// Adds a token without reporting anything: used inside skipped text
    /// that already has one error.
    fn bump_silently(&mut self, lexeme: Lexeme) {
        self.token(lexeme.kind, lexeme.len);
    }

    fn token(&mut self, kind: SyntaxKind, len: usize) {
        let end = (self.pos + len).min(self.text.len());
        let text = self.text.get(self.pos..end).unwrap_or_default();
        self.builder.token(kind.into(), text);
        self.pos = end;
    }

    /// Control characters are not allowed in comments and strings (tab is,
    /// and multi-line strings may contain line ends).
    fn report_control_characters(&mut self, lexeme: Lexeme, start: usize) {
        let multi_line = matches!(
            lexeme.kind,
            MULTI_LINE_BASIC_STRING | MULTI_LINE_LITERAL_STRING
        );
        if !(lexeme.kind == COMMENT || lexeme.kind.is_string()) {
            return;
        }
        let Some(text) = self.text.get(start..start + lexeme.len) else {
            return;
        };
        let mut chars = text.char_indices().peekable();
        while let Some((offset, c)) = chars.next() {
            let allowed = match c {
                '\t' => true,
                '\n' => multi_line,
                '\r' => multi_line && chars.peek().is_some_and(|&(_, next)| next == '\n'),
                c => !c.is_control() || !(c < ' ' || c == '\u{7f}'),
            };
            if !allowed {
                let what = if lexeme.kind == COMMENT {
                    "comment"
                } else {
                    "string"
                };
                let message = format!(
                    "control character U+{:04X} is not allowed in a {what}",
                    u32::from(c)
                );
                self.error(message, self.range(start + offset, c.len_utf8()));
            }
        }
    }

    /// How to name `lexeme` (at `pos`) in an error message: its text when
    /// that is short and telling, its kind otherwise.
    fn found(&self, pos: usize, lexeme: Lexeme) -> String {
        let text = self.text.get(pos..pos + lexeme.len).unwrap_or_default();
        let quotable = matches!(
            lexeme.kind,
            ERROR_TOKEN | BARE_KEY | INTEGER | FLOAT | BOOLEAN | DATETIME
        ) && text.chars().count() <= 24
            && !text.chars().any(char::is_control);
        if quotable {
            format!("`{text}`")
        } else {
            lexeme.kind.describe().to_string()
        }
    }

    fn range(&self, start: usize, len: usize) -> TextRange {
        let clamp =
            |offset: usize| TextSize::try_from(offset.min(self.text.len())).unwrap_or_default();
        TextRange::new(clamp(start), clamp(start + len))
    }

    fn error(&mut self, message: impl Into<String>, range: TextRange) {
        self.errors.push(SyntaxError {
            message: message.into(),
            range,
        });
    }
}
