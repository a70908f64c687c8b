//! `once __test-adapter`: the command a test kind's `test` action runs. It runs the test
//! runner given after `--` (the leader of its own process group, killed when it exits,
//! so a background child it leaves holds nothing up: `once_exec::piped`), passes its
//! output through while keeping all of it in a log file, then parses the runner's native
//! results (`--format`: libtest text, pytest's JUnit XML, `go test -json`, TAP, the
//! `unittest_test` runner's report, or just the exit status) and writes the normalized
//! `once.test_results.v1` record
//! (`--results`, through `TestResults::to_json`: sound and bounded). It exits with the
//! runner's status, so a failing test fails its action (and is never cached) while its
//! record is still written.
//!
//! With `--shard INDEX/COUNT` it first asks the runner for its cases (libtest `--list`,
//! go `-test.list`) and runs only its contiguous group of the sorted names, so that the
//! batches of one target together run every case exactly once ([`Shard`]).
//!
//! For node's TAP, a second report of the runner (`--native`: each finished test's
//! file, in the order the TAP prints its points) lets every case id name its file. For
//! pytest, a second report (`--subtests`: once's plugin's JSON lines) adds the subtests
//! its JUnit XML cannot carry (`once_test_results::pytest_subtests`).
//!
//! Paths are relative to the working directory the action gives it (the package
//! directory, `--cwd` from the workspace root), so no absolute path enters the action's
//! key.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::Mutex;

use anyhow::Context as _;
use once_test_results::{Artifacts, NativeFormat, Outcome, Runner, assemble, pytest_subtests, tap};

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
    /// pytest's subtests report, merged into the JUnit XML's cases.
    pub subtests: Option<&'a Path>,
    pub cwd: &'a str,
    /// Whether a successful run reporting no case passes.
    pub allow_no_tests: bool,
    /// A staged copy of the package directory the runner runs the tests from.
    pub staged: Option<&'a Path>,
    /// The cases a retry runs again (empty: every case).
    pub retry_cases: &'a [String],
    /// `INDEX/COUNT`: run only that batch of the cases the runner lists.
    pub shard: Option<&'a str>,
    /// Arguments only the command listing a shard's cases gets (and the whole run, when
    /// the cases cannot be listed).
    pub list_args: &'a [String],
    pub argv: &'a [String],
}

/// Runs the runner, writes the record, and returns the exit code to leave with.
pub fn run(args: &AdapterArgs<'_>) -> anyhow::Result<i32> {
    let format = NativeFormat::from_name(args.format).with_context(|| {
        format!(
            "unknown results format `{}` (libtest, pytest_junit, junit, go_test_json, tap, unittest_json, exit_code)",
            args.format
        )
    })?;
    let argv = match args.shard {
        Some(shard) if args.retry_cases.is_empty() => {
            let shard = Shard::parse(shard)?;
            match shard.select(format, args.argv, args.list_args) {
                ShardRun::Cases(cases) => filtered(format, args.argv, &cases),
                ShardRun::Whole => [args.argv, args.list_args].concat(),
                ShardRun::Nothing(note) => return empty_batch(args, &note),
            }
        }
        _ => filtered(format, args.argv, args.retry_cases),
    };
    let (program, rest) = argv.split_first().context("no test command after `--`")?;
    if let Some(parent) = args.log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    let mut log = std::fs::File::create(args.log)
        .with_context(|| format!("cannot create `{}`", args.log.display()))?;
    let mut kept = once_exec::piped::Bounded::new(PARSED_OUTPUT_LIMIT);
    // Passed through and logged as it comes; the runner's group is killed when it exits
    // and its output read for a bounded time after, so a background child it left
    // holding the pipes holds nothing up (`once_exec::piped`).
    let ran = {
        let log = Mutex::new(&mut log);
        let logged = |chunk: &[u8]| {
            if let Ok(mut log) = log.lock() {
                let _ = log.write_all(chunk);
            }
        };
        once_exec::piped::run_program(
            program,
            rest,
            None,
            &mut |chunk| {
                let mut out = std::io::stdout().lock();
                let _ = out.write_all(chunk);
                let _ = out.flush();
                logged(chunk);
                kept.take(chunk);
            },
            &mut |chunk| {
                let _ = std::io::stderr().lock().write_all(chunk);
                logged(chunk);
            },
        )
    };
    let (status, stdout, problems) = match ran {
        Ok(exit) => {
            let problems = if kept.cut {
                vec![format!(
                    "the output is larger than {} MiB; only its beginning was read",
                    PARSED_OUTPUT_LIMIT >> 20
                )]
            } else {
                Vec::new()
            };
            (Some(exit.status), kept.bytes, problems)
        }
        Err(error) => {
            let message = format!("cannot start `{program}`: {error}");
            let _ = writeln!(log, "{message}");
            eprintln!("once: {message}");
            (None, Vec::new(), vec![message])
        }
    };
    let native_text = match (format, args.native) {
        (
            NativeFormat::PytestJunit | NativeFormat::Junit | NativeFormat::Unittest,
            Some(native),
        ) => {
            match once_db::system::read_regular_file(native) {
                Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
                Err(error) => {
                    // The runner did not get as far as writing it (no pytest in the
                    // interpreter, a missing module, a bad option): what it said last is
                    // the cause, so it comes first, where a short report shows it.
                    let mut parsed_problems = problems.clone();
                    if let Some(said) = last_lines(args.log) {
                        parsed_problems.push(format!("the runner's output ends with:\n{said}"));
                    }
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

/// How many of the log's last lines a missing results file is explained with: where a
/// Python interpreter puts the cause (`No module named pytest`, a traceback's last frame
/// and its exception), and few enough that `once test`'s report of a failed case (its
/// message's first six lines) shows them whole after the message's first two.
const CAUSE_LINES: usize = 4;

/// The last [`CAUSE_LINES`] non-blank lines of the log at `path` (from its last 4 KiB),
/// or `None` when it is empty or cannot be read.
fn last_lines(path: &Path) -> Option<String> {
    use std::io::{Read as _, Seek as _, SeekFrom};
    let mut file = std::fs::File::open(path).ok()?;
    let length = file.metadata().ok()?.len();
    file.seek(SeekFrom::Start(length.saturating_sub(4096)))
        .ok()?;
    let mut tail = Vec::new();
    file.read_to_end(&mut tail).ok()?;
    let text = String::from_utf8_lossy(&tail);
    let lines: Vec<&str> = text
        .lines()
        .filter(|line| !line.trim().is_empty())
        .collect();
    let kept = &lines[lines.len().saturating_sub(CAUSE_LINES)..];
    (!kept.is_empty()).then(|| kept.join("\n"))
}

/// The file of every test point of a TAP run, from the runner's second report
/// (`--native`, one `[file, line]` JSON line per finished test, in the order the TAP
/// prints them: `node_test`'s reporter). Each file is named for the case id as the
/// runner was given it, relative to the package directory (or to its staged copy).
/// None when there is no such report or it cannot be read.
fn point_files(args: &AdapterArgs<'_>, here: &Path) -> Option<Vec<tap::PointFile>> {
    let native = args.native?;
    let text = String::from_utf8(once_db::system::read_regular_file(native).ok()?).ok()?;
    let base = normalize(&here.join(args.staged.unwrap_or(Path::new("."))));
    let real_base = base.canonicalize().ok();
    let mut files = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let (path, line): (Option<String>, Option<u32>) = serde_json::from_str(line).ok()?;
        let path = path.unwrap_or_default();
        let path = path.strip_prefix("file://").unwrap_or(&path).to_owned();
        let absolute = normalize(&here.join(&path));
        let id_path = absolute
            .strip_prefix(&base)
            .ok()
            .or_else(|| absolute.strip_prefix(real_base.as_ref()?).ok())
            .map_or_else(|| path.clone(), |rest| rest.to_string_lossy().into_owned());
        files.push(tap::PointFile {
            id_path,
            path,
            line,
        });
    }
    Some(files)
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
        // pytest: node ids instead of the test files; a subtest's test runs again (pytest
        // cannot select a subtest), once.
        NativeFormat::PytestJunit => {
            argv.retain(|arg| arg.starts_with('-') || !arg.ends_with(".py"));
            for case in cases {
                let node = pytest_node_id(case).to_owned();
                if !argv.contains(&node) {
                    argv.push(node);
                }
            }
        }
        // unittest: the runner keeps only these cases of what discovery loads (a subtest's
        // test, a failed `setUpClass`'s class), so `load_tests` still decides what exists.
        NativeFormat::Unittest => {
            for case in cases {
                argv.push("--once-case".to_owned());
                argv.push(case.clone());
            }
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
        // node --test: a name pattern per case (its own name, the last ` > ` part after
        // the `file::` the id starts with), placed among node's options, before the test
        // files.
        NativeFormat::Tap => {
            if let Some(at) = argv.iter().position(|arg| arg == "--test") {
                let patterns = cases.iter().map(|case| {
                    let case = match case.split_once("::") {
                        Some((file, rest)) if is_script_file(file) => rest,
                        _ => case.as_str(),
                    };
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

/// The pytest node id a case id names: the id itself, or for a subtest
/// (`tests/test_a.py::test_x[a b] [odd] (i=1)`) what precedes the space that starts the
/// subtest's description (`[msg]` or `(k=v)`) once the node id's own brackets (its
/// parameters) are closed.
fn pytest_node_id(case: &str) -> &str {
    let Some(names) = case.find("::") else {
        return case;
    };
    let mut depth = 0i32;
    for (offset, c) in case[names..].char_indices() {
        let at = names + offset;
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            ' ' if depth <= 0 && matches!(case[at + 1..].chars().next(), Some('[' | '(')) => {
                return &case[..at];
            }
            _ => {}
        }
    }
    case
}

/// Whether `path` names a JavaScript file (the file a node case id starts with).
fn is_script_file(path: &str) -> bool {
    [".js", ".mjs", ".cjs"]
        .iter()
        .any(|suffix| path.ends_with(suffix))
}

/// One batch of a target's cases: the sorted names the runner lists, split into `count`
/// contiguous groups of nearly equal size (as the kinds split test files), and `index`
/// of them (from 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shard {
    pub index: usize,
    pub count: usize,
}

/// What a shard runs.
#[derive(Debug, PartialEq, Eq)]
pub enum ShardRun {
    /// These cases, with the runner's filter.
    Cases(Vec<String>),
    /// The runner as an unsplit run would (with the listing's arguments): batch 0 when
    /// the cases cannot be listed or there are none, so the merged record is the unsplit
    /// one.
    Whole,
    /// Nothing: the batch has no case (the note says why, for the log).
    Nothing(String),
}

impl Shard {
    /// `INDEX/COUNT` with `INDEX < COUNT`.
    pub fn parse(text: &str) -> anyhow::Result<Shard> {
        let parsed = text
            .split_once('/')
            .and_then(|(index, count)| Some((index.parse().ok()?, count.parse().ok()?)));
        match parsed {
            Some((index, count)) if index < count => Ok(Shard { index, count }),
            _ => anyhow::bail!("`--shard {text}` is not INDEX/COUNT with INDEX below COUNT"),
        }
    }

    /// This shard's part of `names` (sorted and deduplicated first).
    pub fn part(self, mut names: Vec<String>) -> Vec<String> {
        names.sort();
        names.dedup();
        let size = names.len().div_ceil(self.count.max(1)).max(1);
        let start = (self.index * size).min(names.len());
        let end = (start + size).min(names.len());
        names.drain(start..end).collect()
    }

    /// Lists the runner's cases (its command with the format's list option and
    /// `list_args`) and picks this shard's.
    fn select(self, format: NativeFormat, argv: &[String], list_args: &[String]) -> ShardRun {
        let listed = list_cases(format, argv, list_args);
        let problem = match listed {
            Ok(names) if !names.is_empty() => {
                let part = self.part(names);
                return if part.is_empty() {
                    ShardRun::Nothing(format!(
                        "batch {} of {}: no case falls in this batch",
                        self.index + 1,
                        self.count
                    ))
                } else {
                    ShardRun::Cases(part)
                };
            }
            Ok(_) => "the runner lists no case".to_owned(),
            Err(problem) => problem,
        };
        if self.index == 0 {
            ShardRun::Whole
        } else {
            ShardRun::Nothing(format!(
                "batch {} of {}: {problem}; batch 1 runs the whole target",
                self.index + 1,
                self.count
            ))
        }
    }
}

/// The case names the runner lists: libtest's `--list --format terse` (`name: test`
/// lines; benchmarks aside), go's `-test.list=.` through `test2json` (tests, examples
/// and fuzz targets; benchmarks do not run as tests).
fn list_cases(
    format: NativeFormat,
    argv: &[String],
    list_args: &[String],
) -> Result<Vec<String>, String> {
    let mut command = [argv, list_args].concat();
    match format {
        NativeFormat::Libtest => command.extend(["--list", "--format", "terse"].map(str::to_owned)),
        NativeFormat::GoTestJson => command.push("-test.list=.".to_owned()),
        _ => return Err("this runner cannot list its cases".to_owned()),
    }
    let (program, rest) = command.split_first().ok_or("no test command")?;
    let mut stdout = once_exec::piped::Bounded::new(PARSED_OUTPUT_LIMIT);
    let mut stderr = once_exec::piped::Bounded::new(64 << 10);
    let exit = once_exec::piped::run_program(
        program,
        rest,
        None,
        &mut |chunk| stdout.take(chunk),
        &mut |chunk| stderr.take(chunk),
    )
    .map_err(|error| format!("cannot start `{program}` to list the cases: {error}"))?;
    if !exit.status.success() {
        return Err(format!(
            "listing the cases failed ({}): {}",
            exit.status,
            String::from_utf8_lossy(&stderr.bytes).trim()
        ));
    }
    let stdout = String::from_utf8_lossy(&stdout.bytes);
    Ok(match format {
        NativeFormat::Libtest => stdout
            .lines()
            .filter_map(|line| line.strip_suffix(": test"))
            .map(str::to_owned)
            .collect(),
        _ => go_listed(&stdout),
    })
}

/// The tests, examples and fuzz targets in the output events of `test2json` running a
/// test binary with `-test.list`.
fn go_listed(events: &str) -> Vec<String> {
    let mut output = String::new();
    for line in events.lines() {
        if let Ok(event) = serde_json::from_str::<serde_json::Value>(line)
            && event["Action"] == "output"
            && let Some(text) = event["Output"].as_str()
        {
            output.push_str(text);
        }
    }
    output
        .lines()
        .map(str::trim)
        .filter(|name| {
            ["Test", "Example", "Fuzz"]
                .iter()
                .any(|prefix| name.starts_with(prefix))
                && name.chars().all(|c| c == '_' || c.is_alphanumeric())
        })
        .map(str::to_owned)
        .collect()
}

/// A batch with no case: its log says why, and its record has no case.
fn empty_batch(args: &AdapterArgs<'_>, note: &str) -> anyhow::Result<i32> {
    if let Some(parent) = args.log.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create `{}`", parent.display()))?;
    }
    std::fs::write(args.log, format!("once: {note}\n"))
        .with_context(|| format!("cannot write `{}`", args.log.display()))?;
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let root = workspace_root(&here, args.cwd);
    let log = normalize(&here.join(args.log));
    let log = log
        .strip_prefix(&root)
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|_| args.log.to_string_lossy().into_owned());
    let record = once_test_results::TestResults::new(
        args.target,
        Runner::named(args.runner),
        Vec::new(),
        Artifacts {
            logs: vec![log],
            native_results: Vec::new(),
        },
        false,
    );
    write_atomically(args.results, &record.to_json())?;
    Ok(0)
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
    let here = std::env::current_dir().context("cannot read the working directory")?;
    let mut parsed = match format {
        NativeFormat::Tap => {
            tap::parse_with_files(&native_text, point_files(args, &here).as_deref())
        }
        // No subtests report (a pytest that stopped before its plugin wrote one): the
        // JUnit XML alone.
        NativeFormat::PytestJunit => match args
            .subtests
            .and_then(|report| once_db::system::read_regular_file(report).ok())
        {
            Some(report) => pytest_subtests::parse(&native_text, &String::from_utf8_lossy(&report)),
            None => format.parse(&native_text),
        },
        _ => format.parse(&native_text),
    };
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
        allow_no_cases: format == NativeFormat::ExitCode || args.allow_no_tests,
    };
    let artifacts = Artifacts {
        logs: vec![outcome.log.clone()],
        native_results: args
            .native
            .into_iter()
            .chain(args.subtests)
            .map(relative)
            .collect(),
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
        let staged_absolute = format!("{}/", normalize(&here.join(staged)).display());
        let staged = format!("{}/", relative(staged));
        let package = match args.cwd {
            "" | "." => String::new(),
            cwd => format!("{}/", cwd.trim_end_matches('/')),
        };
        // A runner naming a test by its file (node: a file with no `test()` is one test
        // named by its absolute path) names the staged copy: the package's own path
        // replaces it, relative to the package as the runner would print it there.
        for case in &mut record.cases {
            if let Some(file) = case.file.as_mut()
                && let Some(rest) = file.strip_prefix(&staged)
            {
                *file = format!("{package}{rest}");
            }
            if case.name.contains(&staged_absolute) {
                case.name = case.name.replace(&staged_absolute, "");
                case.id = case.id.replace(&staged_absolute, "");
            }
        }
    }
    write_atomically(args.results, &record.to_json())?;
    let code = match status {
        Some(status) => exit_code_of(status),
        None => 127,
    };
    // A run the record fails although the runner succeeded (it ran no test) fails the
    // action too, so that it is not cached.
    let failed = record
        .cases
        .iter()
        .any(|case| case.status == once_test_results::CaseStatus::Failed);
    Ok(if code == 0 && failed { 1 } else { code })
}

/// The runner's exit code, or 128 + the signal that ended it.
fn exit_code_of(status: ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    status
        .code()
        .or_else(|| status.signal().map(|signal| 128 + signal))
        .unwrap_or(1)
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
                // Subtests run again through their test, once.
                "tests/test_a.py::test_x [odd] (i=1)",
                "tests/test_a.py::test_z[a b] (i=1)",
                "tests/test_a.py::test_z[a b] (<subtest>)",
                "tests/test_a.py::test_w[x (y)]",
            ],
            expect![[r#"
                python3
                -m
                pytest
                --junitxml=../j.xml
                -q
                tests/test_a.py::test_x
                tests/test_a.py::TestC::test_y[1]
                tests/test_a.py::test_z[a b]
                tests/test_a.py::test_w[x (y)]"#]],
        );
        check(
            NativeFormat::Unittest,
            &["python3", "runner.py", "discover", "-v"],
            &[
                "tests.test_a.Calc.test_add",
                "tests.test_a.Calc.test_words (word='B')",
            ],
            expect![[r#"
                python3
                runner.py
                discover
                -v
                --once-case
                tests.test_a.Calc.test_add
                --once-case
                tests.test_a.Calc.test_words (word='B')"#]],
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
            &[
                "a.test.mjs::group > fails (1+1)",
                "a.test.mjs::flaky",
                "x::y > z",
            ],
            expect![[r#"
                node
                --test
                --test-name-pattern=^fails \(1\+1\)$
                --test-name-pattern=^flaky$
                --test-name-pattern=^z$
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

    #[test]
    fn shards_split_the_sorted_names_into_contiguous_groups() {
        let names = |list: &[&str]| list.iter().map(|n| (*n).to_owned()).collect::<Vec<_>>();
        let five = names(&["e", "c", "a", "d", "b", "a"]);
        let parts = |count: usize| -> Vec<Vec<String>> {
            (0..count)
                .map(|index| Shard { index, count }.part(five.clone()))
                .collect()
        };
        assert_eq!(parts(1), vec![names(&["a", "b", "c", "d", "e"])]);
        assert_eq!(parts(2), vec![names(&["a", "b", "c"]), names(&["d", "e"])]);
        // More batches than names: the last ones are empty, none is run twice.
        assert_eq!(
            parts(4),
            vec![
                names(&["a", "b"]),
                names(&["c", "d"]),
                names(&["e"]),
                Vec::new()
            ]
        );
        assert_eq!(Shard::parse("1/3").ok(), Some(Shard { index: 1, count: 3 }));
        for wrong in ["3/3", "1", "a/2", "-1/2"] {
            assert!(Shard::parse(wrong).is_err(), "{wrong}");
        }
    }

    #[test]
    fn a_listing_that_leaves_a_background_child_is_not_waited_for() {
        let (sender, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let argv: Vec<String> = [
                "sh",
                "-c",
                "sleep 600 & printf 'a: test\\nb: test\\n'",
                "sh",
            ]
            .iter()
            .map(|a| (*a).to_owned())
            .collect();
            let _ =
                sender.send(Shard { index: 1, count: 2 }.select(NativeFormat::Libtest, &argv, &[]));
        });
        let selected = answer
            .recv_timeout(std::time::Duration::from_secs(20))
            .expect("the listing ends when the runner does");
        assert_eq!(selected, ShardRun::Cases(vec!["b".to_owned()]));
    }

    #[test]
    fn go_listings_name_tests_examples_and_fuzz_targets() {
        let events = [
            r#"{"Action":"output","Package":"p","Output":"TestA\n"}"#,
            r#"{"Action":"output","Package":"p","Output":"BenchmarkB\n"}"#,
            r#"{"Action":"output","Package":"p","Output":"ExampleC\nFuzzD\n"}"#,
            r#"{"Action":"output","Package":"p","Output":"ok  \tp\t0.01s\n"}"#,
            r#"{"Action":"pass","Package":"p","Elapsed":0.003}"#,
            "not json",
        ]
        .join("\n");
        assert_eq!(go_listed(&events), ["TestA", "ExampleC", "FuzzD"]);
    }

    #[test]
    fn a_shard_runs_its_group_of_the_listed_cases_or_batch_0_runs_everything() {
        let argv = |script: &str| -> Vec<String> {
            ["sh", "-c", script, "sh"]
                .iter()
                .map(|a| (*a).to_owned())
                .collect()
        };
        let select = |script: &str, index: usize, count: usize| {
            Shard { index, count }.select(NativeFormat::Libtest, &argv(script), &[])
        };
        // libtest's terse listing: tests only, benchmarks aside.
        let listing = "printf 'b::two: test\\nbench: bench\\na::one: test\\nc: test\\n'";
        assert_eq!(
            select(listing, 0, 2),
            ShardRun::Cases(vec!["a::one".to_owned(), "b::two".to_owned()])
        );
        assert_eq!(select(listing, 1, 2), ShardRun::Cases(vec!["c".to_owned()]));
        assert!(matches!(select(listing, 3, 4), ShardRun::Nothing(_)));
        // Nothing listed, or the listing failed: batch 0 runs the whole target.
        for script in ["true", "exit 3"] {
            assert_eq!(select(script, 0, 2), ShardRun::Whole, "{script}");
            assert!(
                matches!(select(script, 1, 2), ShardRun::Nothing(_)),
                "{script}"
            );
        }
        // A format that cannot list: the same.
        let exit = Shard { index: 0, count: 2 }.select(NativeFormat::Tap, &argv(listing), &[]);
        assert_eq!(exit, ShardRun::Whole);
    }
}
