//! The project name a `setup.py` passes to `setup(name=…)`, read without running it: a
//! small scanner of Python tokens (names, string literals, punctuation; comments
//! skipped) finds the `setup(` call and its `name` keyword argument. Only a string
//! literal (or adjacent literals, which Python joins) is a name; anything else (a
//! variable, an f-string, a call) is reported as not literal, never evaluated.

/// What `setup.py` says about the project's name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum SetupName {
    /// `setup(name="demo")`.
    Literal(String),
    /// `setup(name=NAME)`: the expression's text, as written.
    NotLiteral(String),
    /// No `setup(` call with a `name` argument.
    Missing,
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Name(String),
    /// A string literal's value; `formatted` for an f-string.
    Str {
        value: String,
        formatted: bool,
    },
    Punct(char),
    /// `==`, `!=`, `<=`, `>=` and the like: never the `=` of a keyword argument.
    Operator,
}

/// The tokens of `text` with each one's byte range.
fn tokens(text: &str) -> Vec<(Token, usize, usize)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'#' {
            while i < bytes.len() && bytes[i] != b'\n' {
                i += 1;
            }
        } else if c.is_ascii_whitespace() || c == b'\\' {
            i += 1;
        } else if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_' || bytes[i] >= 0x80)
            {
                i += 1;
            }
            let word = &text[start..i];
            let prefix = word.len() <= 2
                && word
                    .chars()
                    .all(|ch| matches!(ch.to_ascii_lowercase(), 'r' | 'b' | 'u' | 'f'));
            if prefix && i < bytes.len() && (bytes[i] == b'"' || bytes[i] == b'\'') {
                let lower = word.to_ascii_lowercase();
                let (value, end) = string(text, i, lower.contains('r'));
                out.push((
                    Token::Str {
                        value,
                        formatted: lower.contains('f'),
                    },
                    start,
                    end,
                ));
                i = end;
            } else {
                out.push((Token::Name(word.to_owned()), start, i));
            }
        } else if c == b'"' || c == b'\'' {
            let (value, end) = string(text, i, false);
            out.push((
                Token::Str {
                    value,
                    formatted: false,
                },
                i,
                end,
            ));
            i = end;
        } else if matches!(c, b'=' | b'!' | b'<' | b'>') && bytes.get(i + 1) == Some(&b'=') {
            out.push((Token::Operator, i, i + 2));
            i += 2;
        } else {
            // Any other character, one at a time (a multi-byte one is skipped whole).
            let len = text[i..].chars().next().map_or(1, char::len_utf8);
            out.push((Token::Punct(char::from(c)), i, i + len));
            i += len;
        }
    }
    out
}

/// The string literal whose opening quote is at `start`: its value (the common escapes
/// decoded unless `raw`) and the byte offset after it. An unterminated one runs to the end.
fn string(text: &str, start: usize, raw: bool) -> (String, usize) {
    let bytes = text.as_bytes();
    let quote = bytes[start];
    let triple = bytes.get(start + 1) == Some(&quote) && bytes.get(start + 2) == Some(&quote);
    let open = if triple { 3 } else { 1 };
    let mut value = String::new();
    let mut chars = text[start + open..].char_indices();
    while let Some((offset, ch)) = chars.next() {
        let at = start + open + offset;
        if ch == '\\' {
            let Some((_, next)) = chars.next() else {
                break;
            };
            if raw {
                value.push('\\');
                value.push(next);
            } else {
                match next {
                    'n' => value.push('\n'),
                    't' => value.push('\t'),
                    '\n' => {}
                    other => value.push(other),
                }
            }
        } else if ch as u32 == u32::from(quote) {
            if !triple {
                return (value, at + 1);
            }
            if bytes.get(at + 1) == Some(&quote) && bytes.get(at + 2) == Some(&quote) {
                return (value, at + 3);
            }
            value.push(ch);
        } else if ch == '\n' && !triple {
            return (value, at);
        } else {
            value.push(ch);
        }
    }
    (value, text.len())
}

/// The `name` argument of the first `setup(…)` call of `text` (`setup(` or
/// `setuptools.setup(`).
pub(crate) fn setup_name(text: &str) -> SetupName {
    let tokens = tokens(text);
    let call = tokens.windows(2).position(|pair| {
        matches!(&pair[0].0, Token::Name(n) if n == "setup") && pair[1].0 == Token::Punct('(')
    });
    let Some(call) = call else {
        return SetupName::Missing;
    };
    let mut depth = 0usize;
    let mut i = call + 1;
    while i < tokens.len() {
        match &tokens[i].0 {
            Token::Punct('(' | '[' | '{') => depth += 1,
            Token::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return SetupName::Missing;
                }
            }
            Token::Name(n)
                if depth == 1
                    && n == "name"
                    && tokens.get(i + 1).map(|t| &t.0) == Some(&Token::Punct('=')) =>
            {
                return value(text, &tokens[i + 2..]);
            }
            _ => {}
        }
        i += 1;
    }
    SetupName::Missing
}

/// The value of a keyword argument whose tokens start `rest`: literal when it is string
/// literals (not f-strings) up to the `,` or `)` that ends it.
fn value(text: &str, rest: &[(Token, usize, usize)]) -> SetupName {
    let mut literal = String::new();
    let mut only_literals = true;
    let mut depth = 0usize;
    let mut end = rest.len();
    for (index, (token, ..)) in rest.iter().enumerate() {
        match token {
            Token::Punct(',' | ')') if depth == 0 => {
                end = index;
                break;
            }
            Token::Punct('(' | '[' | '{') => {
                depth += 1;
                only_literals = false;
            }
            Token::Punct(')' | ']' | '}') => {
                depth = depth.saturating_sub(1);
                only_literals = false;
            }
            Token::Str {
                value,
                formatted: false,
            } => literal.push_str(value),
            _ => only_literals = false,
        }
    }
    let tokens = &rest[..end];
    if only_literals && !tokens.is_empty() {
        return SetupName::Literal(literal);
    }
    let expression = match (tokens.first(), tokens.last()) {
        (Some(first), Some(last)) => text[first.1..last.2].trim().to_owned(),
        _ => String::new(),
    };
    SetupName::NotLiteral(expression)
}

#[cfg(test)]
mod tests {
    use super::{SetupName, setup_name};

    #[test]
    fn a_literal_name_is_read_and_anything_else_is_not_evaluated() {
        let cases = [
            (
                "from setuptools import setup\nsetup(name='demo', version='1')\n",
                SetupName::Literal("demo".into()),
            ),
            (
                "import setuptools\nsetuptools.setup(\n    version=\"1\",  # name='no'\n    name=\"shapes-cli\",\n)\n",
                SetupName::Literal("shapes-cli".into()),
            ),
            (
                "setup(name='a' 'b', packages=find_packages(exclude=['x']))",
                SetupName::Literal("ab".into()),
            ),
            ("setup(name=r'''raw''')", SetupName::Literal("raw".into())),
            (
                "NAME = 'x'\nsetup(name=NAME)",
                SetupName::NotLiteral("NAME".into()),
            ),
            (
                "setup(name=f'{base}-x', version=v)",
                SetupName::NotLiteral("f'{base}-x'".into()),
            ),
            (
                "setup(name=get_name('x'))",
                SetupName::NotLiteral("get_name('x')".into()),
            ),
            (
                "setup(version='1', options={'name': 'no'})",
                SetupName::Missing,
            ),
            (
                "# setup(name='commented')\nprint('setup(name=\"in a string\")')",
                SetupName::Missing,
            ),
            (
                "setup(name = 'unterminated",
                SetupName::Literal("unterminated".into()),
            ),
            ("", SetupName::Missing),
        ];
        for (text, expected) in cases {
            assert_eq!(setup_name(text), expected, "{text}");
        }
    }
}
