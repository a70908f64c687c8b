//! The sandbox through the real binary (`--sandbox on`): an action reads only what it
//! declares (its own package, another package, the home directory and `/tmp` are out of
//! reach, a swallowed read reads nothing), writes only its build directory (not the
//! source tree, another package, `/tmp`, nor its own inputs), reaches no network unless it
//! declares `network = true`, and leaves no process behind; results made without the
//! sandbox are keyed apart, and the caller's locale does not reach an action's key.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

#[path = "support/binary.rs"]
mod binary;
use binary::{text, write};

/// A workspace in a temporary directory with one package, `pkg`, and a neighbour,
/// `other`, holding a secret.
struct Sandboxed {
    _dir: tempfile::TempDir,
    root: PathBuf,
    /// A directory outside the workspace, given to `once` as its `HOME`.
    home: tempfile::TempDir,
}

const SECRET: &str = "the-secret-content";

impl Sandboxed {
    fn new(manifest: &str) -> Sandboxed {
        let dir = tempfile::Builder::new()
            .prefix("once-sandbox-")
            .tempdir()
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        write(&root, "once.toml", "[workspace]\n");
        write(&root, "pkg/once.toml", manifest);
        write(&root, "pkg/declared.txt", "declared\n");
        write(&root, "pkg/secret.txt", SECRET);
        write(&root, "other/once.toml", "");
        write(&root, "other/secret.txt", SECRET);
        let home = tempfile::tempdir().unwrap();
        std::fs::write(home.path().join("secret.txt"), SECRET).unwrap();
        Sandboxed {
            _dir: dir,
            root,
            home,
        }
    }

    fn once(&self, args: &[&str], env: &[(&str, &str)]) -> Output {
        let mut command = Command::new(env!("CARGO_BIN_EXE_once"));
        command
            .args(args)
            .current_dir(&self.root)
            .env_remove("ONCE_WORKSPACE")
            .env("HOME", self.home.path());
        for (name, value) in env {
            command.env(name, value);
        }
        command.output().unwrap()
    }

    /// `once build --sandbox on pkg/T`.
    fn build(&self) -> Output {
        self.once(&["build", "--sandbox", "on", "pkg/T"], &[])
    }

    fn read(&self, path: &str) -> String {
        std::fs::read_to_string(self.root.join(path)).unwrap_or_default()
    }

    /// The command's output file, empty when it wrote none.
    fn output(&self) -> String {
        self.read(".once/out/pkg/T/out/o")
    }
}

fn command_target(cmd: &str) -> String {
    format!(
        "[[target]]\nname = \"T\"\nkind = \"command\"\n\n[target.attrs]\ncmd = '''{cmd}'''\n\
         outputs = [\"o\"]\ninputs = [\"declared.txt\"]\n"
    )
}

/// Checks that `cmd` fails the build, that nothing of the secret reached an output, and
/// that the failure says `named`.
fn check_denied(cmd: &str, named: &str) -> Sandboxed {
    let workspace = Sandboxed::new(&command_target(cmd));
    let built = workspace.build();
    assert!(
        !built.status.success(),
        "{cmd}: {}\n{}",
        text(&built.stdout),
        text(&built.stderr)
    );
    assert!(!workspace.output().contains(SECRET), "{cmd}");
    assert!(
        text(&built.stdout).contains("Permission denied")
            || text(&built.stderr).contains("Permission denied"),
        "{cmd}: {}",
        text(&built.stdout)
    );
    let said = format!("{}{}", text(&built.stdout), text(&built.stderr));
    assert!(said.contains(named), "{cmd}: expected {named:?} in\n{said}");
    workspace
}

#[test]
fn undeclared_reads_fail_and_reach_no_output() {
    check_denied(
        "cat secret.txt > $OUT/o",
        "the sandbox denied it: `pkg/secret.txt` is not declared (add it to the target's `inputs`",
    );
    check_denied(
        "cat ../other/secret.txt > $OUT/o",
        "`other/secret.txt` is not declared",
    );
    let home = Sandboxed::new("");
    let outside = home.home.path().join("secret.txt");
    check_denied(
        &format!("cat '{}' > $OUT/o", outside.display()),
        &format!("`{}` is outside the workspace", outside.display()),
    );
    let tmp = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(tmp.path(), SECRET).unwrap();
    check_denied(
        &format!("cat '{}' > $OUT/o", tmp.path().display()),
        "is outside the workspace",
    );
}

#[test]
fn a_swallowed_read_reads_nothing() {
    let workspace = Sandboxed::new(&command_target(
        "{ cat declared.txt; cat secret.txt 2>/dev/null || true; } > $OUT/o",
    ));
    let built = workspace.build();
    assert!(built.status.success(), "{}", text(&built.stdout));
    assert_eq!(workspace.output(), "declared\n");
}

#[test]
fn writes_outside_the_build_directory_fail_and_change_nothing() {
    let outside = tempfile::tempdir().unwrap();
    let cases = [
        ("echo x > new.txt && echo o > $OUT/o", "pkg/new.txt"),
        (
            "echo x > ../other/new.txt && echo o > $OUT/o",
            "other/new.txt",
        ),
        (
            "echo x >> declared.txt && echo o > $OUT/o",
            "pkg/declared.txt",
        ),
    ];
    for (cmd, path) in cases {
        let workspace = Sandboxed::new(&command_target(cmd));
        let before = workspace.read(path);
        let built = workspace.build();
        assert!(!built.status.success(), "{cmd}: {}", text(&built.stdout));
        assert_eq!(workspace.read(path), before, "{cmd}");
    }
    let workspace = Sandboxed::new(&command_target("echo x > new.txt && echo o > $OUT/o"));
    let said = text(&workspace.build().stdout);
    assert!(
        said.contains("`pkg/new.txt` is outside its build directory"),
        "{said}"
    );
    // Appending to its own input is named as such.
    let workspace = Sandboxed::new(&command_target("echo x >> declared.txt && echo o > $OUT/o"));
    let said = text(&workspace.build().stdout);
    assert!(
        said.contains("`pkg/declared.txt` is one of its inputs, which it may read but not change"),
        "{said}"
    );
    let cmd = format!(
        "echo x > '{}/new.txt' && echo o > $OUT/o",
        outside.path().display()
    );
    let workspace = Sandboxed::new(&command_target(&cmd));
    assert!(!workspace.build().status.success());
    assert!(!outside.path().join("new.txt").exists());
}

#[test]
fn the_network_is_off_unless_declared() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let cmd = format!(
        "bash -c 'exec 3<>/dev/tcp/127.0.0.1/{port}' && echo online > $OUT/o || echo offline > $OUT/o"
    );
    let workspace = Sandboxed::new(&command_target(&cmd));
    assert!(workspace.build().status.success());
    assert_eq!(workspace.output(), "offline\n");
    let allowed = format!("{}network = true\n", command_target(&cmd));
    let workspace = Sandboxed::new(&allowed);
    assert!(workspace.build().status.success());
    assert_eq!(workspace.output(), "online\n");
    // A command failing for want of the network is told how to ask for it.
    let resolving = Sandboxed::new(&command_target(
        "python3 -c \"import socket; socket.getaddrinfo('crates.io', 443)\" && echo o > $OUT/o",
    ));
    let failed = resolving.build();
    assert!(!failed.status.success());
    let said = text(&failed.stdout);
    assert!(
        said.contains("the sandbox gives an action no network unless it declares it"),
        "{said}"
    );
}

/// Processes whose command line holds `marker`.
fn processes_with(marker: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|line| text(&line).replace('\0', " "))
        .filter(|line| line.contains(marker))
        .collect()
}

#[test]
fn nothing_a_build_or_a_test_detaches_outlives_it() {
    let marker = format!("7{}", std::process::id());
    let detach =
        format!("setsid sleep {marker} >/dev/null 2>&1 & (nohup sleep {marker} >/dev/null 2>&1 &)");
    let manifest = format!(
        "{}\n[[target]]\nname = \"Test\"\nkind = \"sh_test\"\nsrcs = [\"test.sh\"]\n",
        command_target(&format!("{detach}; echo o > $OUT/o"))
    );
    let workspace = Sandboxed::new(&manifest);
    write(
        &workspace.root,
        "pkg/test.sh",
        &format!("#!/bin/sh\n{detach}\nexit 0\n"),
    );
    std::fs::set_permissions(
        workspace.root.join("pkg/test.sh"),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let built = workspace.build();
    assert!(built.status.success(), "{}", text(&built.stdout));
    let tested = workspace.once(&["test", "--sandbox", "on", "pkg/Test"], &[]);
    assert!(tested.status.success(), "{}", text(&tested.stdout));
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}

/// The cache state of `pkg/T` in a `--format json` build answer.
fn cache_of(output: &Output) -> String {
    let answer: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    answer["targets"][0]["cache"]
        .as_str()
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn results_made_without_the_sandbox_are_kept_apart() {
    let workspace = Sandboxed::new(&command_target("cat declared.txt > $OUT/o"));
    let build = |mode: &str| {
        workspace.once(
            &["--format", "json", "build", "--sandbox", mode, "pkg/T"],
            &[],
        )
    };
    assert_eq!(cache_of(&build("off")), "miss");
    assert_eq!(
        cache_of(&build("on")),
        "miss",
        "an unconfined result is not reused"
    );
    assert_eq!(cache_of(&build("on")), "hit");
    assert_eq!(cache_of(&build("off")), "hit");
    // The workspace's setting decides without the flag.
    write(
        &workspace.root,
        "once.toml",
        "[workspace]\nsandbox = \"on\"\n",
    );
    let answer = workspace.once(&["--format", "json", "build", "pkg/T"], &[]);
    assert_eq!(cache_of(&answer), "hit");
    write(
        &workspace.root,
        "once.toml",
        "[workspace]\nsandbox = \"maybe\"\n",
    );
    let refused = workspace.once(&["build", "pkg/T"], &[]);
    assert!(!refused.status.success());
    let said = format!("{}{}", text(&refused.stdout), text(&refused.stderr));
    assert!(
        said.contains("`sandbox` must be \"on\" or \"off\""),
        "{said}"
    );
}

#[test]
fn the_callers_locale_does_not_reach_the_key() {
    let workspace = Sandboxed::new(&command_target(
        "{ echo \"$LANG $TZ\"; date +%Z; } > $OUT/o",
    ));
    let german = [
        ("LANG", "de_DE.UTF-8"),
        ("LC_ALL", "de_DE.UTF-8"),
        ("TZ", "Europe/Berlin"),
    ];
    let first = workspace.once(
        &["--format", "json", "build", "--sandbox", "on", "pkg/T"],
        &german,
    );
    assert_eq!(cache_of(&first), "miss");
    assert_eq!(workspace.output(), "C.UTF-8 UTC\nUTC\n");
    let mut plain = Command::new(env!("CARGO_BIN_EXE_once"));
    plain
        .args(["--format", "json", "build", "--sandbox", "on", "pkg/T"])
        .current_dir(&workspace.root)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", workspace.home.path());
    assert_eq!(cache_of(&plain.output().unwrap()), "hit");
}

#[test]
fn the_private_home_and_temporary_directory_are_writable_and_gone_afterwards() {
    let workspace = Sandboxed::new(&command_target(
        "echo h > \"$HOME/h\" && echo t > \"$TMPDIR/t\" && echo \"$HOME\" > $OUT/o",
    ));
    let built = workspace.build();
    assert!(built.status.success(), "{}", text(&built.stdout));
    let home = PathBuf::from(workspace.output().trim());
    assert!(
        home.starts_with(workspace.root.join(".once/tmp")),
        "{home:?}"
    );
    assert!(!home.exists(), "the scratch directory is removed");
    assert!(!Path::new(&workspace.home.path().join("h")).exists());
}

#[test]
fn validate_actions_lists_every_undeclared_access_even_a_swallowed_one() {
    let workspace = Sandboxed::new(&command_target(
        "cat declared.txt > $OUT/o; cat secret.txt 2>/dev/null || true; \
         cat ../other/secret.txt >/dev/null 2>&1; echo x >> declared.txt 2>/dev/null; exit 0",
    ));
    // The build itself succeeds: every denial was swallowed.
    assert!(workspace.build().status.success());
    let validated = workspace.once(
        &["--format", "json", "query", "validate-actions", "pkg/T"],
        &[],
    );
    assert_eq!(
        validated.status.code(),
        Some(1),
        "{}",
        text(&validated.stderr)
    );
    let answer: serde_json::Value = serde_json::from_slice(&validated.stdout).unwrap();
    assert_eq!(answer["valid"], false);
    let findings: Vec<(String, String, String)> = answer["actions"][0]["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|finding| {
            (
                finding["access"].as_str().unwrap().to_owned(),
                finding["path"].as_str().unwrap().to_owned(),
                finding["problem"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    let expected = [
        ("read", "other/secret.txt", "undeclared"),
        ("read", "pkg/secret.txt", "undeclared"),
        ("write", "pkg/declared.txt", "modifies_input"),
    ];
    for (access, path, problem) in expected {
        assert!(
            findings.contains(&(access.to_owned(), path.to_owned(), problem.to_owned())),
            "{access} {path} {problem} not in {findings:?}"
        );
    }
    // Nothing was recorded: the next build is still the hit it was.
    let answer = workspace.once(&["--format", "json", "build", "pkg/T"], &[]);
    assert_eq!(cache_of(&answer), "hit");

    let clean = Sandboxed::new(&command_target("cat declared.txt > $OUT/o"));
    let validated = clean.once(&["query", "validate-actions", "pkg/T"], &[]);
    assert!(validated.status.success(), "{}", text(&validated.stdout));
    assert!(text(&validated.stdout).contains("actions valid"));
}

#[test]
fn nothing_once_run_starts_outlives_it() {
    let marker = format!("9{}", std::process::id());
    let workspace = Sandboxed::new(
        "[[target]]\nname = \"Svc\"\nkind = \"script\"\n\n[target.attrs]\n\
         script_path = \"svc.sh\"\nscript_runtime = \"sh\"\n",
    );
    write(
        &workspace.root,
        "pkg/svc.sh",
        &format!(
            "setsid sleep {marker} >/dev/null 2>&1 &\n(nohup sleep {marker} >/dev/null 2>&1 &)\nsleep 0.3\necho started\n"
        ),
    );
    // `once run` without a terminal: the program's group is contained.
    let ran = workspace.once(&["run", "pkg/Svc"], &[]);
    assert!(ran.status.success(), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "started\n");
    std::thread::sleep(std::time::Duration::from_millis(200));
    assert_eq!(processes_with(&marker), Vec::<String>::new());
    // With the sandbox off, the sleeper that left the group survives (the check can fail);
    // it is killed here.
    let loose = workspace.once(&["run", "--sandbox", "off", "pkg/Svc"], &[]);
    assert!(loose.status.success());
    std::thread::sleep(std::time::Duration::from_millis(200));
    let left = processes_with(&marker);
    let _ = Command::new("pkill")
        .args(["-f", &format!("sleep {marker}")])
        .status();
    assert_eq!(left.len(), 1, "{left:?}");
}

#[test]
fn a_python_test_finds_its_interpreter_through_its_probe_without_the_callers_home() {
    // `HOME` is a fresh directory (no `~/.pyenv`): the interpreter's installation is
    // found where the probe's `python3` really is (a virtual environment's is a link).
    let workspace = Sandboxed::new(
        "[[target]]\nname = \"Calc\"\nkind = \"python_library\"\nsrcs = [\"calc/*.py\"]\n\n\
         [[target]]\nname = \"CalcTest\"\nkind = \"pytest_test\"\nsrcs = [\"tests/test_calc.py\"]\n\
         deps = [\"./Calc\"]\n",
    );
    write(
        &workspace.root,
        "pkg/calc/__init__.py",
        "def add(a, b):\n    return a + b\n",
    );
    write(
        &workspace.root,
        "pkg/tests/test_calc.py",
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    );
    let tested = workspace.once(&["test", "pkg/CalcTest"], &[]);
    assert!(
        tested.status.success(),
        "{}\n{}",
        text(&tested.stdout),
        text(&tested.stderr)
    );
    assert!(
        text(&tested.stdout).contains("1 total, 1 passed"),
        "{}",
        text(&tested.stdout)
    );
}

#[test]
fn a_rust_crate_fetches_its_registry_dependencies_in_a_step_of_its_own() {
    // A `CARGO_HOME` of its own (empty: nothing downloaded) and the machine's rustup.
    let cargo_home = tempfile::tempdir().unwrap();
    let rustup_home = std::env::var("RUSTUP_HOME")
        .unwrap_or_else(|_| format!("{}/.rustup", std::env::var("HOME").unwrap_or_default()));
    let workspace = Sandboxed::new(
        "[[target]]\nname = \"App\"\nkind = \"rust_binary\"\n\
         srcs = [\"Cargo.toml\", \"src/**/*.rs\"]\n\n[target.attrs]\ncrate_name = \"app\"\n",
    );
    write(
        &workspace.root,
        "pkg/Cargo.toml",
        "[package]\nname = \"app\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n\
         [dependencies]\nitoa = \"=1.0.11\"\n",
    );
    write(
        &workspace.root,
        "pkg/src/main.rs",
        "fn main() {\n    println!(\"{}\", itoa::Buffer::new().format(42));\n}\n",
    );
    let env = [
        ("CARGO_HOME", cargo_home.path().to_str().unwrap()),
        ("RUSTUP_HOME", rustup_home.as_str()),
    ];
    // The lockfile, as its author would commit it (the sandbox lets no build write one).
    let locked = Command::new("cargo")
        .args(["generate-lockfile", "--manifest-path", "pkg/Cargo.toml"])
        .current_dir(&workspace.root)
        .envs(env)
        .output()
        .unwrap();
    assert!(locked.status.success(), "{}", text(&locked.stderr));
    let built = workspace.once(&["--format", "json", "build", "pkg/App"], &env);
    assert!(
        built.status.success(),
        "{}\n{}",
        text(&built.stdout),
        text(&built.stderr)
    );
    // The fetch step downloaded into the caller's CARGO_HOME; the build ran offline.
    let downloaded = std::fs::read_dir(cargo_home.path().join("registry/cache"))
        .unwrap()
        .flatten()
        .any(|index| index.path().join("itoa-1.0.11.crate").is_file());
    assert!(downloaded);
    let again = workspace.once(&["--format", "json", "build", "pkg/App"], &env);
    let answer: serde_json::Value = serde_json::from_slice(&again.stdout).unwrap();
    let actions = answer["targets"][0]["actions"].as_array().unwrap();
    let ids: Vec<&str> = actions.iter().filter_map(|a| a["id"].as_str()).collect();
    assert_eq!(
        ids,
        ["pkg/App#build/fetch", "pkg/App#build/cargo"],
        "{answer}"
    );
    assert!(actions.iter().all(|a| a["cache"] == "hit"), "{answer}");
    let ran = workspace.once(&["run", "pkg/App"], &env);
    assert_eq!(text(&ran.stdout), "42\n", "{}", text(&ran.stderr));
}

/// The processes whose parent is `parent`, with their command lines.
fn children_of(parent: u32) -> Vec<(u32, String)> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The parent is the second field after the command's closing parenthesis.
            let ppid: u32 = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            (ppid == parent).then(|| (pid, text(&line).replace('\0', " ")))
        })
        .collect()
}

/// Whether `pid` descends from `ancestor`.
fn descends_from(pid: u32, ancestor: u32) -> bool {
    let mut current = pid;
    for _ in 0..64 {
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{current}/stat")) else {
            return false;
        };
        let parent = stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().nth(1)?.parse::<u32>().ok());
        match parent {
            Some(parent) if parent == ancestor => return true,
            Some(parent) if parent > 1 => current = parent,
            _ => return false,
        }
    }
    false
}

/// Waits up to twenty seconds (a loaded machine) for `done`.
fn eventually(done: impl Fn() -> bool) -> bool {
    for _ in 0..1000 {
        if done() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Starts `once build --sandbox on pkg/T` for an action that sleeps with `marker`, and
/// waits until the sleeper runs: the build, its launcher's process id and the sleeper's.
fn build_until_the_action_sleeps(
    workspace: &Sandboxed,
    marker: &str,
) -> (std::process::Child, u32, u32) {
    let build = Command::new(env!("CARGO_BIN_EXE_once"))
        .args(["build", "--sandbox", "on", "pkg/T"])
        .current_dir(&workspace.root)
        .env_remove("ONCE_WORKSPACE")
        .env_remove("ONCE_SANDBOX_LAUNCHER")
        .env("HOME", workspace.home.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let sleeper = || {
        std::fs::read_dir("/proc").unwrap().find_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            let line = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            (text(&line).replace('\0', " ").trim_end() == format!("sleep {marker}")).then_some(pid)
        })
    };
    assert!(
        eventually(|| sleeper().is_some()),
        "the action never started"
    );
    let launchers: Vec<u32> = children_of(build.id())
        .into_iter()
        .filter(|(_, line)| line.contains("__sandbox-launcher"))
        .map(|(pid, _)| pid)
        .collect();
    assert_eq!(launchers.len(), 1, "{:?}", children_of(build.id()));
    (build, launchers[0], sleeper().unwrap())
}

#[test]
fn confined_actions_start_from_the_launcher_which_ends_with_once() {
    let marker = format!("1.{}", std::process::id());
    let workspace = Sandboxed::new(&command_target(&format!("sleep {marker}; echo o > $OUT/o")));
    let (mut build, launcher, sleeper) = build_until_the_action_sleeps(&workspace, &marker);
    // The action was started by the launcher, not forked from `once` (a launcher that
    // failed would leave `once` forking: this would fail).
    assert!(descends_from(sleeper, launcher));
    assert!(build.wait().unwrap().success());
    assert_eq!(workspace.output(), "o\n");
    assert!(
        eventually(|| !std::path::Path::new(&format!("/proc/{launcher}")).exists()),
        "the launcher outlived once"
    );
}

#[test]
fn a_killed_once_takes_its_launcher_and_its_actions_along() {
    let marker = format!("30.{}", std::process::id());
    let workspace = Sandboxed::new(&command_target(&format!("sleep {marker}; echo o > $OUT/o")));
    let (mut build, launcher, sleeper) = build_until_the_action_sleeps(&workspace, &marker);
    build.kill().unwrap();
    build.wait().unwrap();
    assert!(
        eventually(|| {
            !std::path::Path::new(&format!("/proc/{launcher}")).exists()
                && !std::path::Path::new(&format!("/proc/{sleeper}")).exists()
        }),
        "left behind: {:?}",
        processes_with(&marker)
    );
    assert_eq!(processes_with(&marker), Vec::<String>::new());
}
