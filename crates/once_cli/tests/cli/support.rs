//! The one way these tests run the real `once` binary: build a [`Once`] invocation, then
//! [`check`] its rendered outcome (exit code, stdout, stderr) against a snapshot.
//!
//! Workspaces come from `test_data/` and are copied to a temporary directory first, so
//! tests never write into the repository. The temporary path is shown as `$WORKSPACE`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use expect_test::{Expect, ExpectFile};

/// `test_data/` at the repository root.
pub fn test_data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data")
}

/// A copy of a `test_data/` workspace in a temporary directory.
pub struct Workspace {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Workspace {
    /// Copies `test_data/<relative>` (such as `demo` or `workspaces/valid`).
    pub fn copy(relative: &str) -> Workspace {
        let source = test_data().join(relative);
        assert!(source.is_dir(), "no test workspace at {}", source.display());
        let dir = tempfile::Builder::new()
            .prefix("once-cli-test-")
            .tempdir()
            .expect("cannot create a temp dir");
        let root = dir
            .path()
            .canonicalize()
            .expect("cannot canonicalize the temp dir");
        copy_dir(&source, &root);
        Workspace { _dir: dir, root }
    }

    /// An empty workspace: a root `once.toml` with `[workspace]` and nothing else.
    pub fn empty() -> Workspace {
        let dir = tempfile::Builder::new()
            .prefix("once-cli-test-")
            .tempdir()
            .expect("cannot create a temp dir");
        let root = dir
            .path()
            .canonicalize()
            .expect("cannot canonicalize the temp dir");
        std::fs::write(root.join("once.toml"), "[workspace]\n").expect("cannot write once.toml");
        Workspace { _dir: dir, root }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Writes a file below the workspace root (for inputs such as `validate-target --file`).
    pub fn write(&self, relative: &str, contents: &str) -> PathBuf {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))
            .expect("cannot create dirs");
        std::fs::write(&path, contents).expect("cannot write file");
        path
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("cannot create a directory in the temp dir");
    let mut entries: Vec<_> = std::fs::read_dir(from)
        .expect("cannot list a test_data directory")
        .map(|e| e.expect("bad entry"))
        .collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let target = to.join(entry.file_name());
        let file_type = entry.file_type().expect("no file type");
        if file_type.is_dir() {
            copy_dir(&entry.path(), &target);
        } else if file_type.is_symlink() {
            // A link stays a link (fixtures hold links once does not follow).
            let text = std::fs::read_link(entry.path()).expect("cannot read a test_data link");
            std::os::unix::fs::symlink(text, &target).expect("cannot copy a test_data link");
        } else {
            std::fs::copy(entry.path(), &target).expect("cannot copy a test_data file");
        }
    }
}

/// One invocation of the `once` binary.
pub struct Once {
    args: Vec<OsString>,
    shown: Vec<String>,
    cwd: Option<PathBuf>,
    env: Vec<(String, OsString)>,
    stdin: Option<String>,
    workspace: Option<PathBuf>,
}

impl Once {
    /// `once <args…>`, run from an empty temporary directory unless [`Once::cwd`] says otherwise.
    pub fn new(args: &[&str]) -> Once {
        Once {
            args: args.iter().map(OsString::from).collect(),
            shown: args.iter().map(|a| (*a).to_owned()).collect(),
            cwd: None,
            env: Vec::new(),
            stdin: None,
            workspace: None,
        }
    }

    /// `once -C <workspace> <args…>`.
    pub fn at(workspace: &Workspace, args: &[&str]) -> Once {
        let mut once = Once::new(&[]);
        once.args.push("-C".into());
        once.args.push(workspace.root().into());
        once.shown.push("-C".into());
        once.shown.push("$WORKSPACE".into());
        once.args.extend(args.iter().map(OsString::from));
        once.shown.extend(args.iter().map(|a| (*a).to_owned()));
        once.workspace(workspace)
    }

    /// Shows `workspace`'s temporary path as `$WORKSPACE` in the output.
    pub fn workspace(mut self, workspace: &Workspace) -> Once {
        self.workspace = Some(workspace.root().to_path_buf());
        self
    }

    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Once {
        self.cwd = Some(dir.into());
        self
    }

    pub fn env(mut self, key: &str, value: impl Into<OsString>) -> Once {
        self.env.push((key.to_owned(), value.into()));
        self
    }

    pub fn stdin(mut self, text: &str) -> Once {
        self.stdin = Some(text.to_owned());
        self
    }

    fn is_json(&self) -> bool {
        self.args
            .windows(2)
            .any(|w| w[0] == "--format" && w[1] == "json")
            || self.args.iter().any(|a| a == "--format=json")
    }

    /// Runs the binary and captures its outcome, with the workspace path redacted.
    pub fn run(&self) -> Outcome {
        let scratch = tempfile::tempdir().expect("cannot create a temp dir");
        let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
        command
            .args(&self.args)
            .current_dir(self.cwd.as_deref().unwrap_or(scratch.path()))
            .env_remove("ONCE_WORKSPACE")
            .env("NO_COLOR", "1")
            .stdin(if self.stdin.is_some() {
                Stdio::piped()
            } else {
                Stdio::null()
            })
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        for (key, value) in &self.env {
            command.env(key, value);
        }
        let mut child = command.spawn().expect("cannot start the once binary");
        if let Some(text) = &self.stdin {
            child
                .stdin
                .take()
                .expect("stdin is piped")
                .write_all(text.as_bytes())
                .expect("cannot write stdin");
        }
        let output = child.wait_with_output().expect("once did not finish");
        let redact = |bytes: &[u8]| {
            let mut text = String::from_utf8(bytes.to_vec()).expect("once printed invalid UTF-8");
            if let Some(root) = &self.workspace {
                text = text.replace(&root.display().to_string(), "$WORKSPACE");
            }
            text
        };
        let outcome = Outcome {
            command: redact(self.shown.join(" ").as_bytes()),
            code: output.status.code().expect("once was killed by a signal"),
            stdout: redact(&output.stdout),
            stderr: redact(&output.stderr),
            json: self.is_json(),
        };
        outcome.check_invariants();
        outcome
    }
}

impl Once {
    /// Runs the binary with a reader of its stdout that leaves early, as `once … | head`
    /// does: it reads `bytes` bytes (none: it is gone before `once` writes), then closes
    /// the pipe. Returns the exit code and stderr.
    pub fn run_closing_stdout_after(&self, bytes: usize) -> (i32, String) {
        use std::io::Read as _;
        let scratch = tempfile::tempdir().expect("cannot create a temp dir");
        // Nothing read: the reader is gone before the program starts (closing it after
        // the spawn would race with a short answer written in full before the close).
        let gone = (bytes == 0).then(|| {
            let (reader, writer) = std::io::pipe().expect("cannot make a pipe");
            drop(reader);
            writer
        });
        let stdout = match gone {
            Some(writer) => Stdio::from(writer),
            None => Stdio::piped(),
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
            .args(&self.args)
            .current_dir(self.cwd.as_deref().unwrap_or(scratch.path()))
            .env_remove("ONCE_WORKSPACE")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(Stdio::piped())
            .spawn()
            .expect("cannot start the once binary");
        let Some(mut stdout) = child.stdout.take() else {
            let output = child.wait_with_output().expect("once did not finish");
            let code = output.status.code().unwrap_or_else(|| {
                panic!(
                    "`once {}` was killed: {:?}",
                    self.shown.join(" "),
                    output.status
                )
            });
            return (code, String::from_utf8_lossy(&output.stderr).into_owned());
        };
        let mut read = vec![0; bytes];
        stdout.read_exact(&mut read).unwrap_or_else(|e| {
            panic!(
                "`once {}` printed less than {bytes} bytes: {e}",
                self.shown.join(" ")
            )
        });
        drop(stdout);
        let output = child.wait_with_output().expect("once did not finish");
        let code = output.status.code().unwrap_or_else(|| {
            panic!(
                "`once {}` was killed: {:?}",
                self.shown.join(" "),
                output.status
            )
        });
        (code, String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// What one run of `once` did.
pub struct Outcome {
    pub command: String,
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
    json: bool,
}

impl Outcome {
    /// Rules every run obeys: exit codes 0, 1 or 2 (the test adapter leaves with its
    /// runner's); errors (2) say why on stderr; JSON answers are exactly one compact line
    /// of valid JSON.
    fn check_invariants(&self) {
        if self.command.starts_with("__test-adapter") {
            return;
        }
        assert!(
            matches!(self.code, 0..=2),
            "`once {}` exited with {}",
            self.command,
            self.code
        );
        if self.code == 2 {
            assert!(
                !self.stderr.trim().is_empty(),
                "`once {}` failed without a message",
                self.command
            );
        }
        if self.json {
            if !self.stdout.is_empty() {
                assert_one_compact_json_line(&self.command, "stdout", &self.stdout);
            }
            if self.code == 2 {
                assert_one_compact_json_line(&self.command, "stderr", &self.stderr);
            }
        }
    }

    /// The stdout of a JSON run, parsed.
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("`once {}` stdout is not JSON: {e}", self.command))
    }

    /// The snapshot form: the command, the exit code, stdout and stderr. JSON is shown
    /// indented (keys in printed order) so that snapshots can be reviewed.
    pub fn render(&self) -> String {
        let show = |text: &str| {
            if self.json && !text.is_empty() {
                indent_json(text)
            } else {
                text.to_owned()
            }
        };
        format!(
            "$ once {}\nexit: {}\n--- stdout\n{}--- stderr\n{}",
            self.command,
            self.code,
            show(&self.stdout),
            show(&self.stderr)
        )
    }
}

fn assert_one_compact_json_line(command: &str, stream: &str, text: &str) {
    let body = text.strip_suffix('\n').unwrap_or_else(|| {
        panic!("`once {command}` {stream} does not end with a newline: {text:?}")
    });
    assert!(
        !body.contains('\n'),
        "`once {command}` {stream} is not one line: {text}"
    );
    serde_json::from_str::<serde_json::Value>(body)
        .unwrap_or_else(|e| panic!("`once {command}` {stream} is not JSON ({e}): {text}"));
    let mut in_string = false;
    let mut escaped = false;
    for c in body.chars() {
        match (in_string, escaped, c) {
            (true, true, _) => escaped = false,
            (true, false, '\\') => escaped = true,
            (_, false, '"') => in_string = !in_string,
            (false, _, c) if c.is_whitespace() => {
                panic!("`once {command}` {stream} is not compact JSON: {text}")
            }
            _ => {}
        }
    }
}

/// Indents compact JSON text two spaces per level, keeping key order and string contents.
fn indent_json(text: &str) -> String {
    let mut out = String::new();
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    let mut chars = text.trim_end().chars().peekable();
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        out.push_str(&"  ".repeat(depth));
    };
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match c {
            '"' => {
                in_string = true;
                out.push(c);
            }
            '{' | '[' => {
                out.push(c);
                if matches!(chars.peek(), Some('}' | ']')) {
                    out.push(chars.next().expect("peeked"));
                } else {
                    depth += 1;
                    newline(&mut out, depth);
                }
            }
            '}' | ']' => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c);
            }
            ',' => {
                out.push(c);
                newline(&mut out, depth);
            }
            ':' => out.push_str(": "),
            c => out.push(c),
        }
    }
    out.push('\n');
    out
}

/// A snapshot to compare against: an inline `expect![[…]]` or an `expect_file![…]`.
pub trait Snapshot {
    fn assert(&self, actual: &str);
}

impl Snapshot for Expect {
    fn assert(&self, actual: &str) {
        self.assert_eq(actual);
    }
}

impl Snapshot for ExpectFile {
    fn assert(&self, actual: &str) {
        self.assert_eq(actual);
    }
}

/// Runs every invocation and compares their outcomes, separated by blank lines, with
/// `expect`. `UPDATE_EXPECT=1 cargo test` rewrites the snapshot.
pub fn check(runs: &[Once], expect: &impl Snapshot) -> Vec<Outcome> {
    let outcomes: Vec<Outcome> = runs.iter().map(Once::run).collect();
    let rendered: Vec<String> = outcomes.iter().map(Outcome::render).collect();
    expect.assert(&rendered.join("\n"));
    outcomes
}
