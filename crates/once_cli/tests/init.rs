//! `once init` on the fixtures of `test_data/init`, shaped like real projects (a Cargo
//! workspace with a path dependency and documentation tests, a src-layout Python package
//! tested by pytest, a flat one tested by unittest with `load_tests`, an npm workspace of
//! two packages tested with `node:test`, a Go module of three packages): the manifests it
//! writes validate without a diagnostic, `once test --all` finds the cases each
//! ecosystem's own runner finds, with the same ids and outcomes, a second run changes no
//! byte, `--check` and `--dry-run` write nothing; and on a repository mixing them, hand
//! edits survive, `# once:keep` protects, a generated target whose source is gone is
//! removed, and `--check` fails after a package is added until `once init` runs.
//!
//! The runners come from `PATH` (`./.ci/test` puts the `.venv` with pytest first).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test_data/init")
        .join(name)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of `test_data/init/<name>` in a temporary directory.
fn fixture(name: &str) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_dir(&test_data(name), &root);
    (dir, root)
}

fn once(root: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(args)
        .env("NO_COLOR", "1")
        .output()
        .unwrap()
}

fn json(output: &Output) -> Value {
    serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    })
}

/// Every `once.toml` below `root`, with its bytes.
fn manifests(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if path.is_dir() && !name.starts_with('.') && name != "target" {
                pending.push(path);
            } else if name == "once.toml" {
                out.insert(
                    path.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&path).unwrap(),
                );
            }
        }
    }
    out
}

/// `once init` writes manifests that validate with no diagnostic; a second run and
/// `--check` change nothing.
fn initialize(root: &Path) {
    let output = once(root, &["--format", "json", "init"]);
    let answer = json(&output);
    assert_eq!(output.status.code(), Some(0), "{answer}");
    assert_eq!(answer["written"], true);
    assert_eq!(
        answer["workspace_validation"]["diagnostics"],
        serde_json::json!([]),
        "{answer}"
    );
    assert_eq!(answer["workspace_validation"]["valid"], true);
    let first = manifests(root);
    assert!(!first.is_empty());
    let again = once(root, &["--format", "json", "init"]);
    assert_eq!(again.status.code(), Some(0));
    let again = json(&again);
    assert_eq!(again["in_step"], true, "{again}");
    assert_eq!(
        manifests(root),
        first,
        "a second `once init` changed a manifest"
    );
    let check = once(root, &["init", "--check"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
    assert_eq!(manifests(root), first);
}

/// A case: where it ran (a package, an executable), its name, its outcome.
type Case = (String, String, String);

/// The cases of `once --format json test --all`, each as `key(target, id)` sees it; the
/// `(runner)` pseudo-case is kept, so a run that failed as a whole shows.
fn once_cases(root: &Path, key: impl Fn(&str, &str) -> Option<(String, String)>) -> BTreeSet<Case> {
    let output = once(root, &["--format", "json", "test", "--all"]);
    let answer = json(&output);
    let mut out = BTreeSet::new();
    for run in answer["runs"].as_array().unwrap() {
        let target = run["target"].as_str().unwrap();
        let cases = run["results"]["cases"]
            .as_array()
            .unwrap_or_else(|| panic!("no results for {target}: {run}"));
        for case in cases {
            let id = case["id"].as_str().unwrap();
            let status = case["attempts"][0]["status"].as_str().unwrap().to_owned();
            if let Some((place, name)) = key(target, id) {
                out.insert((place, name, status));
            }
        }
    }
    out
}

fn run_in(dir: &Path, program: &str, args: &[&str], env: &[(&str, &str)]) -> String {
    let output = Command::new(program)
        .args(args)
        .current_dir(dir)
        .envs(env.iter().copied())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap_or_else(|e| panic!("cannot run {program}: {e}"));
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

#[test]
fn a_cargo_workspace_is_tested_as_cargo_test_tests_it() {
    let (_dir, root) = fixture("cargo");
    initialize(&root);
    // `cargo test --workspace`, its streams together: `Running … (target/debug/deps/
    // shapes-0123…)` and `Doc-tests shapes` name the executable of the `test … ok` lines.
    let text = run_in(
        &root,
        "sh",
        &["-c", "cargo test --workspace --offline 2>&1"],
        &[],
    );
    let mut own = BTreeSet::new();
    let mut executable = String::new();
    for line in text.lines() {
        let line = line.trim();
        if line.starts_with("Running ")
            && let Some((_, path)) = line.rsplit_once('(')
        {
            let file = path.trim_end_matches(')').rsplit('/').next().unwrap();
            executable = file
                .rsplit_once('-')
                .map_or(file, |(name, _)| name)
                .to_owned();
        } else if line.starts_with("Doc-tests ") {
            executable = "doc".to_owned();
        } else if let Some(rest) = line.strip_prefix("test ")
            && let Some((name, outcome)) = rest.rsplit_once(" ... ")
        {
            let status = match outcome {
                "ok" => "passed",
                "ignored" => "skipped",
                _ => "failed",
            };
            own.insert((executable.clone(), name.to_owned(), status.to_owned()));
        }
    }
    assert_eq!(own.len(), 6, "{text}");
    // A run of one executable names its cases without it (the binary's unit tests).
    let cases = once_cases(&root, |target, id| match id.split_once("::") {
        Some((executable, name)) if ["areas", "doc", "shapes"].contains(&executable) => {
            Some((executable.to_owned(), name.to_owned()))
        }
        _ => {
            assert!(target.ends_with("ShapesCliTest"), "{target}: {id}");
            Some(("shapes_cli".to_owned(), id.to_owned()))
        }
    });
    assert_eq!(cases, own);
}

/// `python3 -m pytest -v` lines: `tests/test_ops.py::test_add PASSED`.
fn pytest_cases(text: &str) -> BTreeSet<Case> {
    text.lines()
        .filter_map(|line| {
            let (node, rest) = line.split_once(' ')?;
            let status = ["PASSED", "FAILED", "SKIPPED", "ERROR"]
                .into_iter()
                .find(|word| rest.starts_with(word))?;
            let status = match status {
                "PASSED" => "passed",
                "SKIPPED" => "skipped",
                _ => "failed",
            };
            node.contains("::")
                .then(|| (String::new(), node.to_owned(), status.to_owned()))
        })
        .collect()
}

#[test]
fn a_src_layout_python_package_is_tested_as_pytest_tests_it() {
    let (_dir, root) = fixture("python_src");
    initialize(&root);
    let manifest = std::fs::read_to_string(root.join("once.toml")).unwrap();
    assert!(manifest.contains("imports = [\"src\"]"), "{manifest}");
    assert!(manifest.contains("kind = \"pytest_test\""), "{manifest}");
    // As a developer runs it after `pip install -e .`: the package importable from `src`.
    let text = run_in(
        &root,
        "python3",
        &["-m", "pytest", "-v", "-p", "no:cacheprovider"],
        &[("PYTHONPATH", "src")],
    );
    let own = pytest_cases(&text);
    assert_eq!(own.len(), 4, "{text}");
    let cases = once_cases(&root, |_, id| Some((String::new(), id.to_owned())));
    assert_eq!(cases, own);
}

#[test]
fn a_unittest_package_is_tested_as_python_m_unittest_tests_it() {
    let (_dir, root) = fixture("python_unittest");
    initialize(&root);
    let manifest = std::fs::read_to_string(root.join("once.toml")).unwrap();
    assert!(manifest.contains("kind = \"unittest_test\""), "{manifest}");
    let text = run_in(
        &root,
        "python3",
        &["-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."],
        &[],
    );
    // `name (id) ... ok`, or a doctest's `ledger ()` then `Doctest: ledger ... ok`.
    let mut own = BTreeSet::new();
    let mut previous = "";
    for line in text.lines() {
        if let Some((described, outcome)) = line.rsplit_once(" ... ") {
            let status = match outcome.trim() {
                "ok" => "passed",
                outcome if outcome.starts_with("skipped") => "skipped",
                _ => "failed",
            };
            let test = if described.contains(" (") {
                described
            } else {
                previous
            };
            let (name, rest) = test.trim().split_once(" (").unwrap();
            let inner = rest.trim_end_matches(')');
            let id = if inner.is_empty() {
                name.to_owned()
            } else if inner.ends_with(&format!(".{name}")) {
                inner.to_owned()
            } else {
                format!("{inner}.{name}")
            };
            own.insert((String::new(), id, status.to_owned()));
        }
        previous = line;
    }
    assert!(text.contains("Ran 4 tests"), "{text}");
    assert_eq!(own.len(), 4, "{text}");
    // Subtests that passed are cases of once's record that `-v` does not print.
    let cases = once_cases(&root, |_, id| {
        (!id.contains(" (")).then(|| (String::new(), id.to_owned()))
    });
    assert_eq!(cases, own);
}

#[test]
fn an_npm_workspace_is_tested_as_node_test_tests_it() {
    let (_dir, root) = fixture("npm");
    initialize(&root);
    let greet = std::fs::read_to_string(root.join("packages/greet/once.toml")).unwrap();
    assert!(
        greet.contains("deps = [\"packages/strings/Strings\"]"),
        "{greet}"
    );
    // The workspace's packages linked under `node_modules`, as `npm install` links them.
    std::fs::create_dir_all(root.join("node_modules/@acme")).unwrap();
    std::os::unix::fs::symlink(
        "../../packages/strings",
        root.join("node_modules/@acme/strings"),
    )
    .unwrap();
    let mut own = BTreeSet::new();
    for package in ["packages/strings", "packages/greet"] {
        // The top-level TAP points: `ok 3 - skipped for now # SKIP later`.
        let text = run_in(
            &root.join(package),
            "node",
            &["--test", "--test-reporter=tap"],
            &[],
        );
        for line in text.lines() {
            let (ok, rest) = if let Some(rest) = line.strip_prefix("not ok ") {
                (false, rest)
            } else if let Some(rest) = line.strip_prefix("ok ") {
                (true, rest)
            } else {
                continue;
            };
            let Some((_, described)) = rest.split_once(" - ") else {
                continue;
            };
            let (name, directive) = described
                .split_once(" # ")
                .map_or((described, ""), |(n, d)| (n, d));
            let status = if directive.starts_with("SKIP") {
                "skipped"
            } else if ok {
                "passed"
            } else {
                "failed"
            };
            own.insert((package.to_owned(), name.to_owned(), status.to_owned()));
        }
    }
    assert_eq!(own.len(), 5, "{own:?}");
    let cases = once_cases(&root, |target, id| {
        let package = target.rsplit_once('/').unwrap().0;
        let name = id.split_once("::").map_or(id, |(_, name)| name);
        Some((package.to_owned(), name.to_owned()))
    });
    assert_eq!(cases, own);
}

#[test]
fn a_go_module_is_tested_as_go_test_tests_it() {
    let (_dir, root) = fixture("go");
    initialize(&root);
    let format = std::fs::read_to_string(root.join("format/once.toml")).unwrap();
    assert!(
        format.contains("deps = [\"geometry/Geometry\"]"),
        "{format}"
    );
    assert!(
        format.contains("package_under_test = [\"./Format\"]"),
        "{format}"
    );
    // `go test -v ./...`: `--- PASS: TestArea (0.00s)` lines, then `ok  example.com/…`.
    let text = run_in(&root, "go", &["test", "-v", "-count=1", "./..."], &[]);
    let mut own = BTreeSet::new();
    let mut pending = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(rest) = trimmed.strip_prefix("--- ") {
            let (word, rest) = rest.split_once(": ").unwrap();
            let name = rest.split_whitespace().next().unwrap().to_owned();
            let status = match word {
                "PASS" => "passed",
                "SKIP" => "skipped",
                _ => "failed",
            };
            pending.push((name, status.to_owned()));
        } else if let Some(rest) = line
            .strip_prefix("ok  \t")
            .or_else(|| line.strip_prefix("FAIL\t"))
        {
            let import = rest.split_whitespace().next().unwrap();
            let dir = import.strip_prefix("example.com/shapes/").unwrap();
            for (name, status) in pending.drain(..) {
                own.insert((dir.to_owned(), name, status));
            }
        }
    }
    // once records the subtests of a test that has some, not the test itself.
    let parents: BTreeSet<(String, String)> = own
        .iter()
        .filter_map(|(dir, name, _)| Some((dir.clone(), name.split_once('/')?.0.to_owned())))
        .collect();
    own.retain(|(dir, name, _)| !parents.contains(&(dir.clone(), name.clone())));
    assert_eq!(own.len(), 5, "{text}");
    let cases = once_cases(&root, |target, id| {
        let package = target.rsplit_once('/').unwrap().0;
        let name = id.split_once("::").map_or(id, |(_, name)| name);
        Some((package.to_owned(), name.to_owned()))
    });
    assert_eq!(cases, own);
}

/// A repository of all four ecosystems and a shell test, each in a directory of its own.
fn mixed() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    for (from, to) in [
        ("cargo", "rust"),
        ("python_unittest", "py"),
        ("npm", "web"),
        ("go", "svc"),
    ] {
        copy_dir(&test_data(from), &root.join(to));
    }
    std::fs::create_dir_all(root.join("tools/tests")).unwrap();
    std::fs::write(
        root.join("tools/tests/smoke.sh"),
        "#!/usr/bin/env bash\nset -eu\necho ok\n",
    )
    .unwrap();
    (dir, root)
}

#[test]
fn a_mixed_repository_is_described_whole_and_kept_in_step() {
    let (_dir, root) = mixed();
    initialize(&root);
    let output = once(&root, &["--format", "json", "query", "targets"]);
    let kinds: BTreeSet<String> = json(&output)
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["kind"].as_str().unwrap().to_owned())
        .collect();
    for kind in [
        "rust_library",
        "rust_binary",
        "rust_test",
        "python_library",
        "unittest_test",
        "js_library",
        "node_test",
        "go_library",
        "go_binary",
        "go_test",
        "sh_test",
    ] {
        assert!(kinds.contains(kind), "{kind} missing: {kinds:?}");
    }
    let smoke = std::fs::read_to_string(root.join("tools/once.toml")).unwrap();
    assert!(
        smoke.contains("# generated by once init from tools/tests/smoke.sh"),
        "{smoke}"
    );

    // A new Go package: `--check` fails with the diff, writes nothing, then `once init`
    // describes it and `--check` passes.
    std::fs::create_dir_all(root.join("svc/units")).unwrap();
    std::fs::write(
        root.join("svc/units/units.go"),
        "package units\n\nimport \"example.com/shapes/geometry\"\n\n// Cm is an area in square centimetres.\nfunc Cm(r geometry.Rect) int { return r.Area() * 100 }\n",
    )
    .unwrap();
    let before = manifests(&root);
    let check = once(&root, &["init", "--check"]);
    let text = String::from_utf8_lossy(&check.stdout).into_owned();
    assert_eq!(check.status.code(), Some(1), "{text}");
    assert!(text.contains("+++ b/svc/units/once.toml"), "{text}");
    assert!(
        text.contains("+deps = [\"svc/geometry/Geometry\"]"),
        "{text}"
    );
    let dry = once(&root, &["--format", "json", "init", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0));
    let dry = json(&dry);
    assert_eq!(dry["written"], false);
    assert_eq!(dry["in_step"], false);
    let units = dry["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["path"] == "svc/units/once.toml")
        .unwrap();
    assert_eq!(units["status"], "created");
    assert_eq!(units["edit"]["operations"][0]["op"], "create");
    assert_eq!(
        units["edit"]["operations"][0]["comment"],
        "generated by once init from svc/go.mod"
    );
    assert_eq!(manifests(&root), before, "--check or --dry-run wrote");
    initialize(&root);
    let check = once(&root, &["init", "--check"]);
    assert_eq!(check.status.code(), Some(0));

    let (code, answer) = {
        let output = once(&root, &["--format", "json", "test", "--all"]);
        (output.status.code(), json(&output))
    };
    assert_eq!(code, Some(0), "{answer}");
    let targets: BTreeSet<&str> = answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["target"].as_str().unwrap())
        .collect();
    assert_eq!(
        targets,
        BTreeSet::from([
            "py/LedgerTest",
            "rust/crates/shapes-cli/ShapesCliTest",
            "rust/crates/shapes/ShapesTest",
            "svc/format/FormatTest",
            "svc/geometry/GeometryTest",
            "tools/SmokeTest",
            "web/packages/greet/GreetTest",
            "web/packages/strings/StringsTest",
        ])
    );
}

#[test]
fn hand_edits_survive_once_keep_protects_and_generated_targets_of_gone_sources_go() {
    let (_dir, root) = fixture("go");
    initialize(&root);
    let path = root.join("geometry/once.toml");
    let generated = std::fs::read_to_string(&path).unwrap();
    // A user's comment and attribute on a generated target, a generated key changed by
    // hand (`once init` puts it back), another protected by `# once:keep`, and a
    // hand-written target.
    let edited = generated
        .replace(
            "name = \"GeometryTest\"\n",
            "name = \"GeometryTest\"\n# Runs in CI too.\n",
        )
        .replace("srcs = [\"*_test.go\"]\n", "srcs = [\"geometry_test.go\"]\n")
        .replace(
            "package_under_test = [\"./Geometry\"] }\n",
            "package_under_test = [\"./Geometry\"] }\n\n[target.attrs]\ntags = [\"integration\"]\n",
        )
        .replace(
            "name = \"Geometry\"\nkind = \"go_library\"\nsrcs = [\"*.go\"]\n",
            "name = \"Geometry\"\nkind = \"go_library\"\nsrcs = [\"geometry.go\", \"square.go\"] # once:keep\n",
        )
        + "\n[[target]]\nname = \"Notes\"\nkind = \"filegroup\"\nsrcs = [\"*.go\"]\n";
    assert_ne!(edited, generated);
    std::fs::write(&path, &edited).unwrap();
    // The command's package disappears but its manifest stays: its generated target goes.
    std::fs::remove_file(root.join("cmd/shapes/main.go")).unwrap();
    let check = once(&root, &["init", "--check"]);
    assert_eq!(check.status.code(), Some(1));
    let output = once(&root, &["init"]);
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    let after = std::fs::read_to_string(&path).unwrap();
    let expected = edited.replace(
        "srcs = [\"geometry_test.go\"]\n",
        "srcs = [\"*_test.go\"]\n",
    );
    assert_eq!(after, expected);
    let command = std::fs::read_to_string(root.join("cmd/shapes/once.toml")).unwrap();
    assert!(!command.contains("[[target]]"), "{command}");
    // And in step from then on.
    let check = once(&root, &["init", "--check"]);
    assert_eq!(check.status.code(), Some(0));
}

/// `once mcp` (with `extra` flags) on `root`, given `calls` (tool, arguments) in turn
/// after the handshake: each call's `structuredContent`.
fn mcp_calls(root: &Path, extra: &[&str], calls: &[(&str, Value)]) -> Vec<Value> {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("mcp")
        .arg("--workspace")
        .arg(root)
        .args(extra)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut input = String::new();
    input.push_str(&serde_json::json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}}).to_string());
    input.push('\n');
    input.push_str(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#);
    input.push('\n');
    for (id, (tool, arguments)) in calls.iter().enumerate() {
        input.push_str(&serde_json::json!({"jsonrpc": "2.0", "id": id + 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}).to_string());
        input.push('\n');
    }
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let output = child.wait_with_output().unwrap();
    let replies: Vec<Value> = String::from_utf8_lossy(&output.stdout)
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    (1..=calls.len())
        .map(|id| {
            let reply = replies
                .iter()
                .find(|r| r["id"] == id)
                .unwrap_or_else(|| panic!("no reply {id}: {replies:?}"));
            assert_eq!(reply["result"]["isError"], false, "{reply}");
            reply["result"]["structuredContent"]["result"].clone()
        })
        .collect()
}

#[test]
fn mcp_plans_init_read_only_and_its_batches_apply_with_once_apply_edit() {
    let (_dir, root) = fixture("go");
    let plan = mcp_calls(&root, &[], &[("once_plan_init", serde_json::json!({}))]).remove(0);
    assert_eq!(plan["in_step"], false, "{plan}");
    assert!(manifests(&root).is_empty(), "once_plan_init wrote");
    let manifests_planned = plan["manifests"].as_array().unwrap();
    let root_entry = manifests_planned
        .iter()
        .find(|m| m["package"] == "")
        .unwrap();
    assert_eq!(root_entry["create_root"], true);
    let format = manifests_planned
        .iter()
        .find(|m| m["path"] == "format/once.toml")
        .unwrap();
    assert_eq!(format["status"], "created");
    assert!(
        format["diff"]
            .as_str()
            .unwrap()
            .contains("+# generated by once init from go.mod"),
        "{format}"
    );
    // An agent writes the root manifest, then applies each batch as it is.
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    let calls: Vec<(&str, Value)> = manifests_planned
        .iter()
        .filter(|m| !m["edit"]["operations"].as_array().unwrap().is_empty())
        .map(|m| ("once_apply_edit", m["edit"].clone()))
        .collect();
    assert_eq!(calls.len(), 3);
    for applied in mcp_calls(&root, &["--allow-run"], &calls) {
        assert_eq!(applied["applied"], true, "{applied}");
    }
    let check = once(&root, &["init", "--check"]);
    assert_eq!(
        check.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&check.stdout)
    );
}

fn git(dir: &Path, args: &[&str]) {
    let output = Command::new("git")
        .args([
            "-c",
            "user.name=once",
            "-c",
            "user.email=once@example.invalid",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// `pre-commit run --all-files` in `project` with `once` first on `PATH`: its exit code and
/// output.
fn pre_commit(project: &Path, home: &Path) -> (i32, String) {
    let once_dir = Path::new(env!("CARGO_BIN_EXE_once")).parent().unwrap();
    let path = format!(
        "{}:{}",
        once_dir.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let output = Command::new("pre-commit")
        .args(["run", "--all-files", "--color", "never"])
        .current_dir(project)
        .env("PATH", path)
        .env("PRE_COMMIT_HOME", home)
        .output()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run pre-commit ({e}): run ./.ci/test, which installs it into .venv from .ci/requirements-tools.txt"
            )
        });
    (
        output.status.code().unwrap_or(-1),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[test]
fn the_repositorys_pre_commit_hooks_validate_and_check_with_the_real_pre_commit() {
    // A repository of this one's `.pre-commit-hooks.yaml`, as pre-commit clones a hooks
    // repository at a revision.
    let hooks = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../.pre-commit-hooks.yaml"),
        hooks.path().join(".pre-commit-hooks.yaml"),
    )
    .unwrap();
    git(hooks.path(), &["init", "-q"]);
    git(hooks.path(), &["add", "-A"]);
    git(hooks.path(), &["commit", "-q", "-m", "hooks"]);
    let rev = Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(hooks.path())
        .output()
        .unwrap();
    let rev = String::from_utf8_lossy(&rev.stdout).trim().to_owned();

    let (_dir, root) = fixture("go");
    let init = once(&root, &["init"]);
    assert_eq!(init.status.code(), Some(0));
    std::fs::write(
        root.join(".pre-commit-config.yaml"),
        format!(
            "repos:\n  - repo: {}\n    rev: {rev}\n    hooks:\n      - id: once-validate\n      - id: once-init-check\n",
            hooks.path().display()
        ),
    )
    .unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    let home = tempfile::tempdir().unwrap();
    let (code, text) = pre_commit(&root, home.path());
    assert_eq!(code, 0, "{text}");
    assert!(text.contains("once validate-workspace"), "{text}");
    assert!(text.contains("once init --check"), "{text}");
    assert!(!text.contains("Failed"), "{text}");

    // A new package the manifests do not describe: the check fails with the diff.
    std::fs::create_dir_all(root.join("units")).unwrap();
    std::fs::write(
        root.join("units/units.go"),
        "package units\n\n// M is a metre.\nconst M = 1\n",
    )
    .unwrap();
    git(&root, &["add", "-A"]);
    let (code, text) = pre_commit(&root, home.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("+++ b/units/once.toml"), "{text}");
    // A broken manifest fails the validation.
    std::fs::write(
        root.join("units/once.toml"),
        "[[target]]\nname = \"U\"\nkind = \"no_such_kind\"\n",
    )
    .unwrap();
    git(&root, &["add", "-A"]);
    let (code, text) = pre_commit(&root, home.path());
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("unknown_target_kind"), "{text}");
}

fn write(root: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
}

/// A Cargo package with an example needing a feature, a build script declaring `links`
/// and a benchmark; a cargo-fuzz style Cargo workspace and a once workspace nested in
/// the repository; Python projects named by `setup.py`; a Node package with commands.
fn odds_and_ends() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    write(
        &root,
        &[
            (
                "gauge/Cargo.toml",
                "[package]\nname = \"gauge\"\nversion = \"0.1.0\"\nedition = \"2021\"\nlinks = \"gauge_native\"\n\n[features]\nloud = []\n\n[[example]]\nname = \"show\"\nrequired-features = [\"loud\"]\n\n[[bench]]\nname = \"speed\"\nharness = false\n\n[workspace]\n",
            ),
            (
                "gauge/build.rs",
                "fn main() {\n    println!(\"cargo:rerun-if-changed=build.rs\");\n}\n",
            ),
            (
                "gauge/src/lib.rs",
                "//! Gauges.\n\n/// The level, in percent.\npub fn level() -> u32 {\n    42\n}\n",
            ),
            (
                "gauge/examples/show.rs",
                "fn main() {\n    #[cfg(feature = \"loud\")]\n    println!(\"LEVEL {}\", gauge::level());\n}\n",
            ),
            ("gauge/benches/speed.rs", "fn main() {}\n"),
            (
                "gauge/fuzz/Cargo.toml",
                "[package]\nname = \"gauge-fuzz\"\nversion = \"0.0.0\"\nedition = \"2021\"\n\n[workspace]\nmembers = [\".\"]\n",
            ),
            ("gauge/fuzz/src/main.rs", "fn main() {}\n"),
            ("vendored/once.toml", "[workspace]\n"),
            ("vendored/inner/once.toml", "[workspace]\n"),
            (
                "vendored/lib/once.toml",
                "[[target]]\nname = \"Theirs\"\nkind = \"filegroup\"\nsrcs = [\"*.txt\"]\n",
            ),
            ("vendored/lib/a.txt", "theirs\n"),
            ("vendored/tool/package.json", "{\"name\": \"tool\"}\n"),
            ("vendored/tool/index.js", "module.exports = 1;\n"),
            (
                "pyname/setup.py",
                "from setuptools import setup\n\nsetup(\n    # the distribution\n    name=\"py-name\",\n    version=\"1.0\",\n)\n",
            ),
            ("pyname/pyname.py", "VALUE = 1\n"),
            (
                "pycomputed/setup.py",
                "from setuptools import setup\n\nNAME = 'computed'\nsetup(name=NAME)\n",
            ),
            ("pycomputed/computed.py", "VALUE = 2\n"),
            (
                "hello/package.json",
                "{\"name\": \"@acme/hello\", \"bin\": {\"hello\": \"./bin/hello.js\", \"gone\": \"bin/gone.js\"}}\n",
            ),
            (
                "hello/bin/hello.js",
                "console.log('hello from ' + require('../lib.js').who);\n",
            ),
            ("hello/lib.js", "module.exports = { who: 'hello' };\n"),
        ],
    );
    (dir, root)
}

#[test]
fn examples_build_scripts_benches_setup_py_node_bins_and_nested_workspaces() {
    let (_dir, root) = odds_and_ends();
    let dry = once(&root, &["--format", "json", "init", "--dry-run"]);
    assert_eq!(dry.status.code(), Some(0));
    let dry = json(&dry);
    let root_manifest = dry["root_manifest"].as_str().unwrap_or_default();
    for pattern in [
        "\"gauge/fuzz\"",
        "\"gauge/fuzz/**\"",
        "\"vendored\"",
        "\"vendored/**\"",
    ] {
        assert!(root_manifest.contains(pattern), "{pattern}: {dry}");
    }
    assert!(
        !root_manifest.contains("vendored/inner"),
        "a workspace inside a nested one goes with it: {root_manifest}"
    );
    let warnings = dry["warnings"].to_string();
    for needle in [
        "the benchmarks (`speed`) get no target",
        "pycomputed/setup.py: the name passed to `setup()` is not a string literal (`NAME`)",
        "the `bin` entry `gone` names `bin/gone.js`, which does not exist",
    ] {
        assert!(warnings.contains(needle), "{needle}: {warnings}");
    }
    initialize(&root);

    let root_text = std::fs::read_to_string(root.join("once.toml")).unwrap();
    assert_eq!(root_text, root_manifest, "the root is written as planned");
    assert!(!root.join("gauge/fuzz/once.toml").exists());
    assert_eq!(
        std::fs::read_to_string(root.join("vendored/lib/once.toml")).unwrap(),
        "[[target]]\nname = \"Theirs\"\nkind = \"filegroup\"\nsrcs = [\"*.txt\"]\n",
        "a nested workspace's manifests are not touched"
    );
    assert!(!root.join("vendored/tool/once.toml").exists());

    let gauge = std::fs::read_to_string(root.join("gauge/once.toml")).unwrap();
    for needle in [
        "name = \"ShowExample\"",
        "example = \"show\"",
        "features = [\"loud\"]",
        "links = \"gauge_native\"",
        "\"build.rs\"",
        "\"examples/show.rs\"",
    ] {
        assert!(gauge.contains(needle), "{needle}:\n{gauge}");
    }
    assert!(!gauge.contains("Speed"), "{gauge}");
    let names = |path: &str| std::fs::read_to_string(root.join(path)).unwrap();
    assert!(names("pyname/once.toml").contains("name = \"PyName\""));
    assert!(names("pycomputed/once.toml").contains("name = \"Pycomputed\""));
    let hello = names("hello/once.toml");
    assert!(hello.contains("kind = \"node_binary\""), "{hello}");
    assert!(hello.contains("main = \"bin/hello.js\""), "{hello}");

    // The example builds with its required feature, and runs.
    let run = once(&root, &["run", "gauge/ShowExample"]);
    let out =
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{out}");
    assert!(out.contains("LEVEL 42"), "{out}");
    let exe = root.join(".once/out/gauge/ShowExample/examples/show");
    assert!(exe.is_file(), "{}", exe.display());
    let run = once(&root, &["run", "hello/HelloBin"]);
    let out =
        String::from_utf8_lossy(&run.stdout).into_owned() + &String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(0), "{out}");
    assert!(out.contains("hello from hello"), "{out}");
}

/// Every file of this repository but its build output and version control.
fn copy_repository(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if matches!(
            name.as_ref(),
            "target" | ".git" | ".once" | "node_modules" | ".venv" | "__pycache__"
        ) {
            continue;
        }
        let target = to.join(entry.file_name());
        let kind = entry.file_type().unwrap();
        if kind.is_dir() {
            copy_repository(&entry.path(), &target);
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

#[test]
fn this_repository_is_described_and_validates_with_no_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    copy_repository(&Path::new(env!("CARGO_MANIFEST_DIR")).join("../.."), &root);
    initialize(&root);
    let root_text = std::fs::read_to_string(root.join("once.toml")).unwrap();
    // Its test fixtures and starters are workspaces of their own; cargo-fuzz's `fuzz/` is
    // a Cargo workspace of its own.
    for pattern in [
        "\"fuzz/**\"",
        "\"test_data/demo/**\"",
        "\"test_data/workspaces/valid/**\"",
    ] {
        assert!(root_text.contains(pattern), "{pattern}:\n{root_text}");
    }
    let cli = std::fs::read_to_string(root.join("crates/once_cli/once.toml")).unwrap();
    assert!(cli.contains("crate_name = \"once\""), "{cli}");
}

#[test]
fn mcp_plan_init_gives_the_root_manifest_to_create_with_the_nested_workspaces_excluded() {
    let (_dir, root) = odds_and_ends();
    let plan = mcp_calls(&root, &[], &[("once_plan_init", serde_json::json!({}))]).remove(0);
    let text = plan["root_manifest"]
        .as_str()
        .unwrap_or_else(|| panic!("{plan}"));
    assert!(text.starts_with("# The workspace root"), "{text}");
    assert!(text.contains("\"vendored/**\""), "{text}");
    let root_entry = plan["manifests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["package"] == "")
        .unwrap();
    assert_eq!(root_entry["create_root"], true);
    let cli = json(&once(&root, &["--format", "json", "init", "--dry-run"]));
    assert_eq!(cli["root_manifest"], plan["root_manifest"]);
    assert!(
        manifests(&root).keys().all(|p| p.starts_with("vendored")),
        "planning wrote"
    );

    // With a root manifest, the plan has none to create.
    initialize(&root);
    let plan = mcp_calls(&root, &[], &[("once_plan_init", serde_json::json!({}))]).remove(0);
    assert_eq!(plan["in_step"], true, "{plan}");
    assert!(plan.get("root_manifest").is_none(), "{plan}");
}
