//! `once build` and `once run` through the real binary, on a small workspace of
//! `filegroup`, `command`, `script` and `c_binary` targets: cache states per target
//! (miss, then hit, then miss after an edit), early cutoff, failures and exit codes.

use std::path::Path;
use std::process::Command;

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text, write};

#[path = "support/processes.rs"]
mod processes;
use processes::{ps_lists, wait_for_processes};

use serde_json::Value;

/// `data/Data` (filegroup) ← `gen/Gen` (command: the first line of its source and of
/// the data) ← `use/Use` (command reading Gen's output); `tools/Hello` (script);
/// `broken/Broken` (a command that fails); `tasks/Deploy` (a project kind with only `run`).
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[workspace]\ninclude = [\"data\", \"gen\", \"use\", \"tools\", \"broken\", \"c\", \"tasks\"]\n\n\
         [modules]\npaths = [\"modules/*.star\"]\n",
    );
    write(
        root,
        "modules/task.star",
        "target_kind(\n    name = \"task\",\n    docs = \"A task that is only run.\",\n    \
         capabilities = [capability(\"run\", \"Runs the task.\")],\n)\n",
    );
    write(
        root,
        "tasks/once.toml",
        "[[target]]\nname = \"Deploy\"\nkind = \"task\"\n",
    );
    write(
        root,
        "data/once.toml",
        "[[target]]\nname = \"Data\"\nkind = \"filegroup\"\nsrcs = [\"*.txt\"]\nvisibility = [\"public\"]\n",
    );
    write(root, "data/a.txt", "alpha\n");
    write(
        root,
        "gen/once.toml",
        r#"[[target]]
name = "Gen"
kind = "command"
srcs = ["in.txt"]
deps = ["data/Data"]
visibility = ["public"]

[target.attrs]
cmd = "head -n 1 in.txt > \"$OUT/gen.txt\" && cat ../data/a.txt >> \"$OUT/gen.txt\""
outputs = ["gen.txt"]
"#,
    );
    write(root, "gen/in.txt", "first\nsecond\n");
    write(
        root,
        "use/once.toml",
        r#"[[target]]
name = "Use"
kind = "command"
deps = ["gen/Gen"]

[target.attrs]
cmd = "tr a-z A-Z < ../.once/out/gen/Gen/out/gen.txt > \"$OUT/use.txt\""
outputs = ["use.txt"]
"#,
    );
    write(
        root,
        "tools/once.toml",
        r#"[[target]]
name = "Hello"
kind = "script"
srcs = ["hello.sh"]

[target.attrs]
script_path = "hello.sh"
script_runtime = "sh"
args = ["fixed"]
"#,
    );
    write(
        root,
        "tools/hello.sh",
        "echo \"hello $*\"\n[ \"$2\" = fail ] && exit 7\nexit 0\n",
    );
    write(
        root,
        "broken/once.toml",
        r#"[[target]]
name = "Broken"
kind = "command"

[target.attrs]
cmd = "echo 'about to fail' && echo 'oops: no such thing' >&2 && exit 3"
outputs = ["never.txt"]
"#,
    );
    write(
        root,
        "c/once.toml",
        "[[target]]\nname = \"Prog\"\nkind = \"c_binary\"\nsrcs = [\"main.c\"]\n",
    );
    write(
        root,
        "c/main.c",
        "#include <stdio.h>\nint main(void) { puts(\"from c\"); return 0; }\n",
    );
    dir
}

/// `once build … --format json`: the exit code and each target's cache state.
fn build_json(root: &Path, targets: &[&str]) -> (i32, Value) {
    let mut args = vec!["build", "--format", "json"];
    args.extend_from_slice(targets);
    let output = once(root, &args);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    (output.status.code().unwrap(), value)
}

fn cache_states(value: &Value) -> Vec<(String, String)> {
    value["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["target"].as_str().unwrap().to_owned(),
                t["cache"].as_str().unwrap_or("none").to_owned(),
            )
        })
        .collect()
}

fn states(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect()
}

#[test]
fn a_second_build_hits_an_edit_misses_and_identical_outputs_cut_off() {
    let dir = workspace();
    let root = dir.path();
    let (code, first) = build_json(root, &["use/Use", "gen/Gen", "data/Data"]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(first["success"], true);
    // The answer's fields, in their order (it is written straight from the records).
    let fields: Vec<&str> = first
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "success",
            "capability",
            "targets",
            "problems",
            "diagnostics"
        ]
    );
    assert_eq!(
        cache_states(&first),
        states(&[
            ("use/Use", "miss"),
            ("gen/Gen", "miss"),
            ("data/Data", "none")
        ])
    );
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/use/Use/out/use.txt")).unwrap(),
        "FIRST\nALPHA\n"
    );
    let gen_record = &first["targets"][1];
    assert_eq!(gen_record["kind"], "command");
    assert_eq!(gen_record["status"], "completed");
    assert_eq!(
        gen_record["outputs"],
        serde_json::json!([".once/out/gen/Gen/out/gen.txt"])
    );
    assert_eq!(gen_record["action_digest"].as_str().unwrap().len(), 64);

    // Nothing changed: every action is reused.
    let (code, second) = build_json(root, &["use/Use", "gen/Gen"]);
    assert_eq!(code, 0);
    assert_eq!(
        cache_states(&second),
        states(&[("use/Use", "hit"), ("gen/Gen", "hit")])
    );

    // An edit Gen's output does not see: Gen runs again, writes the same bytes, and Use
    // stays a hit (early cutoff).
    write(root, "gen/in.txt", "first\nchanged second line\n");
    let (_, third) = build_json(root, &["use/Use", "gen/Gen"]);
    assert_eq!(
        cache_states(&third),
        states(&[("use/Use", "hit"), ("gen/Gen", "miss")])
    );

    // An edit that changes Gen's output rebuilds both.
    write(root, "gen/in.txt", "new first\n");
    let (_, fourth) = build_json(root, &["use/Use"]);
    assert_eq!(cache_states(&fourth), states(&[("use/Use", "miss")]));
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/use/Use/out/use.txt")).unwrap(),
        "NEW FIRST\nALPHA\n"
    );

    // A data file read through the filegroup is an input too.
    write(root, "data/a.txt", "beta\n");
    let (_, fifth) = build_json(root, &["use/Use"]);
    assert_eq!(cache_states(&fifth), states(&[("use/Use", "miss")]));
}

/// A stored output whose blob was changed is not restored: the action runs again, the
/// blob is replaced by the right bytes, and the build says why on stderr (the JSON
/// answer on stdout stays the seed's record).
#[test]
fn a_corrupted_blob_is_reported_and_rebuilt() {
    let dir = workspace();
    let root = dir.path();
    let (code, _) = build_json(root, &["gen/Gen"]);
    assert_eq!(code, 0);
    let output = root.join(".once/out/gen/Gen/out/gen.txt");
    let good = std::fs::read(&output).unwrap();
    // The blob holding those bytes; its digest is its fan-out directory and name.
    let (blob, digest) = std::fs::read_dir(root.join(".once/cache/blobs"))
        .unwrap()
        .flat_map(|fan| std::fs::read_dir(fan.unwrap().path()).unwrap())
        .map(|entry| entry.unwrap().path())
        .find(|path| std::fs::read(path).unwrap() == good)
        .map(|path| {
            let fan = path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy();
            let digest = format!("{fan}{}", path.file_name().unwrap().to_string_lossy());
            (path, digest)
        })
        .expect("a blob of the output");
    let mut permissions = std::fs::metadata(&blob).unwrap().permissions();
    #[allow(
        clippy::permissions_set_readonly_false,
        reason = "the test corrupts a blob"
    )]
    permissions.set_readonly(false);
    std::fs::set_permissions(&blob, permissions).unwrap();
    std::fs::write(&blob, "corrupt\n").unwrap();
    std::fs::remove_dir_all(root.join(".once/out")).unwrap();

    let output_of = once(root, &["build", "--format", "json", "gen/Gen"]);
    assert_eq!(output_of.status.code(), Some(0));
    let value: Value = serde_json::from_slice(&output_of.stdout).unwrap();
    assert_eq!(cache_states(&value), states(&[("gen/Gen", "miss")]));
    let stderr = text(&output_of.stderr);
    assert!(
        stderr.contains("once: warning: gen/Gen#build/")
            && stderr.contains(&format!("the stored output {digest} could not be used"))
            && stderr.contains("running the action again"),
        "{stderr}"
    );
    assert_eq!(std::fs::read(&output).unwrap(), good);
    assert_eq!(
        std::fs::read(&blob).unwrap(),
        good,
        "the blob holds the right bytes"
    );
}

#[test]
fn patterns_name_packages_and_everything() {
    let dir = workspace();
    let root = dir.path();
    // `gen/...` is every target in `gen` and below it; `...` every target with `build`
    // (the task has only `run`), here with `--keep-going` past the broken one.
    let (code, value) = build_json(root, &["gen/..."]);
    assert_eq!(code, 0);
    assert_eq!(cache_states(&value), states(&[("gen/Gen", "miss")]));
    let output = once(root, &["build", "...", "--keep-going"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for line in [
        "broken/Broken (command): FAILED",
        "c/Prog (c_binary): miss",
        "data/Data (filegroup): nothing to run",
        "gen/Gen (command): hit",
        "use/Use (command): miss",
        "tools/Hello (script): miss",
        "failed to build 6 targets",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    assert!(!stdout.contains("tasks/Deploy"), "{stdout}");
    let output = once(root, &["build", "nowhere/..."]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("`nowhere/...` names no target"),
        "{}",
        text(&output.stderr)
    );
    let output = once(root, &["build", "gen/Gne"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("gen/Gen"),
        "{}",
        text(&output.stderr)
    );
    let output = once(root, &["build", "tasks/Deploy"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output.stderr).contains("has no `build` capability; it has: run"),
        "{}",
        text(&output.stderr)
    );
}

/// A target whose dependency does not resolve (a label in another tool's syntax, a
/// missing target, one not visible to it) is refused with the error validation reports,
/// and nothing runs: planned without the edge, it would run without its dependency.
#[test]
fn a_target_whose_dependencies_do_not_resolve_is_not_built() {
    let dir = workspace();
    let root = dir.path();
    let use_manifest = text(&std::fs::read(root.join("use/once.toml")).unwrap());
    let data_manifest = text(&std::fs::read(root.join("data/once.toml")).unwrap());
    write(
        root,
        "data/once.toml",
        &format!(
            "{data_manifest}\n[[target]]\nname = \"Hidden\"\nkind = \"filegroup\"\nvisibility = [\"private\"]\n"
        ),
    );
    for (deps, code) in [
        ("\"//gen:Gen\"", "invalid_label"),
        ("\"gen/Nope\"", "missing_dependency"),
        ("\"data/Hidden\"", "dependency_not_visible"),
    ] {
        write(
            root,
            "use/once.toml",
            &use_manifest.replace("\"gen/Gen\"", deps),
        );
        let validation = once(root, &["query", "validate-workspace", "--format", "json"]);
        assert!(
            text(&validation.stdout).contains(code),
            "{deps}: {}",
            text(&validation.stdout)
        );
        let (exit, value) = build_json(root, &["use/Use"]);
        assert_eq!(exit, 1, "{deps}: {value}");
        assert_eq!(value["success"], false);
        let problems = value["problems"].to_string();
        assert!(
            problems.contains(code) && problems.contains("use/once.toml:"),
            "{deps}: {problems}"
        );
        assert!(!root.join(".once/out/use").exists(), "{deps}: Use ran");
        let output = once(root, &["build", "..."]);
        assert_eq!(output.status.code(), Some(1), "{deps}");
        assert!(
            text(&output.stderr).contains("nothing ran") && text(&output.stderr).contains(code),
            "{deps}: {}",
            text(&output.stderr)
        );
        assert!(!root.join(".once/out").exists(), "{deps}: something ran");
    }
    // Repaired, it builds.
    write(root, "use/once.toml", &use_manifest);
    let (exit, value) = build_json(root, &["use/Use"]);
    assert_eq!(exit, 0, "{value}");
    assert_eq!(cache_states(&value), states(&[("use/Use", "miss")]));
}

#[test]
fn a_failing_action_shows_its_command_exit_code_and_output() {
    let dir = workspace();
    let root = dir.path();
    let output = once(root, &["build", "broken/Broken"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for line in [
        "broken/Broken (command): FAILED",
        "  action:    broken/Broken#build/cmd",
        "  command:   (cd broken && sh -c ",
        "  exit code: 3",
        "  stdout (last lines):\n    about to fail",
        "  stderr (last lines):\n    oops: no such thing",
        "failed to build 1 target",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    let (code, value) = build_json(root, &["broken/Broken"]);
    assert_eq!(code, 1);
    assert_eq!(value["success"], false);
    let record = &value["targets"][0];
    assert_eq!(record["status"], "failed");
    assert_eq!(record["failure"]["exit_code"], 3);
    assert_eq!(record["failure"]["stderr_tail"], "oops: no such thing\n");
}

#[test]
fn run_builds_first_then_runs_with_the_arguments() {
    let dir = workspace();
    let root = dir.path();
    let output = once(root, &["run", "tools/Hello", "--", "extra"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "hello fixed extra\n");
    // `once run` exits with the program's own code.
    let output = once(root, &["run", "tools/Hello", "--", "fail"]);
    assert_eq!(output.status.code(), Some(7));
    assert_eq!(text(&output.stdout), "hello fixed fail\n");
    assert!(
        text(&output.stderr).contains("`tools/Hello` failed: exit code 7"),
        "{}",
        text(&output.stderr)
    );
    let output = once(root, &["run", "tools/Hello", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0));
    let stdout = text(&output.stdout);
    let (program, record) = stdout.split_once('{').unwrap();
    assert_eq!(program, "hello fixed\n");
    let record: Value = serde_json::from_str(&format!("{{{record}")).unwrap();
    assert_eq!(record["exit_code"], 0);
    let fields: Vec<&str> = record
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(
        fields,
        [
            "success",
            "capability",
            "exit_code",
            "targets",
            "problems",
            "diagnostics"
        ]
    );
    assert_eq!(record["targets"][0]["cache"], "bypass");
    assert_eq!(record["targets"][0]["capability"], "run");

    // A compiled program is built before it runs.
    let output = once(root, &["run", "c/Prog"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(text(&output.stdout), "from c\n");

    // A program whose build fails is not started; the failure is shown.
    write(root, "c/main.c", "int main(void) { return missing; }\n");
    let output = once(root, &["run", "c/Prog"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for line in [
        "c/Prog (c_binary): SKIPPED",
        "  not built: `c/Prog#build/",
        "not run: what `c/Prog` needs failed to build",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
}

/// On a terminal (`script` gives one), a live progress line shows `[done/total]`, the
/// target being built with its kind, and the actions whose steps run (a hit runs none);
/// it is cleared before the per-target lines.
#[test]
fn a_terminal_gets_a_live_progress_line() {
    assert!(
        Command::new("script").arg("--version").output().is_ok(),
        "`script` (util-linux) gives `once` a terminal in this test: install it"
    );
    let dir = workspace();
    let root = dir.path();
    let command = format!(
        "{} -C {} build use/Use",
        env!("CARGO_BIN_EXE_once"),
        root.display()
    );
    let on_terminal = || {
        let output = Command::new("script")
            .args(["-qec", &command, "/dev/null"])
            .env("COLUMNS", "200")
            .output()
            .unwrap();
        text(&output.stdout)
    };
    let screen = on_terminal();
    for part in [
        "\r\x1b[K[0/2] building gen/Gen (command) · running gen/Gen#build/cmd",
        "\r\x1b[K[1/2] building use/Use (command) · running use/Use#build/cmd",
        "\r\x1b[K[2/2] building use/Use (command)\r\x1b[Kuse/Use (command): miss",
    ] {
        assert!(screen.contains(part), "no {part:?} in {screen:?}");
    }
    // Again: two hits, taken up and shown, but nothing runs.
    let screen = on_terminal();
    for part in [
        "\r\x1b[K[0/2] building gen/Gen (command)\r",
        "\r\x1b[K[2/2] building use/Use (command)\r\x1b[Kuse/Use (command): hit",
    ] {
        assert!(screen.contains(part), "no {part:?} in {screen:?}");
    }
    assert!(!screen.contains("running"), "{screen:?}");
}

/// SIGINT (Ctrl-C) or SIGTERM to `once build` kills the actions it runs (each in a
/// process group of its own, which the terminal's signal does not reach) before it
/// exits 128 + the signal, as a shell reports a command it interrupted, reporting the
/// target cancelled.
#[test]
fn a_signal_to_once_build_kills_its_actions() {
    for (signal, code) in [("-INT", 130), ("-TERM", 143)] {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        write(root, "once.toml", "[workspace]\n");
        write(
            root,
            "slow/once.toml",
            "[[target]]\nname = \"Slow\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"sleep 600\"\noutputs = [\"never.txt\"]\n",
        );
        let child = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("-C")
            .arg(root)
            .args(["build", "slow/Slow"])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pids = wait_for_processes(&root.join("slow"));
        let sent = std::time::Instant::now();
        let status = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(status.success());
        let output = child.wait_with_output().unwrap();
        assert!(sent.elapsed() < std::time::Duration::from_secs(2));
        assert_eq!(output.status.code(), Some(code), "{}", text(&output.stderr));
        assert!(
            text(&output.stdout).contains("slow/Slow (command): CANCELLED"),
            "{}",
            text(&output.stdout)
        );
        assert!(
            pids.iter().all(|&pid| !ps_lists(pid)),
            "an action survived {signal}: {pids:?}"
        );
    }
}

/// A workspace with `slow/Slow`, a `command` whose action leaves a background `sleep`
/// in its group beside the one it waits for, and `tools/Wait`, a `script` whose run is a
/// shell waiting for a `sleep`.
fn slow_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    write(
        root,
        "slow/once.toml",
        "[[target]]\nname = \"Slow\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"sleep 600 & sleep 600; wait\"\noutputs = [\"never.txt\"]\n",
    );
    write(
        root,
        "tools/once.toml",
        "[[target]]\nname = \"Wait\"\nkind = \"script\"\n\n[target.attrs]\nscript_path = \"wait.sh\"\nscript_runtime = \"sh\"\n",
    );
    write(root, "tools/wait.sh", "sleep 600\necho never\n");
    dir
}

/// Polls `ps` for up to a second until none of `pids` is listed.
fn all_gone_within_a_second(pids: &[u32]) -> bool {
    let start = std::time::Instant::now();
    while start.elapsed() < std::time::Duration::from_secs(1) {
        if pids.iter().all(|&pid| !ps_lists(pid)) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// SIGINT, SIGTERM or SIGHUP to `once run` (no terminal: the program has a process
/// group of its own) reaches the program and everything it started, and `once` exits
/// with 128 + the signal, as a shell reports a program a signal ended.
#[test]
fn a_signal_to_once_run_ends_its_program_and_exits_with_the_signal_status() {
    for (signal, status) in [("-INT", 130), ("-TERM", 143), ("-HUP", 129)] {
        let dir = slow_workspace();
        let root = dir.path();
        let child = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("-C")
            .arg(root)
            .args(["run", "tools/Wait"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let pids = wait_for_processes(&root.join("tools"));
        assert!(!pids.is_empty());
        let sent = Command::new("kill")
            .args([signal, &child.id().to_string()])
            .status()
            .unwrap();
        assert!(sent.success());
        let output = child.wait_with_output().unwrap();
        assert_eq!(
            output.status.code(),
            Some(status),
            "{signal}: {}",
            text(&output.stderr)
        );
        assert!(!text(&output.stdout).contains("never"));
        assert!(
            all_gone_within_a_second(&pids),
            "the program survived {signal}: {pids:?}"
        );
    }
}

/// `kill -9` of `once build` (nothing in `once` runs any more) and of `once run`: the
/// reaper kills the action's and the program's process groups, the background `sleep`
/// included, within a second.
#[test]
fn a_killed_once_leaves_no_process_behind() {
    for (target, dir_name) in [("slow/Slow", "slow"), ("tools/Wait", "tools")] {
        let dir = slow_workspace();
        let root = dir.path();
        let verb = if dir_name == "slow" { "build" } else { "run" };
        let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("-C")
            .arg(root)
            .args([verb, target])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        let pids = wait_for_processes(&root.join(dir_name));
        let sleeps = pids
            .iter()
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/comm"))
                    .is_ok_and(|c| c.trim() == "sleep")
            })
            .count();
        if dir_name == "slow" {
            // Both `sleep`s of the action, the one it does not wait for too.
            for _ in 0..50 {
                if processes::processes_in(&root.join(dir_name)).len() >= 3 {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
        assert!(sleeps >= 1, "{pids:?}");
        let pids = processes::processes_in(&root.join(dir_name));
        child.kill().unwrap();
        child.wait().unwrap();
        assert!(
            all_gone_within_a_second(&pids),
            "{verb}: a process outlived a killed once: {pids:?}"
        );
    }
}

/// A target skipped because a dependency failed shows that failure's report (command,
/// exit code, output), not only its id; with `--keep-going` each skipped target shows the
/// failure of its own dependency; `once run` the same.
#[test]
fn a_skipped_target_shows_the_failure_of_its_dependency() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    let failing = |name: &str, code: u8| {
        format!(
            "[[target]]\nname = \"{name}\"\nkind = \"command\"\n\n[target.attrs]\n\
             cmd = \"echo {name}-out; echo {name}-err >&2; exit {code}\"\noutputs = [\"o\"]\n\n"
        )
    };
    let dependent = |name: &str, dep: &str| {
        format!(
            "[[target]]\nname = \"{name}\"\nkind = \"command\"\ndeps = [\"./{dep}\"]\n\n\
             [target.attrs]\ncmd = \"echo > $OUT/o\"\noutputs = [\"o\"]\n\n"
        )
    };
    write(
        root,
        "p/once.toml",
        &[
            failing("A", 3),
            dependent("B", "A"),
            failing("C", 5),
            dependent("D", "C"),
            "[[target]]\nname = \"Tool\"\nkind = \"script\"\nsrcs = [\"t.sh\"]\ndeps = [\"./A\"]\n\n\
             [target.attrs]\nscript_path = \"t.sh\"\nscript_runtime = \"sh\"\n"
                .to_owned(),
        ]
        .concat(),
    );
    write(root, "p/t.sh", "echo tool\n");
    let output = once(root, &["build", "p/B"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for line in [
        "p/B (command): SKIPPED",
        "  not built: `p/A#build/cmd` failed\n",
        "  exit code: 3",
        "  stdout (last lines):\n    A-out",
        "  stderr (last lines):\n    A-err",
    ] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
    // Each skipped target names its own dependency's failure.
    let output = once(root, &["build", "--keep-going", "p/B", "p/D"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    let d = stdout.find("p/D (command): SKIPPED").expect(&stdout);
    let tail = &stdout[d..];
    for line in ["`p/C#build/cmd` failed", "exit code: 5", "C-err"] {
        assert!(tail.contains(line), "no `{line}` after p/D in:\n{stdout}");
    }
    let (_, value) = build_json(root, &["--keep-going", "p/B", "p/D"]);
    let records = value["targets"].as_array().unwrap();
    assert_eq!(records[0]["failure"]["exit_code"], 3, "{value}");
    assert_eq!(records[1]["failure"]["exit_code"], 5, "{value}");
    assert_eq!(records[1]["failure"]["stderr_tail"], "C-err\n", "{value}");
    // A failure listed in full above is referred to, not repeated.
    let output = once(root, &["build", "p/A", "p/B"]);
    let stdout = text(&output.stdout);
    assert!(
        stdout.contains("  not built: `p/A#build/cmd` failed (above)")
            && stdout.matches("\n    A-err\n").count() == 1,
        "{stdout}"
    );
    // once run: the program's dependency failed.
    let output = once(root, &["run", "p/Tool"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = text(&output.stdout);
    for line in ["`p/A#build/cmd` failed", "exit code: 3", "A-err"] {
        assert!(stdout.contains(line), "no `{line}` in:\n{stdout}");
    }
}

/// An output listed twice is a plan problem naming it once, not "actions `X` and `X`".
#[test]
fn an_output_declared_twice_is_a_plan_problem_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    write(
        root,
        "p/once.toml",
        "[[target]]\nname = \"Dup\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"touch $OUT/a\"\noutputs = [\"a\", \"a\"]\n",
    );
    let output = once(root, &["build", "p/Dup"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("output `.once/out/p/Dup/out/a` is declared twice by this action"),
        "{stderr}"
    );
    assert!(!stderr.contains("and `p/Dup#build/cmd`"), "{stderr}");
}

/// An action failed by a full disk (its output streams could not be captured) exited
/// with no code, and no signal killed it: its evidence says `exit=none`, not `signal`.
/// The store is a 200 KiB tmpfs mounted in a private user and mount namespace.
#[test]
fn evidence_of_a_full_disk_failure_does_not_claim_a_signal() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    write(
        root,
        "p/once.toml",
        "[[target]]\nname = \"Loud\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"head -c 1000000 /dev/zero; touch $OUT/o\"\noutputs = [\"o\"]\n",
    );
    std::fs::create_dir(root.join("store")).unwrap();
    let script = format!(
        "mount -t tmpfs -o size=200k tmpfs '{store}' && '{once}' -C '{root}' build p/Loud --store '{store}/cache'",
        store = root.join("store").display(),
        once = env!("CARGO_BIN_EXE_once"),
        root = root.display(),
    );
    let output = Command::new("unshare")
        .args(["-rm", "sh", "-c", &script])
        .output()
        .expect("unshare (util-linux) runs the build in a namespace with a small tmpfs");
    let stdout = text(&output.stdout);
    assert_eq!(
        output.status.code(),
        Some(1),
        "{stdout}{}",
        text(&output.stderr)
    );
    assert!(stdout.contains("No space left on device"), "{stdout}");
    let listing = text(&once(root, &["query", "evidence"]).stdout);
    assert!(
        listing.contains("p/Loud:build failed cache=miss exit=none"),
        "{listing}"
    );
    let json = once(root, &["query", "evidence", "--format", "json"]);
    let records: Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(records[0]["status"], "failed", "{records}");
    assert!(records[0].get("exit_code").is_none(), "{records}");
}

#[test]
fn a_command_names_its_dependencies_outputs_with_location() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[workspace]\ninclude = [\"gen\", \"use\"]\n",
    );
    write(
        root,
        "gen/once.toml",
        "[[target]]\nname = \"One\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo one > $OUT/one.txt\"\noutputs = [\"one.txt\"]\n\n\
         [[target]]\nname = \"Two\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo a > $OUT/a.txt; echo b > $OUT/b.txt\"\noutputs = [\"a.txt\", \"b.txt\"]\n\n\
         [[target]]\nname = \"Same\"\nkind = \"command\"\ndeps = [\"./One\"]\n\n[target.attrs]\n\
         cmd = \"cat $(location ./One) > $OUT/same.txt; echo \\\"$(echo shell)\\\" >> $OUT/same.txt\"\n\
         outputs = [\"same.txt\"]\n",
    );
    write(
        root,
        "use/once.toml",
        "[[target]]\nname = \"Use\"\nkind = \"command\"\ndeps = [\"gen/One\", \"gen/Two\"]\n\n\
         [target.attrs]\n\
         cmd = \"cat $(location gen/One) $(locations gen/Two) > $OUT/all.txt\"\n\
         outputs = [\"all.txt\"]\n\n\
         [[target]]\nname = \"Unknown\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"cat $(location ./Nothing) > $OUT/x\"\noutputs = [\"x\"]\n\n\
         [[target]]\nname = \"TooMany\"\nkind = \"command\"\ndeps = [\"gen/Two\"]\n\n\
         [target.attrs]\ncmd = \"cat $(location gen/Two) > $OUT/x\"\noutputs = [\"x\"]\n",
    );
    let (code, answer) = build_json(root, &["gen/Same", "use/Use"]);
    assert_eq!(code, 0, "{answer}");
    let read = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    // Another `$(…)` is the shell's.
    assert_eq!(read(".once/out/gen/Same/out/same.txt"), "one\nshell\n");
    assert_eq!(read(".once/out/use/Use/out/all.txt"), "one\na\nb\n");

    for (target, expected) in [
        (
            "use/Unknown",
            "`$(location ./Nothing)` in `cmd` names no dependency of this target: add `./Nothing` to `deps` (or `tools`)",
        ),
        (
            "use/TooMany",
            "`$(location gen/Two)` in `cmd` needs exactly one output, and `gen/Two` has 2: use `$(locations gen/Two)`",
        ),
    ] {
        let output = once(root, &["build", target]);
        assert_ne!(output.status.code(), Some(0), "{target}");
        let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
        assert!(said.contains(expected), "{target}: {said}");
    }
}

#[test]
fn once_run_records_the_run_itself_as_evidence() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[workspace]\n\n[[target]]\nname = \"Hello\"\nkind = \"script\"\n\n[target.attrs]\n\
         script_path = \"hello.sh\"\nscript_runtime = \"sh\"\n",
    );
    write(root, "hello.sh", "echo hello; exit 3\n");
    let output = once(root, &["run", "Hello"]);
    assert_eq!(output.status.code(), Some(3), "{}", text(&output.stderr));
    let output = once(root, &["query", "evidence", "--format", "json"]);
    let records: Value = serde_json::from_slice(&output.stdout).unwrap();
    let runs: Vec<&Value> = records
        .as_array()
        .unwrap()
        .iter()
        .filter(|record| record["subject"]["capability"] == "run")
        .collect();
    assert_eq!(runs.len(), 1, "{records}");
    assert_eq!(runs[0]["subject"]["id"], "Hello");
    assert_eq!(runs[0]["status"], "failed");
    assert_eq!(runs[0]["exit_code"], 3);
    assert_eq!(runs[0]["cache"], "bypass");
}

#[test]
fn a_host_file_is_materialized_keyed_by_its_content() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    let host = dir.path().join("toolchain/lib/libtool.so.1");
    std::fs::create_dir_all(host.parent().unwrap()).unwrap();
    std::fs::write(&host, "version 1\n").unwrap();
    write(
        &root,
        "once.toml",
        "[workspace]\n\n[modules]\npaths = [\"modules/*.star\"]\n\n\
         [[target]]\nname = \"Snapshot\"\nkind = \"host_snapshot\"\n\n[target.attrs]\n",
    );
    let manifest = std::fs::read_to_string(root.join("once.toml")).unwrap();
    std::fs::write(
        root.join("once.toml"),
        format!("{manifest}source = \"{}\"\n", host.display()),
    )
    .unwrap();
    write(
        &root,
        "modules/snapshot.star",
        "def _snapshot(ctx):\n    out = ctx.build_dir + \"/libtool.so.1\"\n    \
         actions.materialize_host_file(ctx.attrs.source, out, id = \"snapshot\")\n    return [out]\n\n\
         target_kind(\n    name = \"host_snapshot\",\n    docs = \"Snapshots a host file.\",\n    \
         attrs = {\"source\": attr.string(\"The host file.\", required = True)},\n    \
         capabilities = [capability(\"build\", \"Snapshots it.\", output_groups = [\"default\"])],\n    \
         implementations = {\"build\": _snapshot},\n)\n",
    );
    let copy = root.join(".once/out/Snapshot/libtool.so.1");
    let (code, first) = build_json(&root, &["Snapshot"]);
    assert_eq!(code, 0, "{first}");
    assert_eq!(cache_states(&first), states(&[("Snapshot", "miss")]));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "version 1\n");
    let (_, again) = build_json(&root, &["Snapshot"]);
    assert_eq!(cache_states(&again), states(&[("Snapshot", "hit")]));
    // The toolchain's file changes: the key does, and the copy follows.
    std::fs::write(&host, "version 2\n").unwrap();
    let (code, changed) = build_json(&root, &["Snapshot"]);
    assert_eq!(code, 0, "{changed}");
    assert_eq!(cache_states(&changed), states(&[("Snapshot", "miss")]));
    assert_eq!(std::fs::read_to_string(&copy).unwrap(), "version 2\n");
    // Only an absolute host path can be materialized.
    let manifest = std::fs::read_to_string(root.join("once.toml")).unwrap();
    std::fs::write(
        root.join("once.toml"),
        manifest.replace(&host.display().to_string(), "toolchain/lib/libtool.so.1"),
    )
    .unwrap();
    let output = once(&root, &["build", "Snapshot"]);
    assert_ne!(output.status.code(), Some(0));
    let said = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert!(
        said.contains("`materialize_host_file` needs an absolute host path"),
        "{said}"
    );
}
