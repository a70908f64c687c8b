//! The examples of the user documentation, run through the real `once` binary.
//!
//! **`docs/cli.md`**: every ```` ```console ```` block is a terminal transcript. A line
//! starting with `$ ` is a command, `> ` lines continue it (as after a here-document), and
//! the lines up to the next command are its exact output, stdout and stderr together.
//! Each block runs in one `bash` from the root of a fresh copy of the repository's
//! `test_data/demo`, with the `once` under test first on `PATH` and `NO_COLOR=1`; that
//! copy's root is shown as `/path/to/once` (and may be written so in commands). Output may be shortened with `…`: a line
//! ending in `…` matches any line starting with the text before it, and a last line of
//! just `…` stands for the rest of the output. A command that exits non-zero must be
//! followed by `$ echo $?`, so that no failure goes unnoticed in the doc.
//! `UPDATE_EXPECT=1 cargo test -p once_cli --test docs` rewrites the outputs in the doc,
//! keeping each `…` shortening in place.
//!
//! **`docs/manifest.md`**: every ```` ```toml ```` block is one of:
//! - ```` ```toml ```` — a complete manifest whose first line is a comment naming its path
//!   (`# apps/hello/once.toml`). It is written at that path in a copy of the demo, files
//!   matching its targets' `srcs` are created, and `once query validate-workspace` must
//!   report no diagnostic at all;
//! - ```` ```toml diagnostic=CODE ```` — the same, but the workspace must report `CODE`
//!   on that file: the block shows a mistake or a notice;
//! - ```` ```toml fragment ```` — part of a manifest (a `[target.attrs]` table alone); it
//!   must still parse without a syntax error, as a package manifest of an empty workspace.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

/// How the sandbox's root is shown in the doc.
const SHOWN_ROOT: &str = "/path/to/once";
const ELLIPSIS: &str = "…";
/// Separates the outputs of a block's commands in the transcript `bash` prints.
const MARK: char = '\u{1e}';

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .canonicalize()
        .expect("the repository root exists")
}

fn updating() -> bool {
    std::env::var_os("UPDATE_EXPECT").is_some()
}

// ---------------------------------------------------------------------------------------
// Markdown fences

/// A fenced code block: its info string and the line indices of its body.
struct Fence {
    info: String,
    /// The whitespace before the opening fence, removed from the body's lines.
    indent: String,
    /// Index of the first body line (the line after the opening fence).
    body_start: usize,
    /// Index of the closing fence.
    body_end: usize,
}

impl Fence {
    fn language(&self) -> &str {
        self.info.split_whitespace().next().unwrap_or("")
    }

    /// 1-based line number of the opening fence, for messages.
    fn line(&self) -> usize {
        self.body_start
    }
}

fn fences(doc: &str, lines: &[&str]) -> Vec<Fence> {
    let mut fences = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let trimmed = lines[i].trim_start();
        if !trimmed.starts_with("```") {
            i += 1;
            continue;
        }
        let ticks = trimmed.chars().take_while(|c| *c == '`').count();
        let indent = lines[i][..lines[i].len() - trimmed.len()].to_owned();
        let info = trimmed[ticks..].trim().to_owned();
        let close = (i + 1..lines.len())
            .find(|&j| {
                let t = lines[j].trim();
                t.len() >= ticks && t.chars().all(|c| c == '`')
            })
            .unwrap_or_else(|| panic!("{doc}:{}: the code block is never closed", i + 1));
        fences.push(Fence {
            info,
            indent,
            body_start: i + 1,
            body_end: close,
        });
        i = close + 1;
    }
    fences
}

// ---------------------------------------------------------------------------------------
// Sandboxes

/// A temporary directory laid out like the repository, holding a copy of the demo.
struct Sandbox {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Sandbox {
    fn new() -> Sandbox {
        let dir = tempfile::Builder::new()
            .prefix("once-docs-test-")
            .tempdir()
            .expect("cannot create a temp dir");
        let root = dir.path().canonicalize().expect("cannot canonicalize");
        copy_dir(&repo().join("test_data/demo"), &root.join("test_data/demo"));
        Sandbox { _dir: dir, root }
    }

    fn demo(&self) -> PathBuf {
        self.root.join("test_data/demo")
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("cannot create a directory");
    for entry in std::fs::read_dir(from).expect("cannot list a directory") {
        let entry = entry.expect("bad entry");
        // A developer's own runs in the source tree leave their state there.
        if entry.file_name() == ".once" {
            continue;
        }
        let target = to.join(entry.file_name());
        if entry.file_type().expect("no file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("cannot copy a file");
        }
    }
}

fn once_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_once"))
}

/// Runs `once -C <demo> <args…>` and parses its JSON answer.
fn once_json(demo: &Path, args: &[&str]) -> Value {
    let output = Command::new(once_bin())
        .arg("-C")
        .arg(demo)
        .args(args)
        .args(["--format", "json"])
        .env_remove("ONCE_WORKSPACE")
        .stdin(Stdio::null())
        .output()
        .expect("cannot start once");
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "`once {}` printed no JSON ({e}): {}{}",
            args.join(" "),
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

// ---------------------------------------------------------------------------------------
// docs/cli.md: console transcripts

/// One command of a transcript and the output the doc shows for it.
struct Example {
    /// The `$ ` line and its `> ` continuations, as written.
    shown: Vec<String>,
    /// The command for `bash`.
    command: String,
    expected: Vec<String>,
    /// 1-based line of the `$ ` line in the doc.
    line: usize,
}

fn parse_transcript(doc: &str, lines: &[&str], fence: &Fence) -> Vec<Example> {
    let mut examples: Vec<Example> = Vec::new();
    let mut continuing = false;
    for (index, line) in lines
        .iter()
        .enumerate()
        .take(fence.body_end)
        .skip(fence.body_start)
    {
        if let Some(command) = line.strip_prefix("$ ") {
            examples.push(Example {
                shown: vec![(*line).to_owned()],
                command: command.to_owned(),
                expected: Vec::new(),
                line: index + 1,
            });
            continuing = true;
            continue;
        }
        let Some(example) = examples.last_mut() else {
            panic!(
                "{doc}:{}: a console block must start with a `$ ` command line",
                index + 1
            );
        };
        match line.strip_prefix("> ").or((*line == ">").then_some("")) {
            Some(rest) if continuing => {
                example.shown.push((*line).to_owned());
                example.command.push('\n');
                example.command.push_str(rest);
            }
            _ => {
                continuing = false;
                example.expected.push((*line).to_owned());
            }
        }
    }
    assert!(
        !examples.is_empty(),
        "{doc}:{}: an empty console block",
        fence.line()
    );
    examples
}

/// Runs a transcript's commands in one `bash`; returns each one's output and exit status.
fn run_transcript(examples: &[Example]) -> Vec<(String, i32)> {
    let sandbox = Sandbox::new();
    let mut script = String::from("exec 2>&1\n");
    for example in examples {
        writeln!(
            script,
            "{}\n__once_status=$?\nprintf '{MARK}%d{MARK}' \"$__once_status\"\n(exit \"$__once_status\")",
            example
                .command
                .replace(SHOWN_ROOT, &sandbox.root.display().to_string())
        )
        .expect("writing to a String");
    }
    let bin_dir = once_bin().parent().expect("the binary has a directory");
    let path = std::env::join_paths(std::iter::once(bin_dir.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .expect("a valid PATH");
    let output = Command::new("bash")
        .args(["--noprofile", "--norc", "-c", &script])
        .current_dir(&sandbox.root)
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("ONCE_WORKSPACE")
        .env_remove("BASH_ENV")
        .env_remove("CDPATH")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .output()
        .expect("cannot start bash");
    let text = String::from_utf8(output.stdout)
        .expect("the transcript is UTF-8")
        .replace(&sandbox.root.display().to_string(), SHOWN_ROOT);
    let mut pieces = text.split(MARK);
    let mut results = Vec::new();
    for example in examples {
        let (Some(out), Some(status)) = (pieces.next(), pieces.next()) else {
            panic!(
                "bash stopped before `{}`: {text}{}",
                example.command,
                String::from_utf8_lossy(&output.stderr)
            );
        };
        let status = status.parse().expect("an exit status");
        results.push((out.to_owned(), status));
    }
    results
}

fn output_lines(output: &str) -> Vec<String> {
    let body = output.strip_suffix('\n').unwrap_or(output);
    if body.is_empty() {
        return Vec::new();
    }
    body.split('\n').map(|l| l.trim_end().to_owned()).collect()
}

fn line_matches(expected: &str, actual: &str) -> bool {
    let expected = expected.trim_end();
    match expected.strip_suffix(ELLIPSIS) {
        Some(prefix) if !prefix.is_empty() => actual.starts_with(prefix),
        _ => expected == actual,
    }
}

/// Whether `actual` is what `expected` shows, `…` shortenings included.
fn output_matches(expected: &[String], actual: &[String]) -> bool {
    let (shape, rest_elided) = match expected.split_last() {
        Some((last, init)) if last == ELLIPSIS => (init, true),
        _ => (expected, false),
    };
    let length_ok = if rest_elided {
        actual.len() >= shape.len()
    } else {
        actual.len() == shape.len()
    };
    length_ok && shape.iter().zip(actual).all(|(e, a)| line_matches(e, a))
}

/// `actual`, shortened the way `expected` is.
fn shorten_like(expected: &[String], actual: &[String]) -> Vec<String> {
    let (shape, rest_elided) = match expected.split_last() {
        Some((last, init)) if last == ELLIPSIS => (init, true),
        _ => (expected, false),
    };
    let mut out = Vec::new();
    for (i, line) in actual.iter().enumerate() {
        if rest_elided && i >= shape.len() {
            break;
        }
        match shape
            .get(i)
            .and_then(|e| e.trim_end().strip_suffix(ELLIPSIS))
        {
            Some(prefix) if !prefix.is_empty() && line.chars().count() > prefix.chars().count() => {
                let kept: String = line.chars().take(prefix.chars().count()).collect();
                out.push(format!("{kept}{ELLIPSIS}"));
            }
            _ => out.push(line.clone()),
        }
    }
    if rest_elided {
        out.push(ELLIPSIS.to_owned());
    }
    out
}

/// A line diff of `expected` against `actual` (`-` only in the doc, `+` only in the output).
fn diff(expected: &[String], actual: &[String]) -> String {
    let (n, m) = (expected.len(), actual.len());
    let mut lcs = vec![vec![0usize; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if line_matches(&expected[i], &actual[j]) {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, String::new());
    while i < n || j < m {
        if i < n && j < m && line_matches(&expected[i], &actual[j]) {
            writeln!(out, "   {}", actual[j]).expect("writing to a String");
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            writeln!(out, " - {}", expected[i]).expect("writing to a String");
            i += 1;
        } else {
            writeln!(out, " + {}", actual[j]).expect("writing to a String");
            j += 1;
        }
    }
    out
}

#[test]
fn cli_doc_examples_are_current() {
    let doc = "docs/cli.md";
    let path = repo().join(doc);
    let text = std::fs::read_to_string(&path).expect("docs/cli.md exists");
    let lines: Vec<&str> = text.lines().collect();
    let mut rewritten: Vec<String> = lines.iter().map(|l| (*l).to_owned()).collect();
    let mut failures = Vec::new();
    let mut unshown_failures = Vec::new();
    let mut commands = 0;
    let fences = fences(doc, &lines);
    for fence in fences.iter().rev() {
        if fence.language() != "console" {
            continue;
        }
        let examples = parse_transcript(doc, &lines, fence);
        let results = run_transcript(&examples);
        commands += examples.len();
        let mut body = Vec::new();
        for (index, (example, (output, status))) in examples.iter().zip(&results).enumerate() {
            let actual = output_lines(output);
            if !output_matches(&example.expected, &actual) {
                failures.push(format!(
                    "{doc}:{}: the output of `{}` differs (- doc, + actual):\n{}",
                    example.line,
                    example.command,
                    diff(&example.expected, &actual)
                ));
            }
            let shows_status = examples
                .get(index + 1)
                .is_some_and(|next| next.command.trim() == "echo $?");
            if *status != 0 && !shows_status {
                unshown_failures.push(format!(
                    "{doc}:{}: `{}` exited with {status}; follow it with `$ echo $?` so the doc shows it",
                    example.line, example.command
                ));
            }
            body.extend(example.shown.iter().cloned());
            body.extend(shorten_like(&example.expected, &actual));
        }
        rewritten.splice(fence.body_start..fence.body_end, body);
    }
    assert!(commands > 0, "{doc} has no console example");
    assert!(
        unshown_failures.is_empty(),
        "{}",
        unshown_failures.join("\n")
    );
    if failures.is_empty() {
        return;
    }
    if updating() {
        let mut new_text = rewritten.join("\n");
        new_text.push('\n');
        std::fs::write(&path, new_text).expect("cannot rewrite the doc");
        return;
    }
    panic!(
        "{} example(s) of {doc} are out of date:\n\n{}\nRun `UPDATE_EXPECT=1 cargo test -p once_cli --test docs` to rewrite their outputs in {doc}, then review the diff.",
        failures.len(),
        failures.join("\n")
    );
}

/// The subcommands `once GROUP --help` lists.
fn subcommands(group: &str) -> Vec<String> {
    let help = Command::new(once_bin())
        .args([group, "--help"])
        .output()
        .expect("cannot start once");
    let help = String::from_utf8(help.stdout).expect("UTF-8 help");
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_owned)
        .collect()
}

/// Every `once query` and `once runtime` subcommand has its own section in docs/cli.md.
#[test]
fn cli_doc_covers_every_query_command() {
    let text = std::fs::read_to_string(repo().join("docs/cli.md")).expect("docs/cli.md exists");
    for (group, at_least) in [("query", 10), ("runtime", 6)] {
        let commands = subcommands(group);
        assert!(
            commands.len() >= at_least,
            "cannot read `once {group} --help`: {commands:?}"
        );
        let missing: Vec<&String> = commands
            .iter()
            .filter(|c| !text.contains(&format!("\n## `once {group} {c}")))
            .collect();
        assert!(
            missing.is_empty(),
            "docs/cli.md has no `## `once {group} …`` section for {missing:?}"
        );
    }
    for other in ["once mcp", "once completions"] {
        assert!(
            text.contains(&format!("\n## `{other}")),
            "docs/cli.md has no section for `{other}`"
        );
    }
}

// ---------------------------------------------------------------------------------------
// docs/manifest.md: TOML blocks

enum TomlBlock {
    Complete { path: String },
    Diagnostic { path: String, code: String },
    Fragment,
}

fn classify(doc: &str, fence: &Fence, body: &[&str]) -> TomlBlock {
    let words: Vec<&str> = fence.info.split_whitespace().skip(1).collect();
    let path = || {
        let path = body
            .first()
            .and_then(|l| l.strip_prefix("# "))
            .map(str::trim)
            .filter(|p| p.ends_with("once.toml"))
            .unwrap_or_else(|| {
                panic!(
                    "{doc}:{}: a complete manifest block starts with `# <path>/once.toml`; mark parts of a manifest ```toml fragment",
                    fence.line()
                )
            });
        path.to_owned()
    };
    match words.as_slice() {
        [] => TomlBlock::Complete { path: path() },
        ["fragment"] => TomlBlock::Fragment,
        [word] if word.starts_with("diagnostic=") => TomlBlock::Diagnostic {
            path: path(),
            code: word["diagnostic=".len()..].to_owned(),
        },
        _ => panic!(
            "{doc}:{}: unknown toml block marker `{}`; use none, `fragment` or `diagnostic=CODE`",
            fence.line(),
            fence.info
        ),
    }
}

/// A file path that `pattern` (a `srcs` glob; for an exclusion, the glob after its `!`)
/// matches.
fn sample_path(pattern: &str) -> String {
    let pattern = pattern.strip_prefix('!').unwrap_or(pattern);
    let pattern = pattern.strip_prefix("./").unwrap_or(pattern);
    let pattern = pattern.replace("**/", "");
    let mut out = String::new();
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        match c {
            '*' | '?' => out.push('x'),
            '\\' => out.extend(chars.next()),
            '[' => {
                let class: String = chars.by_ref().take_while(|c| *c != ']').collect();
                out.extend(class.chars().find(|c| *c != '!' && *c != '^'));
            }
            '{' => {
                let group: String = chars.by_ref().take_while(|c| *c != '}').collect();
                out.push_str(group.split(',').next().unwrap_or(""));
            }
            c => out.push(c),
        }
    }
    if out.ends_with('/') || out.is_empty() {
        out.push_str("file");
    }
    out
}

/// Writes `manifest` at `path` in a copy of the demo, creates its targets' sources and
/// returns the workspace's diagnostics.
fn validate_in_demo(path: &str, manifest: &str) -> Vec<Value> {
    let sandbox = Sandbox::new();
    let demo = sandbox.demo();
    let file = demo.join(path);
    std::fs::create_dir_all(file.parent().expect("a manifest has a directory"))
        .expect("cannot create the package");
    std::fs::write(&file, manifest).expect("cannot write the manifest");
    let package = path
        .strip_suffix("once.toml")
        .unwrap_or(path)
        .trim_end_matches('/');
    let targets = once_json(&demo, &["query", "targets"]);
    for target in targets.as_array().expect("targets are a list") {
        if target["package"] != package {
            continue;
        }
        let id = target["id"].as_str().expect("an id");
        let resolved = once_json(&demo, &["query", "target", id]);
        for pattern in resolved["srcs"].as_array().into_iter().flatten() {
            let pattern = pattern.as_str().expect("srcs are strings");
            let source = demo.join(package).join(sample_path(pattern));
            if !source.exists() {
                std::fs::create_dir_all(source.parent().expect("a parent"))
                    .expect("cannot create a source directory");
                std::fs::write(&source, "").expect("cannot create a source");
            }
        }
    }
    let answer = once_json(&demo, &["query", "validate-workspace"]);
    answer["diagnostics"]
        .as_array()
        .expect("diagnostics are a list")
        .clone()
}

fn describe(diagnostics: &[Value]) -> String {
    diagnostics
        .iter()
        .map(|d| {
            format!(
                "  {}[{}] {}:{}: {}",
                d["severity"].as_str().unwrap_or("?"),
                d["code"].as_str().unwrap_or("?"),
                d["file"].as_str().unwrap_or("-"),
                d["range"]["start"]["line"],
                d["message"].as_str().unwrap_or("")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

#[test]
fn manifest_doc_blocks_are_valid() {
    let doc = "docs/manifest.md";
    let text = std::fs::read_to_string(repo().join(doc)).expect("docs/manifest.md exists");
    let lines: Vec<&str> = text.lines().collect();
    let mut failures = Vec::new();
    let mut checked = 0;
    for fence in fences(doc, &lines) {
        if fence.language() != "toml" {
            continue;
        }
        checked += 1;
        let body: Vec<&str> = lines[fence.body_start..fence.body_end]
            .iter()
            .map(|l| l.strip_prefix(fence.indent.as_str()).unwrap_or(l))
            .collect();
        let body = body.as_slice();
        let mut manifest = body.join("\n");
        manifest.push('\n');
        match classify(doc, &fence, body) {
            TomlBlock::Complete { path } => {
                let diagnostics = validate_in_demo(&path, &manifest);
                if !diagnostics.is_empty() {
                    failures.push(format!(
                        "{doc}:{}: `{path}`, added to the demo, is not clean:\n{}",
                        fence.line(),
                        describe(&diagnostics)
                    ));
                }
            }
            TomlBlock::Diagnostic { path, code } => {
                let diagnostics = validate_in_demo(&path, &manifest);
                let found = diagnostics
                    .iter()
                    .any(|d| d["code"] == code.as_str() && d["file"] == path.as_str());
                if !found {
                    failures.push(format!(
                        "{doc}:{}: `{path}` should report `{code}` but reports:\n{}",
                        fence.line(),
                        describe(&diagnostics)
                    ));
                }
            }
            TomlBlock::Fragment => {
                let dir = tempfile::tempdir().expect("cannot create a temp dir");
                let root = dir.path();
                std::fs::write(root.join("once.toml"), "[workspace]\n")
                    .expect("cannot write the root manifest");
                std::fs::create_dir_all(root.join("fragment")).expect("cannot create dir");
                std::fs::write(root.join("fragment/once.toml"), &manifest)
                    .expect("cannot write the fragment");
                let answer = once_json(root, &["query", "validate-workspace"]);
                let syntax: Vec<Value> = answer["diagnostics"]
                    .as_array()
                    .expect("diagnostics are a list")
                    .iter()
                    .filter(|d| d["code"] == "syntax_error")
                    .cloned()
                    .collect();
                if !syntax.is_empty() {
                    failures.push(format!(
                        "{doc}:{}: the fragment does not parse:\n{}",
                        fence.line(),
                        describe(&syntax)
                    ));
                }
            }
        }
    }
    assert!(checked > 0, "{doc} has no toml block");
    assert!(
        failures.is_empty(),
        "{} toml block(s) of {doc} are wrong:\n\n{}",
        failures.len(),
        failures.join("\n\n")
    );
}

#[test]
fn sample_paths_match_their_patterns() {
    assert_eq!(sample_path("src/**/*.rs"), "src/x.rs");
    assert_eq!(sample_path("./tests/*_test.{c,cc}"), "tests/x_test.c");
    assert_eq!(sample_path("main.c"), "main.c");
    assert_eq!(sample_path("assets/"), "assets/file");
    assert_eq!(sample_path("data/[ab].txt"), "data/a.txt");
    assert_eq!(sample_path("!*_test.go"), "x_test.go");
    assert_eq!(sample_path("\\!odd.txt"), "!odd.txt");
}

#[test]
fn shortened_outputs_match_and_keep_their_shape() {
    let lines = |s: &str| -> Vec<String> { s.lines().map(str::to_owned).collect() };
    let expected = lines("first\n{\"a\":1,…\n…");
    let actual = lines("first\n{\"a\":1,\"b\":2}\nthird\nfourth");
    assert!(output_matches(&expected, &actual));
    assert!(!output_matches(&expected, &lines("first")));
    assert!(!output_matches(&lines("first"), &lines("first\nsecond")));
    let newer = lines("first\n{\"a\":2,\"b\":2}\nthird");
    assert!(!output_matches(&expected, &newer));
    assert_eq!(
        shorten_like(&expected, &newer),
        lines("first\n{\"a\":2,…\n…")
    );
}
