//! An on-demand, two-mode lexer.
//!
//! TOML's tokens depend on where they stand: `1979-05-27` is a bare key
//! before `=` and a date after it, `1.5` is a dotted key or a float. The
//! parser therefore asks for one token at a time and says which [`Mode`] it
//! is in. Lexing never fails: text that fits nothing becomes an
//! [`ERROR_TOKEN`](SyntaxKind::ERROR_TOKEN), and every call on non-empty
//! input consumes at least one character.

use crate::SyntaxKind::{self, *};

/// What the parser expects next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Mode {
    /// Keys and table headers: bare keys, quoted keys, dots.
    Key,
    /// Values: strings, numbers, booleans, date-times, arrays, inline tables.
    Value,
}

/// One token: its kind, its length in bytes and, when the token is
/// malformed as a whole, the message to report for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lexeme {
    pub(crate) kind: SyntaxKind,
    pub(crate) len: usize,
    pub(crate) error: Option<&'static str>,
}

impl Lexeme {
    fn new(kind: SyntaxKind, len: usize) -> Lexeme {
        Lexeme {
            kind,
            len,
            error: None,
        }
    }

    fn with_error(kind: SyntaxKind, len: usize, error: &'static str) -> Lexeme {
        Lexeme {
            kind,
            len,
            error: Some(error),
        }
    }
}

/// The token at the start of `input`, or `None` at the end of input.
pub(crate) fn lex(input: &str, mode: Mode) -> Option<Lexeme> {
    let first = input.chars().next()?;
    let lexeme = match first {
        ' ' | '\t' => Lexeme::new(WHITESPACE, run_len(input, |c| c == ' ' || c == '\t')),
        '\n' => Lexeme::new(NEWLINE, 1),
        '\r' if input.as_bytes().get(1) == Some(&b'\n') => Lexeme::new(NEWLINE, 2),
        '\r' => Lexeme::with_error(ERROR_TOKEN, 1, "carriage return without a line feed"),
        '#' => Lexeme::new(COMMENT, line_content_len(input)),
        '"' => basic_string(input),
        '\'' => literal_string(input),
        '=' => Lexeme::new(EQ, 1),
        ',' => Lexeme::new(COMMA, 1),
        '[' => Lexeme::new(L_BRACK, 1),
        ']' => Lexeme::new(R_BRACK, 1),
        '{' => Lexeme::new(L_BRACE, 1),
        '}' => Lexeme::new(R_BRACE, 1),
        '.' if mode == Mode::Key => Lexeme::new(DOT, 1),
        '\u{feff}' => Lexeme::with_error(
            ERROR_TOKEN,
            first.len_utf8(),
            "byte order mark is only allowed at the start",
        ),
        c if mode == Mode::Key && is_bare_key_char(c) => {
            Lexeme::new(BARE_KEY, run_len(input, is_bare_key_char))
        }
        c if mode == Mode::Value && is_value_word_char(c) => value_word(input),
        _ => Lexeme::with_error(
            ERROR_TOKEN,
            garbage_len(input, mode),
            "unexpected character",
        ),
    };
    Some(lexeme)
}

/// Characters of bare keys (TOML 1.1 keeps them ASCII).
pub(crate) fn is_bare_key_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Characters that may make up a number, boolean or date-time.
fn is_value_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '+' | '.' | ':')
}

/// Length of the leading run of characters matching `pred`.
fn run_len(input: &str, pred: impl Fn(char) -> bool) -> usize {
    input.find(|c: char| !pred(c)).unwrap_or(input.len())
}

/// Length up to (not including) the line end: `\n` or `\r\n`.
pub(crate) fn line_content_len(input: &str) -> usize {
    let bytes = input.as_bytes();
    let mut index = 0;
    while let Some(&byte) = bytes.get(index) {
        if byte == b'\n' || (byte == b'\r' && bytes.get(index + 1) == Some(&b'\n')) {
            break;
        }
        index += 1;
    }
    index
}

/// A run of characters that start no token in `mode`.
fn garbage_len(input: &str, mode: Mode) -> usize {
    let starts_token = |c: char| {
        matches!(
            c,
            ' ' | '\t' | '\n' | '\r' | '#' | '"' | '\'' | '=' | ',' | '[' | ']' | '{' | '}'
        ) || match mode {
            Mode::Key => is_bare_key_char(c) || c == '.',
            Mode::Value => is_value_word_char(c),
        }
    };
    let mut chars = input.char_indices();
    // The first character is garbage by construction; always consume it.
    let first_len = chars.next().map_or(0, |(_, c)| c.len_utf8());
    chars
        .find(|&(_, c)| starts_token(c))
        .map_or(input.len(), |(index, _)| index)
        .max(first_len)
}

/// A bare word in value position, classified by its shape. The value layer
/// checks the exact grammar of numbers and date-times.
fn value_word(input: &str) -> Lexeme {
    let mut len = run_len(input, is_value_word_char);
    // `1979-05-27 07:32:00`: a date followed by a space and a time is one token.
    if let (Some(word), Some(rest)) = (input.get(..len), input.get(len..))
        && is_full_date(word)
    {
        let rest = rest.as_bytes();
        let time_follows = rest.first() == Some(&b' ')
            && rest.get(1).is_some_and(u8::is_ascii_digit)
            && rest.get(2).is_some_and(u8::is_ascii_digit)
            && rest.get(3) == Some(&b':');
        if time_follows {
            let time_start = len + 1;
            len = time_start
                + input
                    .get(time_start..)
                    .map_or(0, |time| run_len(time, is_value_word_char));
        }
    }
    let word = input.get(..len).unwrap_or_default();
    match classify_word(word) {
        Some(kind) => Lexeme::new(kind, len),
        None => Lexeme::with_error(ERROR_TOKEN, len, "invalid value"),
    }
}

fn is_full_date(word: &str) -> bool {
    let bytes = word.as_bytes();
    bytes.len() == 10
        && bytes.iter().enumerate().all(|(index, byte)| match index {
            4 | 7 => *byte == b'-',
            _ => byte.is_ascii_digit(),
        })
}

fn classify_word(word: &str) -> Option<SyntaxKind> {
    let bytes = word.as_bytes();
    if word == "true" || word == "false" {
        return Some(BOOLEAN);
    }
    let leading_digits = bytes
        .iter()
        .take_while(|byte| byte.is_ascii_digit())
        .count();
    let looks_like_date = leading_digits > 0 && bytes.get(leading_digits) == Some(&b'-');
    let looks_like_time = leading_digits > 0 && bytes.get(leading_digits) == Some(&b':');
    if looks_like_date || looks_like_time {
        return Some(DATETIME);
    }
    let unsigned = word.strip_prefix(['+', '-']).unwrap_or(word);
    if unsigned == "inf" || unsigned == "nan" {
        return Some(FLOAT);
    }
    let number_like = unsigned.starts_with(|c: char| c.is_ascii_digit() || c == '.')
        && !word.contains(':')
        && unsigned
            .chars()
            .skip(1)
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'));
    if !number_like {
        return None;
    }
    let radix_prefixed = ["0x", "0o", "0b"]
        .iter()
        .any(|prefix| unsigned.starts_with(prefix));
    if !radix_prefixed && unsigned.contains(['.', 'e', 'E']) {
        Some(FLOAT)
    } else {
        Some(INTEGER)
    }
}

fn basic_string(input: &str) -> Lexeme {
    if input.starts_with("\"\"\"") {
        return multi_line_string(input, '"', MULTI_LINE_BASIC_STRING);
    }
    single_line_string(input, '"', BASIC_STRING)
}

fn literal_string(input: &str) -> Lexeme {
    if input.starts_with("'''") {
        return multi_line_string(input, '\'', MULTI_LINE_LITERAL_STRING);
    }
    single_line_string(input, '\'', LITERAL_STRING)
}

/// `"..."` or `'...'`: ends at the closing quote or, unterminated, before the line end.
fn single_line_string(input: &str, quote: char, kind: SyntaxKind) -> Lexeme {
    let escapes = quote == '"';
    let mut chars = input.char_indices().skip(1).peekable();
    while let Some((index, c)) = chars.next() {
        match c {
            c if c == quote => return Lexeme::new(kind, index + 1),
            '\n' => return Lexeme::with_error(kind, index, "unterminated string"),
            '\r' if chars.peek().is_some_and(|&(_, next)| next == '\n') => {
                return Lexeme::with_error(kind, index, "unterminated string");
            }
            // Skip the escaped character unless it ends the line.
            '\\' if escapes
                && chars
                    .peek()
                    .is_some_and(|&(_, next)| next != '\n' && next != '\r') =>
            {
                chars.next();
            }
            _ => {}
        }
    }
    Lexeme::with_error(kind, input.len(), "unterminated string")
}

/// `"""..."""` or `'''...'''`: up to two quotes may precede the closing three.
fn multi_line_string(input: &str, quote: char, kind: SyntaxKind) -> Lexeme {
    let escapes = quote == '"';
    let bytes = input.as_bytes();
    let quote_byte = quote as u8;
    let mut index = 3;
    while let Some(&byte) = bytes.get(index) {
        if escapes && byte == b'\\' {
            // Skip the escaped character (a quote, a backslash, ...).
            index += 1 + input
                .get(index + 1..)
                .and_then(|rest| rest.chars().next())
                .map_or(0, char::len_utf8);
            continue;
        }
        if byte == quote_byte {
            let run = bytes.get(index..).map_or(0, |rest| {
                rest.iter().take_while(|&&b| b == quote_byte).count()
            });
            if run >= 3 {
                return Lexeme::new(kind, index + run.min(5));
            }
            index += run;
            continue;
        }
        index += 1;
    }
    Lexeme::with_error(kind, input.len(), "unterminated multi-line string")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tokens(input: &str, mode: Mode) -> Vec<(SyntaxKind, &str)> {
        let mut result = Vec::new();
        let mut rest = input;
        while let Some(lexeme) = lex(rest, mode) {
            let (text, tail) = rest.split_at(lexeme.len);
            result.push((lexeme.kind, text));
            rest = tail;
        }
        result
    }

    #[test]
    fn key_mode_splits_dotted_numbers() {
        assert_eq!(
            tokens("1.5", Mode::Key),
            vec![(BARE_KEY, "1"), (DOT, "."), (BARE_KEY, "5")]
        );
    }

    #[test]
    fn value_mode_reads_date_times_with_space() {
        assert_eq!(
            tokens("1979-05-27 07:32:00Z", Mode::Value),
            vec![(DATETIME, "1979-05-27 07:32:00Z")]
        );
        assert_eq!(
            tokens("1979-05-27 x", Mode::Value),
            vec![
                (DATETIME, "1979-05-27"),
                (WHITESPACE, " "),
                (ERROR_TOKEN, "x")
            ]
        );
    }

    #[test]
    fn multi_line_strings_take_extra_quotes() {
        assert_eq!(
            tokens(r#""""a""""""#, Mode::Value),
            vec![(MULTI_LINE_BASIC_STRING, r#""""a""""""#)]
        );
        assert_eq!(
            tokens("'''a''''", Mode::Value),
            vec![(MULTI_LINE_LITERAL_STRING, "'''a''''")]
        );
    }

    #[test]
    fn unterminated_string_stops_at_line_end() {
        let lexeme = lex("\"abc\nx", Mode::Value);
        assert_eq!(
            lexeme,
            Some(Lexeme::with_error(BASIC_STRING, 4, "unterminated string"))
        );
    }
}
