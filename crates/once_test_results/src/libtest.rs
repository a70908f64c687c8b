//! Rust's libtest, from its stable human output (`test path ... ok`, the `failures:`
//! section with each failing test's captured output and panic location).
//!
//! libtest prints no per-test durations in its stable output, so attempts carry none.
//!
//! `rust_test` runs each test executable of a package in turn, announcing each with a
//! `once: test executable <name>` line. When more than one is announced, the same test
//! path may be in several of them (`tests/a.rs` and `tests/b.rs` both with `fn works`),
//! so every case id is scoped by its executable: `a::works`, `b::works`. With one, ids
//! are the bare test paths.

use crate::Parsed;
use crate::record::{AttemptStatus, Case};

const SHOULD_PANIC: &str = " - should panic";

const BACKTRACE_HINT: &str = "note: run with `RUST_BACKTRACE=1` environment variable";

/// The line `rust_test` prints before running each test executable.
pub const EXECUTABLE_MARKER: &str = "once: test executable ";

pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    // The executables announced, and the one each case and failure output belongs to.
    let mut executables: Vec<&str> = Vec::new();
    let mut case_executables: Vec<usize> = Vec::new();
    let mut executable = 0;
    // Tests announced (`test a ... ` with the result still to come, in single-threaded
    // runs) but never finished: the binary died while running them.
    let mut pending: Option<String> = None;
    let mut failure: Option<(String, Vec<&str>)> = None;
    let mut outputs: Vec<(usize, String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix(EXECUTABLE_MARKER) {
            // What the executable before left open.
            close_executable(
                &mut parsed,
                &mut case_executables,
                &mut outputs,
                executable,
                pending.take(),
                failure.take(),
            );
            let name = name.trim();
            executable = match executables.iter().position(|known| *known == name) {
                Some(index) => index,
                None => {
                    executables.push(name);
                    executables.len() - 1
                }
            };
            continue;
        }
        if let Some((name, rest)) = line
            .strip_prefix("test ")
            .and_then(|line| line.split_once(" ..."))
        {
            let name = name.strip_suffix(SHOULD_PANIC).unwrap_or(name);
            let rest = rest.trim();
            if rest.is_empty() {
                pending = Some(name.to_owned());
                continue;
            }
            pending = None;
            let (status, message) = if rest == "ok" {
                (AttemptStatus::Passed, None)
            } else if rest == "FAILED" {
                (AttemptStatus::Failed, None)
            } else if let Some(reason) = rest.strip_prefix("ignored") {
                let reason = reason.trim_start_matches(',').trim();
                (
                    AttemptStatus::Skipped,
                    (!reason.is_empty()).then(|| reason.to_owned()),
                )
            } else {
                // `bench`, or text of the test's own that happened to look like a result.
                continue;
            };
            push(&mut parsed, name, status, message);
            case_executables.push(executable);
            continue;
        }
        if let Some(name) = line
            .strip_prefix("---- ")
            .and_then(|line| line.strip_suffix(" stdout ----"))
        {
            if let Some((name, lines)) = failure.take() {
                outputs.push((executable, name, lines.join("\n")));
            }
            failure = Some((
                name.strip_suffix(SHOULD_PANIC).unwrap_or(name).to_owned(),
                Vec::new(),
            ));
            continue;
        }
        if line == "failures:" || line.starts_with("test result: ") {
            if let Some((name, lines)) = failure.take() {
                outputs.push((executable, name, lines.join("\n")));
            }
            continue;
        }
        // The hint the panic hook prints once per process, after whichever test panicked
        // first: not the test's own output, and where it lands depends on the threads.
        if let Some((_, lines)) = failure.as_mut()
            && !line.starts_with(BACKTRACE_HINT)
        {
            lines.push(line);
        }
    }
    close_executable(
        &mut parsed,
        &mut case_executables,
        &mut outputs,
        executable,
        pending,
        failure,
    );
    for (owner, name, output) in outputs {
        let output = output.trim_matches('\n').to_owned();
        let Some(case) = parsed
            .cases
            .iter_mut()
            .zip(&case_executables)
            .find(|(case, case_owner)| case.id == name && **case_owner == owner)
            .map(|(case, _)| case)
        else {
            continue;
        };
        // A documentation test's panic is placed in the program rustdoc made of it: its
        // name already says where it is.
        if doctest_location(&case.id).is_none()
            && let Some((file, line)) = panic_location(&output)
        {
            case.file = Some(file);
            case.line = Some(line);
        }
        if let Some(attempt) = case.attempts.last_mut()
            && !output.is_empty()
        {
            attempt.message = Some(crate::record::bounded(output));
        }
    }
    if executables.len() > 1 {
        for (case, owner) in parsed.cases.iter_mut().zip(&case_executables) {
            case.id = format!("{}::{}", executables[*owner], case.id);
        }
    }
    parsed
}

/// What an executable left open when it ended (the next one was announced, or the
/// output ended): the test it was running (single-threaded runs) fails, and the last
/// failure's output is kept for its case.
fn close_executable(
    parsed: &mut Parsed,
    case_executables: &mut Vec<usize>,
    outputs: &mut Vec<(usize, String, String)>,
    executable: usize,
    pending: Option<String>,
    failure: Option<(String, Vec<&str>)>,
) {
    if let Some(name) = pending {
        push(
            parsed,
            &name,
            AttemptStatus::Failed,
            Some("the test binary ended while this test was running".to_owned()),
        );
        case_executables.push(executable);
    }
    if let Some((name, lines)) = failure {
        outputs.push((executable, name, lines.join("\n")));
    }
}

fn push(parsed: &mut Parsed, path: &str, status: AttemptStatus, message: Option<String>) {
    let doctest = doctest_location(path);
    // A documentation test's name is the whole path (`src/lib.rs - Type::new (line 3)`).
    let (suite, name) = match path.rsplit_once("::") {
        Some((suite, name)) if doctest.is_none() => (suite, name),
        _ => ("", path),
    };
    let mut case = Case::single(
        path.to_owned(),
        name.to_owned(),
        suite.to_owned(),
        status,
        None,
        message,
    );
    if let Some((file, line)) = doctest {
        case.file = Some(file.to_owned());
        case.line = Some(line);
    }
    parsed.push(case);
}

/// `src/lib.rs`, 14 from a documentation test's name, `src/lib.rs - add (line 14)` (the
/// line of its code block).
fn doctest_location(name: &str) -> Option<(&str, u32)> {
    let (file, rest) = name.split_once(" - ")?;
    let line = rest.strip_suffix(')')?.rsplit_once(" (line ")?.1;
    Some((file, line.parse().ok()?))
}

/// `src/lib.rs`, 17 from `thread 'x' (12) panicked at src/lib.rs:17:9:`.
fn panic_location(output: &str) -> Option<(String, u32)> {
    output.lines().find_map(|line| {
        let rest = line.strip_prefix("thread '")?;
        let (_, place) = rest.split_once(" panicked at ")?;
        let place = place.trim_end_matches(':');
        let (place, _column) = place.rsplit_once(':')?;
        let (file, line) = place.rsplit_once(':')?;
        Some((file.to_owned(), line.parse().ok()?))
    })
}
