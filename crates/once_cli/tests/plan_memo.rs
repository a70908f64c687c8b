//! The plan memo (the store's `plans` file) and the last plan of a request (the store's
//! `last-plan-*` files) through the real binary.
//!
//! The memo: a second `once build` gives the same plan without adding anything to the
//! memo (so every plan came from it); an edit to a manifest attribute, to a project
//! module, or a new file matching a `srcs` glob is picked up: exactly the targets whose
//! plans it changes are planned and executed again. A damaged memo is ignored and
//! replaced; another binary does not reuse the memo of this one; `once cache clean`
//! removes it; `once test` uses it too.
//!
//! The last plan: a build asked again of an unchanged workspace reuses it without
//! planning (the memo, removed before, is not written again); any change to what the
//! plan was made from (a manifest, a project module, the files a package owns, the
//! content of a file an action reads) plans again and builds the right thing. A damaged
//! last plan is ignored; each request has its own; `once cache clean` removes them.

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text, write};

use std::path::Path;
use std::time::SystemTime;

use serde_json::Value;

/// `data/Data` (filegroup, `*.txt`) ← `cat/Cat` (command concatenating its files);
/// `echo/Echo` (command, independent); `stamp/Stamp` (a project module's kind writing
/// its prefix attribute and the module's own marker).
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "once.toml",
        "[workspace]\ninclude = [\"data\", \"cat\", \"echo\", \"stamp\"]\n\n\
         [modules]\npaths = [\"modules/*.star\"]\n",
    );
    write(root, "modules/stamp.star", &stamp_module("v1"));
    write(
        root,
        "data/once.toml",
        "[[target]]\nname = \"Data\"\nkind = \"filegroup\"\nsrcs = [\"*.txt\"]\nvisibility = [\"public\"]\n",
    );
    write(root, "data/a.txt", "alpha\n");
    write(
        root,
        "cat/once.toml",
        r#"[[target]]
name = "Cat"
kind = "command"
deps = ["data/Data"]

[target.attrs]
cmd = "cat ../data/*.txt > \"$OUT/all.txt\""
outputs = ["all.txt"]
"#,
    );
    write(root, "echo/once.toml", &echo_manifest("hello"));
    write(
        root,
        "stamp/once.toml",
        "[[target]]\nname = \"Stamp\"\nkind = \"stamp\"\n\n[target.attrs]\nprefix = \"p\"\n",
    );
    dir
}

fn stamp_module(marker: &str) -> String {
    format!(
        r#"def _build(ctx):
    out = ctx.build_dir + "/stamp.txt"
    actions.write(out, ctx.attrs.prefix + " {marker}\n")
    return [out]

target_kind(
    "stamp",
    "Writes a stamp.",
    attrs = {{"prefix": attr.string("The first word.", default = "stamp")}},
    capabilities = [capability("build")],
    implementations = {{"build": _build}},
)
"#
    )
}

fn echo_manifest(word: &str) -> String {
    format!(
        "[[target]]\nname = \"Echo\"\nkind = \"command\"\n\n[target.attrs]\n\
         cmd = \"echo {word} > \\\"$OUT/echo.txt\\\"\"\noutputs = [\"echo.txt\"]\n"
    )
}

const TARGETS: [&str; 3] = ["cat/Cat", "echo/Echo", "stamp/Stamp"];

/// `once build` of [`TARGETS`] with `binary`: the JSON answer, checked to succeed.
fn build_with(binary: &Path, root: &Path) -> Value {
    let output = std::process::Command::new(binary)
        .arg("-C")
        .arg(root)
        .args(["build", "--format", "json"])
        .args(TARGETS)
        .env_remove("ONCE_WORKSPACE")
        .output()
        .unwrap();
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    assert_eq!(value["success"], true, "{value}\n{}", text(&output.stderr));
    value
}

fn build(root: &Path) -> Value {
    build_with(Path::new(env!("CARGO_BIN_EXE_once")), root)
}

/// Each target's cache state, in [`TARGETS`] order.
fn states(value: &Value) -> Vec<&str> {
    value["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["cache"].as_str().unwrap_or("none"))
        .collect()
}

/// Each action's id and key: the plan, as the execution saw it.
fn plan(value: &Value) -> Vec<(String, String)> {
    value["targets"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|t| t["actions"].as_array().unwrap())
        .map(|a| {
            (
                a["id"].as_str().unwrap().to_owned(),
                a["key"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

/// The memo file's bytes and modification time (`None` when missing).
fn memo(root: &Path) -> Option<(Vec<u8>, SystemTime)> {
    let path = root.join(".once/cache/derived/plans");
    let bytes = std::fs::read(&path).ok()?;
    Some((bytes, std::fs::metadata(&path).unwrap().modified().unwrap()))
}

/// The store's last plans (`once_build::last_plan`), sorted.
fn last_plans(root: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".once/cache/derived")) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("last-plan-")
        })
        .collect();
    files.sort();
    files
}

/// Removes the store's last plans (the next build plans through the memo).
fn remove_last_plans(root: &Path) {
    for file in last_plans(root) {
        std::fs::remove_file(file).unwrap();
    }
}

/// `once build --format json` of `targets` (another request than [`TARGETS`]).
fn build_targets(root: &Path, targets: &[&str]) -> Value {
    let mut args = vec!["build", "--format", "json"];
    args.extend_from_slice(targets);
    let output = once(root, &args);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(value["success"], true, "{value}\n{}", text(&output.stderr));
    value
}

/// Builds [`TARGETS`] once the plan memo is gone: answers the build and whether it
/// planned (planning writes the memo again; reusing the last plan does not).
fn build_planned(root: &Path) -> (Value, bool) {
    let _ = std::fs::remove_file(root.join(".once/cache/derived/plans"));
    let value = build(root);
    (value, memo(root).is_some())
}

fn output(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(".once/out").join(path)).unwrap()
}

#[test]
fn plans_come_from_the_memo_until_their_inputs_change() {
    let dir = workspace();
    let root = dir.path();
    let cold = build(root);
    assert_eq!(states(&cold), ["miss", "miss", "miss"]);
    let (cold_memo, cold_time) = memo(root).expect("the first build fills the memo");

    // Nothing changed: the same plan, every action a hit, and the memo is not
    // rewritten, so no plan was new: each came from it.
    let warm = build(root);
    assert_eq!(states(&warm), ["hit", "hit", "hit"]);
    assert_eq!(plan(&warm), plan(&cold));
    assert_eq!(memo(root), Some((cold_memo.clone(), cold_time)));

    // A manifest attribute: only Echo is planned and run again.
    write(root, "echo/once.toml", &echo_manifest("changed"));
    let edited = build(root);
    assert_eq!(states(&edited), ["hit", "miss", "hit"]);
    assert_eq!(output(root, "echo/Echo/out/echo.txt"), "changed\n");
    let (edited_memo, _) = memo(root).unwrap();
    assert!(
        edited_memo.len() > cold_memo.len(),
        "Echo's new plan was added"
    );

    // A project module: the stamp's plan changes, the prelude kinds' plans come from
    // the memo.
    write(root, "modules/stamp.star", &stamp_module("v2"));
    let edited = build(root);
    assert_eq!(states(&edited), ["hit", "hit", "miss"]);
    assert_eq!(output(root, "stamp/Stamp/stamp.txt"), "p v2\n");

    // A new file matching the filegroup's `srcs`: Cat's dependency outputs change, so
    // its plan (its inputs) and its result do.
    write(root, "data/b.txt", "beta\n");
    let edited = build(root);
    assert_eq!(states(&edited), ["miss", "hit", "hit"]);
    assert_eq!(output(root, "cat/Cat/out/all.txt"), "alpha\nbeta\n");

    // Back to the first module text: its plan is in the memo again, and the stamp's
    // earlier result is reused.
    write(root, "modules/stamp.star", &stamp_module("v1"));
    let (before, _) = memo(root).unwrap();
    let back = build(root);
    assert_eq!(states(&back), ["hit", "hit", "hit"]);
    assert_eq!(output(root, "stamp/Stamp/stamp.txt"), "p v1\n");
    assert_eq!(
        memo(root).unwrap().0,
        before,
        "every plan came from the memo"
    );
}

#[test]
fn a_damaged_memo_is_replaced_and_clean_removes_it() {
    let dir = workspace();
    let root = dir.path();
    let cold = build(root);
    let (good, _) = memo(root).unwrap();

    // Truncated, then with one byte changed: ignored, planned again, rewritten whole.
    for damaged in [good[..good.len() / 2].to_vec(), {
        let mut changed = good.clone();
        let middle = changed.len() / 2;
        changed[middle] ^= 0x20;
        changed
    }] {
        std::fs::write(root.join(".once/cache/derived/plans"), &damaged).unwrap();
        // Without the last plan (`once_build::last_plan`), so the targets are planned.
        remove_last_plans(root);
        let again = build(root);
        assert_eq!(states(&again), ["hit", "hit", "hit"]);
        assert_eq!(plan(&again), plan(&cold));
        let (rewritten, _) = memo(root).unwrap();
        assert_eq!(rewritten.len(), good.len(), "the same entries, rewritten");
    }

    let output = once(root, &["cache", "clean"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert_eq!(memo(root), None, "`once cache clean` removes the memo");
}

/// A copy of the binary is another program (another file): it does not reuse the
/// plans of this one, so it plans again and adds its own.
#[test]
fn another_binary_plans_again() {
    let dir = workspace();
    let root = dir.path();
    let cold = build(root);
    let (first, _) = memo(root).unwrap();

    let copy_dir = tempfile::tempdir().unwrap();
    let copy = copy_dir.path().join("once");
    std::fs::copy(env!("CARGO_BIN_EXE_once"), &copy).unwrap();
    let other = build_with(&copy, root);
    assert_eq!(states(&other), ["hit", "hit", "hit"]);
    assert_eq!(plan(&other), plan(&cold));
    let (second, _) = memo(root).unwrap();
    assert!(
        second.len() > first.len(),
        "the copy recorded plans of its own ({} → {} bytes)",
        first.len(),
        second.len()
    );
}

/// A workspace with one `sh_test`, `t/Check`, whose srcs are `t/*.sh`.
fn sh_test_workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"t\"]\n");
    write(
        root,
        "t/once.toml",
        "[[target]]\nname = \"Check\"\nkind = \"sh_test\"\nsrcs = [\"*.sh\"]\n\n\
         [target.attrs]\nmain = \"check.sh\"\n",
    );
    write(root, "t/check.sh", "test 1 -eq 1\n");
    dir
}

/// `once test` plans through the memo too: a second run reuses its plans (the memo is
/// not rewritten) and its cached result; a new `srcs` file is picked up.
#[test]
fn once_test_plans_from_the_memo() {
    let dir = sh_test_workspace();
    let root = dir.path();
    let run = || {
        let output = once(root, &["test", "--format", "json", "t/Check"]);
        let value: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&output.stderr)));
        assert_eq!(value["success"], true, "{value}");
        value
    };
    let cache = |value: &Value| value["runs"][0]["cache"].as_str().unwrap().to_owned();
    let first = run();
    assert_eq!(cache(&first), "miss", "{first}");
    let (memo_bytes, memo_time) = memo(root).expect("`once test` fills the memo");

    let second = run();
    assert_eq!(cache(&second), "hit", "{second}");
    assert_eq!(memo(root), Some((memo_bytes.clone(), memo_time)));

    // A new file matching `srcs` is an input of the test: planned and run again.
    write(root, "t/helper.sh", "true\n");
    let third = run();
    assert_eq!(cache(&third), "miss", "{third}");
    assert!(memo(root).unwrap().0.len() > memo_bytes.len());
}

/// Every change to what the plan was made from plans again, and the build is right.
#[test]
fn the_last_plan_is_reused_until_anything_it_was_made_from_changes() {
    let dir = workspace();
    let root = dir.path();
    let (cold, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&cold), ["miss", "miss", "miss"]);
    assert_eq!(last_plans(root).len(), 1);

    // Nothing changed: the last plan, not planning.
    let (warm, planned) = build_planned(root);
    assert!(!planned, "the unchanged workspace was planned again");
    assert_eq!(states(&warm), ["hit", "hit", "hit"]);
    assert_eq!(plan(&warm), plan(&cold));

    // The content of a file an action reads (same files, same manifests): the digest
    // check catches it, Cat runs with the new content.
    write(root, "data/a.txt", "ALPHA\n");
    let (edited, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&edited), ["miss", "hit", "hit"]);
    assert_eq!(output(root, "cat/Cat/out/all.txt"), "ALPHA\n");
    let (again, planned) = build_planned(root);
    assert!(!planned);
    assert_eq!(states(&again), ["hit", "hit", "hit"]);

    // A manifest attribute.
    write(root, "echo/once.toml", &echo_manifest("changed"));
    let (edited, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&edited), ["hit", "miss", "hit"]);
    assert_eq!(output(root, "echo/Echo/out/echo.txt"), "changed\n");

    // A project module.
    write(root, "modules/stamp.star", &stamp_module("v2"));
    let (edited, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&edited), ["hit", "hit", "miss"]);
    assert_eq!(output(root, "stamp/Stamp/stamp.txt"), "p v2\n");

    // A new file matching a `srcs` glob.
    write(root, "data/b.txt", "beta\n");
    let (edited, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&edited), ["miss", "hit", "hit"]);
    assert_eq!(output(root, "cat/Cat/out/all.txt"), "ALPHA\nbeta\n");

    // A new file no glob matches: planned again (the files a package owns are part of
    // what a plan is made from), with the same result.
    write(root, "echo/notes.md", "notes\n");
    let (same, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&same), ["hit", "hit", "hit"]);
    let (same, planned) = build_planned(root);
    assert!(!planned);
    assert_eq!(states(&same), ["hit", "hit", "hit"]);

    // A file renamed (as many files as before).
    std::fs::rename(root.join("echo/notes.md"), root.join("echo/readme.md")).unwrap();
    let (same, planned) = build_planned(root);
    assert!(planned, "a renamed file was not seen");
    assert_eq!(states(&same), ["hit", "hit", "hit"]);

    // A file removed from a glob's matches.
    std::fs::remove_file(root.join("data/b.txt")).unwrap();
    let (edited, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(
        states(&edited),
        ["hit", "hit", "hit"],
        "Cat's earlier result"
    );
    assert_eq!(output(root, "cat/Cat/out/all.txt"), "ALPHA\n");
}

/// A damaged last plan is ignored (planned again, rewritten); each request keeps its
/// own; `once cache clean` removes them.
#[test]
fn damaged_last_plans_are_ignored_each_request_has_its_own_and_clean_removes_them() {
    let dir = workspace();
    let root = dir.path();
    let cold = build(root);
    let [file] = &last_plans(root)[..] else {
        panic!("one last plan: {:?}", last_plans(root));
    };
    let good = std::fs::read(file).unwrap();
    for damaged in [good[..good.len() / 2].to_vec(), {
        let mut changed = good.clone();
        let middle = changed.len() / 2;
        changed[middle] ^= 0x20;
        changed
    }] {
        std::fs::write(file, &damaged).unwrap();
        let (again, planned) = build_planned(root);
        assert!(planned, "a damaged last plan was used");
        assert_eq!(states(&again), ["hit", "hit", "hit"]);
        assert_eq!(plan(&again), plan(&cold));
        let rewritten = std::fs::read(file).unwrap();
        assert_eq!(rewritten.len(), good.len(), "rewritten whole");
        let (_, planned) = build_planned(root);
        assert!(!planned, "the rewritten last plan is used");
    }

    // Another request (other patterns) is planned and kept beside the first.
    let echo = build_targets(root, &["echo/Echo"]);
    assert_eq!(states(&echo), ["hit"]);
    assert_eq!(last_plans(root).len(), 2);
    let (warm, planned) = build_planned(root);
    assert!(!planned);
    assert_eq!(plan(&warm), plan(&cold));

    let output = once(root, &["cache", "clean"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        last_plans(root).is_empty(),
        "`once cache clean` removes them"
    );
    let (clean, planned) = build_planned(root);
    assert!(planned);
    assert_eq!(states(&clean), ["miss", "miss", "miss"]);
}

/// `once test` keeps the last plan of its selection as `once build` does: asked again
/// of an unchanged workspace it plans nothing (the memo is not rewritten even when
/// removed) and answers the same selection; an edit plans again.
#[test]
fn once_test_reuses_the_last_plan_of_its_selection() {
    let dir = sh_test_workspace();
    let root = dir.path();
    let run = |args: &[&str]| {
        let _ = std::fs::remove_file(root.join(".once/cache/derived/plans"));
        let mut all = vec!["test", "--format", "json"];
        all.extend_from_slice(args);
        let output = once(root, &all);
        let value: Value = serde_json::from_slice(&output.stdout)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {}", text(&output.stderr)));
        (value, memo(root).is_some())
    };
    for selection in [&["t/Check"][..], &[][..], &["--changed", "t/check.sh"][..]] {
        let (first, planned) = run(selection);
        assert!(planned, "{selection:?}: the first run planned");
        let (second, planned) = run(selection);
        assert!(
            !planned,
            "{selection:?}: planned again with nothing changed"
        );
        assert_eq!(second["selection"], first["selection"], "{selection:?}");
        assert_eq!(second["runs"][0]["cache"], "hit", "{second}");
    }
    assert_eq!(last_plans(root).len(), 3, "one last plan per selection");
    write(root, "t/check.sh", "test 1 -eq 2\n");
    let (edited, planned) = run(&["t/Check"]);
    assert!(planned);
    assert_eq!(edited["success"], false, "{edited}");
    assert_eq!(edited["exit_code"], 1, "{edited}");
}
