//! `once __test-adapter`: the command a test kind's `test` action runs. It runs the test
//! runner given after `--`, passes its output through while keeping all of it in a log
//! file, then parses the runner's native results (`--format`: libtest text, pytest's
//! JUnit XML, `go test -json`, TAP, or just the exit status) and writes the normalized
//! `once.test_results.v1` record (`--results`). It exits with the runner's status, so a
//! failing test fails its action (and is never cached) while its record is still
//! written.
//!
//! Paths are relative to the working directory the action gives it (the package
//! directory, `--cwd` from the workspace root), so no absolute path enters the action's
//! key.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};

use anyhow::Context as _;
use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, assemble};

/// The most of the runner's standard output kept in memory for parsing; the log keeps
/// all of it.
const PARSED_OUTPUT_LIMIT: usize = 64 << 20;

/// The adapter's arguments (see `Command::TestAdapter`).
pub struct AdapterArgs<'a> {
    pub format: &'a str,
    pub target: &'a str,
    pub runner: &'a str,
    pub results: &'a Path,
    pub log: &'a Path,
    pub native: Option<&'a Path>,
    pub cwd: &'a str,
    /// A staged copy of the package directory the runner runs the tests from.
    pub staged: Option<&'a Path>,
    /// The cases a retry runs again (empty: every case).
    pub retry_cases: &'a [String],
    pub argv: &'a [String],
}

/// Runs the runner, writes the record, and returns the exit code to leave with.
pub fn run(args: &AdapterArgs<'_>) -> anyhow::Result<i32> {
    let format = NativeFormat::from_name(args.format).with_context(|| {
        format!(
            "unknown results format `{}` (libtest, pytest_junit, junit, go_test_json, tap, exit_code)",
            args.format
        )
    })?;
    let argv = filtered(format, args.argv, args.retry_cases);
    let (program, rest) = argv.split_first().context("no test command after `--`")?;
    if let Some(parent) = args.log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let log = std::fs::File::create(args.log)
        .with_context(|| format!("cannot create `{}`", args.log.display()))?;
    let log = Arc::new(Mutex::new(log));
    let (status, stdout, problems) = match Command::new(program)
        .args(rest)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
    {
        Ok(mut child) => {
            let out = child.stdout.take().map(|pipe| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || tee(pipe, std::io::stdout(), &log, true))
            });
            let err = child.stderr.take().map(|pipe| {
                let log = Arc::clone(&log);
                std::thread::spawn(move || tee(pipe, std::io::stderr(), &log, false))
            });
            let status = child.wait().context("cannot wait for the test runner")?;
            let (stdout, truncated) = out
                .and_then(|thread| thread.join().ok())
                .unwrap_or_default();
            if let Some(thread) = err {
                let _ = thread.join();
            }
            let problems = if truncated {
                vec![format!(
                    "the output is larger than {} MiB; only its beginning was read",
                    PARSED_OUTPUT_LIMIT >> 20
                )]
            } else {
                Vec::new()
            };
            (Some(status), stdout, problems)
        }
        Err(error) => {
            let message = format!("cannot start `{program}`: {error}");
            if let Ok(mut log) = log.lock() {
                let _ = writeln!(log, "{message}");
            }
            eprintln!("once: {message}");
            (None, Vec::new(), vec![message])
        }
    };
    let native_text = match (format, args.native) {
        (NativeFormat::PytestJunit | NativeFormat::Junit, Some(native)) => {
            match once_db::system::read_regular_file(native) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(error) => {
                    let mut parsed_problems = problems.clone();
                    parsed_problems
                        .push(format!("no results file `{}`: {error}", native.display()));
                    return finish(args, format, String::new(), parsed_problems, status);
                }
            }
        }
        _ => String::from_utf8_lossy(&stdout).into_owned(),
    };
    finish(args, format, native_text, problems, status)
}

/// The runner's command line selecting only `cases` (ids of a previous record), in the
/// runner's own filter syntax; unchanged when there are none or the format has no
/// filter (the whole target runs again).
pub fn filtered(format: NativeFormat, argv: &[String], cases: &[String]) -> Vec<String> {
    let mut argv = argv.to_vec();
    if cases.is_empty() {
        return argv;
    }
    match format {
        // libtest: the test paths, matched exactly.
        NativeFormat::Libtest => {
            argv.push("--exact".to_owned());
            argv.extend(cases.iter().cloned());
        }
        // pytest: node ids instead of the test files.
        NativeFormat::PytestJunit => {
            argv.retain(|arg| arg.starts_with('-') || !arg.ends_with(".py"));
            argv.extend(cases.iter().cloned());
        }
        // go: `-test.run` with one alternation per subtest level (`^(A|B)$/^(x)$`);
        // ids are `package::TestName/sub`.
        NativeFormat::GoTestJson => {
            let mut levels: Vec<Vec<String>> = Vec::new();
            for case in cases {
                let name = case
                    .split_once("::")
                    .map_or(case.as_str(), |(_, name)| name);
                for (level, part) in name.split('/').enumerate() {
                    if levels.len() <= level {
                        levels.push(Vec::new());
                    }
                    let part = regex_escape(part);
                    if !levels[level].contains(&part) {
                        levels[level].push(part);
                    }
                }
            }
            let pattern: Vec<String> = levels
                .iter()
                .map(|parts| format!("^({})$", parts.join("|")))
                .collect();
            argv.push(format!("-test.run={}", pattern.join("/")));
        }
        // node --test: a name pattern per case (its own name, the last ` > ` part),
        // placed among node's options, before the test files.
        NativeFormat::Tap => {
            if let Some(at) = argv.iter().position(|arg| arg == "--test") {
                let patterns = cases.iter().map(|case| {
                    let name = case.rsplit(" > ").next().unwrap_or(case);
                    format!("--test-name-pattern=^{}$", regex_escape(name))
                });
                let tail = argv.split_off(at + 1);
                argv.extend(patterns);
                argv.extend(tail);
            }
        }
        NativeFormat::Junit | NativeFormat::ExitCode => {}
    }
    argv
}

/// Whether [`filtered`] can select cases in `format`.
fn filters(format: NativeFormat) -> bool {
    !matches!(format, NativeFormat::Junit | NativeFormat::ExitCode)
}

/// `text` with the characters regular expressions treat specially escaped.
fn regex_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        if "\\.+*?()|[]{}^$".contains(c) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Parses, assembles and writes the record; the exit code of the adapter.
fn finish(
    args: &AdapterArgs<'_>,
    format: NativeFormat,
    native_text: String,
    problems: Vec<String>,
    status: Option<ExitStatus>,
) -> anyhow::Result<i32> {
    let mut parsed = format.parse(&native_text);
    parsed.problems.extend(problems);
    // A retry reports only the cases it was asked to run again: the runner's filter may
    // select more (go's per-level patterns) or report the others as skipped (node).
    if !args.retry_cases.is_empty() && filters(format) {
        parsed
            .cases
            .retain(|case| args.retry_cases.contains(&case.id));
    }
    // A runner that could not start counts as the shell's "command not found".
    let exit_code = match status {
        Some(status) => status.code(),
        None => Some(127),
    };
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let root = workspace_root(&here, args.cwd);
    // A relative file the runner names is taken relative to the package directory; one
    // that only exists relative to the workspace root (Cargo prints paths relative to
    // its workspace, which may be the root) is made absolute so it is read that way.
    for case in &mut parsed.cases {
        if let Some(file) = case.file.as_mut()
            && Path::new(file.as_str()).is_relative()
            && !here.join(file.as_str()).exists()
            && root.join(file.as_str()).is_file()
        {
            *file = root.join(file.as_str()).to_string_lossy().into_owned();
        }
    }
    let relative = |path: &Path| -> String {
        let absolute = here.join(path);
        let normal = normalize(&absolute);
        normal
            .strip_prefix(&root)
            .map(|p| p.to_string_lossy().into_owned())
            .unwrap_or_else(|_| path.to_string_lossy().into_owned())
    };
    let outcome = Outcome {
        exit_code,
        timed_out: false,
        log: relative(args.log),
        cwd: args.cwd.to_owned(),
    };
    let artifacts = Artifacts {
        logs: vec![outcome.log.clone()],
        native_results: args
            .native
            .map(|path| vec![relative(path)])
            .unwrap_or_default(),
    };
    let mut record = assemble(
        args.target,
        Runner::named(args.runner),
        parsed,
        &outcome,
        artifacts,
        &root.to_string_lossy(),
    );
    // Files of a staged copy of the package are reported as the package's own.
    if let Some(staged) = args.staged {
        let staged = format!("{}/", relative(staged));
        let package = match args.cwd {
            "" | "." => String::new(),
            cwd => format!("{}/", cwd.trim_end_matches('/')),
        };
        for case in &mut record.cases {
            if let Some(file) = case.file.as_mut()
                && let Some(rest) = file.strip_prefix(&staged)
            {
                *file = format!("{package}{rest}");
            }
        }
    }
    write_atomically(args.results, &serde_json::to_vec_pretty(&record)?)?;
    Ok(match status {
        Some(status) => exit_code_of(status),
        None => 127,
    })
}

/// The runner's exit code, or 128 + the signal that ended it.
fn exit_code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
}

/// Copies `pipe` to `to` and to the log; keeps the first [`PARSED_OUTPUT_LIMIT`] bytes
/// when `keep`, saying whether more came.
fn tee(
    mut pipe: impl Read,
    mut to: impl Write,
    log: &Mutex<std::fs::File>,
    keep: bool,
) -> (Vec<u8>, bool) {
    let mut kept = Vec::new();
    let mut truncated = false;
    let mut buffer = vec![0u8; 64 * 1024];
    loop {
        let n = match pipe.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => n,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let chunk = &buffer[..n];
        let _ = to.write_all(chunk);
        if let Ok(mut log) = log.lock() {
            let _ = log.write_all(chunk);
        }
        if keep {
            let room = PARSED_OUTPUT_LIMIT.saturating_sub(kept.len());
            kept.extend_from_slice(&chunk[..room.min(n)]);
            truncated |= n > room;
        }
    }
    let _ = to.flush();
    (kept, truncated)
}

/// The workspace root: `here` without the trailing components `cwd` names.
fn workspace_root(here: &Path, cwd: &str) -> PathBuf {
    let depth = cwd
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .count();
    let mut root = here.to_path_buf();
    for _ in 0..depth {
        if !root.pop() {
            break;
        }
    }
    root
}

/// `path` with `.` and `..` resolved lexically.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Writes `bytes` to `path` through a temporary file in the same directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let directory = match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
        _ => PathBuf::from("."),
    };
    std::fs::create_dir_all(&directory)
        .with_context(|| format!("cannot create `{}`", directory.display()))?;
    let name = path
        .file_name()
        .with_context(|| format!("`{}` names no file", path.display()))?;
    let temporary = directory.join(format!(
        ".{}.once-{}.tmp",
        name.to_string_lossy(),
        std::process::id()
    ));
    let written =
        std::fs::write(&temporary, bytes).and_then(|()| std::fs::rename(&temporary, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&temporary);
    }
    written.with_context(|| format!("cannot write `{}`", path.display()))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    /// The runner's command line a retry of `cases` runs, one word per line.
    fn check(format: NativeFormat, argv: &[&str], cases: &[&str], expected: Expect) {
        let argv: Vec<String> = argv.iter().map(|a| (*a).to_owned()).collect();
        let cases: Vec<String> = cases.iter().map(|c| (*c).to_owned()).collect();
        expected.assert_eq(&filtered(format, &argv, &cases).join("\n"));
    }

    #[test]
    fn retries_select_cases_in_each_runners_own_syntax() {
        check(
            NativeFormat::Libtest,
            &["sh", "-c", "run", "sh", "tests"],
            &["tests::fails", "tests::nested::deep"],
            expect![[r#"
                sh
                -c
                run
                sh
                tests
                --exact
                tests::fails
                tests::nested::deep"#]],
        );
        check(
            NativeFormat::PytestJunit,
            &[
                "python3",
                "-m",
                "pytest",
                "--junitxml=../j.xml",
                "-q",
                "tests/test_a.py",
                "tests/test_b.py",
            ],
            &[
                "tests/test_a.py::test_x",
                "tests/test_a.py::TestC::test_y[1]",
            ],
            expect![[r#"
                python3
                -m
                pytest
                --junitxml=../j.xml
                -q
                tests/test_a.py::test_x
                tests/test_a.py::TestC::test_y[1]"#]],
        );
        check(
            NativeFormat::GoTestJson,
            &["go", "tool", "test2json", "-t", "./x.test", "-test.v"],
            &[
                "pkg/T::TestFails",
                "pkg/T::TestTable/two.x",
                "pkg/T::TestTable/three",
            ],
            expect![[r#"
                go
                tool
                test2json
                -t
                ./x.test
                -test.v
                -test.run=^(TestFails|TestTable)$/^(two\.x|three)$"#]],
        );
        check(
            NativeFormat::Tap,
            &["node", "--test", "--test-reporter=tap", "a.test.mjs"],
            &["group > fails (1+1)", "flaky"],
            expect![[r#"
                node
                --test
                --test-name-pattern=^fails \(1\+1\)$
                --test-name-pattern=^flaky$
                --test-reporter=tap
                a.test.mjs"#]],
        );
        // A TAP program that is not node, and a plain exit status: the whole target.
        check(
            NativeFormat::Tap,
            &["sh", "t.sh"],
            &["one"],
            expect![[r#"
                sh
                t.sh"#]],
        );
        check(NativeFormat::ExitCode, &["./t"], &["t"], expect!["./t"]);
        check(NativeFormat::Libtest, &["./t"], &[], expect!["./t"]);
    }
}
