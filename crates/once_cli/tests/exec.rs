//! `once exec` through the real binary: annotated scripts run through the action cache
//! (hits replay identical streams and restore outputs, a changed input is a miss, a
//! `needs` dependency rebuilt into identical outputs leaves its dependent a hit), the
//! shebang form, literal commands (a bypass unless they declare inputs or outputs), exit
//! codes, trailers and `--verify-reproducible`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// A scratch workspace (a `once.toml` with `[workspace]`) in a temporary directory.
struct Scratch {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("once-exec-test-")
            .tempdir()
            .expect("cannot create a temp dir");
        let root = dir.path().canonicalize().expect("canonical temp dir");
        std::fs::write(root.join("once.toml"), "[workspace]\n").expect("write once.toml");
        Scratch { _dir: dir, root }
    }

    fn write(&self, relative: &str, contents: &str) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        // Outputs are restored read-only: replace, never write through.
        let _ = std::fs::remove_file(&path);
        std::fs::write(&path, contents).expect("write");
    }

    fn script(&self, relative: &str, contents: &str) {
        self.write(relative, contents);
        let path = self.root.join(relative);
        let mut permissions = std::fs::metadata(&path).expect("stat").permissions();
        std::os::unix::fs::PermissionsExt::set_mode(&mut permissions, 0o755);
        std::fs::set_permissions(&path, permissions).expect("chmod");
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root.join(relative)).expect("read")
    }

    /// `once ARGS` run from the workspace root.
    fn once(&self, args: &[&str]) -> Run {
        self.once_in(&self.root, args, &[])
    }

    fn once_in(&self, cwd: &Path, args: &[&str], env: &[(&str, &str)]) -> Run {
        let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
        command
            .args(args)
            .current_dir(cwd)
            .env_remove("ONCE_WORKSPACE")
            .env("NO_COLOR", "1");
        for (name, value) in env {
            command.env(name, value);
        }
        Run::of(command.output().expect("once runs"))
    }
}

/// What one run printed, with action digests shown as `<digest>`.
#[derive(Debug)]
struct Run {
    code: i32,
    stdout: String,
    stderr: String,
    /// stderr as printed, digests included.
    raw_stderr: String,
}

impl Run {
    fn of(output: std::process::Output) -> Run {
        Run {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: redact(&String::from_utf8_lossy(&output.stderr)),
            raw_stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// The trailer's cache state (`hit`, `miss`, `bypass`), from `once: cache X action=`.
    fn cache(&self) -> &str {
        self.stderr
            .lines()
            .rev()
            .find_map(|line| line.strip_prefix("once: cache "))
            .and_then(|rest| rest.split(' ').next())
            .unwrap_or_else(|| panic!("no trailer in {self:?}"))
    }
}

/// Replaces every 64-digit lower-case hex word with `<digest>`.
fn redact(text: &str) -> String {
    let mut out = String::new();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut String| {
        if word.len() == 64 && word.bytes().all(|b| b.is_ascii_hexdigit()) {
            out.push_str("<digest>");
        } else {
            out.push_str(word);
        }
        word.clear();
    };
    for c in text.chars() {
        if c.is_ascii_alphanumeric() {
            word.push(c);
        } else {
            flush(&mut word, &mut out);
            out.push(c);
        }
    }
    flush(&mut word, &mut out);
    out
}

const REPORT: &str = "#!/usr/bin/env bash
# once input \"../data/in.txt\"
# once output \"../out/report.txt\"
mkdir -p ../out
tr a-z A-Z < ../data/in.txt > ../out/report.txt
echo \"report of $*\"
echo 'to stderr' >&2
";

#[test]
fn a_second_exec_is_a_hit_with_identical_streams_and_restored_outputs() {
    let ws = Scratch::new();
    ws.script("scripts/report.sh", REPORT);
    ws.write("data/in.txt", "hello\n");
    let first = ws.once(&["exec", "--script", "scripts/report.sh", "--", "a", "b"]);
    assert_eq!(first.code, 0, "{first:?}");
    assert_eq!(first.stdout, "report of a b\n");
    assert_eq!(
        first.stderr,
        "to stderr\nonce: cache miss action=<digest> exit=0\n"
    );
    std::fs::remove_file(ws.root.join("out/report.txt")).expect("remove the output");
    let second = ws.once(&["exec", "--script", "scripts/report.sh", "--", "a", "b"]);
    assert_eq!(second.code, 0);
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(
        second.stderr,
        "to stderr\nonce: cache hit action=<digest> exit=0\n"
    );
    assert_eq!(
        ws.read("out/report.txt"),
        "HELLO\n",
        "the output is restored"
    );
    // Other arguments are another action.
    let other = ws.once(&["exec", "--script", "scripts/report.sh", "--", "c"]);
    assert_eq!(other.cache(), "miss");
}

#[test]
fn a_changed_input_is_a_miss() {
    let ws = Scratch::new();
    ws.script("scripts/report.sh", REPORT);
    ws.write("data/in.txt", "hello\n");
    assert_eq!(
        ws.once(&["exec", "--script", "scripts/report.sh"]).cache(),
        "miss"
    );
    assert_eq!(
        ws.once(&["exec", "--script", "scripts/report.sh"]).cache(),
        "hit"
    );
    ws.write("data/in.txt", "changed\n");
    assert_eq!(
        ws.once(&["exec", "--script", "scripts/report.sh"]).cache(),
        "miss"
    );
    assert_eq!(ws.read("out/report.txt"), "CHANGED\n");
    // The script itself is an input.
    ws.script("scripts/report.sh", &format!("{REPORT}echo more\n"));
    assert_eq!(
        ws.once(&["exec", "--script", "scripts/report.sh"]).cache(),
        "miss"
    );
}

#[test]
fn declared_env_values_and_fingerprints_join_the_key() {
    let ws = Scratch::new();
    ws.script(
        "tool.sh",
        "#!/bin/sh\n# once env \"GREETING\"\n# once fingerprint \"cat stamp\"\necho \"$GREETING\"\n",
    );
    ws.write("stamp", "1\n");
    let run = |greeting: &str| {
        ws.once_in(
            &ws.root,
            &["exec", "--script", "tool.sh"],
            &[("GREETING", greeting)],
        )
    };
    let first = run("hi");
    assert_eq!((first.cache(), first.stdout.as_str()), ("miss", "hi\n"));
    assert_eq!(run("hi").cache(), "hit");
    let other = run("bye");
    assert_eq!((other.cache(), other.stdout.as_str()), ("miss", "bye\n"));
    ws.write("stamp", "2\n");
    assert_eq!(
        run("bye").cache(),
        "miss",
        "the fingerprint's output changed"
    );
}

#[test]
fn needs_run_first_and_an_identical_dependency_output_leaves_the_dependent_a_hit() {
    let ws = Scratch::new();
    ws.script(
        "scripts/gen.sh",
        "#!/bin/sh\n# once input \"../data/in.txt\"\n# once output \"../gen/out.txt\"\nmkdir -p ../gen\ntr a-z A-Z < ../data/in.txt > ../gen/out.txt\n",
    );
    ws.script(
        "scripts/stamp.sh",
        "#!/bin/sh\necho stamped\n# once input \"../data/other.txt\"\n",
    );
    ws.script(
        "scripts/build.sh",
        "#!/bin/sh\n# once needs \"gen.sh\"\n# once needs \"stamp.sh\"\n# once output \"../dist/final.txt\"\nmkdir -p ../dist\ncat ../gen/out.txt > ../dist/final.txt\necho built\n",
    );
    ws.write("data/in.txt", "hello\n");
    ws.write("data/other.txt", "x\n");
    let first = ws.once(&["exec", "--script", "scripts/build.sh"]);
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "built\n"),
        "{first:?}"
    );
    assert_eq!(first.cache(), "miss");
    assert_eq!(ws.read("dist/final.txt"), "HELLO\n");
    assert_eq!(
        ws.once(&["exec", "--script", "scripts/build.sh"]).cache(),
        "hit"
    );
    // The dependency runs again (its input changed) into the same output: a hit.
    ws.write("data/in.txt", "HELLO\n");
    let cutoff = ws.once(&["exec", "--script", "scripts/build.sh"]);
    assert_eq!(cutoff.cache(), "hit", "{cutoff:?}");
    // A different output of the dependency: a miss.
    ws.write("data/in.txt", "bye\n");
    let changed = ws.once(&["exec", "--script", "scripts/build.sh"]);
    assert_eq!(changed.cache(), "miss");
    assert_eq!(ws.read("dist/final.txt"), "BYE\n");
}

#[test]
fn a_failing_dependency_stops_the_dependent_with_its_exit_code() {
    let ws = Scratch::new();
    ws.script(
        "dep.sh",
        "#!/bin/sh\n# once output \"dep.txt\"\necho 'dep says'\necho 'dep broke' >&2\nexit 4\n",
    );
    ws.script("main.sh", "#!/bin/sh\n# once needs \"dep.sh\"\necho main\n");
    // The script did not run: stdout stays empty, the need's streams go to stderr.
    for quiet in [false, true] {
        let args: &[&str] = if quiet {
            &["exec", "-q", "--script", "main.sh"]
        } else {
            &["exec", "--script", "main.sh"]
        };
        let run = ws.once(args);
        assert_eq!(run.code, 4);
        assert_eq!(run.stdout, "");
        assert_eq!(
            run.stderr,
            "dep says\ndep broke\nonce: error: the script `dep.sh` that `main.sh` needs failed: `/bin/sh ./dep.sh` exited with code 4\n"
        );
    }
}

#[test]
fn the_output_of_needs_that_ran_goes_to_stderr_under_a_header() {
    let ws = Scratch::new();
    ws.script(
        "gen.sh",
        "#!/bin/sh\n# once input \"in.txt\"\n# once output \"gen.txt\"\ncp in.txt gen.txt\necho 'gen out'\necho 'gen err' >&2\n",
    );
    ws.script(
        "partial.sh",
        "#!/bin/sh\n# once input \"partial.sh\"\n# once output \"partial.txt\"\ntouch partial.txt\nprintf 'no newline'\n",
    );
    ws.script(
        "main.sh",
        "#!/bin/sh\n# once needs \"gen.sh\"\n# once needs \"partial.sh\"\ncat gen.txt\necho 'main err' >&2\n",
    );
    ws.write("in.txt", "one\n");
    let header =
        |need: &str| format!("once: output of `{need}`, needed by `main.sh` (cache miss):\n");
    let first = ws.once(&["exec", "--script", "main.sh"]);
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "one\n"),
        "{first:?}"
    );
    assert_eq!(
        first.stderr,
        format!(
            "{}gen out\ngen err\n{}no newline\nmain err\nonce: cache miss action=<digest> exit=0\n",
            header("gen.sh"),
            header("partial.sh")
        )
    );
    // A hit shows nothing of its needs (hits too).
    let hit = ws.once(&["exec", "--script", "main.sh"]);
    assert_eq!(
        (hit.stdout.as_str(), hit.stderr.as_str()),
        (
            "one\n",
            "main err\nonce: cache hit action=<digest> exit=0\n"
        )
    );
    // `-q`: the program's own streams only.
    ws.write("in.txt", "two\n");
    let quiet = ws.once(&["exec", "-q", "--script", "main.sh"]);
    assert_eq!(
        (quiet.stdout.as_str(), quiet.stderr.as_str()),
        ("two\n", "main err\n")
    );
    // JSON: the same stderr, the trailer a JSON line.
    ws.write("in.txt", "three\n");
    let json = ws.once(&["exec", "--format", "json", "--script", "main.sh"]);
    assert_eq!(json.stdout, "three\n");
    assert_eq!(
        json.stderr,
        format!(
            "{}gen out\ngen err\nmain err\n{{\"action_digest\":\"<digest>\",\"cache\":\"miss\",\"exit_code\":0}}\n",
            header("gen.sh")
        )
    );
}

#[test]
fn a_needs_cycle_is_a_diagnostic_naming_the_cycle() {
    let ws = Scratch::new();
    ws.script("a.sh", "#!/bin/sh\n# once needs \"b.sh\"\necho a\n");
    ws.script("b.sh", "#!/bin/sh\n# once needs \"a.sh\"\necho b\n");
    let run = ws.once(&["exec", "--script", "a.sh"]);
    assert_eq!(run.code, 2);
    assert_eq!(
        run.stderr,
        "once: error: b.sh:2:15: script dependency cycle: a.sh -> b.sh -> a.sh\n"
    );
}

#[test]
fn the_shebang_form_runs_the_script_directly() {
    let ws = Scratch::new();
    ws.script(
        "tools/build.sh",
        "#!/usr/bin/env -S once exec -- bash\n# once input \"in.txt\"\necho \"built $1\"\n",
    );
    ws.write("tools/in.txt", "x\n");
    let once_dir = Path::new(env!("CARGO_BIN_EXE_once"))
        .parent()
        .expect("the binary's directory");
    let path = format!(
        "{}:{}",
        once_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let run = || {
        let output = Command::new("./build.sh")
            .arg("now")
            .current_dir(ws.root.join("tools"))
            .env("PATH", &path)
            .env_remove("ONCE_WORKSPACE")
            .output()
            .expect("the script runs");
        Run::of(output)
    };
    let first = run();
    assert_eq!(
        (first.code, first.stdout.as_str()),
        (0, "built now\n"),
        "{first:?}"
    );
    assert_eq!(first.cache(), "miss");
    let second = run();
    assert_eq!(
        (second.stdout.as_str(), second.cache()),
        ("built now\n", "hit")
    );
}

#[test]
fn a_literal_command_is_a_bypass_unless_it_declares_inputs_or_outputs() {
    let ws = Scratch::new();
    ws.write("note.txt", "one\n");
    for _ in 0..2 {
        let run = ws.once(&["exec", "--", "cat", "note.txt"]);
        assert_eq!((run.stdout.as_str(), run.cache()), ("one\n", "bypass"));
    }
    let declared =
        |ws: &Scratch| ws.once(&["exec", "--input", "note.txt", "--", "cat", "note.txt"]);
    assert_eq!(declared(&ws).cache(), "miss");
    let hit = declared(&ws);
    assert_eq!((hit.stdout.as_str(), hit.cache()), ("one\n", "hit"));
    ws.write("note.txt", "two\n");
    let changed = declared(&ws);
    assert_eq!(
        (changed.stdout.as_str(), changed.cache()),
        ("two\n", "miss")
    );
}

#[test]
fn the_exit_code_is_the_programs() {
    let ws = Scratch::new();
    ws.script(
        "fail.sh",
        "#!/bin/sh\n# once input \"fail.sh\"\necho out\nexit 3\n",
    );
    let failed = ws.once(&["exec", "--script", "fail.sh"]);
    assert_eq!((failed.code, failed.stdout.as_str()), (3, "out\n"));
    assert_eq!(failed.stderr, "once: cache miss action=<digest> exit=3\n");
    // A failure is not stored: it runs again.
    assert_eq!(ws.once(&["exec", "--script", "fail.sh"]).cache(), "miss");
    let killed = ws.once(&["exec", "--", "sh", "-c", "kill -TERM $$"]);
    assert_eq!(killed.code, 143, "{killed:?}");
}

#[test]
fn quiet_drops_the_trailer_and_json_makes_it_a_record() {
    let ws = Scratch::new();
    ws.script("hi.sh", "#!/bin/sh\n# once input \"hi.sh\"\necho hi\n");
    let quiet = ws.once(&["exec", "-q", "--script", "hi.sh"]);
    assert_eq!((quiet.stdout.as_str(), quiet.stderr.as_str()), ("hi\n", ""));
    let json = ws.once(&["exec", "--format", "json", "--script", "hi.sh"]);
    assert_eq!(json.stdout, "hi\n");
    assert_eq!(
        json.stderr,
        "{\"action_digest\":\"<digest>\",\"cache\":\"hit\",\"exit_code\":0}\n"
    );
}

#[test]
fn verify_reproducible_reports_each_difference_and_exits_1() {
    let ws = Scratch::new();
    ws.script(
        "random.sh",
        "#!/bin/bash\n# once output \"r.txt\"\necho $RANDOM$RANDOM > r.txt\necho $RANDOM$RANDOM\n",
    );
    let run = ws.once(&["exec", "--verify-reproducible", "--script", "random.sh"]);
    assert_eq!(run.code, 1, "{run:?}");
    let lines: Vec<String> = run.stdout.lines().map(redact).collect();
    assert_eq!(
        lines,
        [
            "not reproducible: 2 differences across 2 trials",
            "  - stdout: <digest> then <digest>",
            "  - output `r.txt`: <digest> then <digest>",
        ]
    );
    let json = ws.once(&[
        "exec",
        "--format",
        "json",
        "--verify-reproducible",
        "--script",
        "random.sh",
    ]);
    let value: serde_json::Value = serde_json::from_str(&json.stdout).expect("JSON");
    assert_eq!(value["reproducible"], false);
    assert_eq!(value["differences"][1]["kind"], "output");
    assert_eq!(value["differences"][1]["path"], "r.txt");
    ws.script(
        "same.sh",
        "#!/bin/sh\n# once output \"s.txt\"\necho same > s.txt\n",
    );
    let same = ws.once(&["exec", "--verify-reproducible", "--script", "same.sh"]);
    assert_eq!(
        (same.code, same.stdout.as_str()),
        (0, "reproducible: 2 trials, no divergence\n")
    );
    assert!(
        !ws.root.join(".once/verify").exists(),
        "the trial stores are removed"
    );
}

#[test]
fn outputs_inside_the_state_directory_or_over_inputs_are_refused() {
    let ws = Scratch::new();
    ws.script("state.sh", "#!/bin/sh\n# once output \".once/x\"\n");
    let state = ws.once(&["exec", "--script", "state.sh"]);
    assert_eq!(state.code, 2);
    assert!(state.stderr.contains("inside `.once`"), "{state:?}");
    ws.script(
        "over.sh",
        "#!/bin/sh\n# once input \"data\"\n# once output \"data\"\n",
    );
    ws.write("data/a.txt", "a\n");
    let over = ws.once(&["exec", "--script", "over.sh"]);
    assert_eq!(over.code, 2);
    assert!(over.stderr.contains("overlaps its own input"), "{over:?}");
}

#[test]
fn a_script_without_directives_always_runs() {
    let ws = Scratch::new();
    ws.script("plain.sh", "#!/bin/sh\necho plain\n");
    for _ in 0..2 {
        let run = ws.once(&["exec", "--script", "plain.sh"]);
        assert_eq!((run.stdout.as_str(), run.cache()), ("plain\n", "bypass"));
        let literal = ws.once(&["exec", "--", "sh", "plain.sh"]);
        assert_eq!(
            (literal.stdout.as_str(), literal.cache()),
            ("plain\n", "bypass")
        );
    }
}

/// The first fenced block of `language` in docs/scripts.md, verbatim.
fn doc_example(language: &str) -> String {
    let doc = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/scripts.md"),
    )
    .expect("docs/scripts.md");
    let fence = format!("```{language}\n");
    let start = doc
        .find(&fence)
        .unwrap_or_else(|| panic!("no ```{language} block in docs/scripts.md"))
        + fence.len();
    let length = doc[start..].find("```\n").expect("a closing fence");
    doc[start..start + length].to_owned()
}

/// The bash, Python and Node.js examples of docs/scripts.md, run as written with the
/// real interpreters: a miss that writes the declared output, then a hit that replays
/// the same stdout and restores the output, then a miss after an input changes.
#[test]
fn the_documented_examples_run_and_hit_in_each_language() {
    let ws = Scratch::new();
    ws.script("scripts/report.sh", &doc_example("bash"));
    ws.write("data/a.csv", "b,2\n");
    ws.write("data/b.csv", "a,1\n");
    ws.script("scripts/models.py", &doc_example("python"));
    ws.write("scripts/schema.json", r#"{"types": ["User", "Order"]}"#);
    ws.script("scripts/bundle.js", &doc_example("js"));
    ws.write("scripts/src/a.js", "const a = 1;");
    ws.write("scripts/src/b.js", "const b = 2;");
    // The Node example needs `codegen.sh`.
    ws.script(
        "scripts/codegen.sh",
        "#!/bin/sh\n# once output \"../out/codegen.txt\"\nmkdir -p ../out\necho generated > ../out/codegen.txt\n",
    );
    let cases = [
        (
            "scripts/report.sh",
            "report written\n",
            "out/report.txt",
            "a,1\nb,2\n",
            "data/a.csv",
        ),
        (
            "scripts/models.py",
            "2 models\n",
            "generated/models.py",
            "class User: pass\nclass Order: pass\n",
            "scripts/schema.json",
        ),
        (
            "scripts/bundle.js",
            "bundled 2 files\n",
            "dist/bundle.js",
            "const a = 1;\nconst b = 2;",
            "scripts/src/b.js",
        ),
    ];
    for (script, stdout, output, content, input) in cases {
        let first = ws.once(&["exec", "--script", script]);
        assert_eq!(first.code, 0, "{script}: {first:?}");
        assert_eq!(first.cache(), "miss", "{script}");
        assert_eq!(first.stdout, stdout, "{script}");
        assert_eq!(ws.read(output), content, "{script}");
        std::fs::remove_file(ws.root.join(output)).expect("remove the output");
        let second = ws.once(&["exec", "--script", script]);
        assert_eq!(second.cache(), "hit", "{script}: {second:?}");
        assert_eq!(second.stdout, stdout, "{script}");
        assert_eq!(ws.read(output), content, "{script}: restored");
        let previous = ws.read(input);
        ws.write(input, &format!("{previous}\n"));
        let third = ws.once(&["exec", "--script", script]);
        assert_eq!(third.cache(), "miss", "{script} after `{input}` changed");
    }
    assert_eq!(ws.read("out/codegen.txt"), "generated\n", "the need ran");
}

/// A script whose output `out` holds its own file, a link to it, and links to a file and
/// a directory elsewhere in the workspace; `MODE` is replaced by an `output-symlinks`
/// directive (or nothing: the default).
const LINKS: &str = "#!/bin/sh
# once input \"data\"
# once output \"out\"
MODE
mkdir -p out
echo own > out/own.txt
ln -s own.txt out/alias.txt
ln -s ../data/config.txt out/config.txt
ln -s ../data/assets out/assets
echo linked
";

fn link_text(ws: &Scratch, relative: &str) -> Option<String> {
    std::fs::read_link(ws.root.join(relative))
        .ok()
        .map(|target| target.display().to_string())
}

#[test]
fn output_links_leading_out_of_the_output_are_stored_as_copies() {
    let ws = Scratch::new();
    ws.write("data/config.txt", "config\n");
    ws.write("data/assets/a.txt", "a\n");
    ws.write("data/assets/sub/b.txt", "b\n");
    ws.script("gen.sh", &LINKS.replace("MODE\n", ""));
    let check = |ws: &Scratch, when: &str| {
        // The internal link stays a link; the external ones are copies.
        assert_eq!(
            link_text(ws, "out/alias.txt").as_deref(),
            Some("own.txt"),
            "{when}"
        );
        assert_eq!(link_text(ws, "out/config.txt"), None, "{when}");
        assert_eq!(ws.read("out/config.txt"), "config\n", "{when}");
        assert_eq!(link_text(ws, "out/assets"), None, "{when}");
        assert!(ws.root.join("out/assets").is_dir(), "{when}");
        assert_eq!(ws.read("out/assets/a.txt"), "a\n", "{when}");
        assert_eq!(ws.read("out/assets/sub/b.txt"), "b\n", "{when}");
    };
    let first = ws.once(&["exec", "--script", "gen.sh"]);
    assert_eq!((first.code, first.cache()), (0, "miss"), "{first:?}");
    check(&ws, "after the miss");
    std::fs::remove_dir_all(ws.root.join("out")).expect("remove the output");
    let second = ws.once(&["exec", "--script", "gen.sh"]);
    assert_eq!(
        (second.code, second.cache(), second.stdout.as_str()),
        (0, "hit", "linked\n"),
        "{second:?}"
    );
    check(&ws, "after the hit");
}

#[test]
fn preserve_keeps_every_output_link_and_is_another_key() {
    let ws = Scratch::new();
    ws.write("data/config.txt", "config\n");
    ws.write("data/assets/a.txt", "a\n");
    let preserve = LINKS.replace("MODE", "# once output-symlinks \"preserve\"");
    let materialize = LINKS.replace("MODE", "# once output-symlinks \"materialize-external\"");
    ws.script("gen.sh", &preserve);
    let first = ws.once(&["exec", "--format", "json", "--script", "gen.sh"]);
    assert_eq!(first.code, 0, "{first:?}");
    for _ in 0..2 {
        assert_eq!(
            link_text(&ws, "out/config.txt").as_deref(),
            Some("../data/config.txt")
        );
        assert_eq!(
            link_text(&ws, "out/assets").as_deref(),
            Some("../data/assets")
        );
        std::fs::remove_dir_all(ws.root.join("out")).expect("remove the output");
        let hit = ws.once(&["exec", "--script", "gen.sh"]);
        assert_eq!(hit.cache(), "hit", "{hit:?}");
    }
    ws.script("gen.sh", &materialize);
    let other = ws.once(&["exec", "--format", "json", "--script", "gen.sh"]);
    assert_eq!(other.code, 0, "{other:?}");
    assert!(other.stderr.contains("\"cache\":\"miss\""), "{other:?}");
    assert_ne!(first.raw_stderr, other.raw_stderr, "another action digest");
    assert_eq!(link_text(&ws, "out/config.txt"), None);
}

#[test]
fn a_dangling_cyclic_or_escaping_output_link_fails_the_run_and_is_not_stored() {
    let ws = Scratch::new();
    let cases = [
        (
            "ln -s ../missing.txt out/missing.txt",
            "once: error: the output link `out/missing.txt` points to `../missing.txt`, which does not exist (a dangling link in the output `out`)\n",
        ),
        (
            "ln -s b out/a; ln -s a out/b",
            "once: error: the output link `out/a` points to `b`, which does not resolve: more than 40 links in a row (a cycle of symbolic links)\n",
        ),
        (
            "ln -s .. out/up",
            "once: error: the output link `out/up` points to `.`, a directory that contains the output `out`: its copy would contain itself (a cycle); copy it into the output in the script, or declare `# once output-symlinks \"preserve\"` to store links as links\n",
        ),
        (
            "ln -s /etc/hosts out/hosts",
            "once: error: the output link `out/hosts` points to `/etc/hosts`, outside the workspace: `once` does not copy files from outside the workspace into the cache; copy it into the output in the script, or declare `# once output-symlinks \"preserve\"` to store links as links\n",
        ),
    ];
    for (link, error) in cases {
        ws.script(
            "bad.sh",
            &format!("#!/bin/sh\n# once output \"out\"\nmkdir -p out\n{link}\necho ran\n"),
        );
        for _ in 0..2 {
            let run = ws.once(&["exec", "--script", "bad.sh"]);
            assert_eq!(
                (run.code, run.stdout.as_str(), run.cache()),
                (1, "ran\n", "miss"),
                "{link}: {run:?}"
            );
            let (message, trailer) = run.stderr.split_at(error.len().min(run.stderr.len()));
            assert_eq!(message, error, "{link}");
            assert_eq!(trailer, "once: cache miss action=<digest> exit=1\n");
        }
    }
}
