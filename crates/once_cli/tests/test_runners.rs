//! `once test` with the real runners (pytest, `node --test`, go's test binaries, libtest
//! executables, C and shell tests printing TAP or only exiting) on
//! `test_data/test_runners`, and on the demo: each runner's
//! passing, failing, skipped, flaky and timed-out cases give the expected normalized
//! records (snapshots, durations blanked), a pass is a cache hit the next time, failures
//! are not, `--rerun` runs again, and `--changed` on the demo runs exactly what
//! `once query affected-tests` lists.
//!
//! The runners come from `PATH` (`./.ci/test` puts the `.venv` with pytest first).

#[path = "support/processes.rs"]
#[allow(
    dead_code,
    reason = "shared with other test binaries; this one needs one helper"
)]
mod processes;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use expect_test::expect_file;
use serde_json::Value;

fn test_data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test_data")
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

/// A copy of `test_data/<name>` in a temporary directory.
fn workspace(name: &str) -> (tempfile::TempDir, PathBuf) {
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

/// `once --format json test ARGS…`: the exit code and the answer.
fn test_json(root: &Path, args: &[&str]) -> (i32, Value) {
    let mut all = vec!["--format", "json", "test"];
    all.extend_from_slice(args);
    let output = once(root, &all);
    let answer = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), answer)
}

/// `runs[].results` with every `duration_ms` blanked, the workspace path and the object
/// addresses pytest prints (`<… object at 0x7f…>`) redacted, one pretty record per target.
fn records(answer: &Value, root: &Path) -> String {
    fn blank(value: &mut Value) {
        match value {
            Value::Object(map) => {
                for (key, value) in map.iter_mut() {
                    if key == "duration_ms" && !value.is_null() {
                        *value = Value::String("<ms>".to_owned());
                    } else {
                        blank(value);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(blank),
            _ => {}
        }
    }
    let mut out = String::new();
    for run in answer["runs"].as_array().unwrap() {
        let mut results = run["results"].clone();
        blank(&mut results);
        out.push_str(&format!(
            "== {} ({}): {}\n{}\n",
            run["target"].as_str().unwrap(),
            run["kind"].as_str().unwrap(),
            run["status"].as_str().unwrap(),
            serde_json::to_string_pretty(&results).unwrap()
        ));
    }
    let out = thread_ids(&out.replace(&root.display().to_string(), "$WORKSPACE"));
    addresses(&out)
}

/// `text` with every ` at 0x…` address shown as ` at 0xADDRESS`.
fn addresses(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(" at 0x") {
        let (before, after) = rest.split_at(at + " at 0x".len());
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_hexdigit).count();
        if digits > 0 {
            out.push_str("ADDRESS");
        }
        rest = &after[digits..];
    }
    out.push_str(rest);
    out
}

/// `text` with the thread ids libtest prints in panic messages (`thread 'a' (1234)`)
/// shown as `(N)`.
fn thread_ids(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("' (") {
        let (before, after) = rest.split_at(at + 3);
        out.push_str(before);
        let digits = after.chars().take_while(char::is_ascii_digit).count();
        if digits > 0 && after[digits..].starts_with(')') {
            out.push('N');
            rest = &after[digits..];
        } else {
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// Each target's status and cache state.
fn states(answer: &Value) -> Vec<(String, String, String)> {
    answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            (
                run["target"].as_str().unwrap().to_owned(),
                run["status"].as_str().unwrap().to_owned(),
                run["cache"].as_str().unwrap_or("null").to_owned(),
            )
        })
        .collect()
}

fn check(actual: &[(String, String, String)], expected: &[(&str, &str, &str)]) {
    let actual: Vec<(&str, &str, &str)> = actual
        .iter()
        .map(|(a, b, c)| (a.as_str(), b.as_str(), c.as_str()))
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn every_runner_records_its_cases_passes_are_cached_and_failures_are_not() {
    let (_dir, root) = workspace("test_runners");
    let (code, first) = test_json(&root, &["--all", "--attempts", "2"]);
    assert_eq!(code, 1, "{first}");
    expect_file!["snapshots/test_runners/records.txt"].assert_eq(&records(&first, &root));
    // Every record validates against the published JSON Schema.
    let schema: Value = serde_json::from_str(
        &std::fs::read_to_string(test_data("../docs/test_results.schema.json")).unwrap(),
    )
    .unwrap();
    for run in first["runs"].as_array().unwrap() {
        assert_eq!(
            once_mcp::schema::validate(&schema, &run["results"]),
            Vec::<String>::new(),
            "{}",
            run["target"]
        );
    }
    check(
        &states(&first),
        &[
            ("c/CExitTest", "passed", "miss"),
            ("c/CTapTest", "failed", "bypass"),
            ("go/mixed/GoBatchedTest", "failed", "bypass"),
            ("go/mixed/GoMixedTest", "failed", "bypass"),
            ("go/pass/GoPassTest", "passed", "miss"),
            ("js/JsBatchedTest", "failed", "bypass"),
            ("js/JsBothTest", "failed", "bypass"),
            ("js/JsMixedTest", "failed", "bypass"),
            ("js/JsPassTest", "passed", "miss"),
            ("py/PyBatchedTest", "failed", "bypass"),
            ("py/PyMixedTest", "failed", "bypass"),
            ("py/PyPassTest", "passed", "miss"),
            ("py/PySlowTest", "timed_out", "miss"),
            ("py_subtests/PySubtestsTest", "failed", "bypass"),
            ("py_unittest/PyUnittestTest", "failed", "bypass"),
            ("rs/RsAllTest", "failed", "bypass"),
            ("rs/RsBatchedTest", "failed", "bypass"),
            ("rs/RsMixedTest", "failed", "bypass"),
            ("sh/ShExitTest", "failed", "bypass"),
            ("sh/ShTapTest", "failed", "bypass"),
        ],
    );
    // A batched target's record is its unsplit targets' cases, durations aside (and the
    // target's name, which go's case ids and suites carry, and libtest's thread ids).
    let cases = |target: &str| -> Vec<Value> {
        let run = first["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|run| run["target"] == target)
            .unwrap();
        let mut cases = run["results"]["cases"].as_array().unwrap().clone();
        for case in &mut cases {
            for attempt in case["attempts"].as_array_mut().unwrap() {
                attempt["duration_ms"] = Value::Null;
            }
        }
        let text = thread_ids(&serde_json::to_string(&cases).unwrap()).replace(target, "TARGET");
        serde_json::from_str(&text).unwrap()
    };
    let mut unsplit = cases("py/PyMixedTest");
    unsplit.extend(cases("py/PyPassTest"));
    unsplit.sort_by_key(|case| case["id"].as_str().unwrap().to_owned());
    assert_eq!(cases("py/PyBatchedTest"), unsplit);
    let mut unsplit = cases("js/JsMixedTest");
    unsplit.extend(cases("js/JsPassTest"));
    unsplit.sort_by_key(|case| case["id"].as_str().unwrap().to_owned());
    assert_eq!(cases("js/JsBatchedTest"), unsplit);
    // Node case ids name their file: the two files' tests named `passes` are two cases,
    // unsplit as in batches.
    assert_eq!(cases("js/JsBothTest"), unsplit);
    let ids: Vec<&str> = unsplit
        .iter()
        .filter_map(|case| case["id"].as_str())
        .filter(|id| id.ends_with("::passes"))
        .collect();
    assert_eq!(ids, ["mixed.test.mjs::passes", "pass.test.mjs::passes"]);
    assert_eq!(
        cases("go/mixed/GoBatchedTest"),
        cases("go/mixed/GoMixedTest")
    );
    assert_eq!(cases("rs/RsBatchedTest"), cases("rs/RsMixedTest"));
    // Several test executables: each case id names its executable, so the two
    // integration tests' `works` are two cases; the integration test `tests/cases.rs`,
    // named like the library, keeps the name and the library's executable becomes
    // `cases-lib` (both run: neither replaces the other).
    let mut ids: Vec<String> = cases("rs/RsAllTest")
        .iter()
        .map(|case| case["id"].as_str().unwrap().to_owned())
        .collect();
    ids.sort();
    assert_eq!(
        ids,
        [
            "cases-lib::tests::fails",
            "cases-lib::tests::flaky",
            "cases-lib::tests::ignored",
            "cases-lib::tests::passes",
            "cases::named_like_the_library",
            "doc::src/lib.rs - add (line 5)",
            "doc::src/lib.rs - double (line 14)",
            "one::works",
            "two::works"
        ]
    );
    // The same tests as `cargo test` runs on the package, documentation tests included:
    // the case ids are cargo's test names scoped by their executable.
    let cargo = Command::new("cargo")
        .args(["test", "--no-fail-fast", "--target-dir", "../.once/cargo"])
        .current_dir(root.join("rs"))
        .env("FLAKY_MARKER", root.join(".once/state/flaky-rs-cargo"))
        .output()
        .unwrap();
    let mut cargo_names: Vec<String> = String::from_utf8_lossy(&cargo.stdout)
        .lines()
        .filter_map(|line| {
            line.strip_prefix("test ")?
                .split_once(" ...")
                .map(|(name, _)| name.to_owned())
        })
        .collect();
    cargo_names.sort();
    let mut scoped: Vec<String> = ids
        .iter()
        .map(|id| {
            id.split_once("::")
                .map_or(id.as_str(), |(_, rest)| rest)
                .to_owned()
        })
        .collect();
    scoped.sort();
    assert_eq!(
        scoped,
        cargo_names,
        "{}",
        String::from_utf8_lossy(&cargo.stderr)
    );
    // Each batch ran only its group (`TestTable` is recorded as its subtests): two go
    // batches, and three rust ones of which the last has no case (4 tests in groups of 2).
    let batch_cases = |target: &str, batch: usize| -> Vec<String> {
        let label = target.rsplit_once('/').unwrap();
        let path = root.join(format!(
            ".once/out/{}/{}/test/batches/{batch}/test_results.json",
            label.0, label.1
        ));
        let record: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        record["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| case["name"].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(
        batch_cases("go/mixed/GoBatchedTest", 0),
        ["TestFails", "TestFlaky", "TestPasses"]
    );
    assert_eq!(
        batch_cases("go/mixed/GoBatchedTest", 1),
        ["TestSkipped", "lower", "upper"]
    );
    assert_eq!(batch_cases("rs/RsBatchedTest", 0), ["fails", "flaky"]);
    assert_eq!(batch_cases("rs/RsBatchedTest", 1), ["ignored", "passes"]);
    assert_eq!(batch_cases("rs/RsBatchedTest", 2), Vec::<String>::new());
    // Nothing the tests started is left: the timed-out pytest was killed with its group.
    assert_eq!(processes::processes_in(&root.join("py")), Vec::<u32>::new());
    // The passes are hits restoring the same results; the failures run again (and the
    // flaky cases, whose marker now exists, pass).
    let (code, second) = test_json(&root, &["--all"]);
    assert_eq!(code, 1);
    check(
        &states(&second),
        &[
            ("c/CExitTest", "passed", "hit"),
            ("c/CTapTest", "failed", "miss"),
            ("go/mixed/GoBatchedTest", "failed", "miss"),
            ("go/mixed/GoMixedTest", "failed", "miss"),
            ("go/pass/GoPassTest", "passed", "hit"),
            ("js/JsBatchedTest", "failed", "miss"),
            ("js/JsBothTest", "failed", "miss"),
            ("js/JsMixedTest", "failed", "miss"),
            ("js/JsPassTest", "passed", "hit"),
            ("py/PyBatchedTest", "failed", "miss"),
            ("py/PyMixedTest", "failed", "miss"),
            ("py/PyPassTest", "passed", "hit"),
            ("py/PySlowTest", "timed_out", "miss"),
            ("py_subtests/PySubtestsTest", "failed", "miss"),
            ("py_unittest/PyUnittestTest", "failed", "miss"),
            ("rs/RsAllTest", "failed", "miss"),
            ("rs/RsBatchedTest", "failed", "miss"),
            ("rs/RsMixedTest", "failed", "miss"),
            ("sh/ShExitTest", "failed", "miss"),
            ("sh/ShTapTest", "failed", "miss"),
        ],
    );
    for (before, after) in first["runs"]
        .as_array()
        .unwrap()
        .iter()
        .zip(second["runs"].as_array().unwrap())
    {
        if after["cache"] == "hit" {
            let strip = |run: &Value| {
                let mut results = run["results"].clone();
                for case in results["cases"].as_array_mut().unwrap() {
                    for attempt in case["attempts"].as_array_mut().unwrap() {
                        attempt["duration_ms"] = Value::Null;
                    }
                }
                results
            };
            assert_eq!(strip(before), strip(after));
        }
    }
    // What the hit restored is what `once query test-results` reads.
    let query = once(
        &root,
        &["--format", "json", "query", "test-results", "py/PyPassTest"],
    );
    let read: Value = serde_json::from_slice(&query.stdout).unwrap();
    assert_eq!(read["status"], "passed");
    assert_eq!(read["summary"]["skipped"], 1);
    // `--rerun` runs a cached pass again, uncached.
    let (code, rerun) = test_json(&root, &["--rerun", "js/JsPassTest"]);
    assert_eq!(code, 0);
    check(&states(&rerun), &[("js/JsPassTest", "passed", "bypass")]);
}

#[test]
fn human_output_names_failing_cases_with_their_location_and_message() {
    let (_dir, root) = workspace("test_runners");
    let output = once(&root, &["test", "py/PyMixedTest", "js/JsPassTest"]);
    assert_eq!(output.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&output.stdout);
    // Durations vary: `0.42s` becomes `N.NNs`.
    let mut shown = String::new();
    for word in stdout.split_inclusive(' ') {
        let bare = word.trim_end();
        let duration = bare
            .strip_suffix('s')
            .is_some_and(|n| n.contains('.') && n.chars().all(|c| c.is_ascii_digit() || c == '.'));
        if duration {
            shown.push_str(&word.replace(bare, "N.NNs"));
        } else {
            shown.push_str(word);
        }
    }
    expect_file!["snapshots/test_runners/human.txt"].assert_eq(&shown);
}

#[test]
fn usage_errors_exit_2() {
    let (_dir, root) = workspace("test_runners");
    // (`once test` naming nothing runs every test: `the_cli_and_the_tools_share_one_driver`.)
    let output = once(&root, &["test", "py/Nothing"]);
    assert_eq!(output.status.code(), Some(2));
}

#[test]
fn the_demo_passes_and_changed_runs_exactly_the_affected_tests() {
    let (_dir, root) = workspace("demo");
    let changed = "libs/text/src/lib.rs";
    let affected = once(
        &root,
        &["--format", "json", "query", "affected-tests", changed],
    );
    let affected: Value = serde_json::from_slice(&affected.stdout).unwrap();
    let listed: Vec<&str> = affected["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert!(!listed.is_empty());
    let (code, answer) = test_json(&root, &["--changed", changed]);
    assert_eq!(code, 0, "{answer}");
    let ids = |key: &str, field: &str| -> Vec<String> {
        answer[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t[field].as_str().unwrap().to_owned())
            .collect()
    };
    assert_eq!(answer["selection"]["tests"], affected["tests"]);
    assert_eq!(ids("runs", "target"), listed);
    // Every test of the demo passes, and all of them are hits the second time.
    let (code, all) = test_json(&root, &["--all"]);
    assert_eq!(code, 0, "{all}");
    let (code, again) = test_json(&root, &["--all"]);
    assert_eq!(code, 0);
    let states = states(&again);
    assert_eq!(states.len(), 8);
    assert!(
        states
            .iter()
            .all(|(_, status, cache)| status == "passed" && cache == "hit"),
        "{states:?}"
    );
}

/// A workspace of two shell tests that fail until their run number reaches `NEED` (kept
/// in `$WORKSPACE/.once/state/runs-<name>`): `Slow` needs 3 runs and sets no `attempts`,
/// `Quick` needs 2 and sets `attempts` to `quick_attempts` (when given); the root
/// manifest sets `[workspace] test_attempts` to `workspace_attempts` (when given).
fn attempts_workspace(
    workspace_attempts: Option<u32>,
    quick_attempts: Option<u32>,
) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let root_manifest = match workspace_attempts {
        Some(n) => format!("[workspace]\ntest_attempts = {n}\n"),
        None => "[workspace]\n".to_owned(),
    };
    std::fs::write(root.join("once.toml"), root_manifest).unwrap();
    std::fs::create_dir(root.join("t")).unwrap();
    std::fs::write(
        root.join("t/count_test.sh"),
        "n=$(cat \"$RUNS\" 2>/dev/null || echo 0)\nn=$((n + 1))\necho $n > \"$RUNS\"\n\
         echo \"run $n of $NEED\"\n[ \"$n\" -ge \"$NEED\" ]\n",
    )
    .unwrap();
    let quick = quick_attempts.map_or(String::new(), |n| format!("attempts = {n}\n"));
    std::fs::write(
        root.join("t/once.toml"),
        format!(
            "[[target]]\nname = \"Slow\"\nkind = \"sh_test\"\nsrcs = [\"count_test.sh\"]\n\n\
             [target.attrs]\nenv = {{ RUNS = \"$WORKSPACE/.once/state/runs-slow\", NEED = \"3\" }}\n\n\
             [[target]]\nname = \"Quick\"\nkind = \"sh_test\"\nsrcs = [\"count_test.sh\"]\n\n\
             [target.attrs]\nenv = {{ RUNS = \"$WORKSPACE/.once/state/runs-quick\", NEED = \"2\" }}\n\
             {quick}"
        ),
    )
    .unwrap();
    (dir, root)
}

/// Each target's status and number of runs.
fn runs(answer: &Value) -> Vec<(String, String, u64)> {
    let mut runs: Vec<_> = answer["runs"]
        .as_array()
        .unwrap_or_else(|| panic!("{answer}"))
        .iter()
        .map(|run| {
            (
                run["target"].as_str().unwrap().to_owned(),
                run["status"].as_str().unwrap().to_owned(),
                run["attempts"].as_u64().unwrap(),
            )
        })
        .collect();
    runs.sort();
    runs
}

fn run_list(expected: &[(&str, &str, u64)]) -> Vec<(String, String, u64)> {
    expected
        .iter()
        .map(|(t, s, n)| ((*t).to_owned(), (*s).to_owned(), *n))
        .collect()
}

#[test]
fn attempts_come_from_the_command_line_else_the_target_else_the_workspace_else_one() {
    // Neither: one run each.
    let (_dir, root) = attempts_workspace(None, None);
    let (_, answer) = test_json(&root, &["--all"]);
    assert_eq!(
        runs(&answer),
        run_list(&[("t/Quick", "failed", 1), ("t/Slow", "failed", 1)])
    );
    // The workspace default, and a target's own `attempts` over it.
    let (_dir, root) = attempts_workspace(Some(3), Some(1));
    let (_, answer) = test_json(&root, &["--all"]);
    assert_eq!(
        runs(&answer),
        run_list(&[("t/Quick", "failed", 1), ("t/Slow", "flaky", 3)])
    );
    // The target's `attempts` without a workspace default.
    let (_dir, root) = attempts_workspace(None, Some(2));
    let (_, answer) = test_json(&root, &["--all"]);
    assert_eq!(
        runs(&answer),
        run_list(&[("t/Quick", "flaky", 2), ("t/Slow", "failed", 1)])
    );
    // `--attempts` over both.
    let (_dir, root) = attempts_workspace(Some(1), Some(1));
    let (_, answer) = test_json(&root, &["--all", "--attempts", "2"]);
    assert_eq!(
        runs(&answer),
        run_list(&[("t/Quick", "flaky", 2), ("t/Slow", "failed", 2)])
    );
}

#[test]
fn attempts_outside_one_to_twenty_are_diagnostics_at_the_value() {
    let (_dir, root) = attempts_workspace(Some(0), Some(21));
    let output = once(&root, &["query", "validate-workspace", "--format", "json"]);
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let found: Vec<(String, String, String, Value)> = answer["diagnostics"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            (
                d["code"].as_str().unwrap().to_owned(),
                d["file"].as_str().unwrap().to_owned(),
                d["message"].as_str().unwrap().to_owned(),
                d["range"].clone(),
            )
        })
        .collect();
    let at = |line: u32, start: u32, end: u32| {
        serde_json::json!({
            "start": {"line": line, "column": start},
            "end": {"line": line, "column": end},
        })
    };
    assert_eq!(
        found,
        vec![
            (
                "invalid_field_type".to_owned(),
                "once.toml".to_owned(),
                "`test_attempts` must be an integer from 1 to 20, not 0".to_owned(),
                at(2, 17, 18),
            ),
            (
                "attr_value_not_allowed".to_owned(),
                "t/once.toml".to_owned(),
                "attribute `attempts` must be between 1 and 20; got `21`".to_owned(),
                at(16, 12, 14),
            ),
        ],
        "{answer}"
    );
    let output = once(&root, &["test", "--all", "--attempts", "21"]);
    assert_eq!(output.status.code(), Some(2), "`--attempts` is bounded too");
    assert!(String::from_utf8_lossy(&output.stderr).contains("21 is not in 1..=20"));
}

/// The processes whose command line is `sleep SECONDS` and whose working directory is
/// below `root` (given a moment to leave `/proc` after a kill).
fn sleepers(root: &Path, seconds: &str) -> Vec<u32> {
    let find = || -> Vec<u32> {
        std::fs::read_dir("/proc")
            .unwrap()
            .flatten()
            .filter_map(|entry| {
                let pid = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let cmdline = std::fs::read(entry.path().join("cmdline")).ok()?;
                let cwd = std::fs::read_link(entry.path().join("cwd")).ok()?;
                (cmdline == format!("sleep\0{seconds}\0").as_bytes()
                    && cwd.starts_with(root)
                    && processes::ps_lists(pid))
                .then_some(pid)
            })
            .collect()
    };
    let mut left = find();
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
        left = find();
    }
    left
}

#[test]
fn a_passing_test_that_leaves_a_background_child_passes_at_once_and_the_child_is_killed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir(root.join("t")).unwrap();
    std::fs::write(root.join("t/daemon_test.sh"), "sleep 600 &\necho started\n").unwrap();
    std::fs::write(
        root.join("t/tap_test.sh"),
        "sleep 600 &\necho 1..2\necho 'ok 1'\necho 'ok 2 - second'\n",
    )
    .unwrap();
    std::fs::write(root.join("t/slow_test.sh"), "sleep 601\n").unwrap();
    // A limit far above what the tests take, below the 300 s default so that a regression
    // shows as a timeout rather than a hang.
    std::fs::write(
        root.join("t/once.toml"),
        "[[target]]\nname = \"Daemon\"\nkind = \"sh_test\"\nsrcs = [\"daemon_test.sh\"]\n\n\
         [target.attrs]\ntimeout_seconds = 40\n\n\
         [[target]]\nname = \"Tap\"\nkind = \"sh_test\"\nsrcs = [\"tap_test.sh\"]\n\n\
         [target.attrs]\ntimeout_seconds = 40\nresults_format = \"tap\"\n\n\
         [[target]]\nname = \"Slow\"\nkind = \"sh_test\"\nsrcs = [\"slow_test.sh\"]\n\n\
         [target.attrs]\ntimeout_seconds = 2\n",
    )
    .unwrap();
    let started = std::time::Instant::now();
    let (code, answer) = test_json(&root, &["t/Daemon", "t/Tap"]);
    let took = started.elapsed();
    let left = sleepers(&root, "600");
    for pid in &left {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
    }
    assert_eq!(
        states(&answer),
        [
            (
                "t/Daemon".to_owned(),
                "passed".to_owned(),
                "miss".to_owned()
            ),
            ("t/Tap".to_owned(), "passed".to_owned(), "miss".to_owned())
        ],
        "{answer}"
    );
    assert_eq!(code, 0);
    assert!(took < std::time::Duration::from_secs(15), "{took:?}");
    assert_eq!(left, Vec::<u32>::new(), "the background children survived");
    // The TAP test's points were all read, the one without a description too.
    let tap = &answer["runs"][1]["results"];
    assert_eq!(tap["summary"]["passed"], 2, "{tap}");
    // A test killed at its limit takes its runner's group with it.
    let (code, answer) = test_json(&root, &["t/Slow"]);
    assert_eq!(code, 1);
    assert_eq!(answer["runs"][0]["status"], "timed_out", "{answer}");
    assert_eq!(sleepers(&root, "601"), Vec::<u32>::new());
}

#[test]
fn a_huge_run_writes_a_record_it_can_read_with_exact_counts() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir(root.join("t")).unwrap();
    // 200,000 TAP points with descriptions of some length, the last one failing: as one
    // record, more than the 64 MiB a reader reads.
    std::fs::write(
        root.join("t/huge_test.sh"),
        "echo 1..200000\n\
         seq 199999 | sed 's/.*/ok & - the case numbered & of the generated suite, described at some length/'\n\
         echo 'not ok 200000 - the last one fails'\nexit 1\n",
    )
    .unwrap();
    std::fs::write(
        root.join("t/once.toml"),
        "[[target]]\nname = \"Huge\"\nkind = \"sh_test\"\nsrcs = [\"huge_test.sh\"]\n\n\
         [target.attrs]\nresults_format = \"tap\"\n",
    )
    .unwrap();
    let (code, answer) = test_json(&root, &["t/Huge"]);
    assert_eq!(code, 1);
    assert_eq!(
        answer["runs"][0]["status"], "failed",
        "{}",
        answer["runs"][0]["error"]
    );
    let written = std::fs::metadata(root.join(".once/out/t/Huge/test/test_results.json"))
        .unwrap()
        .len();
    assert!(written < 64 << 20, "{written} bytes");
    let query = once(
        &root,
        &["--format", "json", "query", "test-results", "t/Huge"],
    );
    assert_eq!(
        query.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&query.stderr)
    );
    let read: Value = serde_json::from_slice(&query.stdout).unwrap();
    assert_eq!(
        read["summary"],
        serde_json::json!({"total": 200000, "passed": 199999, "failed": 1, "skipped": 0, "flaky": 0})
    );
    // What the record leaves out to stay within its limits is counted, all passes: the
    // failure is listed.
    let cases = read["cases"].as_array().unwrap();
    let omitted = &read["omitted"];
    assert_eq!(
        omitted["total"].as_u64().unwrap() + cases.len() as u64,
        200000
    );
    assert_eq!(omitted["passed"], omitted["total"], "{omitted}");
    assert!(
        cases.len() <= 100000 && cases.len() > 50000,
        "{}",
        cases.len()
    );
    assert!(cases.iter().any(|case| case["status"] == "failed"));
    // The human summary says what was left out.
    let human = once(&root, &["query", "test-results", "t/Huge"]);
    let text = String::from_utf8_lossy(&human.stdout);
    let line = format!(
        "{} cases are not listed ({} passed,",
        omitted["total"], omitted["passed"]
    );
    assert!(text.contains(&line), "{text}");
}

#[test]
fn a_run_of_no_test_fails_unless_the_target_allows_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::write(root.join("none.sh"), "echo '1..0'\n").unwrap();
    std::fs::write(root.join("exit.sh"), "exit 0\n").unwrap();
    let target = |name: &str, script: &str, extra: &str| {
        format!(
            "[[target]]\nname = \"{name}\"\nkind = \"sh_test\"\nsrcs = [\"{script}\"]\n\n\
             [target.attrs]\n{extra}\n\n"
        )
    };
    let manifest = [
        target("NoCase", "none.sh", "results_format = \"tap\""),
        target(
            "NoCaseAllowed",
            "none.sh",
            "results_format = \"tap\"\nallow_no_tests = true",
        ),
        // One case from the exit status: nothing to count, so nothing to refuse.
        target("ExitCode", "exit.sh", ""),
    ]
    .concat();
    std::fs::write(root.join("once.toml"), format!("[workspace]\n\n{manifest}")).unwrap();
    let (code, answer) = test_json(&root, &["--all"]);
    assert_eq!(code, 1, "{answer}");
    check(
        &states(&answer),
        &[
            ("ExitCode", "passed", "miss"),
            ("NoCase", "failed", "miss"),
            ("NoCaseAllowed", "passed", "miss"),
        ],
    );
    // The failure was not cached: it runs again.
    let (_, again) = test_json(&root, &["--all"]);
    check(
        &states(&again),
        &[
            ("ExitCode", "passed", "hit"),
            ("NoCase", "failed", "miss"),
            ("NoCaseAllowed", "passed", "hit"),
        ],
    );
    let run = answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["target"] == "NoCase")
        .unwrap();
    let message = run["results"]["cases"][0]["attempts"][0]["message"]
        .as_str()
        .unwrap();
    assert!(
        message.contains("ran no test case") && message.contains("allow_no_tests = true"),
        "{message}"
    );
}

#[test]
fn a_runner_that_cannot_start_says_why_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::create_dir_all(root.join("tests")).unwrap();
    std::fs::write(root.join("tests/test_a.py"), "def test_a():\n    pass\n").unwrap();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\n\n[[target]]\nname = \"PyT\"\nkind = \"pytest_test\"\nsrcs = [\"tests/test_a.py\"]\n",
    )
    .unwrap();
    // An interpreter without pytest: it answers the probe and refuses `-m pytest`.
    let bin = root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let python = bin.join("python3");
    std::fs::write(
        &python,
        "#!/bin/sh\nif [ \"$1\" = -m ]; then echo \"$0: No module named $2\" >&2; exit 1; fi\n\
         exec /usr/bin/python3 \"$@\"\n",
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(&python, std::fs::Permissions::from_mode(0o755)).unwrap();
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(&root)
        .args(["test", "PyT"])
        .env("NO_COLOR", "1")
        .env("PATH", format!("{}:/usr/bin:/bin", bin.display()))
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    assert!(
        text.contains("the runner's output ends with:") && text.contains("No module named pytest"),
        "{text}"
    );
}

/// The tests `node --test` finds and runs from `dir`: the `# tests N` of its summary.
fn node_test_count(dir: &Path) -> String {
    let output = Command::new("node")
        .arg("--test")
        .current_dir(dir)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    text.lines()
        .find(|line| line.starts_with("# tests ") || line.starts_with("ℹ tests "))
        .unwrap_or_else(|| panic!("no summary from node --test:\n{text}"))
        .to_owned()
}

#[test]
fn a_node_package_tested_through_its_library_runs_as_node_runs_it_and_leaves_node_undisturbed() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files = [
        (
            "package.json",
            r#"{ "name": "calc", "version": "1.0.0", "main": "index.js" }"#,
        ),
        (
            "index.js",
            "const { add } = require(\"./lib/add\");\nmodule.exports = { add, double: (x) => add(x, x) };\n",
        ),
        ("lib/add.js", "exports.add = (a, b) => a + b;\n"),
        (
            "test/add.test.js",
            "const test = require(\"node:test\");\nconst assert = require(\"node:assert\");\n\
             const calc = require(\"..\");\n\
             test(\"adds\", () => assert.strictEqual(calc.add(1, 2), 3));\n\
             test(\"doubles\", () => assert.strictEqual(calc.double(4), 8));\n",
        ),
        // Not a test of its own, but under `test/`: node runs it as one passing test.
        ("test/helpers.js", "exports.unused = true;\n"),
        (
            "once.toml",
            "[workspace]\n\n[[target]]\nname = \"Calc\"\nkind = \"js_library\"\n\
             srcs = [\"package.json\", \"index.js\", \"lib/*.js\"]\n\n\
             [[target]]\nname = \"CalcTest\"\nkind = \"node_test\"\nsrcs = [\"test/*.js\"]\n\
             deps = [\"./Calc\"]\n\n\
             # The package's files listed as test sources too: only test files run.\n\
             [[target]]\nname = \"CalcListed\"\nkind = \"node_test\"\n\
             srcs = [\"test/*.js\", \"index.js\", \"lib/*.js\", \"package.json\"]\n",
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let before = node_test_count(&root);
    assert_eq!(before, "# tests 3");
    let (code, answer) = test_json(&root, &["--all"]);
    assert_eq!(code, 0, "{answer}");
    for target in ["CalcTest", "CalcListed"] {
        let run = answer["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|run| run["target"] == target)
            .unwrap();
        let ids: Vec<&str> = run["results"]["cases"]
            .as_array()
            .unwrap()
            .iter()
            .map(|case| case["id"].as_str().unwrap())
            .collect();
        assert_eq!(
            ids,
            [
                "test/add.test.js::adds",
                "test/add.test.js::doubles",
                "test/helpers.js::test/helpers.js"
            ],
            "{target}"
        );
    }
    // The staged copies sit where node's own discovery does not look.
    assert_eq!(node_test_count(&root), before);
}

#[test]
fn the_projects_own_pytest_and_go_find_the_same_tests_after_once_test() {
    let (_dir, root) = workspace("test_runners");
    let pytest_count = || {
        let output = Command::new("python3")
            .args([
                "-m",
                "pytest",
                "--collect-only",
                "-q",
                "-p",
                "no:cacheprovider",
            ])
            .current_dir(root.join("py"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        text.lines().filter(|line| line.contains("::")).count()
    };
    let go_packages = || {
        let output = Command::new("go")
            .args(["list", "./..."])
            .current_dir(root.join("go/mixed"))
            .output()
            .unwrap();
        String::from_utf8_lossy(&output.stdout).into_owned()
    };
    let (pytest_before, go_before) = (pytest_count(), go_packages());
    assert!(pytest_before > 0);
    let _ = test_json(&root, &["--all"]);
    assert_eq!(pytest_count(), pytest_before);
    assert_eq!(go_packages(), go_before);
}

/// Every file of `root` outside `.once`, with its content.
fn source_tree(root: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(dir) = pending.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.file_name().is_some_and(|name| name == ".once") {
                continue;
            }
            if path.is_dir() {
                pending.push(path);
            } else {
                let content = std::fs::read(&path).unwrap();
                files.push((path.strip_prefix(root).unwrap().to_path_buf(), content));
            }
        }
    }
    files.sort();
    files
}

#[test]
fn a_rust_crate_without_a_lockfile_builds_without_writing_one_and_hits_the_second_time() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let files = [
        ("once.toml", "[workspace]\n"),
        (
            "calc/Cargo.toml",
            "[package]\nname = \"calc\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[dependencies]\n",
        ),
        (
            "calc/src/lib.rs",
            "/// Adds.\n///\n/// ```\n/// assert_eq!(calc::add(1, 2), 3);\n/// ```\n\
             pub fn add(a: i32, b: i32) -> i32 {\n    a + b\n}\n\n\
             #[cfg(test)]\nmod tests {\n    #[test]\n    fn adds() {\n        assert_eq!(super::add(1, 1), 2);\n    }\n}\n",
        ),
        (
            "calc/once.toml",
            "[[target]]\nname = \"Calc\"\nkind = \"rust_library\"\nsrcs = [\"src/**/*.rs\"]\n\n\
             [[target]]\nname = \"CalcTest\"\nkind = \"rust_test\"\nsrcs = [\"src/**/*.rs\"]\n",
        ),
    ];
    for (path, text) in files {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let before = source_tree(&root);
    let build = |expected: &str| {
        let output = once(&root, &["build", "..."]);
        let said = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(
            output.status.success(),
            "{said}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(said.contains(expected), "{said}");
    };
    build("(4 actions: 0 hit, 4 miss, 0 bypass)");
    assert_eq!(
        source_tree(&root),
        before,
        "the build wrote into the source tree"
    );
    build("(4 actions: 4 hit, 0 miss, 0 bypass)");
    // The tests run, the documentation test too, as cargo's own would.
    let (code, answer) = test_json(&root, &["calc/CalcTest"]);
    assert_eq!(code, 0, "{answer}");
    let ids: Vec<&str> = answer["runs"][0]["results"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| case["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["calc::tests::adds", "doc::src/lib.rs - add (line 3)"]);
    assert_eq!(source_tree(&root), before);
}

/// Each case's status in once's words (`passed`, `failed`, `skipped`) by id, and the
/// counts of the summary line, of a runner's own run.
struct OwnRun {
    cases: std::collections::BTreeMap<String, &'static str>,
    counts: std::collections::BTreeMap<String, u64>,
}

/// `python3 -m pytest -v -s` on `tests` in `dir`, as a developer runs it there: one line per
/// test (`tests/t.py::test_x PASSED`) and, uncaptured, per subtest (`tests/t.py::test_x
/// SUBFAILED[msg] (i=1)`), whose id is the node id, a space and the description; then
/// `5 failed, 5 passed, 8 subtests passed in 0.04s`.
fn pytest_own_run(dir: &Path, flaky_marker: &Path) -> OwnRun {
    let output = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "-v",
            "-s",
            "-p",
            "no:cacheprovider",
            "tests",
        ])
        .current_dir(dir)
        .env("FLAKY_MARKER", flaky_marker)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    let words = [
        ("SUBPASSED", "passed"),
        ("SUBFAILED", "failed"),
        ("SUBSKIPPED", "skipped"),
        ("PASSED", "passed"),
        ("FAILED", "failed"),
        ("ERROR", "failed"),
        ("SKIPPED", "skipped"),
        ("XFAIL", "skipped"),
        ("XPASS", "passed"),
    ];
    let mut cases = std::collections::BTreeMap::new();
    for line in text.lines() {
        let Some((node, rest)) = line.split_once(' ') else {
            continue;
        };
        if !node.contains("::") {
            continue;
        }
        let rest = match rest.rfind(" [") {
            Some(at) if rest.ends_with("%]") => rest[..at].trim_end(),
            _ => rest.trim_end(),
        };
        if let Some((word, status)) = words.iter().find(|(word, _)| rest.starts_with(word)) {
            let id = if word.starts_with("SUB") {
                format!("{node} {}", &rest[word.len()..])
            } else {
                node.to_owned()
            };
            cases.insert(id, *status);
        }
    }
    let summary = text
        .lines()
        .rev()
        .find(|line| line.starts_with('=') && line.contains(" in "))
        .unwrap_or_else(|| panic!("no summary from pytest:\n{text}"));
    let summary = summary.trim_matches(|c| c == '=' || c == ' ');
    let summary = summary
        .rsplit_once(" in ")
        .map_or(summary, |(counts, _)| counts);
    let counts = summary
        .split(", ")
        .filter_map(|part| {
            let (number, what) = part.split_once(' ')?;
            Some((what.to_owned(), number.parse().ok()?))
        })
        .collect();
    OwnRun { cases, counts }
}

/// `python3 -m unittest discover -v -s tests -t .` in `dir`: one line per test, `name
/// (id) ... ok` (`name (module.Class)` before Python 3.11; a test with a docstring, such
/// as a doctest, on two lines; one with failed or skipped subtests without an outcome of
/// its own), an indented one per subtest that failed or was skipped,
/// `Ran N tests` (in `counts["ran"]`), and `FAILED (failures=2, errors=1, skipped=2,
/// expected failures=1)`.
fn unittest_own_run(dir: &Path, flaky_marker: &Path) -> OwnRun {
    let output = Command::new("python3")
        .args(["-m", "unittest", "discover", "-v", "-s", "tests", "-t", "."])
        .current_dir(dir)
        .env("FLAKY_MARKER", flaky_marker)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stderr).into_owned();
    let mut cases = std::collections::BTreeMap::new();
    let mut previous = "";
    for line in text.lines() {
        if let Some((described, outcome)) = line.rsplit_once(" ... ") {
            let status = match outcome.trim() {
                // A test whose subtests failed or were skipped gets no outcome of its own
                // (its line ends in `... `): its own part passed, as pytest reports it.
                "ok" | "" => Some("passed"),
                "FAIL" | "ERROR" | "unexpected success" => Some("failed"),
                "expected failure" => Some("skipped"),
                outcome if outcome.starts_with("skipped") => Some("skipped"),
                _ => None,
            };
            // A docstring's first line stands after `name (id)`, on a line of its own.
            let test = if described.trim().contains(" (") {
                described
            } else {
                previous
            };
            let subtest = test.starts_with("  ");
            let (name, rest) = test.trim().split_once(" (").unwrap();
            let (inner, description) = rest.split_once(')').unwrap();
            let mut id = if inner.ends_with(&format!(".{name}")) {
                inner.to_owned()
            } else {
                format!("{inner}.{name}")
            };
            if subtest {
                id = format!("{id} {}", description.trim());
            }
            if let Some(status) = status {
                cases.insert(id, status);
            }
        }
        previous = line;
    }
    let mut counts = std::collections::BTreeMap::new();
    for line in text.lines() {
        if let Some(ran) = line.strip_prefix("Ran ") {
            let number = ran.split(' ').next().unwrap().parse().unwrap();
            counts.insert("ran".to_owned(), number);
        }
        if let Some((_, listed)) = line.split_once(" (")
            && (line.starts_with("FAILED") || line.starts_with("OK"))
        {
            for part in listed.trim_end_matches(')').split(", ") {
                let (what, number) = part.split_once('=').unwrap();
                counts.insert(what.to_owned(), number.parse().unwrap());
            }
        }
    }
    assert!(
        counts.contains_key("ran"),
        "no summary from unittest:\n{text}"
    );
    OwnRun { cases, counts }
}

/// The cases of `target` in a `once --format json test` answer, each with the status of
/// its first attempt, and the record's summary.
fn first_attempts(
    answer: &Value,
    target: &str,
) -> (std::collections::BTreeMap<String, String>, Value) {
    let run = answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|run| run["target"] == target)
        .unwrap_or_else(|| panic!("no run of {target}: {answer}"));
    let cases = run["results"]["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|case| {
            (
                case["id"].as_str().unwrap().to_owned(),
                case["attempts"][0]["status"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    (cases, run["results"].clone())
}

#[test]
fn pytest_subtests_are_cases_counted_as_pytest_counts_them() {
    let (_dir, root) = workspace("test_runners");
    let target = "py_subtests/PySubtestsTest";
    let (code, answer) = test_json(&root, &["--attempts", "2", target]);
    assert_eq!(code, 1, "{answer}");
    let (cases, results) = first_attempts(&answer, target);
    // pytest's own run, after once's (which leaves nothing that changes what it finds).
    let own = pytest_own_run(&root.join("py_subtests"), &root.join(".once/state/by-hand"));
    let own_cases: std::collections::BTreeMap<String, String> = own
        .cases
        .iter()
        .map(|(id, status)| (id.clone(), (*status).to_owned()))
        .collect();
    // Every test and subtest pytest reports is a case, with pytest's status.
    assert_eq!(cases, own_cases);
    assert!(
        cases.contains_key("tests/test_stock.py::test_restock_levels [restock] (sku='C3')")
            && cases.contains_key(
                "tests/test_legacy.py::LegacyStockTest::test_nothing_is_out_of_stock (sku='B2')"
            ),
        "{cases:?}"
    );
    // The counts of its summary: `5 failed, 5 passed, 8 subtests passed`.
    let count = |what: &str| own.counts.get(what).copied().unwrap_or(0);
    let summary = &results["summary"];
    assert_eq!(
        summary["failed"].as_u64().unwrap() + summary["flaky"].as_u64().unwrap(),
        count("failed") + count("error") + count("errors"),
        "{:?}",
        own.counts
    );
    assert_eq!(
        summary["passed"].as_u64().unwrap() - summary["flaky"].as_u64().unwrap(),
        count("passed") + count("subtests passed") + count("xpassed"),
        "{:?}",
        own.counts
    );
    assert_eq!(
        summary["skipped"].as_u64().unwrap(),
        count("skipped") + count("xfailed") + count("subtests skipped")
    );
    // The retry ran the flaky subtest's test again: the subtest and its test are flaky.
    let flaky: Vec<&str> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| case["status"] == "flaky")
        .map(|case| case["id"].as_str().unwrap())
        .collect();
    assert_eq!(
        flaky,
        [
            "tests/test_stock.py::test_reservation_is_flaky",
            "tests/test_stock.py::test_reservation_is_flaky [reserve]"
        ]
    );
}

#[test]
fn unittest_runs_discovery_and_load_tests_as_python_m_unittest_does() {
    let (_dir, root) = workspace("test_runners");
    let target = "py_unittest/PyUnittestTest";
    let (code, answer) = test_json(&root, &["--attempts", "2", target]);
    assert_eq!(code, 1, "{answer}");
    let (cases, results) = first_attempts(&answer, target);
    let package = root.join("py_unittest");
    let own = unittest_own_run(&package, &root.join(".once/state/by-hand"));
    // Every test unittest ran, and every subtest it reports, is a case with its status;
    // the other cases are the subtests that passed, which unittest does not print.
    for (id, status) in &own.cases {
        assert_eq!(
            cases.get(id).map(String::as_str),
            Some(*status),
            "{id}: {cases:?}"
        );
    }
    let subtest_of = |id: &str| {
        results["cases"]
            .as_array()
            .unwrap()
            .iter()
            .find(|case| case["id"] == id)
            .and_then(|case| case["runner_metadata"]["subtest_of"].as_str())
            .map(str::to_owned)
    };
    let tests: Vec<&String> = cases.keys().filter(|id| subtest_of(id).is_none()).collect();
    assert_eq!(tests.len() as u64, own.counts["ran"], "{tests:?}");
    for (id, status) in &cases {
        if !own.cases.contains_key(id) {
            assert!(subtest_of(id).is_some() && status == "passed", "{id}");
        }
    }
    // `load_tests` built some of them: the library's doctests, a test case per backend.
    for id in [
        "ledger.balance",
        "tests.test_backends.DiskBackendTest.test_reopen",
        "tests.test_amounts.ParseAmountTest.test_written_forms (text='1.005')",
        "tests.test_amounts.ParseAmountTest.test_signs [no sign]",
    ] {
        assert!(cases.contains_key(id), "{id}: {cases:?}");
    }
    // The counts of `FAILED (failures=2, errors=1, skipped=2, expected failures=1)`.
    let count = |what: &str| own.counts.get(what).copied().unwrap_or(0);
    let failed = cases.values().filter(|status| *status == "failed").count() as u64;
    let skipped = cases.values().filter(|status| *status == "skipped").count() as u64;
    assert_eq!(
        failed,
        count("failures") + count("errors") + count("unexpected successes"),
        "{:?}",
        own.counts
    );
    assert_eq!(skipped, count("skipped") + count("expected failures"));
    // The retry selected the failed cases through discovery (the flaky one exists only
    // through `load_tests`): its log ran their three tests, and the flaky case passed.
    let retry_log =
        std::fs::read_to_string(root.join(".once/out/py_unittest/PyUnittestTest/test/log.txt"))
            .unwrap();
    assert!(retry_log.contains("Ran 3 tests"), "{retry_log}");
    let flaky: Vec<&str> = results["cases"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|case| case["status"] == "flaky")
        .map(|case| case["id"].as_str().unwrap())
        .collect();
    assert_eq!(flaky, ["tests.test_backends.DiskBackendTest.test_reopen"]);
    // pytest, which ignores `load_tests`, finds fewer of the tests.
    let collected = Command::new("python3")
        .args([
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:cacheprovider",
        ])
        .current_dir(&package)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .output()
        .unwrap();
    let pytest_tests = String::from_utf8_lossy(&collected.stdout)
        .lines()
        .filter(|line| line.contains("::"))
        .count() as u64;
    assert!(pytest_tests < own.counts["ran"], "{pytest_tests}");
}

/// `python3` from the test's `PATH` (the one with pytest: `./.ci/test` puts its `.venv`
/// first) running `script`; its standard output, trimmed.
fn path_python(args: &[&str]) -> String {
    let output = Command::new("python3").args(args).output().unwrap();
    assert!(
        output.status.success(),
        "python3 {args:?} failed (is pytest installed? see ./.ci/test): {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).trim().to_owned()
}

/// A test file asserting that the interpreter running it is the one at `prefix`.
fn prefix_test(prefix: &Path) -> String {
    format!(
        "import os, sys, unittest\n\n\
         class Interpreter(unittest.TestCase):\n    \
             def test_prefix(self):\n        \
                 self.assertEqual(os.path.realpath(sys.prefix), {:?})\n",
        prefix.canonicalize().unwrap().display().to_string()
    )
}

/// Item 7 of issue 33, with real virtual environments and a `PATH` whose `python3` is not
/// the one named: `[workspace] python` names the environment that has pytest, a target's
/// `python` one made without pip (so without pytest). Each target runs the interpreter it
/// names, through the sandbox; the one that cannot start pytest says why in its report;
/// a named interpreter that is not there refuses only its target; what is installed in
/// an environment keys its actions.
#[test]
fn python_targets_run_the_interpreter_or_environment_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    // The interpreter with pytest: its virtual environment, else the interpreter file.
    let found = path_python(&[
        "-c",
        "import pytest, sys; print(sys.prefix != sys.base_prefix); print(sys.prefix); print(sys.executable)",
    ]);
    let found: Vec<&str> = found.lines().collect();
    let (with_pytest, with_pytest_prefix) = match found.as_slice() {
        ["True", prefix, _] => (prefix.to_string(), PathBuf::from(prefix)),
        [_, prefix, executable] => (executable.to_string(), PathBuf::from(prefix)),
        other => panic!("{other:?}"),
    };
    // A virtual environment without pytest, inside the workspace (hidden from the walk).
    path_python(&[
        "-m",
        "venv",
        "--without-pip",
        &root.join(".bare").display().to_string(),
    ]);
    std::fs::write(root.join("test_named.py"), prefix_test(&with_pytest_prefix)).unwrap();
    std::fs::write(root.join("test_bare.py"), prefix_test(&root.join(".bare"))).unwrap();
    std::fs::write(
        root.join("once.toml"),
        format!(
            r#"[workspace]
python = {with_pytest:?}

[[target]]
name = "Named"
kind = "pytest_test"
srcs = ["test_named.py"]

[[target]]
name = "BarePytest"
kind = "pytest_test"
srcs = ["test_bare.py"]

[target.attrs]
python = ".bare"

[[target]]
name = "BareUnittest"
kind = "unittest_test"
srcs = ["test_bare.py"]

[target.attrs]
python = ".bare/"

[[target]]
name = "Gone"
kind = "unittest_test"
srcs = ["test_bare.py"]

[target.attrs]
python = ".gone"
"#
        ),
    )
    .unwrap();
    let run = |args: &[&str]| {
        let output = Command::new(env!("CARGO_BIN_EXE_once"))
            .arg("-C")
            .arg(&root)
            .args(args)
            .env("NO_COLOR", "1")
            .env("PATH", "/usr/bin:/bin")
            .output()
            .unwrap();
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        (output.status.code(), text)
    };
    let status = |text: &str, target: &str| -> String {
        text.lines()
            .find(|line| line.split_whitespace().nth(1) == Some(target))
            .and_then(|line| line.split_whitespace().next())
            .unwrap_or("(none)")
            .to_owned()
    };

    // The interpreter that is not there is an error at its value, and only its target's.
    let (code, text) = run(&["query", "validate-workspace"]);
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains(
            "error[invalid_interpreter]: attribute `python` names `.gone`, which does not exist"
        ) && text.contains("--> once.toml:31:10")
            && text.contains("python3 -m venv .gone"),
        "{text}"
    );
    assert_eq!(text.matches("invalid_interpreter").count(), 1, "{text}");

    let targets = ["test", "Named", "BarePytest", "BareUnittest"];
    let (code, text) = run(&targets);
    assert_eq!(code, Some(1), "{text}");
    assert_eq!(status(&text, "Named"), "PASS", "{text}");
    assert_eq!(status(&text, "BareUnittest"), "PASS", "{text}");
    assert_eq!(status(&text, "BarePytest"), "FAIL", "{text}");
    // The runner that could not start says why, in the report itself.
    assert!(
        text.contains("the runner's output ends with:")
            && text.contains(".bare/bin/python3: No module named pytest"),
        "{text}"
    );
    let (_, text) = run(&targets);
    assert_eq!(status(&text, "Named"), "CACHED", "{text}");
    assert_eq!(status(&text, "BareUnittest"), "CACHED", "{text}");

    // A distribution installed in the environment: its actions run again.
    let site = std::fs::read_dir(root.join(".bare/lib"))
        .unwrap()
        .map(|entry| entry.unwrap().path().join("site-packages"))
        .find(|site| site.is_dir())
        .unwrap();
    let info = site.join("extra-1.0.dist-info");
    std::fs::create_dir_all(&info).unwrap();
    std::fs::write(info.join("RECORD"), "extra/__init__.py,,\n").unwrap();
    std::fs::write(info.join("METADATA"), "Name: extra\nVersion: 1.0\n").unwrap();
    let (_, text) = run(&targets);
    assert_eq!(status(&text, "Named"), "CACHED", "{text}");
    assert_eq!(status(&text, "BareUnittest"), "PASS", "{text}");

    // The missing environment made: its target runs it.
    path_python(&[
        "-m",
        "venv",
        "--without-pip",
        &root.join(".gone").display().to_string(),
    ]);
    let (code, text) = run(&["query", "validate-workspace"]);
    assert_eq!(code, Some(0), "{text}");
    let (_, text) = run(&["test", "Gone"]);
    // `Gone` runs `.gone`, not `.bare`, so the prefix test fails with both named.
    assert_eq!(status(&text, "Gone"), "FAIL", "{text}");
    assert!(text.contains(".gone") && text.contains(".bare"), "{text}");
}

/// pytest stopped before its report by a `conftest.py` importing a missing module: the
/// human report shows the exception itself, not only "no results file".
#[test]
fn a_missing_module_stopping_pytest_is_shown_in_the_report() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("conftest.py"), "import no_such_module\n").unwrap();
    std::fs::write(root.join("test_a.py"), "def test_a():\n    pass\n").unwrap();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\n\n[[target]]\nname = \"T\"\nkind = \"pytest_test\"\n\
         srcs = [\"test_a.py\", \"conftest.py\"]\n",
    )
    .unwrap();
    let output = once(&root, &["test", "T"]);
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(1), "{text}");
    let report: Vec<&str> = text
        .lines()
        .skip_while(|line| !line.starts_with("  failed T"))
        .skip(1)
        .take_while(|line| line.starts_with("    "))
        .collect();
    assert_eq!(
        report[..3],
        [
            "    The test exited with status 4 and reported no case that could be read.",
            "    - the runner's output ends with:",
            &format!(
                "    ImportError while loading conftest '{}'.",
                root.join("conftest.py").display()
            ),
        ],
        "{text}"
    );
    assert!(
        report.contains(&"    E   ModuleNotFoundError: No module named 'no_such_module'"),
        "{text}"
    );
}
