//! JUnit XML, as pytest writes it (`--junitxml` with `junit_family=xunit1`, which keeps
//! each case's `file` and `line`) and as other runners write the common subset:
//! `testsuites` / nested `testsuite` / `testcase` with `failure`, `error` or `skipped`.

use std::collections::HashMap;

use quick_xml::Reader;
use quick_xml::XmlVersion;
use quick_xml::escape::resolve_predefined_entity;
use quick_xml::events::{BytesStart, Event};

use crate::Parsed;
use crate::record::{AttemptStatus, Case, bounded, millis_from_seconds};

/// Whose JUnit dialect: pytest's `line` is 0-based and its ids are node ids.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Pytest,
    Generic,
}

/// A case being read: its attributes, then what its children said.
struct Open {
    name: String,
    classname: String,
    file: Option<String>,
    line: Option<u32>,
    duration_ms: Option<u64>,
    status: AttemptStatus,
    message: Option<String>,
    /// The text of the `failure`/`error`/`skipped` element being read, if any.
    body: Option<String>,
}

pub fn parse(text: &str, dialect: Dialect) -> Parsed {
    parse_overriding(text, dialect, &HashMap::new())
}

/// [`parse`], where a case whose id `outcomes` holds has that status and message instead
/// of what its elements say (pytest's own outcome of a test with subtests, whose
/// failures the JUnit XML folds into the test's: `crate::pytest_subtests`).
pub(crate) fn parse_overriding(
    text: &str,
    dialect: Dialect,
    outcomes: &HashMap<String, (AttemptStatus, Option<String>)>,
) -> Parsed {
    let mut parsed = Parsed::default();
    let mut reader = Reader::from_str(text);
    let mut suites: Vec<String> = Vec::new();
    let mut open: Option<Open> = None;
    loop {
        let event = match reader.read_event() {
            Ok(event) => event,
            Err(error) => {
                parsed.problem(format!(
                    "the JUnit XML is malformed at byte {}: {error}",
                    reader.error_position()
                ));
                break;
            }
        };
        match event {
            Event::Eof => break,
            Event::Start(element) if element.local_name().as_ref() == "testsuite" => {
                suites.push(attribute(&element, "name").unwrap_or_default());
            }
            Event::Start(element) if element.local_name().as_ref() == "testcase" => {
                open = Some(open_case(&element));
            }
            Event::Empty(element) if element.local_name().as_ref() == "testcase" => {
                let case = open_case(&element);
                finish(&mut parsed, case, &suites, dialect, outcomes);
            }
            Event::Start(element) => {
                if let Some(case) = open.as_mut() {
                    outcome(case, &element, true);
                }
            }
            Event::Empty(element) => {
                if let Some(case) = open.as_mut() {
                    outcome(case, &element, false);
                }
            }
            Event::End(element) => match element.local_name().as_ref() {
                "testsuite" => {
                    suites.pop();
                }
                "testcase" => {
                    if let Some(case) = open.take() {
                        finish(&mut parsed, case, &suites, dialect, outcomes);
                    }
                }
                "failure" | "error" | "skipped" => {
                    if let Some(case) = open.as_mut()
                        && let Some(body) = case.body.take()
                    {
                        let body = body.trim().to_owned();
                        if !body.is_empty() {
                            case.message = Some(match case.message.take() {
                                Some(message) if !body.contains(&message) => {
                                    format!("{message}\n\n{body}")
                                }
                                _ => body,
                            });
                        }
                    }
                }
                _ => {}
            },
            Event::Text(text) => append(&mut open, &text.xml10_content()),
            Event::CData(data) => {
                append(&mut open, &data.into_inner());
            }
            Event::GeneralRef(reference) => {
                let resolved = match reference.resolve_char_ref() {
                    Ok(Some(ch)) => ch.to_string(),
                    _ => {
                        let name = reference.xml10_content();
                        resolve_predefined_entity(&name)
                            .map(str::to_owned)
                            .unwrap_or_else(|| format!("&{name};"))
                    }
                };
                append(&mut open, &resolved);
            }
            _ => {}
        }
    }
    if let Some(case) = open.take() {
        parsed.problem(format!(
            "the JUnit XML ends inside the case `{}`",
            case.name
        ));
        finish(&mut parsed, case, &suites, dialect, outcomes);
    }
    parsed
}

fn attribute(element: &BytesStart<'_>, name: &str) -> Option<String> {
    element.attributes().flatten().find_map(|attr| {
        (attr.key.local_name().as_ref() == name).then(|| {
            attr.normalized_value(XmlVersion::Implicit1_0)
                .map(|value| value.into_owned())
                .unwrap_or_else(|_| attr.value.clone().into_owned())
        })
    })
}

fn open_case(element: &BytesStart<'_>) -> Open {
    Open {
        name: attribute(element, "name").unwrap_or_default(),
        classname: attribute(element, "classname").unwrap_or_default(),
        file: attribute(element, "file").filter(|file| !file.is_empty()),
        line: attribute(element, "line").and_then(|line| line.trim().parse().ok()),
        duration_ms: attribute(element, "time").and_then(|time| millis_from_seconds(&time)),
        status: AttemptStatus::Passed,
        message: None,
        body: None,
    }
}

/// A `failure`, `error` or `skipped` child of the open case; `has_body` when its text
/// follows (a start tag rather than an empty element).
fn outcome(case: &mut Open, element: &BytesStart<'_>, has_body: bool) {
    let status = match element.local_name().as_ref() {
        "failure" | "error" => AttemptStatus::Failed,
        "skipped" => AttemptStatus::Skipped,
        _ => return,
    };
    // A failure outranks a skip (pytest reports an error in teardown of a skipped test).
    if case.status != AttemptStatus::Failed {
        case.status = status;
    }
    if let Some(message) = attribute(element, "message").filter(|m| !m.is_empty()) {
        case.message = Some(match case.message.take() {
            Some(previous) => format!("{previous}\n{message}"),
            None => message,
        });
    }
    if has_body {
        case.body = Some(String::new());
    }
}

fn append(open: &mut Option<Open>, text: &str) {
    if let Some(body) = open.as_mut().and_then(|case| case.body.as_mut()) {
        body.push_str(text);
    }
}

fn finish(
    parsed: &mut Parsed,
    mut open: Open,
    suites: &[String],
    dialect: Dialect,
    outcomes: &HashMap<String, (AttemptStatus, Option<String>)>,
) {
    let suite = if open.classname.is_empty() {
        // The innermost suites only: nesting is unbounded in the input.
        suites[suites.len().saturating_sub(64)..].join(" > ")
    } else {
        open.classname.clone()
    };
    let (id, line) = match dialect {
        Dialect::Pytest => (pytest_node_id(&open), open.line.map(|line| line + 1)),
        Dialect::Generic => (
            if suite.is_empty() {
                open.name.clone()
            } else {
                format!("{suite}::{}", open.name)
            },
            open.line,
        ),
    };
    if let Some((status, message)) = outcomes.get(&id) {
        open.status = *status;
        open.message.clone_from(message);
    }
    // pytest places a case at its `def`; the failure's own report ends with where it
    // failed in the test file (`tests/test_calc.py:9: AssertionError`), as libtest, go
    // and node place theirs.
    let line = match (
        dialect,
        open.status,
        open.file.as_deref(),
        open.message.as_deref(),
    ) {
        (Dialect::Pytest, AttemptStatus::Failed, Some(file), Some(body)) => {
            failure_line(body, file).or(line)
        }
        _ => line,
    };
    let mut case = Case::single(
        id,
        open.name,
        suite,
        open.status,
        open.duration_ms,
        open.message.map(bounded),
    );
    case.file = open.file;
    case.line = line;
    parsed.push(case);
}

/// The line of the last `FILE:LINE: ` of a pytest failure report that names the test's
/// own `file` (as it is, or absolute).
pub(crate) fn failure_line(body: &str, file: &str) -> Option<u32> {
    body.lines().rev().find_map(|line| {
        let (place, _) = line.split_once(": ")?;
        let (path, number) = place.rsplit_once(':')?;
        let same = path == file || path.ends_with(&format!("/{file}"));
        if same { number.parse().ok() } else { None }
    })
}

/// pytest's node id (`tests/test_a.py::TestGroup::test_x[1]`), which `pytest` accepts
/// back to select the case: the file, the classes the `classname` adds to the file's
/// module path, and the name.
fn pytest_node_id(case: &Open) -> String {
    let Some(file) = case.file.as_deref() else {
        return if case.classname.is_empty() {
            case.name.clone()
        } else {
            format!("{}::{}", case.classname, case.name)
        };
    };
    let module = file.trim_end_matches(".py").replace('/', ".");
    let classes = case
        .classname
        .strip_prefix(&module)
        .map(|rest| rest.trim_start_matches('.'))
        .unwrap_or("");
    let mut id = file.to_owned();
    for class in classes.split('.').filter(|class| !class.is_empty()) {
        id.push_str("::");
        id.push_str(class);
    }
    id.push_str("::");
    id.push_str(&case.name);
    id
}
