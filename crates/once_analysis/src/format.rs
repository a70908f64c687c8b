//! The `once.toml` formatter: stable, idempotent and comment-preserving.
//!
//! It only changes whitespace: indentation, spacing around `=` of top-level keys, trailing
//! whitespace, runs of blank lines, a blank line before each table header and one final
//! newline. Strings (multi-line ones included) and comments are kept byte for byte. As a
//! safety net the result must lex to the same non-whitespace tokens as the input, and a
//! manifest with syntax errors is left alone.

use once_syntax::SyntaxKind;

/// The formatted text, or `None` when the text has syntax errors.
pub fn format_manifest(text: &str) -> Option<String> {
    let parse = once_syntax::parse(text);
    if !parse.errors().is_empty() {
        return None;
    }
    let newline = if text.contains("\r\n") { "\r\n" } else { "\n" };
    let mut out: Vec<String> = Vec::new();
    let mut state = Scan::default();
    for raw in text.split('\n') {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        let starts_in_string = state.multiline.is_some();
        let depth = state.depth;
        let line_scan = state.scan(line);
        if starts_in_string {
            out.push(line.to_owned());
            continue;
        }
        let content = line.trim_start();
        let content = if state.multiline.is_some() {
            content.to_owned()
        } else {
            content.trim_end().to_owned()
        };
        if content.is_empty() {
            if depth == 0 && out.last().is_none_or(|l| l.is_empty()) {
                continue;
            }
            out.push(String::new());
            continue;
        }
        if depth > 0 {
            let closes = content.starts_with(']') || content.starts_with('}');
            let level = if closes { depth - 1 } else { depth };
            out.push(format!("{}{content}", "    ".repeat(level)));
            continue;
        }
        if content.starts_with('[') {
            blank_line_before(&mut out);
            out.push(content);
            continue;
        }
        match line_scan.first_equals.and_then(|eq| {
            // `eq` is an offset in `line`; map it into `content`.
            let lead = line.len() - line.trim_start().len();
            eq.checked_sub(lead)
        }) {
            Some(eq) if !content.starts_with('#') && eq < content.len() => {
                let key = content[..eq].trim_end();
                let value = content[eq + 1..].trim_start();
                out.push(format!("{key} = {value}"));
            }
            _ => out.push(content),
        }
    }
    while out.last().is_some_and(|l| l.is_empty()) {
        out.pop();
    }
    if out.is_empty() {
        return Some(String::new());
    }
    let mut formatted = out.join(newline);
    formatted.push_str(newline);
    (significant_tokens(text) == significant_tokens(&formatted)).then_some(formatted)
}

/// Inserts a blank line before the comment block that will precede a header.
fn blank_line_before(out: &mut Vec<String>) {
    let mut at = out.len();
    while at > 0 && out[at - 1].trim_start().starts_with('#') {
        at -= 1;
    }
    if at > 0 && !out[at - 1].is_empty() {
        out.insert(at, String::new());
    }
}

fn significant_tokens(text: &str) -> Vec<(SyntaxKind, String)> {
    once_syntax::parse(text)
        .syntax()
        .descendants_with_tokens()
        .filter_map(|e| e.into_token())
        .filter(|t| !matches!(t.kind(), SyntaxKind::WHITESPACE | SyntaxKind::NEWLINE))
        .map(|t| (t.kind(), t.text().to_owned()))
        .collect()
}

/// String and bracket state carried from line to line.
#[derive(Default)]
struct Scan {
    /// The closing delimiter of an open multi-line string.
    multiline: Option<&'static str>,
    depth: usize,
}

struct LineScan {
    /// The byte offset of the first `=` outside strings and brackets.
    first_equals: Option<usize>,
}

impl Scan {
    fn scan(&mut self, line: &str) -> LineScan {
        let bytes = line.as_bytes();
        let mut first_equals = None;
        let mut i = 0;
        while i < bytes.len() {
            if let Some(close) = self.multiline {
                if bytes[i] == b'\\' && close == "\"\"\"" {
                    i += 2;
                    continue;
                }
                if bytes[i..].starts_with(close.as_bytes()) {
                    // A closing delimiter may be followed by up to two more quotes.
                    i += close.len();
                    while i < bytes.len() && bytes[i] == close.as_bytes()[0] {
                        i += 1;
                    }
                    self.multiline = None;
                    continue;
                }
                i += 1;
                continue;
            }
            match bytes[i] {
                b'#' => break,
                b'"' | b'\'' => {
                    let quote = bytes[i];
                    let triple = if quote == b'"' { "\"\"\"" } else { "'''" };
                    if bytes[i..].starts_with(triple.as_bytes()) {
                        self.multiline = Some(triple);
                        i += 3;
                        continue;
                    }
                    i += 1;
                    while i < bytes.len() && bytes[i] != quote {
                        if quote == b'"' && bytes[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                    i += 1;
                    continue;
                }
                b'[' | b'{' => self.depth += 1,
                b']' | b'}' => self.depth = self.depth.saturating_sub(1),
                b'=' if self.depth == 0 && first_equals.is_none() => first_equals = Some(i),
                _ => {}
            }
            i += 1;
        }
        LineScan { first_equals }
    }
}

#[cfg(test)]
mod tests {
    use super::format_manifest;

    #[test]
    fn formats_and_is_idempotent() {
        let input = "\n\n# top\n[[target]]\n  name=\"App\"   \nkind   =  \"rust_binary\" # why\ndeps = [\n\"a\",\n      \"b\", # c\n]\n\n\n\n[target.attrs]\ndesc = \"\"\"\n  keep   \n\"\"\"\n# about next\n[[target]]\nname = \"B\"";
        let once = format_manifest(input).unwrap();
        assert_eq!(
            once,
            "# top\n[[target]]\nname = \"App\"\nkind = \"rust_binary\" # why\ndeps = [\n    \"a\",\n    \"b\", # c\n]\n\n[target.attrs]\ndesc = \"\"\"\n  keep   \n\"\"\"\n\n# about next\n[[target]]\nname = \"B\"\n"
        );
        assert_eq!(format_manifest(&once).unwrap(), once);
    }

    #[test]
    fn leaves_broken_manifests_alone() {
        assert_eq!(format_manifest("[[target]\nname = "), None);
    }
}
