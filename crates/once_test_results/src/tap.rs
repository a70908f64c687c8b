//! TAP (versions 12 to 14), as Node's test runner prints it (`--test-reporter=tap`) and as
//! C and shell tests may: test points (`ok 1 - name`, `not ok 2 - name # SKIP why`),
//! indented subtests before their parent's point, and YAML diagnostic blocks
//! (`duration_ms`, `location`, `error`, `type`) of which the keys used are read.
//!
//! A point without a description (`ok 1`, `not ok 2 - `) is named by its number
//! (`test 1`), or by its position when it has none either.
//!
//! A point with subtests is their suite; it is a case of its own only when it failed
//! while none of its subtests did. Lines that are not TAP (a test's own output) are
//! ignored; `Bail out!` ends the stream with a failed case.
//!
//! Node's TAP names no file for a passing test, so two test files with a test of the
//! same name would give the same case id. [`parse_with_files`] takes the file of every
//! test point, in the order the points are printed (what `node_test`'s second reporter
//! writes, one JSON line per finished test), and makes each id `file::suite > name`, the
//! file as the runner was given it (relative to the package directory), like a pytest
//! node id.

use crate::Parsed;
use crate::record::{AttemptStatus, Case, bounded};

/// One test point with what its diagnostics said.
#[derive(Debug, Default)]
struct Point {
    /// The point's position among all the points of the stream, in printing order.
    sequence: usize,
    indent: usize,
    /// The number the point printed, if any.
    number: Option<u64>,
    status: Option<AttemptStatus>,
    name: String,
    directive_message: Option<String>,
    duration_ms: Option<u64>,
    location: Option<(String, u32)>,
    error: Option<String>,
    is_suite: bool,
    children: Vec<Point>,
}

pub fn parse(text: &str) -> Parsed {
    parse_with_files(text, None)
}

/// The file of one test point: the path its id starts with, and the path and line to
/// report (when the TAP itself says nothing).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PointFile {
    pub id_path: String,
    pub path: String,
    pub line: Option<u32>,
}

/// Parses `text`, the ids of its points scoped by `files` (one per point, in printing
/// order). When the counts differ (a stream cut short, output that is not the runner's)
/// the files are not used and a problem says so.
pub fn parse_with_files(text: &str, files: Option<&[PointFile]>) -> Parsed {
    let mut parsed = Parsed::default();
    let mut sequence = 0;
    let lines: Vec<&str> = text.lines().collect();
    // Points whose parent has not been seen yet, innermost last.
    let mut stack: Vec<Point> = Vec::new();
    let mut index = 0;
    while index < lines.len() {
        let line = lines[index];
        index += 1;
        let indent = line.len() - line.trim_start().len();
        let body = line.trim();
        if let Some(reason) = body.strip_prefix("Bail out!") {
            let reason = reason.trim();
            parsed.push(Case::single(
                "(bail out)".to_owned(),
                "(bail out)".to_owned(),
                String::new(),
                AttemptStatus::Failed,
                None,
                Some(if reason.is_empty() {
                    "the test bailed out".to_owned()
                } else {
                    format!("the test bailed out: {reason}")
                }),
            ));
            break;
        }
        let Some(mut point) = test_point(body, indent) else {
            continue;
        };
        point.sequence = sequence;
        sequence += 1;
        if point.name.is_empty() {
            point.name = format!("test {}", point.number.unwrap_or(sequence as u64));
        }
        // The YAML block that follows the point, indented two more spaces.
        if lines
            .get(index)
            .is_some_and(|next| next.trim() == "---" && indentation(next) > indent)
        {
            let block_indent = indentation(lines[index]);
            index += 1;
            let start = index;
            while index < lines.len() && lines[index].trim() != "..." {
                index += 1;
            }
            diagnostics(&mut point, &lines[start..index], block_indent);
            index += 1;
        }
        let first_child = stack
            .iter()
            .rposition(|last| last.indent <= indent)
            .map_or(0, |parent| parent + 1);
        point.children = stack.split_off(first_child);
        stack.push(point);
    }
    let files = match files {
        Some(files) if files.len() == sequence => Some(files),
        Some(files) => {
            parsed.problem(format!(
                "the runner reported the files of {} tests for {sequence} test points: \
                 case ids do not name their files",
                files.len()
            ));
            None
        }
        None => None,
    };
    for root in stack {
        flatten(&mut parsed, root, files);
    }
    parsed
}

fn indentation(line: &str) -> usize {
    line.len() - line.trim_start().len()
}

/// `ok 3 - name # SKIP reason` (number, dash and directive optional).
fn test_point(body: &str, indent: usize) -> Option<Point> {
    let (passed, rest) = if let Some(rest) = body.strip_prefix("not ok") {
        (false, rest)
    } else if let Some(rest) = body.strip_prefix("ok") {
        (true, rest)
    } else {
        return None;
    };
    if !(rest.is_empty() || rest.starts_with(' ')) {
        return None;
    }
    let rest = rest.trim_start();
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let number = rest[..digits].parse().ok();
    let rest = rest[digits..].trim_start();
    let rest = rest.strip_prefix('-').unwrap_or(rest).trim_start();
    let (name, directive) = split_directive(rest);
    let mut point = Point {
        indent,
        number,
        name: unescape(name.trim()),
        ..Point::default()
    };
    point.status = Some(match directive {
        Some((kind, reason)) => {
            point.directive_message = Some(if reason.is_empty() {
                kind.to_ascii_uppercase()
            } else {
                format!("{}: {reason}", kind.to_ascii_uppercase())
            });
            AttemptStatus::Skipped
        }
        None if passed => AttemptStatus::Passed,
        None => AttemptStatus::Failed,
    });
    Some(point)
}

/// The name and the `# SKIP`/`# TODO` directive of a point's description; a `#` escaped
/// as `\#` is part of the name.
fn split_directive(text: &str) -> (&str, Option<(&str, &str)>) {
    let bytes = text.as_bytes();
    for (at, _) in text.match_indices('#') {
        if at > 0 && bytes[at - 1] == b'\\' {
            continue;
        }
        let after = text[at + 1..].trim_start();
        let word_end = after
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(after.len());
        let word = &after[..word_end];
        if word.len() >= 4
            && (word[..4].eq_ignore_ascii_case("skip") || word[..4].eq_ignore_ascii_case("todo"))
        {
            return (&text[..at], Some((word, after[word_end..].trim())));
        }
    }
    (text, None)
}

fn unescape(name: &str) -> String {
    name.replace("\\#", "#").replace("\\\\", "\\")
}

/// Reads the keys of a YAML diagnostic block that the record uses.
fn diagnostics(point: &mut Point, block: &[&str], block_indent: usize) {
    let mut index = 0;
    while index < block.len() {
        let line = block[index];
        index += 1;
        if indentation(line) != block_indent {
            continue;
        }
        let Some((key, value)) = line.trim().split_once(':') else {
            continue;
        };
        let value = value.trim();
        let value = if value == "|-" || value == "|" || value == ">-" || value == ">" {
            let start = index;
            while index < block.len()
                && (block[index].trim().is_empty() || indentation(block[index]) > block_indent)
            {
                index += 1;
            }
            let lines: Vec<&str> = block[start..index]
                .iter()
                .map(|line| line.get(block_indent + 2..).unwrap_or("").trim_end())
                .collect();
            lines.join("\n").trim_end().to_owned()
        } else {
            scalar(value)
        };
        match key.trim() {
            "duration_ms" => {
                point.duration_ms = value
                    .parse::<f64>()
                    .ok()
                    .filter(|d| d.is_finite() && *d >= 0.0)
                    .map(|d| d.round() as u64);
            }
            "location" => point.location = location(&value),
            "error" | "message" if !value.is_empty() => point.error = Some(value),
            "type" => point.is_suite = value == "suite",
            _ => {}
        }
    }
}

/// A YAML plain or quoted scalar's text.
fn scalar(value: &str) -> String {
    if let Some(inner) = value.strip_prefix('\'').and_then(|v| v.strip_suffix('\'')) {
        return inner.replace("''", "'");
    }
    if let Some(inner) = value.strip_prefix('"').and_then(|v| v.strip_suffix('"')) {
        return serde_json::from_str::<String>(&format!("\"{inner}\""))
            .unwrap_or_else(|_| inner.to_owned());
    }
    value.to_owned()
}

/// `/path/file.mjs:8:1` (or `file:line`) as the file and the line.
fn location(value: &str) -> Option<(String, u32)> {
    let value = value.strip_prefix("file://").unwrap_or(value);
    let (rest, last) = value.rsplit_once(':')?;
    let last: u32 = last.parse().ok()?;
    match rest.rsplit_once(':') {
        Some((file, line)) if line.parse::<u32>().is_ok() => {
            Some((file.to_owned(), line.parse().ok()?))
        }
        _ => Some((rest.to_owned(), last)),
    }
}

/// Suites deeper than this are not spelled out further in a case's suite path.
const SUITE_DEPTH: usize = 64;

/// A point to turn into cases, or a suite whose subtests have been turned into cases
/// (from `first_case` on) and which may be a failed case of its own.
enum Work {
    Visit {
        point: Point,
        suite: Vec<String>,
    },
    Close {
        point: Point,
        suite: Vec<String>,
        first_case: usize,
    },
}

/// The cases of the tree below `root`, depth-first in order; iterative, so the nesting
/// depth of the input is no concern of the stack.
fn flatten(parsed: &mut Parsed, root: Point, files: Option<&[PointFile]>) {
    let mut work = vec![Work::Visit {
        point: root,
        suite: Vec::new(),
    }];
    while let Some(item) = work.pop() {
        match item {
            Work::Visit { mut point, suite } => {
                if point.children.is_empty() && !point.is_suite {
                    push_case(parsed, point, &suite, files);
                    continue;
                }
                let mut path = suite.clone();
                if path.len() < SUITE_DEPTH {
                    path.push(point.name.clone());
                }
                let children = std::mem::take(&mut point.children);
                work.push(Work::Close {
                    point,
                    suite,
                    first_case: parsed.cases.len(),
                });
                for child in children.into_iter().rev() {
                    work.push(Work::Visit {
                        point: child,
                        suite: path.clone(),
                    });
                }
            }
            Work::Close {
                point,
                suite,
                first_case,
            } => {
                let failed = point.status == Some(AttemptStatus::Failed);
                let child_failed = parsed.cases[first_case..]
                    .iter()
                    .any(|case| case.status == crate::record::CaseStatus::Failed);
                // A suite that failed by itself (a hook, an error outside its tests).
                if failed && !child_failed {
                    push_case(parsed, point, &suite, files);
                }
            }
        }
    }
}

fn push_case(
    parsed: &mut Parsed,
    mut point: Point,
    suites: &[String],
    files: Option<&[PointFile]>,
) {
    let suite = suites.join(" > ");
    let mut id = if suite.is_empty() {
        point.name.clone()
    } else {
        format!("{suite} > {}", point.name)
    };
    if let Some(file) = files
        .and_then(|files| files.get(point.sequence))
        .filter(|file| !file.id_path.is_empty())
    {
        id = format!("{}::{id}", file.id_path);
        if point.location.is_none() {
            point.location = file.line.map(|line| (file.path.clone(), line));
        }
    }
    let status = point.status.unwrap_or(AttemptStatus::Failed);
    let message = match status {
        AttemptStatus::Failed => point.error,
        AttemptStatus::Skipped => point.directive_message,
        AttemptStatus::Passed => None,
    };
    let mut case = Case::single(
        id,
        point.name,
        suite,
        status,
        point.duration_ms,
        message.map(bounded),
    );
    if let Some((file, line)) = point.location {
        case.file = Some(file);
        case.line = Some(line);
    }
    parsed.push(case);
}
