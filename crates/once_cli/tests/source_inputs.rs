//! Source inputs through the real binary: what of a source file an action's key holds and
//! when a result may be recorded. A source edited while its action runs leaves the run's
//! result unrecorded (`once build` and `once exec --script`); a source's permission bits
//! are keyed, so a `chmod` is a miss and stages what a clean build stages; a symbolic link
//! source inside the workspace is followed and keyed by what it leads to, one leading out
//! of it (or nowhere) is refused by name; a missing file named by a `path` attribute is
//! an error at its entry. After each step an incremental build equals a clean one.

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

#[path = "support/binary.rs"]
mod binary;
use binary::{copy_tree, once, text, write};

use serde_json::Value;

/// A workspace in a temporary directory (its canonical path: link targets are compared
/// against it) with a root `once.toml` holding `[workspace]`.
struct Scratch {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

impl Scratch {
    fn new() -> Scratch {
        let dir = tempfile::Builder::new()
            .prefix("once-source-inputs-")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(&root, "once.toml", "[workspace]\n");
        Scratch { _dir: dir, root }
    }

    fn write(&self, relative: &str, contents: &str) {
        write(&self.root, relative, contents);
    }

    fn read(&self, relative: &str) -> String {
        std::fs::read_to_string(self.root.join(relative)).unwrap()
    }

    fn chmod(&self, relative: &str, mode: u32) {
        std::fs::set_permissions(
            self.root.join(relative),
            std::fs::Permissions::from_mode(mode),
        )
        .unwrap();
    }

    fn mode(&self, relative: &str) -> u32 {
        std::fs::metadata(self.root.join(relative))
            .unwrap()
            .permissions()
            .mode()
            & 0o7777
    }

    fn link(&self, relative: &str, target: &str) {
        let path = self.root.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        let _ = std::fs::remove_file(&path);
        std::os::unix::fs::symlink(target, path).unwrap();
    }

    /// `once ARGS` run from the workspace root (`once exec --script` takes the script's
    /// path relative to the current directory).
    fn exec(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_once"))
            .args(args)
            .current_dir(&self.root)
            .env_remove("ONCE_WORKSPACE")
            .output()
            .unwrap()
    }

    /// `once build --format json TARGETS…`: the exit code, the answer and stderr.
    fn build(&self, targets: &[&str]) -> Build {
        build_at(&self.root, targets)
    }

    /// A clean build of `targets` in a copy of the workspace without `.once` (a fresh
    /// store): what an incremental build must equal. Answers the copy (kept alive).
    fn clean_build(&self, targets: &[&str]) -> (tempfile::TempDir, Build) {
        let copy = tempfile::tempdir().unwrap();
        copy_tree(&self.root, copy.path());
        let build = build_at(copy.path(), targets);
        (copy, build)
    }
}

struct Build {
    code: i32,
    json: Value,
    stderr: String,
}

impl Build {
    /// The cache state of target `id` (`hit`, `miss`, …; `none` for no state).
    fn cache(&self, id: &str) -> String {
        self.json["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("no targets in {}\n{}", self.json, self.stderr))
            .iter()
            .find(|t| t["target"] == id)
            .and_then(|t| t["cache"].as_str())
            .unwrap_or("none")
            .to_owned()
    }

    fn problems(&self) -> String {
        self.json["problems"].to_string()
    }
}

fn build_at(root: &Path, targets: &[&str]) -> Build {
    let mut args = vec!["build", "--format", "json"];
    args.extend_from_slice(targets);
    let output = once(root, &args);
    let json = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    Build {
        code: output.status.code().unwrap_or(-1),
        json,
        stderr: text(&output.stderr),
    }
}

/// The diagnostics `once query validate-workspace --format json` reports.
fn diagnostics(root: &Path) -> Vec<Value> {
    let output = once(root, &["query", "validate-workspace", "--format", "json"]);
    let json: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    json["diagnostics"].as_array().cloned().unwrap_or_default()
}

/// Every file below `root/relative` with its permission bits and content, sorted (links
/// as their text): what two builds must agree on.
fn tree(root: &Path, relative: &str) -> Vec<String> {
    fn walk(base: &Path, path: &Path, out: &mut Vec<String>) {
        let Ok(entries) = std::fs::read_dir(path) else {
            return;
        };
        for entry in entries {
            let entry = entry.unwrap();
            let name = entry
                .path()
                .strip_prefix(base)
                .unwrap()
                .display()
                .to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                let target = std::fs::read_link(entry.path()).unwrap();
                out.push(format!("{name} -> {}", target.display()));
            } else if kind.is_dir() {
                walk(base, &entry.path(), out);
            } else {
                let mode = entry.metadata().unwrap().permissions().mode() & 0o7777;
                let content = std::fs::read(entry.path()).unwrap();
                out.push(format!(
                    "{name} {mode:o} {:?}",
                    String::from_utf8_lossy(&content)
                ));
            }
        }
    }
    let base = root.join(relative);
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out.sort();
    out
}

/// Waits (at most a minute) until `path` exists.
fn wait_for(path: &Path) {
    let started = Instant::now();
    while !path.exists() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "`{}` never appeared",
            path.display()
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Starts `once ARGS` from `root` with its output captured.
fn spawn_once(root: &Path, args: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_once"))
        .args(args)
        .current_dir(root)
        .env_remove("ONCE_WORKSPACE")
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

// Item 2: a source edited while its action runs.

/// A `command` that signals its start through a marker file in its output directory (the
/// only place the sandbox lets it write), then sleeps and reads its source: the test
/// edits the source in between. Returns the marker's path.
fn slow_reader(ws: &Scratch) -> PathBuf {
    ws.write(
        "p/once.toml",
        r#"[[target]]
name = "Slow"
kind = "command"
srcs = ["in.txt"]

[target.attrs]
cmd = "touch \"$OUT/started\"; sleep 1.5; cat in.txt > \"$OUT/o.txt\""
outputs = ["o.txt"]
"#,
    );
    ws.root.join(".once/out/p/Slow/out/started")
}

#[test]
fn a_source_edited_while_its_action_runs_is_not_recorded() {
    let ws = Scratch::new();
    let marker = slow_reader(&ws);
    ws.write("p/in.txt", "v1\n");
    let running = spawn_once(&ws.root, &["build", "--format", "json", "p/Slow"]);
    wait_for(&marker);
    ws.write("p/in.txt", "v2\n");
    let output = running.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The run's output stays for this build, with a warning naming the file.
    assert_eq!(ws.read(".once/out/p/Slow/out/o.txt"), "v2\n");
    assert!(
        stderr.contains("`p/in.txt` changed while the action ran"),
        "{stderr}"
    );
    // Back to v1: what a clean build gives, never the v2 result under v1's key.
    ws.write("p/in.txt", "v1\n");
    let after = ws.build(&["p/Slow"]);
    assert_eq!(after.code, 0, "{}", after.stderr);
    assert_eq!(after.cache("p/Slow"), "miss", "{}", after.json);
    assert_eq!(ws.read(".once/out/p/Slow/out/o.txt"), "v1\n");
    let again = ws.build(&["p/Slow"]);
    assert_eq!(again.cache("p/Slow"), "hit");
    assert_eq!(ws.read(".once/out/p/Slow/out/o.txt"), "v1\n");
    // v2 was never recorded either: it runs.
    ws.write("p/in.txt", "v2\n");
    let v2 = ws.build(&["p/Slow"]);
    assert_eq!(v2.cache("p/Slow"), "miss");
    assert_eq!(ws.read(".once/out/p/Slow/out/o.txt"), "v2\n");
}

#[test]
fn a_script_input_edited_while_the_script_runs_is_not_recorded() {
    let ws = Scratch::new();
    // Beside its output: the one directory the sandbox lets the script write in.
    let marker = ws.root.join("tools/started");
    ws.write(
        "tools/slow.sh",
        "#!/bin/sh\n# once input \"in.txt\"\n# once output \"out.txt\"\n\
         touch started\nsleep 1.5\ncat in.txt > out.txt\n",
    );
    ws.chmod("tools/slow.sh", 0o755);
    ws.write("tools/in.txt", "v1\n");
    let running = spawn_once(&ws.root, &["exec", "--script", "tools/slow.sh"]);
    wait_for(&marker);
    ws.write("tools/in.txt", "v2\n");
    let output = running.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    assert_eq!(ws.read("tools/out.txt"), "v2\n");
    assert!(
        stderr.contains("`tools/in.txt` changed while the action ran"),
        "{stderr}"
    );
    ws.write("tools/in.txt", "v1\n");
    let after = ws.exec(&["exec", "--script", "tools/slow.sh"]);
    let stderr = text(&after.stderr);
    assert!(stderr.contains("once: cache miss "), "{stderr}");
    assert_eq!(ws.read("tools/out.txt"), "v1\n");
}

// Item 3: permission bits of sources.

#[test]
fn a_mode_change_of_a_source_is_a_miss_and_stages_what_a_clean_build_stages() {
    let ws = Scratch::new();
    ws.write(
        "p/once.toml",
        r#"[[target]]
name = "Tool"
kind = "sh_binary"
srcs = ["tool.sh"]
visibility = ["public"]

[[target]]
name = "Modes"
kind = "command"
srcs = ["data.txt"]
deps = ["p/Tool"]

[target.attrs]
cmd = "stat -c '%a' data.txt ../.once/out/p/Tool/tool.sh > \"$OUT/modes.txt\""
outputs = ["modes.txt"]
"#,
    );
    ws.write("p/tool.sh", "echo tool\n");
    ws.write("p/data.txt", "data\n");
    ws.chmod("p/tool.sh", 0o644);
    ws.chmod("p/data.txt", 0o644);
    let targets = ["p/Tool", "p/Modes"];
    let first = ws.build(&targets);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(ws.read(".once/out/p/Modes/out/modes.txt"), "644\n444\n");

    ws.chmod("p/tool.sh", 0o755);
    let executable = ws.build(&targets);
    assert_eq!(executable.code, 0, "{}", executable.stderr);
    assert_eq!(executable.cache("p/Tool"), "miss", "{}", executable.json);
    assert_eq!(ws.mode(".once/out/p/Tool/tool.sh"), 0o755);
    assert_eq!(ws.read(".once/out/p/Modes/out/modes.txt"), "644\n755\n");
    let (clean_dir, clean) = ws.clean_build(&targets);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    assert_eq!(
        tree(&ws.root, ".once/out"),
        tree(clean_dir.path(), ".once/out")
    );

    // A mode the command only reads is in its key too.
    ws.chmod("p/data.txt", 0o600);
    let private = ws.build(&targets);
    assert_eq!(private.cache("p/Modes"), "miss", "{}", private.json);
    assert_eq!(ws.read(".once/out/p/Modes/out/modes.txt"), "600\n755\n");

    // Back to the first modes: the first results, hits.
    ws.chmod("p/tool.sh", 0o644);
    ws.chmod("p/data.txt", 0o644);
    let back = ws.build(&targets);
    assert_eq!(back.cache("p/Tool"), "hit", "{}", back.json);
    assert_eq!(back.cache("p/Modes"), "hit", "{}", back.json);
    assert_eq!(ws.read(".once/out/p/Modes/out/modes.txt"), "644\n444\n");
    let (clean_dir, _) = ws.clean_build(&targets);
    assert_eq!(
        tree(&ws.root, ".once/out"),
        tree(clean_dir.path(), ".once/out")
    );
}

// Item 4: symbolic-link sources.

/// `p/Cat` concatenates its `srcs` in order.
fn cat_target(ws: &Scratch, srcs: &[&str]) {
    let list: Vec<String> = srcs.iter().map(|s| format!("\"{s}\"")).collect();
    ws.write(
        "p/once.toml",
        &format!(
            r#"[[target]]
name = "Cat"
kind = "command"
srcs = [{}]

[target.attrs]
cmd = "cat {} > \"$OUT/all.txt\""
outputs = ["all.txt"]
"#,
            list.join(", "),
            srcs.join(" ")
        ),
    );
}

#[test]
fn a_link_to_a_workspace_file_is_followed_and_keyed_by_its_target() {
    let ws = Scratch::new();
    ws.write("p/real.txt", "real\n");
    ws.write("q/once.toml", "");
    ws.write("q/shared.txt", "shared\n");
    ws.link("p/same.txt", "real.txt");
    ws.link("p/other.txt", "../q/shared.txt");
    // A chain: two links, then the file.
    ws.link("p/chain.txt", "same.txt");
    cat_target(&ws, &["same.txt", "other.txt", "chain.txt"]);
    let diagnostics = diagnostics(&ws.root);
    assert!(diagnostics.is_empty(), "{diagnostics:?}");

    let first = ws.build(&["p/Cat"]);
    assert_eq!(first.code, 0, "{}", first.stderr);
    assert_eq!(first.cache("p/Cat"), "miss");
    assert_eq!(
        ws.read(".once/out/p/Cat/out/all.txt"),
        "real\nshared\nreal\n"
    );
    assert_eq!(ws.build(&["p/Cat"]).cache("p/Cat"), "hit");

    // An edit of a link's target (in the package, in another one) is a miss.
    ws.write("p/real.txt", "edited\n");
    let edited = ws.build(&["p/Cat"]);
    assert_eq!(edited.cache("p/Cat"), "miss", "{}", edited.json);
    assert_eq!(
        ws.read(".once/out/p/Cat/out/all.txt"),
        "edited\nshared\nedited\n"
    );
    ws.write("q/shared.txt", "also edited\n");
    assert_eq!(ws.build(&["p/Cat"]).cache("p/Cat"), "miss");
    assert_eq!(
        ws.read(".once/out/p/Cat/out/all.txt"),
        "edited\nalso edited\nedited\n"
    );
    // A link pointed elsewhere is a miss.
    ws.write("p/elsewhere.txt", "elsewhere\n");
    ws.link("p/same.txt", "elsewhere.txt");
    assert_eq!(ws.build(&["p/Cat"]).cache("p/Cat"), "miss");
    assert_eq!(
        ws.read(".once/out/p/Cat/out/all.txt"),
        "elsewhere\nalso edited\nelsewhere\n"
    );
    let (clean_dir, clean) = ws.clean_build(&["p/Cat"]);
    assert_eq!(clean.code, 0, "{}", clean.stderr);
    assert_eq!(
        tree(&ws.root, ".once/out"),
        tree(clean_dir.path(), ".once/out")
    );
}

/// A test reading a link is affected by a change of the file the link leads to.
#[test]
fn a_change_of_a_links_target_affects_the_tests_reading_the_link() {
    let ws = Scratch::new();
    ws.write(
        "p/once.toml",
        "[[target]]\nname = \"LinkTest\"\nkind = \"sh_test\"\nsrcs = [\"check.sh\", \"data.txt\"]\n\n\
         [target.attrs]\nmain = \"check.sh\"\n",
    );
    ws.write("p/check.sh", "grep -q real data.txt\n");
    ws.write("q/once.toml", "");
    ws.write("q/real.txt", "real\n");
    ws.link("p/data.txt", "../q/real.txt");
    let output = ws.exec(&["query", "affected-tests", "--format", "json", "q/real.txt"]);
    let json: Value = serde_json::from_slice(&output.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}{}", text(&output.stdout), text(&output.stderr)));
    let ids: Vec<&str> = json["tests"]
        .as_array()
        .unwrap_or_else(|| panic!("{json}"))
        .iter()
        .filter_map(|t| t["id"].as_str())
        .collect();
    assert_eq!(ids, ["p/LinkTest"], "{json}");
}

#[test]
fn a_linked_source_is_staged_with_the_content_of_its_target() {
    let ws = Scratch::new();
    ws.write(
        "p/once.toml",
        "[[target]]\nname = \"Tool\"\nkind = \"sh_binary\"\nsrcs = [\"tool.sh\"]\n",
    );
    ws.write("p/impl.sh", "echo one\n");
    ws.chmod("p/impl.sh", 0o755);
    ws.link("p/tool.sh", "impl.sh");
    let first = ws.build(&["p/Tool"]);
    assert_eq!(first.code, 0, "{}{}", first.stderr, first.json);
    assert_eq!(ws.read(".once/out/p/Tool/tool.sh"), "echo one\n");
    assert_eq!(ws.mode(".once/out/p/Tool/tool.sh"), 0o755);
    ws.write("p/impl.sh", "echo two\n");
    let second = ws.build(&["p/Tool"]);
    assert_eq!(second.cache("p/Tool"), "miss");
    assert_eq!(ws.read(".once/out/p/Tool/tool.sh"), "echo two\n");
}

/// The error diagnostics naming `needle` in their message.
fn errors_naming(diagnostics: &[Value], needle: &str) -> Vec<Value> {
    diagnostics
        .iter()
        .filter(|d| {
            d["severity"] == "error" && d["message"].as_str().unwrap_or("").contains(needle)
        })
        .cloned()
        .collect()
}

#[test]
fn a_link_leading_out_of_the_workspace_or_nowhere_is_refused_by_name() {
    let ws = Scratch::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    ws.write("p/real.txt", "real\n");
    ws.link(
        "p/escape.txt",
        &outside.path().join("secret.txt").display().to_string(),
    );
    ws.link("p/dangling.txt", "nothing-here.txt");
    ws.write(".hidden/x.txt", "hidden\n");
    ws.link("p/state.txt", "../.hidden/x.txt");
    for (link, why) in [
        ("p/escape.txt", "outside the workspace"),
        ("p/dangling.txt", "does not exist"),
        ("p/state.txt", "not a file of the workspace"),
    ] {
        let name = link.trim_start_matches("p/");
        cat_target(&ws, &["real.txt", name]);
        let errors = errors_naming(&diagnostics(&ws.root), &format!("`{link}`"));
        assert_eq!(errors.len(), 1, "{link}: {errors:?}");
        let error = &errors[0];
        assert_eq!(error["code"], "invalid_source_link", "{error}");
        assert!(error["message"].as_str().unwrap().contains(why), "{error}");
        assert_eq!(error["file"], "p/once.toml");
        assert_eq!(error["range"]["start"]["line"], 4, "{error}");
        let build = ws.build(&["p/Cat"]);
        assert_eq!(build.code, 1, "{link}: {}", build.json);
        assert!(build.problems().contains(link), "{}", build.problems());
        assert!(
            !ws.root.join(".once/out/p/Cat/out").exists(),
            "nothing ran for {link}"
        );
    }
    // A glob matching such a link is refused as well.
    cat_target(&ws, &["*.txt"]);
    let errors = errors_naming(&diagnostics(&ws.root), "`p/escape.txt`");
    assert_eq!(errors.len(), 1, "{errors:?}");
}

#[test]
fn a_link_to_a_directory_is_not_followed() {
    let ws = Scratch::new();
    ws.write("p/sub/a.txt", "a\n");
    ws.link("p/dir", "sub");
    cat_target(&ws, &["dir/*.txt"]);
    let found = diagnostics(&ws.root);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["code"], "missing_source");
    // Named (or matched) as a source, the link is refused by name.
    cat_target(&ws, &["dir"]);
    let errors = errors_naming(&diagnostics(&ws.root), "`p/dir`");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["code"], "invalid_source_link");
    assert!(
        errors[0]["message"]
            .as_str()
            .unwrap()
            .contains("links to directories are not followed"),
        "{}",
        errors[0]
    );
    cat_target(&ws, &["sub/a.txt"]);
    let build = ws.build(&["p/Cat"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    assert_eq!(ws.read(".once/out/p/Cat/out/all.txt"), "a\n");
}

#[test]
fn exec_follows_links_inside_the_workspace_and_refuses_those_leading_out() {
    let ws = Scratch::new();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.txt"), "secret\n").unwrap();
    ws.write("tools/real.txt", "real\n");
    ws.link("tools/data/in.txt", "../real.txt");
    ws.write(
        "tools/read.sh",
        "#!/bin/sh\n# once input \"data\"\n# once output \"out.txt\"\ncat data/* > out.txt\n",
    );
    ws.chmod("tools/read.sh", 0o755);
    let first = ws.exec(&["exec", "--script", "tools/read.sh"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    assert_eq!(ws.read("tools/out.txt"), "real\n");
    ws.write("tools/real.txt", "edited\n");
    let second = ws.exec(&["exec", "--script", "tools/read.sh"]);
    assert!(
        text(&second.stderr).contains("once: cache miss "),
        "{}",
        text(&second.stderr)
    );
    assert_eq!(ws.read("tools/out.txt"), "edited\n");

    ws.link(
        "tools/data/secret.txt",
        &outside.path().join("secret.txt").display().to_string(),
    );
    let refused = ws.exec(&["exec", "--script", "tools/read.sh"]);
    let stderr = text(&refused.stderr);
    assert_eq!(refused.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("`tools/data/secret.txt`"), "{stderr}");
    assert!(stderr.contains("outside the workspace"), "{stderr}");
}

// Item 5: files named by `path` attributes.

#[test]
fn a_missing_file_named_by_a_path_attribute_is_an_error_at_its_entry() {
    let ws = Scratch::new();
    ws.write(
        "p/once.toml",
        r#"[[target]]
name = "Gen"
kind = "command"

[target.attrs]
cmd = "echo hi > \"$OUT/o.txt\""
outputs = ["o.txt"]
inputs = ["extra.txt", "gone.txt"]
"#,
    );
    // In a package of its own: a package with an error is not planned at all.
    ws.write(
        "s/once.toml",
        "[[target]]\nname = \"Script\"\nkind = \"script\"\n\
         attrs = { script_path = \"nope.sh\", script_runtime = \"sh\" }\n",
    );
    ws.write("p/extra.txt", "extra\n");
    let diagnostics = diagnostics(&ws.root);
    let missing: Vec<&Value> = diagnostics
        .iter()
        .filter(|d| d["code"] == "missing_file")
        .collect();
    assert_eq!(missing.len(), 2, "{diagnostics:?}");
    let gone = missing
        .iter()
        .find(|d| d["target"] == "p/Gen")
        .expect("the `inputs` entry");
    assert_eq!(gone["severity"], "error");
    assert!(
        gone["message"].as_str().unwrap().contains("`gone.txt`"),
        "{gone}"
    );
    assert_eq!(gone["attribute"], "attrs.inputs");
    // `inputs = ["extra.txt", "gone.txt"]`: the second string, quotes included.
    assert_eq!(
        gone["range"],
        serde_json::json!({"start": {"line": 8, "column": 24}, "end": {"line": 8, "column": 34}})
    );
    let script = missing
        .iter()
        .find(|d| d["target"] == "s/Script")
        .expect("the `script_path` value");
    assert_eq!(script["attribute"], "attrs.script_path");
    assert_eq!(script["file"], "s/once.toml");
    assert_eq!(script["range"]["start"]["line"], 4);

    let build = ws.build(&["p/Gen"]);
    assert_eq!(build.code, 1, "{}", build.json);
    assert!(
        build.problems().contains("gone.txt"),
        "{}",
        build.problems()
    );
    assert!(!ws.root.join(".once/out/p/Gen").exists(), "nothing ran");

    // Created, the file is an input like any other.
    ws.write("p/gone.txt", "back\n");
    let left: Vec<Value> = diagnostics_of(&ws.root, "missing_file");
    assert_eq!(left.len(), 1, "{left:?}");
    assert_eq!(left[0]["target"], "s/Script");
    let build = ws.build(&["p/Gen"]);
    assert_eq!(build.code, 0, "{}", build.stderr);
    assert_eq!(build.cache("p/Gen"), "miss");
}

fn diagnostics_of(root: &Path, code: &str) -> Vec<Value> {
    diagnostics(root)
        .into_iter()
        .filter(|d| d["code"] == code)
        .collect()
}
