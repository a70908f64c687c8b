//! The header of an annotated script: the shebang on line 1, then `once` directives in
//! comment lines (`#`, `//`, `--`, `;`, `%`) up to the first line of code.
//!
//! ```text
//! #!/usr/bin/env bash
//! # once input "data/*.csv"
//! # once output "report.txt"
//! ```
//!
//! [`parse_script`] never fails: it returns the contract it could read, every problem as
//! a located diagnostic (a misspelled directive carries a fix with the right spelling),
//! and the span of each directive for editors. Paths are resolved against the script's
//! directory and normalised; input globs stay patterns, expanded by the caller.

use once_db::{Db, File, source_text};
use once_model::script::{OutputSymlinks, ScriptContract};
use once_model::{Diagnostic, DiagnosticCode, Fix, TextRange};

/// The directive keywords, in documentation order.
pub const KEYWORDS: &[&str] = &[
    "input",
    "output",
    "needs",
    "fingerprint",
    "env",
    "cwd",
    "output-symlinks",
];

/// What each keyword declares, for completion and hover.
pub fn keyword_docs(keyword: &str) -> Option<&'static str> {
    Some(match keyword {
        "input" => {
            "A file, a directory (every file below it) or a glob pattern the script reads, relative to the script's directory. Its content joins the cache key. Repeat the directive for more inputs."
        }
        "output" => {
            "A file or directory the script writes, relative to the script's directory. It is stored in the cache and restored on a hit. Repeat the directive for more outputs."
        }
        "needs" => {
            "Another annotated script that runs first; its outputs join this script's key, so a dependency rebuilt into identical outputs leaves this script a cache hit."
        }
        "fingerprint" => {
            "A shell command run before the script; its exit status and output join the key (for example `git rev-parse HEAD` or `python3 --version`)."
        }
        "env" => {
            "The name of an environment variable passed to the script; its value joins the key."
        }
        "cwd" => {
            "The directory the script runs in, relative to the script's directory (default: the script's directory). At most once."
        }
        "output-symlinks" => {
            "`materialize-external` (default: a link in an output that leads out of it is stored as a copy of its target; one outside the workspace or dangling fails the run) or `preserve` (every link is stored as a link). Part of the key. At most once."
        }
        _ => return None,
    })
}

/// The comment prefixes a header line may start with, longest first.
const COMMENT_PREFIXES: &[&str] = &["//", "--", "#", ";", "%"];

/// One directive as written: for hover, completion and go-to-definition.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DirectiveSpan {
    pub keyword: String,
    pub keyword_range: TextRange,
    /// The value without its quotes, when one was read.
    pub value: Option<String>,
    pub value_range: Option<TextRange>,
}

/// Everything read from a script's header.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScriptParse {
    /// Whether any line, valid or not, in the header or below it, is a `once` directive:
    /// a script without any is an ordinary program.
    pub has_directives: bool,
    pub contract: ScriptContract,
    pub directives: Vec<DirectiveSpan>,
    pub diagnostics: Vec<Diagnostic>,
}

impl ScriptParse {
    /// Whether the contract is usable: no error among the diagnostics.
    pub fn is_valid(&self) -> bool {
        !self.diagnostics.iter().any(Diagnostic::is_error)
    }
}

/// The parsed header of a script file: re-computed only when the file changes, so a
/// warm server and the language server re-parse a script only after an edit. A file
/// that cannot be read is one diagnostic.
#[salsa::tracked(returns(ref))]
pub fn script_contract(db: &dyn Db, file: File) -> ScriptParse {
    let path = file.path(db);
    let source = source_text(db, file);
    if let Some(error) = &source.read_error {
        let mut parse = ScriptParse::default();
        parse.contract.path = path.clone();
        parse.diagnostics.push(
            Diagnostic::new(
                DiagnosticCode::InvalidScriptPath,
                format!("cannot read the script `{path}`: {error}"),
            )
            .in_file(path.clone())
            .with_target(path.clone())
            .with_attribute("path")
            .with_repair("Fix the script path, shebang, or `once` directives and validate again"),
        );
        return parse;
    }
    parse_script(path, &source.text)
}

/// Parses the header of the script at `path` (workspace-relative) whose text is `text`.
pub fn parse_script(path: &str, text: &str) -> ScriptParse {
    let mut parser = Parser {
        path,
        directory: path.rsplit_once('/').map_or("", |(dir, _)| dir),
        out: ScriptParse {
            contract: ScriptContract {
                path: path.to_owned(),
                ..ScriptContract::default()
            },
            ..ScriptParse::default()
        },
        cwd_seen: false,
        symlinks_seen: false,
        seen: std::collections::HashSet::new(),
    };
    parser.run(text);
    parser.out
}

struct Parser<'a> {
    path: &'a str,
    directory: &'a str,
    out: ScriptParse,
    cwd_seen: bool,
    symlinks_seen: bool,
    /// Every (keyword, value) recorded, so a repeated one is recorded once.
    seen: std::collections::HashSet<(&'static str, String)>,
}

/// A line of the file: its text without the line break, and where it starts.
struct Line<'t> {
    text: &'t str,
    start: usize,
}

fn lines(text: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    text.split_inclusive('\n').map(move |raw| {
        let line = Line {
            text: raw.trim_end_matches('\n').trim_end_matches('\r'),
            start,
        };
        start += raw.len();
        line
    })
}

fn range(start: usize, end: usize) -> TextRange {
    TextRange::new(
        u32::try_from(start).unwrap_or(u32::MAX),
        u32::try_from(end).unwrap_or(u32::MAX),
    )
}

impl Parser<'_> {
    fn error(&mut self, code: DiagnosticCode, message: String, at: TextRange) -> &mut Diagnostic {
        let diagnostic = Diagnostic::new(code, message)
            .at(self.path, at)
            .with_target(self.path)
            .with_attribute("path");
        self.out.diagnostics.push(diagnostic);
        let last = self.out.diagnostics.len() - 1;
        &mut self.out.diagnostics[last]
    }

    fn run(&mut self, text: &str) {
        let mut lines = lines(text);
        let Some(first) = lines.next().filter(|_| !text.is_empty()) else {
            self.error(
                DiagnosticCode::InvalidScriptContract,
                format!("the script `{}` is empty", self.path),
                range(0, 0),
            )
            .repairs
            .push("Start the script with a shebang such as `#!/usr/bin/env bash`".to_owned());
            return;
        };
        self.shebang(&first);
        let mut in_header = true;
        for line in lines {
            let trimmed = line.text.trim_start();
            if trimmed.is_empty() {
                continue;
            }
            let indent = line.text.len() - trimmed.len();
            let comment = COMMENT_PREFIXES
                .iter()
                .find_map(|prefix| trimmed.strip_prefix(prefix).map(|rest| (*prefix, rest)));
            let Some((prefix, rest)) = comment else {
                in_header = false;
                continue;
            };
            let body = rest.trim_start();
            let word_end = body
                .find(|c: char| c.is_whitespace() || c == ':' || c == '"')
                .unwrap_or(body.len());
            let word = &body[..word_end];
            if !word.eq_ignore_ascii_case("once") || !looks_like_directive(&body[word_end..]) {
                continue;
            }
            self.out.has_directives = true;
            let body_start = line.start + indent + prefix.len() + (rest.len() - body.len());
            if !in_header {
                self.error(
                    DiagnosticCode::ScriptDirectiveIgnored,
                    "this `once` directive comes after the first line of code, so it is not part of the script's header and is ignored".to_owned(),
                    range(body_start, line.start + line.text.len()),
                )
                .repairs
                .push("Move the directive up, between the shebang and the first line of code".to_owned());
                continue;
            }
            self.directive(prefix, body, body_start, word);
        }
    }

    /// Line 1: the runtime and its arguments.
    fn shebang(&mut self, first: &Line<'_>) {
        let Some(command) = first.text.strip_prefix("#!") else {
            self.error(
                DiagnosticCode::InvalidScriptContract,
                format!(
                    "the script `{}` must start with a shebang so once knows how to run it",
                    self.path
                ),
                range(0, first.text.len()),
            )
            .repairs
            .push("Put a shebang such as `#!/usr/bin/env bash` on the first line".to_owned());
            return;
        };
        let whole = range(0, first.text.len());
        let tokens: Vec<&str> = command.split_whitespace().collect();
        let Some((&program, rest)) = tokens.split_first() else {
            self.error(
                DiagnosticCode::InvalidScriptContract,
                "the shebang is empty: it must name the program that runs the script".to_owned(),
                whole,
            )
            .repairs
            .push("Write the runtime after `#!`, such as `#!/usr/bin/env bash`".to_owned());
            return;
        };
        let mut words: Vec<&str> = if program == "env" || program.ends_with("/env") {
            let words: Vec<&str> = rest
                .iter()
                .copied()
                .skip_while(|word| word.starts_with('-'))
                .collect();
            if words.is_empty() {
                self.error(
                    DiagnosticCode::InvalidScriptContract,
                    "the shebang must name a runtime after `env`".to_owned(),
                    whole,
                )
                .repairs
                .push("Name the runtime after `env`, such as `#!/usr/bin/env bash`".to_owned());
                return;
            }
            words
        } else {
            tokens.clone()
        };
        // `#!/usr/bin/env -S once exec -- bash`: the script runs through once; the
        // runtime is the program after `exec --` (or `exec --script`).
        if words[0] == "once" || words[0].ends_with("/once") {
            let after = match words.get(1..3) {
                Some(["exec", "--"]) | Some(["exec", "--script"]) => 3,
                _ => {
                    self.error(
                        DiagnosticCode::InvalidScriptContract,
                        "a shebang running `once` must be `once exec -- RUNTIME`".to_owned(),
                        whole,
                    )
                    .repairs
                    .push(
                        "Write `#!/usr/bin/env -S once exec -- bash` (with your runtime)"
                            .to_owned(),
                    );
                    return;
                }
            };
            words.drain(..after);
            if words.is_empty() {
                self.error(
                    DiagnosticCode::InvalidScriptContract,
                    "the shebang must name a runtime after `once exec --`".to_owned(),
                    whole,
                )
                .repairs
                .push("Write `#!/usr/bin/env -S once exec -- bash` (with your runtime)".to_owned());
                return;
            }
        }
        self.out.contract.runtime = words[0].to_owned();
        self.out.contract.runtime_args = words[1..].iter().map(|w| (*w).to_owned()).collect();
    }

    /// `body` is the text after the comment prefix, starting at `once` (any case), at
    /// byte `body_start` of the file.
    fn directive(&mut self, prefix: &str, body: &str, body_start: usize, once_word: &str) {
        let line_end = body_start + body.len();
        let whole = range(body_start, line_end);
        let after_once = &body[once_word.len()..];
        let keyword_text = after_once.trim_start();
        let keyword_start = body_start + once_word.len() + (after_once.len() - keyword_text.len());
        let keyword_end_offset = keyword_text
            .find(|c: char| c.is_whitespace() || c == ':' || c == '"' || c == '\'')
            .unwrap_or(keyword_text.len());
        let keyword = &keyword_text[..keyword_end_offset];
        let keyword_range = range(keyword_start, keyword_start + keyword.len());
        let mut rest = &keyword_text[keyword_end_offset..];
        let mut rest_start = keyword_start + keyword_end_offset;
        if keyword.is_empty() {
            let message = format!(
                "`once` must be followed by a directive: {}",
                KEYWORDS
                    .iter()
                    .map(|k| format!("`{k}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            );
            self.error(DiagnosticCode::InvalidScriptContract, message, whole)
                .repairs
                .push(format!(
                    "Write a directive such as `{prefix} once input \"data.txt\"`"
                ));
            return;
        }
        // What the directive should read once fixed, built up as problems are found.
        let mut problems: Vec<String> = Vec::new();
        if once_word != "once" {
            problems.push(format!("write `once` in lowercase, not `{once_word}`"));
        }
        let known = KEYWORDS.contains(&keyword);
        let mut canonical_keyword = keyword.to_owned();
        let mut plural = false;
        if !known {
            let singular = keyword.strip_suffix('s').filter(|s| KEYWORDS.contains(s));
            let lowered = keyword.to_ascii_lowercase();
            if let Some(singular) = singular {
                plural = true;
                problems.push(format!(
                    "directives are singular: `{singular}`, not `{keyword}` (one directive per value)"
                ));
                canonical_keyword = singular.to_owned();
            } else if KEYWORDS.contains(&lowered.as_str()) {
                problems.push(format!("write the directive in lowercase: `{lowered}`"));
                canonical_keyword = lowered;
            } else {
                let suggestions = crate::text::closest(keyword, KEYWORDS.iter().copied(), 1);
                let mut message = format!("unknown `once` directive `{keyword}`");
                match suggestions.first() {
                    Some(suggestion) => {
                        message.push_str(&format!("; did you mean `{suggestion}`?"))
                    }
                    None => message.push_str(&format!(
                        "; the directives are {}",
                        KEYWORDS
                            .iter()
                            .map(|k| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    )),
                }
                let diagnostic = self.error(
                    DiagnosticCode::InvalidScriptContract,
                    message,
                    keyword_range,
                );
                if let Some(suggestion) = suggestions.first() {
                    diagnostic.fixes.push(Fix::replace(
                        format!("Replace with `{suggestion}`"),
                        true,
                        keyword_range,
                        suggestion.clone(),
                    ));
                    diagnostic
                        .repairs
                        .push(format!("Write `{prefix} once {suggestion} \"…\"`"));
                }
                self.out.directives.push(DirectiveSpan {
                    keyword: keyword.to_owned(),
                    keyword_range,
                    value: None,
                    value_range: None,
                });
                return;
            }
        }
        if let Some(after_colon) = rest.strip_prefix(':') {
            problems.push("no colon after the directive".to_owned());
            rest = after_colon;
            rest_start += 1;
        }
        let value_text = rest.trim_start();
        let value_start = rest_start + (rest.len() - value_text.len());
        let value_text = value_text.trim_end();
        // The values the line holds, however they were written.
        let mut values: Vec<(String, TextRange)> = Vec::new();
        if value_text.is_empty() {
            let message = format!("`once {canonical_keyword}` needs a value in double quotes");
            self.error(DiagnosticCode::InvalidScriptContract, message, whole)
                .repairs
                .push(format!("Write `{prefix} once {canonical_keyword} \"…\"`"));
            self.out.directives.push(DirectiveSpan {
                keyword: canonical_keyword,
                keyword_range,
                value: None,
                value_range: None,
            });
            return;
        } else if value_text.starts_with('"') {
            let mut cursor = 0;
            let bytes = value_text.as_bytes();
            while cursor < value_text.len() {
                if bytes[cursor].is_ascii_whitespace() {
                    cursor += 1;
                    continue;
                }
                if bytes[cursor] != b'"' {
                    let trailing = value_text[cursor..].trim();
                    problems.push(format!(
                        "nothing may follow the quoted value (found `{trailing}`)"
                    ));
                    break;
                }
                let Some(close) = value_text[cursor + 1..].find('"') else {
                    let unclosed = &value_text[cursor + 1..];
                    problems.push("the value is missing its closing quote".to_owned());
                    values.push((
                        unclosed.to_owned(),
                        range(value_start + cursor + 1, value_start + value_text.len()),
                    ));
                    break;
                };
                let inner = &value_text[cursor + 1..cursor + 1 + close];
                values.push((
                    inner.to_owned(),
                    range(value_start + cursor + 1, value_start + cursor + 1 + close),
                ));
                cursor += close + 2;
            }
            if values.len() > 1 {
                problems.push("one value per directive: write one line for each".to_owned());
            }
        } else if let Some(inner) = value_text
            .strip_prefix('\'')
            .map(|v| v.strip_suffix('\'').unwrap_or(v))
        {
            problems.push("values are written in double quotes, not single quotes".to_owned());
            values.push((
                inner.to_owned(),
                range(value_start + 1, value_start + 1 + inner.len()),
            ));
        } else {
            problems.push("the value must be in double quotes".to_owned());
            values.push((
                value_text.to_owned(),
                range(value_start, value_start + value_text.len()),
            ));
        }
        if !problems.is_empty() {
            let rewritten: Vec<String> = values
                .iter()
                .map(|(value, _)| format!("once {canonical_keyword} \"{value}\""))
                .collect();
            let new_text = rewritten.join(&format!("\n{prefix} "));
            let message = format!(
                "invalid `once {}` directive: {}",
                if plural {
                    keyword
                } else {
                    canonical_keyword.as_str()
                },
                problems.join("; ")
            );
            let shown = rewritten
                .iter()
                .map(|line| format!("`{prefix} {line}`"))
                .collect::<Vec<_>>()
                .join(" then ");
            let diagnostic = self.error(DiagnosticCode::InvalidScriptContract, message, whole);
            diagnostic.repairs.push(format!("Write {shown}"));
            if !values.iter().any(|(value, _)| value.contains('"')) {
                diagnostic
                    .fixes
                    .push(Fix::replace("Rewrite the directive", true, whole, new_text));
            }
        }
        for (value, value_range) in values {
            self.out.directives.push(DirectiveSpan {
                keyword: canonical_keyword.clone(),
                keyword_range,
                value: Some(value.clone()),
                value_range: Some(value_range),
            });
            self.value(&canonical_keyword, &value, value_range);
        }
    }

    /// Records one directive's value in the contract, checking it.
    fn value(&mut self, keyword: &str, value: &str, at: TextRange) {
        if value.is_empty() {
            self.error(
                DiagnosticCode::InvalidScriptContract,
                format!("`once {keyword}` has an empty value"),
                at,
            );
            return;
        }
        match keyword {
            "input" | "output" | "needs" | "cwd" => {
                let Some(path) = self.path_value(keyword, value, at) else {
                    return;
                };
                match keyword {
                    "input" => {
                        let fresh = self.first_time("input", &path);
                        if fresh {
                            self.out.contract.inputs.push(path);
                        }
                    }
                    "output" => {
                        if path == self.path {
                            self.error(
                                DiagnosticCode::InvalidScriptPath,
                                "a script cannot declare itself as its output".to_owned(),
                                at,
                            );
                        } else if self.first_time("output", &path) {
                            self.out.contract.outputs.push(path);
                        }
                    }
                    "needs" => {
                        if path == self.path {
                            self.error(
                                DiagnosticCode::InvalidScriptPath,
                                "a script cannot need itself".to_owned(),
                                at,
                            );
                        } else if self.first_time("needs", &path) {
                            self.out.contract.needs.push(path);
                        }
                    }
                    _ => {
                        if self.cwd_seen {
                            self.once_only(keyword, at);
                        }
                        self.cwd_seen = true;
                        self.out.contract.cwd = Some(path);
                    }
                }
            }
            "fingerprint" => {
                let fresh = self.first_time("fingerprint", value);
                if fresh {
                    self.out.contract.fingerprints.push(value.to_owned());
                }
            }
            "env" => {
                let valid = value
                    .chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && value.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if valid {
                    if self.first_time("env", value) {
                        self.out.contract.env.push(value.to_owned());
                    }
                } else {
                    self.error(
                        DiagnosticCode::InvalidScriptContract,
                        format!(
                            "`{value}` is not an environment variable name (letters, digits and `_`, not starting with a digit)"
                        ),
                        at,
                    )
                    .repairs
                    .push("Name the variable only, such as `# once env \"API_URL\"`; its value is read from the environment".to_owned());
                }
            }
            "output-symlinks" => {
                if self.symlinks_seen {
                    self.once_only(keyword, at);
                }
                self.symlinks_seen = true;
                match OutputSymlinks::from_name(value) {
                    Some(mode) => self.out.contract.output_symlinks = mode,
                    None => {
                        self.error(
                            DiagnosticCode::InvalidScriptContract,
                            format!(
                                "`once output-symlinks` is `materialize-external` or `preserve`, not `{value}`"
                            ),
                            at,
                        );
                    }
                }
            }
            _ => {}
        }
    }

    /// Whether `keyword` has not had `value` yet (and remembers it).
    fn first_time(&mut self, keyword: &'static str, value: &str) -> bool {
        self.seen.insert((keyword, value.to_owned()))
    }

    fn once_only(&mut self, keyword: &str, at: TextRange) {
        self.error(
            DiagnosticCode::InvalidScriptContract,
            format!("`once {keyword}` is given more than once; the last one would win"),
            at,
        )
        .repairs
        .push(format!("Keep one `once {keyword}` directive"));
    }

    /// A path value resolved against the script's directory, or `None` after reporting
    /// why it cannot be used.
    fn path_value(&mut self, keyword: &str, value: &str, at: TextRange) -> Option<String> {
        if value.starts_with('/') {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`{value}` is absolute; paths in directives are relative to the script's directory"),
                at,
            );
            return None;
        }
        let is_pattern = value.contains(['*', '?', '[', '{']);
        if is_pattern && keyword != "input" {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`once {keyword}` takes a path, not a pattern like `{value}`"),
                at,
            );
            return None;
        }
        let Some(path) = once_model::paths::lexical_join(self.directory, value) else {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`{value}` leaves the workspace"),
                at,
            );
            return None;
        };
        if keyword != "cwd" && path.is_empty() {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`{value}` names the workspace root; name a file or a directory in it"),
                at,
            );
            return None;
        }
        if path == ".once" || path.starts_with(".once/") {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`{value}` is inside `.once`, which holds once's own state"),
                at,
            );
            return None;
        }
        if is_pattern && let Err(error) = globset::Glob::new(&path) {
            self.error(
                DiagnosticCode::InvalidScriptPath,
                format!("`{value}` is not a valid pattern: {}", error.kind()),
                at,
            );
            return None;
        }
        Some(if path.is_empty() {
            ".".to_owned()
        } else {
            path
        })
    }
}

/// Whether the text after a comment's leading `once` is meant as a directive rather than
/// prose (`# Once the server is up, …`, `# once in a while`): a keyword, a misspelling
/// of one (four letters or more, two edits at most), a colon or a quote.
fn looks_like_directive(after_once: &str) -> bool {
    let text = after_once.trim_start();
    if text.is_empty() || text.starts_with([':', '"', '\'']) || after_once.contains('"') {
        return true;
    }
    let word_end = text
        .find(|c: char| c.is_whitespace() || c == ':' || c == '"' || c == '\'')
        .unwrap_or(text.len());
    let word = text[..word_end].to_ascii_lowercase();
    KEYWORDS.contains(&word.as_str())
        || word
            .strip_suffix('s')
            .is_some_and(|w| KEYWORDS.contains(&w))
        || (word.chars().count() >= 4
            && KEYWORDS
                .iter()
                .any(|keyword| crate::text::edit_distance(&word, keyword) <= 2))
}
