//! The workspace server end to end, through the real binary: its answers equal the
//! in-process answers (`ONCE_SERVER=off`) after random edits, additions and deletions,
//! a 1,000-file git branch switch and an inotify overflow; a build it runs streams, is
//! cancelled by the client's Ctrl-C and leaves no process; a server killed mid-request
//! leaves the client answering in-process, and the next start cleans its socket; idle
//! timeout, `stop --all` and the handshake with another build.

#[path = "support/processes.rs"]
mod processes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

fn write(root: &Path, path: &str, text: &str) {
    let path = root.join(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// A workspace and a private runtime directory, with every server of the test stopped
/// when dropped.
struct Workspace {
    dir: tempfile::TempDir,
    runtime: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        let runtime = tempfile::tempdir().unwrap();
        Workspace {
            dir: tempfile::tempdir().unwrap(),
            runtime,
        }
    }

    fn root(&self) -> PathBuf {
        self.dir.path().canonicalize().unwrap()
    }

    fn command(&self, exe: &Path, args: &[&str]) -> Command {
        let mut command = Command::new(exe);
        command
            .arg("-C")
            .arg(self.root())
            .args(args)
            .env("XDG_RUNTIME_DIR", self.runtime.path())
            .env_remove("ONCE_SERVER")
            .env_remove("CI")
            .stdin(Stdio::null());
        command
    }

    fn once(&self, args: &[&str]) -> Output {
        self.command(Path::new(env!("CARGO_BIN_EXE_once")), args)
            .output()
            .unwrap()
    }

    fn in_process(&self, args: &[&str]) -> Output {
        self.command(Path::new(env!("CARGO_BIN_EXE_once")), args)
            .env("ONCE_SERVER", "off")
            .output()
            .unwrap()
    }

    fn status(&self) -> Option<Value> {
        let output = self.once(&["server", "status", "--format", "json"]);
        output
            .status
            .success()
            .then(|| serde_json::from_slice(&output.stdout).unwrap())
    }

    fn requests(&self) -> u64 {
        self.status().expect("the server runs")["requests"]
            .as_u64()
            .unwrap()
    }

    fn start(&self, extra: &[&str]) -> u32 {
        let mut args = vec!["server", "start", "--format", "json"];
        args.extend_from_slice(extra);
        let output = self.once(&args);
        assert!(output.status.success(), "{}", text(&output.stderr));
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        u32::try_from(answer["pid"].as_u64().unwrap()).unwrap()
    }
}

impl Drop for Workspace {
    fn drop(&mut self) {
        let _ = self.once(&["server", "stop", "--all"]);
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Runs every command through the server and in-process and checks that stdout, stderr
/// and the exit status are the same, and that the server answered each (its request
/// count grew by one per command).
fn check_equal(ws: &Workspace, commands: &[&[&str]], when: &str) {
    let before = ws.requests();
    for args in commands {
        let served = ws.once(args);
        let computed = ws.in_process(args);
        assert_eq!(
            (
                text(&served.stdout),
                text(&served.stderr),
                served.status.code()
            ),
            (
                text(&computed.stdout),
                text(&computed.stderr),
                computed.status.code()
            ),
            "{when}: `once {}` differs through the server",
            args.join(" ")
        );
    }
    assert_eq!(
        ws.requests(),
        before + commands.len() as u64,
        "{when}: the server did not answer every command"
    );
}

/// Packages `p0`…`p7`, each with two `command` targets reading sources and a test.
fn package(index: usize, extra: &str) -> String {
    format!(
        "[[target]]\nname = \"T{index}\"\nkind = \"command\"\nsrcs = [\"src/*.txt\"]\n\n\
         [target.attrs]\ncmd = \"cat src/*.txt > $OUT/o\"\noutputs = [\"o\"]\n\n\
         [[target]]\nname = \"U{index}\"\nkind = \"command\"\ndeps = [\"./T{index}\"]\n\n\
         [target.attrs]\ncmd = \"echo u > $OUT/o\"\noutputs = [\"o\"]\n\n\
         [[target]]\nname = \"Check{index}\"\nkind = \"sh_test\"\nsrcs = [\"check.sh\"]\n{extra}"
    )
}

fn git(root: &Path, args: &[&str]) {
    let status = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .env("GIT_AUTHOR_NAME", "t")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "t")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stdout(Stdio::null())
        .status()
        .unwrap();
    assert!(status.success(), "git {args:?}");
}

/// A small deterministic generator (no dependency for it).
struct Lcg(u64);

impl Lcg {
    fn below(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((self.0 >> 33) as usize) % n
    }
}

#[test]
fn server_answers_equal_in_process_answers_through_edits_branch_switches_and_overflows() {
    let ws = Workspace::new();
    let root = ws.root();
    write(&root, "once.toml", "[workspace]\n");
    for p in 0..8 {
        write(&root, &format!("p{p}/once.toml"), &package(p, ""));
        write(&root, &format!("p{p}/check.sh"), "#!/bin/sh\nexit 0\n");
        for f in 0..3 {
            write(&root, &format!("p{p}/src/f{f}.txt"), &format!("{p} {f}\n"));
        }
    }
    // 1,000 sources of one target: the branch switch rewrites them all.
    let mut bulk = String::from(
        "[[target]]\nname = \"Bulk\"\nkind = \"filegroup\"\nsrcs = [\"files/**/*.txt\"]\n",
    );
    for f in 0..1000 {
        write(
            &root,
            &format!("bulk/files/d{}/f{f}.txt", f / 100),
            "main\n",
        );
    }
    write(&root, "bulk/once.toml", &bulk);
    git(&root, &["init", "-q", "-b", "main"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "main"]);
    git(&root, &["checkout", "-q", "-b", "other"]);
    for f in 0..1000 {
        write(
            &root,
            &format!("bulk/files/d{}/f{f}.txt", f / 100),
            "other\n",
        );
    }
    bulk.push_str(
        "\n[[target]]\nname = \"Extra\"\nkind = \"filegroup\"\nsrcs = [\"files/d0/*.txt\"]\n",
    );
    write(&root, "bulk/once.toml", &bulk);
    std::fs::remove_dir_all(root.join("p7")).unwrap();
    write(
        &root,
        "p3/once.toml",
        &package(3, "deps = [\"p9/Missing\"]\n"),
    );
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "other"]);
    git(&root, &["checkout", "-q", "main"]);

    let pid = ws.start(&[]);
    assert!(pid > 0);
    let status = ws.status().unwrap();
    assert_eq!(status["root"], Value::from(root.to_str().unwrap()));
    assert!(status["resident_bytes"].as_u64().unwrap() > 0);
    assert!(
        status["memory"]
            .as_array()
            .unwrap()
            .iter()
            .any(|q| q["query"] == "source_text"),
        "{status}"
    );
    let every: &[&[&str]] = &[
        &["query", "validate-workspace"],
        &["query", "validate-workspace", "--format", "json"],
        &["query", "targets", "--format", "json"],
        &["query", "workspace"],
        &["query", "tests"],
        &["query", "inputs", "--format", "json"],
        &["query", "target", "p1/T1", "--format", "json"],
        &["query", "affected-tests", "p2/src/f1.txt"],
        &["query", "target", "p1/Nope"],
    ];
    check_equal(&ws, every, "after the start");
    assert!(ws.in_process(&["build", "..."]).status.success());
    // A no-op build through the server is a hit as in-process.
    check_equal(
        &ws,
        &[&["build", "..."], &["build", "...", "-j", "2"]],
        "built",
    );

    let quick: &[&[&str]] = &[
        &["query", "validate-workspace", "--format", "json"],
        &["query", "targets", "--format", "json"],
        &["query", "inputs", "p1/T1", "p4/U4", "--format", "json"],
    ];
    let mut random = Lcg(35);
    for round in 0..16 {
        let p = random.below(8);
        let edit = random.below(6);
        match edit {
            0 => write(
                &root,
                &format!("p{p}/src/f{}.txt", random.below(4)),
                &format!("{round}\n"),
            ),
            1 => write(
                &root,
                &format!("p{p}/once.toml"),
                &package(p, "kind = \"nope\"\n"),
            ),
            2 => write(&root, &format!("p{p}/once.toml"), "[[target]\nname = \n"),
            3 => {
                let _ = std::fs::remove_file(root.join(format!("p{p}/once.toml")));
            }
            4 => write(
                &root,
                &format!("n{round}/once.toml"),
                &package(100 + round, ""),
            ),
            _ => write(&root, &format!("p{p}/once.toml"), &package(p, "")),
        }
        check_equal(&ws, quick, &format!("round {round} (edit {edit} of p{p})"));
    }
    git(&root, &["checkout", "-q", "-f", "other"]);
    check_equal(&ws, every, "on the other branch");
    git(&root, &["checkout", "-q", "-f", "main"]);
    check_equal(&ws, quick, "back on main");

    // Far more events than inotify's queue holds, with a real change among them: the
    // overflow is a rescan, and the change is in the answer.
    let churn = root.join("p5/src/churn");
    std::fs::create_dir_all(&churn).unwrap();
    check_equal(&ws, quick, "before the overflow");
    for i in 0..20_000 {
        std::fs::File::create(churn.join(format!("c{i}"))).unwrap();
        if i == 10_000 {
            write(
                &root,
                "p5/once.toml",
                &package(5, "deps = [\"./Overflowed\"]\n"),
            );
        }
    }
    std::fs::remove_dir_all(&churn).unwrap();
    check_equal(&ws, quick, "after the overflow");
    let validation = ws.once(&["query", "validate-workspace"]);
    assert!(
        text(&validation.stdout).contains("Overflowed"),
        "{}",
        text(&validation.stdout)
    );

    // `ONCE_SERVER=off` and a client of another build compute in-process.
    let before = ws.requests();
    let _ = ws.in_process(&["query", "targets"]);
    let other = tempfile::tempdir().unwrap();
    let copy = other.path().join("once");
    std::fs::copy(env!("CARGO_BIN_EXE_once"), &copy).unwrap();
    let output = ws.command(&copy, &["query", "targets"]).output().unwrap();
    assert_eq!(output.stdout, ws.in_process(&["query", "targets"]).stdout);
    assert_eq!(ws.requests(), before, "a request reached the server");
}

/// A package whose action sleeps in the package directory (where the test finds its
/// processes).
fn slow_workspace(ws: &Workspace) {
    let root = ws.root();
    write(&root, "once.toml", "[workspace]\n");
    write(
        &root,
        "slow/once.toml",
        "[[target]]\nname = \"Slow\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo started; sleep 4; echo done > $OUT/o\"\noutputs = [\"o\"]\n",
    );
}

fn all_gone_within_a_second(pids: &[u32]) -> bool {
    let deadline = Instant::now() + Duration::from_secs(1);
    while Instant::now() < deadline {
        if pids.iter().all(|&pid| !processes::ps_lists(pid)) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

#[test]
fn builds_through_the_server_are_cancelled_with_the_client_and_survive_a_killed_server() {
    let ws = Workspace::new();
    slow_workspace(&ws);
    let root = ws.root();
    let server = ws.start(&[]);
    let exe = Path::new(env!("CARGO_BIN_EXE_once"));

    // Ctrl-C of the client: the server cancels the build and kills its processes; the
    // client exits as an interrupted in-process build does.
    let child = ws
        .command(exe, &["build", "slow/Slow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = processes::wait_for_processes(&root.join("slow"));
    assert_eq!(ws.status().unwrap()["running_requests"], 1);
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    assert_eq!(output.status.code(), Some(130), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).contains("CANCELLED"),
        "{}",
        text(&output.stdout)
    );
    assert!(
        all_gone_within_a_second(&pids),
        "the action outlived the cancel: {pids:?}"
    );
    assert!(
        processes::ps_lists(server),
        "the server ends with the build"
    );

    // kill -9 of the server mid-build: the client computes in-process and succeeds; the
    // server's actions die with it (the reaper); the next start removes the socket.
    let child = ws
        .command(exe, &["build", "slow/Slow"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let pids = processes::wait_for_processes(&root.join("slow"));
    let killed = Command::new("kill")
        .args(["-9", &server.to_string()])
        .status()
        .unwrap();
    assert!(killed.success());
    assert!(
        all_gone_within_a_second(&pids),
        "the killed server's action lives: {pids:?}"
    );
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stdout).ends_with("built 1 target (1 action: 0 hit, 1 miss, 0 bypass)\n"),
        "{}",
        text(&output.stdout)
    );
    assert!(
        root.join(".once/server.sock").exists(),
        "the dead server's socket stays"
    );
    assert!(ws.status().is_none());
    let next = ws.start(&["--idle-timeout", "1s"]);
    assert_ne!(next, server);
    let log = std::fs::read_to_string(root.join(".once/server.log")).unwrap();
    assert!(
        log.contains("removed the socket a stopped server left"),
        "{log}"
    );
    let hit = ws.once(&["build", "slow/Slow"]);
    assert_eq!(
        text(&hit.stdout),
        text(&ws.in_process(&["build", "slow/Slow"]).stdout)
    );

    // Idle for its timeout, it stops by itself and takes its socket along.
    let deadline = Instant::now() + Duration::from_secs(10);
    while processes::ps_lists(next) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!processes::ps_lists(next), "the idle server still runs");
    assert!(!root.join(".once/server.sock").exists());

    // `stop --all` stops the servers of every workspace of the user.
    let second = Workspace {
        dir: tempfile::tempdir().unwrap(),
        runtime: tempfile::tempdir().unwrap(),
    };
    write(&second.root(), "once.toml", "[workspace]\n");
    let first = ws.start(&[]);
    let other = {
        // The same runtime directory: one user's servers.
        let mut command = second.command(exe, &["server", "start", "--format", "json"]);
        command.env("XDG_RUNTIME_DIR", ws.runtime.path());
        let output = command.output().unwrap();
        assert!(output.status.success(), "{}", text(&output.stderr));
        let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
        u32::try_from(answer["pid"].as_u64().unwrap()).unwrap()
    };
    let stopped = ws.once(&["server", "stop", "--all", "--format", "json"]);
    let stopped: Value = serde_json::from_slice(&stopped.stdout).unwrap();
    assert_eq!(stopped["stopped"].as_array().unwrap().len(), 2, "{stopped}");
    assert!(!processes::ps_lists(first) && !processes::ps_lists(other));
}

/// `[workspace] server = "auto"` starts a server from the first command that finds none,
/// except under `CI`; any other value is a diagnostic.
#[test]
fn auto_mode_starts_a_server_outside_ci() {
    let ws = Workspace::new();
    let root = ws.root();
    write(&root, "once.toml", "[workspace]\nserver = \"auto\"\n");
    write(
        &root,
        "p/once.toml",
        "[[target]]\nname = \"Files\"\nkind = \"filegroup\"\nsrcs = [\"a.txt\"]\n",
    );
    write(&root, "p/a.txt", "a\n");
    let exe = Path::new(env!("CARGO_BIN_EXE_once"));
    let in_ci = ws
        .command(exe, &["query", "targets"])
        .env("CI", "true")
        .output()
        .unwrap();
    assert!(in_ci.status.success());
    std::thread::sleep(Duration::from_millis(500));
    assert!(ws.status().is_none(), "a server started under CI");
    assert!(!root.join(".once/server.lock").exists());
    let first = ws.once(&["query", "targets"]);
    assert_eq!(first.stdout, ws.in_process(&["query", "targets"]).stdout);
    let deadline = Instant::now() + Duration::from_secs(20);
    while ws.status().is_none() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let before = ws.requests();
    check_equal(&ws, &[&["query", "targets"]], "auto");
    assert_eq!(ws.requests(), before + 1);
    write(&root, "once.toml", "[workspace]\nserver = \"sometimes\"\n");
    let validation = ws.once(&["query", "validate-workspace"]);
    assert_eq!(validation.status.code(), Some(1));
    assert!(
        text(&validation.stdout).contains("`server` must be \"auto\" or \"off\""),
        "{}",
        text(&validation.stdout)
    );
}

/// Two twin workspaces: `served` answers through a server, `computed` in-process. Every
/// command goes to both and the answers must be equal.
fn twins() -> (Workspace, Workspace) {
    let twins = (Workspace::new(), Workspace::new());
    for ws in [&twins.0, &twins.1] {
        let root = ws.root();
        write(&root, "once.toml", "[workspace]\n");
        for p in 0..4 {
            write(&root, &format!("p{p}/once.toml"), &package(p, ""));
            write(&root, &format!("p{p}/check.sh"), "#!/bin/sh\nexit 0\n");
            for f in 0..2 {
                write(&root, &format!("p{p}/src/f{f}.txt"), &format!("{p} {f}\n"));
            }
        }
    }
    twins
}

fn replays(ws: &Workspace) -> u64 {
    ws.status().expect("the server runs")["replayed_builds"]
        .as_u64()
        .unwrap()
}

/// Runs `args` through the server of `served` and in-process in `computed`, checks the
/// answers are equal and answers whether the server replayed the build from memory.
fn build_twice(served: &Workspace, computed: &Workspace, args: &[&str], when: &str) -> bool {
    let (before, requests) = (replays(served), served.requests());
    let answer = served.once(args);
    let expected = computed.in_process(args);
    // A hit's `duration_ms` (how long its lookup took) differs from one build to the
    // next, in-process or not.
    assert_eq!(
        (
            without_durations(&text(&answer.stdout)),
            text(&answer.stderr),
            answer.status.code()
        ),
        (
            without_durations(&text(&expected.stdout)),
            text(&expected.stderr),
            expected.status.code()
        ),
        "{when}: `once {}` differs through the server",
        args.join(" ")
    );
    assert_eq!(served.requests(), requests + 1, "{when}: not served");
    replays(served) > before
}

fn evidence_count(ws: &Workspace, subject: &str) -> usize {
    let output = ws.in_process(&[
        "query",
        "evidence",
        "--subject",
        subject,
        "--limit",
        "100",
        "--format",
        "json",
    ]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    answer["records"]
        .as_array()
        .or_else(|| answer.as_array())
        .map_or(0, Vec::len)
}

#[test]
fn no_op_builds_are_replayed_only_while_nothing_changed() {
    let (served, computed) = twins();
    served.start(&[]);
    let all: &[&str] = &["build", "..."];
    assert!(!build_twice(&served, &computed, all, "first build"));
    // The first no-op runs the executor and is remembered; the next ones are replayed,
    // and record the same evidence as in-process builds.
    assert!(!build_twice(&served, &computed, all, "first no-op"));
    assert!(build_twice(&served, &computed, all, "second no-op"));
    assert!(build_twice(&served, &computed, all, "third no-op"));
    assert_eq!(
        evidence_count(&served, "p1/T1"),
        evidence_count(&computed, "p1/T1"),
        "replays record evidence"
    );
    let json: &[&str] = &["build", "...", "--format", "json"];
    assert!(!build_twice(&served, &computed, json, "other arguments"));
    assert!(build_twice(
        &served,
        &computed,
        json,
        "other arguments again"
    ));

    // A deleted output: the server builds (and puts it back).
    for ws in [&served, &computed] {
        std::fs::remove_file(ws.root().join(".once/out/p1/T1/out/o")).unwrap();
    }
    assert!(!build_twice(&served, &computed, all, "an output deleted"));
    assert!(served.root().join(".once/out/p1/T1/out/o").exists());
    // A modified output.
    let _ = build_twice(&served, &computed, all, "settling");
    assert!(build_twice(&served, &computed, all, "settled"));
    for ws in [&served, &computed] {
        // T2's output is its own (every U writes the same bytes: one blob, linked to all).
        std::fs::write(ws.root().join(".once/out/p2/T2/out/o"), "changed\n").unwrap();
    }
    assert!(!build_twice(&served, &computed, all, "an output modified"));
    let _ = build_twice(&served, &computed, all, "settling");
    assert!(build_twice(&served, &computed, all, "settled"));

    // A source edited: a miss through the server as in-process.
    for ws in [&served, &computed] {
        write(&ws.root(), "p2/src/f0.txt", "edited\n");
    }
    assert!(!build_twice(&served, &computed, all, "a source edited"));
    let _ = build_twice(&served, &computed, all, "settling");
    assert!(build_twice(&served, &computed, all, "settled"));

    // The store changed: records removed by `once cache clean` (in-process).
    for ws in [&served, &computed] {
        let cleaned = ws.in_process(&["cache", "clean"]);
        assert!(cleaned.status.success(), "{}", text(&cleaned.stderr));
    }
    assert!(!build_twice(&served, &computed, all, "the store cleaned"));
    let _ = build_twice(&served, &computed, all, "settling");
    assert!(build_twice(&served, &computed, all, "settled"));
    // Any change in the store's records, even one that changes no answer.
    let actions = served.root().join(".once/cache/actions");
    let shard = std::fs::read_dir(&actions)
        .unwrap()
        .flatten()
        .find(|e| e.file_type().unwrap().is_dir())
        .unwrap()
        .path();
    std::fs::write(shard.join("stray"), "").unwrap();
    assert!(!build_twice(&served, &computed, all, "the store touched"));

    // Another environment, other arguments: not the remembered request.
    let _ = build_twice(&served, &computed, all, "settling");
    assert!(build_twice(&served, &computed, all, "settled"));
    let env_served = served
        .command(Path::new(env!("CARGO_BIN_EXE_once")), all)
        .env("ONCE_MEMO_TEST", "1")
        .output()
        .unwrap();
    assert_eq!(
        text(&env_served.stdout),
        text(&computed.in_process(all).stdout)
    );
    assert!(!build_twice(
        &served,
        &computed,
        &["build", "p1/..."],
        "a subset"
    ));
    let before = replays(&served);
    let _ = served
        .command(Path::new(env!("CARGO_BIN_EXE_once")), all)
        .env("ONCE_MEMO_TEST", "2")
        .output()
        .unwrap();
    assert_eq!(replays(&served), before, "another environment is replayed");
    // A manifest edited (a target added): planned again.
    for ws in [&served, &computed] {
        write(
            &ws.root(),
            "p3/once.toml",
            &package(
                3,
                "\n[[target]]\nname = \"New\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"echo n > $OUT/o\"\noutputs = [\"o\"]\n",
            ),
        );
    }
    assert!(!build_twice(&served, &computed, all, "a manifest edited"));
}

#[test]
fn a_start_right_after_a_stop_starts_a_new_server() {
    let ws = Workspace::new();
    write(&ws.root(), "once.toml", "[workspace]\n");
    write(&ws.root(), "p/once.toml", &package(0, ""));
    let mut pid = ws.start(&[]);
    for round in 0..5 {
        let stopped = ws.once(&["server", "stop"]);
        assert!(stopped.status.success(), "{}", text(&stopped.stderr));
        // `stop` returns once the lock is free: nobody holds it now.
        let lock = std::fs::File::open(ws.root().join(".once/server.lock")).unwrap();
        assert!(
            lock.try_lock().is_ok(),
            "round {round}: the lock is still held after `stop`"
        );
        drop(lock);
        let next = ws.start(&[]);
        assert_ne!(next, pid, "round {round}: the old server answered");
        assert!(
            ws.status().is_some(),
            "round {round}: no server after start"
        );
        pid = next;
    }
    let stopped = ws.once(&["server", "stop"]);
    assert!(stopped.status.success());
    assert!(
        !processes::ps_lists(pid),
        "the last server outlives its stop"
    );
}

#[test]
fn run_is_planned_by_the_server_and_runs_in_the_client() {
    let ws = Workspace::new();
    let root = ws.root();
    write(&root, "once.toml", "[workspace]\n");
    write(
        &root,
        "tools/once.toml",
        "[[target]]\nname = \"Hello\"\nkind = \"script\"\nsrcs = [\"hello.sh\"]\n\n\
         [target.attrs]\nscript_path = \"hello.sh\"\nscript_runtime = \"sh\"\nargs = [\"fixed\"]\n",
    );
    write(
        &root,
        "tools/hello.sh",
        "#!/bin/sh\nif [ \"$2\" = fail ]; then echo failing >&2; exit 7; fi\necho \"hello $*\"\n",
    );
    ws.start(&[]);
    let check = |args: &[&str], when: &str, served: bool| {
        let before = ws.requests();
        let answer = ws.once(args);
        let expected = ws.in_process(args);
        assert_eq!(
            (
                without_durations(&text(&answer.stdout)),
                text(&answer.stderr),
                answer.status.code()
            ),
            (
                without_durations(&text(&expected.stdout)),
                text(&expected.stderr),
                expected.status.code()
            ),
            "{when}: `once {}` differs through the server",
            args.join(" ")
        );
        if served {
            assert_eq!(
                ws.requests(),
                before + 1,
                "{when}: not planned by the server"
            );
        }
    };
    check(&["run", "tools/Hello", "--", "extra"], "first run", true);
    check(&["run", "tools/Hello", "--", "extra"], "again", true);
    check(
        &["run", "tools/Hello", "--", "fail"],
        "a failing program",
        true,
    );
    check(&["run", "tools/Hello", "--format", "json"], "JSON", true);
    // Edited, then planned again from the fresh database.
    write(&root, "tools/hello.sh", "#!/bin/sh\necho \"edited $*\"\n");
    let edited = ws.once(&["run", "tools/Hello"]);
    assert_eq!(text(&edited.stdout), "edited fixed\n");
    check(&["run", "tools/Hello"], "after an edit", true);
    // Errors are the client's own (the server declines, the client plans).
    check(&["run", "tools/Nope"], "an unknown target", false);
    write(
        &root,
        "tools/once.toml",
        "[[target]]\nname = \"Hello\"\nkind = \n",
    );
    check(&["run", "tools/Hello"], "a broken manifest", false);
}

/// `text` with every `"duration_ms":N` made `0` (how long a program ran, or a hit was
/// looked up, differs from one run to the next, wherever it is planned).
fn without_durations(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("\"duration_ms\":") {
        let (head, tail) = rest.split_at(at + "\"duration_ms\":".len());
        out.push_str(head);
        out.push('0');
        rest = tail.trim_start_matches(|c: char| c.is_ascii_digit());
    }
    out.push_str(rest);
    out
}

#[test]
fn a_build_reading_a_link_is_never_replayed() {
    let (served, computed) = (Workspace::new(), Workspace::new());
    for ws in [&served, &computed] {
        let root = ws.root();
        write(&root, "once.toml", "[workspace]\n");
        write(&root, "lnk/once.toml", &package(0, ""));
        write(&root, "lnk/check.sh", "#!/bin/sh\nexit 0\n");
        write(&root, "lnk/src/f0.txt", "0\n");
        write(&root, "shared/data.txt", "first\n");
        std::os::unix::fs::symlink("../../shared/data.txt", root.join("lnk/src/l.txt")).unwrap();
    }
    served.start(&[]);
    let all: &[&str] = &["build", "lnk/..."];
    for round in 0..3 {
        assert!(!build_twice(
            &served,
            &computed,
            all,
            &format!("round {round}")
        ));
    }
    for ws in [&served, &computed] {
        write(&ws.root(), "shared/data.txt", "second\n");
    }
    assert!(!build_twice(
        &served,
        &computed,
        all,
        "the link's target edited"
    ));
}
