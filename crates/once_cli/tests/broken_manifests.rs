//! A manifest with any error is never planned, through the real binary: the parser's
//! error recovery salvages a target from a broken manifest (an unterminated string, a
//! value with garbage after it, a string closed early by an unescaped quote), and what
//! it salvaged must not run. For each broken manifest, `validate-workspace` reports the
//! error, and `once build`, `once run`, `once test`, `once runtime start` and the MCP
//! executing tools refuse the package with the diagnostic and exit 1, nothing of it run;
//! an error in the root manifest refuses every package; repaired, everything builds.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text, write};

use serde_json::{Value, json};

/// The broken manifests of package `p`, each with the code validation reports. Every
/// one of them, run as the parser recovers it, would delete `data/` or `important/`, or
/// build and be cached.
const BROKEN: &[(&str, &str)] = &[
    // An unescaped quote closes the string early: the recovered `cmd` is `rm -rf ../data/`.
    (
        "cmd = \"rm -rf ../data/\"cache\"/tmp; echo ok > $OUT/o.txt\"\n",
        "syntax_error",
    ),
    (
        "cmd = \"echo safe > $OUT/o.txt; rm -rf \"$OUT/../../important\"\"\n",
        "syntax_error",
    ),
    // Unterminated.
    ("cmd = \"echo unterminated > $OUT/o.txt\n", "syntax_error"),
    // Garbage after a value.
    (
        "cmd = \"echo garbage > $OUT/o.txt\" garbage here\n",
        "syntax_error",
    ),
    // A key missing in an inline table.
    (
        "cmd = \"echo env > $OUT/o.txt\"\nenv = { A = \"1\", = }\n",
        "syntax_error",
    ),
];

/// Package `p` (a `command` whose attributes are `attrs`, and an `sh_test`), package
/// `q` (a command of its own), and the directories the broken commands would delete.
fn workspace(attrs: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\n");
    write(
        root,
        "p/once.toml",
        &format!(
            "[[target]]\nname = \"Cmd\"\nkind = \"command\"\n\n[target.attrs]\n{attrs}outputs = [\"o.txt\"]\n\n\
             [[target]]\nname = \"Check\"\nkind = \"sh_test\"\nsrcs = [\"check.sh\"]\n\n\
             [[target]]\nname = \"Tool\"\nkind = \"script\"\nsrcs = [\"check.sh\"]\n\n\
             [target.attrs]\nscript_path = \"check.sh\"\nscript_runtime = \"sh\"\n"
        ),
    );
    write(root, "p/check.sh", "#!/bin/sh\necho ran > ../ran.txt\n");
    write(
        root,
        "q/once.toml",
        "[[target]]\nname = \"Q\"\nkind = \"command\"\n\n[target.attrs]\ncmd = \"echo q > $OUT/q.txt\"\noutputs = [\"q.txt\"]\n",
    );
    write(root, "data/cache/tmp/keep.txt", "keep\n");
    write(root, "important/keep.txt", "keep\n");
    dir
}

/// Nothing ran: the directories are intact, no output and no test marker exist.
fn assert_nothing_ran(root: &Path, context: &str) {
    assert!(
        root.join("data/cache/tmp/keep.txt").exists(),
        "{context}: data/ was deleted"
    );
    assert!(
        root.join("important/keep.txt").exists(),
        "{context}: important/ was deleted"
    );
    assert!(!root.join("ran.txt").exists(), "{context}: the test ran");
    assert!(
        !root.join(".once/out/p").exists(),
        "{context}: an action of p ran"
    );
}

/// Checks that `args` exits 1, shows `code` in its output, and ran nothing.
fn check_refused(root: &Path, args: &[&str], code: &str, context: &str) {
    let output = once(root, args);
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    assert_eq!(output.status.code(), Some(1), "{context}: {args:?}: {all}");
    assert!(
        all.contains(code) && all.contains("p/once.toml:"),
        "{context}: {args:?} does not show the diagnostic: {all}"
    );
    assert_nothing_ran(root, &format!("{context}: {args:?}"));
}

#[test]
fn a_package_whose_manifest_has_an_error_is_not_planned() {
    for (attrs, code) in BROKEN {
        let dir = workspace(attrs);
        let root = dir.path();
        let context = attrs.trim();
        let validation = once(root, &["query", "validate-workspace", "--format", "json"]);
        assert_eq!(validation.status.code(), Some(1), "{context}");
        assert!(text(&validation.stdout).contains(code), "{context}");
        check_refused(root, &["build", "p/Cmd"], code, context);
        check_refused(root, &["build", "--format", "json", "p/Cmd"], code, context);
        // The other target of the package is refused too, although it is well-formed.
        check_refused(root, &["build", "p/Check"], code, context);
        check_refused(root, &["build", "..."], code, context);
        check_refused(root, &["test", "p/Check"], code, context);
        check_refused(root, &["test", "--all"], code, context);
        check_refused(root, &["run", "p/Tool"], code, context);
        check_refused(
            root,
            &["--format", "json", "runtime", "start", "p/Tool"],
            code,
            context,
        );
        assert!(
            !root.join(".once/runtime").exists()
                || std::fs::read_dir(root.join(".once/runtime"))
                    .unwrap()
                    .next()
                    .is_none(),
            "{context}: a runtime session was started"
        );
        // A package without errors still builds on its own.
        let q = once(root, &["build", "q/Q"]);
        assert_eq!(q.status.code(), Some(0), "{context}: {}", text(&q.stderr));
    }
}

#[test]
fn an_error_in_the_root_manifest_refuses_every_package() {
    let dir = workspace("cmd = \"echo fine > $OUT/o.txt\"\n");
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"p\", \"q\"\n");
    let output = once(root, &["build", "q/Q"]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("syntax_error") && stderr.contains("once.toml:"),
        "{stderr}"
    );
    assert!(!root.join(".once/out").exists(), "something ran");
    // Repaired, both packages build.
    write(root, "once.toml", "[workspace]\ninclude = [\"p\", \"q\"]\n");
    let output = once(root, &["build", "..."]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    assert_eq!(
        std::fs::read_to_string(root.join(".once/out/p/Cmd/out/o.txt")).unwrap(),
        "fine\n"
    );
}

#[test]
fn a_repaired_manifest_builds_and_a_broken_one_hits_nothing_it_built_before() {
    let dir = workspace("cmd = \"echo v1 > $OUT/o.txt\"\n");
    let root = dir.path();
    let output = once(root, &["build", "p/Cmd"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stderr));
    // The same command, now followed by garbage: the recovered target is the one that was
    // built and cached, yet it is refused (no hit served from a broken manifest).
    let manifest = std::fs::read_to_string(root.join("p/once.toml")).unwrap();
    write(
        root,
        "p/once.toml",
        &manifest.replace(
            "cmd = \"echo v1 > $OUT/o.txt\"",
            "cmd = \"echo v1 > $OUT/o.txt\" garbage",
        ),
    );
    let output = once(root, &["build", "--format", "json", "p/Cmd"]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output.stdout));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["success"], false);
    assert!(
        value["problems"].to_string().contains("syntax_error"),
        "{value}"
    );
    write(root, "p/once.toml", &manifest);
    let output = once(root, &["build", "--format", "json", "p/Cmd"]);
    assert_eq!(output.status.code(), Some(0), "{}", text(&output.stdout));
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["targets"][0]["cache"], "hit", "{value}");
}

/// The MCP executing tools refuse a broken package the same way.
#[test]
fn mcp_build_run_and_test_refuse_a_broken_package() {
    let (attrs, code) = BROKEN[0];
    let dir = workspace(attrs);
    let root = dir.path();
    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["mcp", "--allow-run"])
        .env_remove("ONCE_WORKSPACE")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut send = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        stdin.flush().unwrap();
    };
    let mut replies = Vec::new();
    send(
        json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": { "name": "test", "version": "0" } } }),
    );
    send(json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }));
    let calls = [
        ("once_build_target", json!({ "target": "p/Cmd" })),
        ("once_run_target", json!({ "target": "p/Tool" })),
        ("once_run_tests", json!({ "targets": ["p/Check"] })),
        ("once_start_target", json!({ "target": "p/Tool" })),
    ];
    for (id, (name, arguments)) in calls.iter().enumerate() {
        send(
            json!({ "jsonrpc": "2.0", "id": id + 1, "method": "tools/call",
            "params": { "name": name, "arguments": arguments } }),
        );
    }
    while replies.len() < calls.len() + 1 {
        let mut line = String::new();
        assert!(stdout.read_line(&mut line).unwrap() > 0, "the server ended");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message.get("id").is_some() {
            replies.push(message);
        }
    }
    // Executing tools answer from background jobs, in any order.
    replies.sort_by_key(|reply| reply["id"].as_u64());
    for (reply, (name, _)) in replies[1..].iter().zip(&calls) {
        let answer = reply["result"].to_string();
        assert!(
            answer.contains(code) && answer.contains("p/once.toml:"),
            "{name} does not show the diagnostic: {reply}"
        );
        let result = &reply["result"]["structuredContent"]["result"];
        assert!(
            reply["result"]["isError"] == true || result["success"] == false,
            "{name} succeeded: {reply}"
        );
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_nothing_ran(root, "mcp");
}
