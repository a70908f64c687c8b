//! The last plan of a request (the store's `last-plan-*` files) through the real binary:
//! a build asked again of an unchanged workspace reuses it without planning (the plan
//! memo, removed before, is not written again); any change to what the plan was made
//! from (a manifest, a project module, the files a package owns, the content of a file
//! an action reads) plans again and builds the right thing. A damaged file is ignored;
//! each request has its own; `once cache clean` removes them.

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text, write};

use std::path::Path;

use serde_json::Value;

/// `data/Data` (filegroup, `*.txt`) ← `cat/Cat` (command concatenating them, reading
/// them as declared inputs); `echo/Echo` (command, independent); `stamp/Stamp` (a project
/// module's kind).
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

/// `once build --format json` of `targets`: the answer, checked to succeed.
fn build(root: &Path, targets: &[&str]) -> Value {
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
    assert_eq!(value["success"], true, "{value}\n{}", text(&output.stderr));
    value
}

/// Each target's cache state.
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

/// The store's last-plan files.
fn last_plans(root: &Path) -> Vec<std::path::PathBuf> {
    let Ok(entries) = std::fs::read_dir(root.join(".once/cache")) else {
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

fn memo(root: &Path) -> std::path::PathBuf {
    root.join(".once/cache/plans")
}

fn output(root: &Path, path: &str) -> String {
    std::fs::read_to_string(root.join(".once/out").join(path)).unwrap()
}

/// Builds `TARGETS` once the plan memo is gone: answers the build and whether it
/// planned (planning writes the memo again; the last plan does not).
fn build_planned(root: &Path) -> (Value, bool) {
    let _ = std::fs::remove_file(memo(root));
    let value = build(root, &TARGETS);
    (value, memo(root).exists())
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
    let cold = build(root, &TARGETS);
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
    let echo = build(root, &["echo/Echo"]);
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
