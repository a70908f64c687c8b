//! `once test` without targets: the tests of the current directory's package and of the
//! packages below the directory (every test from the workspace root, with `--all`, or
//! with `-C`), as `cargo test` and `go test ./...` test where they run.

use std::path::Path;

use crate::support::{Once, Workspace};

/// A workspace of shell tests that pass: one in the root package, one per package below.
fn shell_tests() -> Workspace {
    let workspace = Workspace::empty();
    let test = |package: &str, name: &str| {
        let manifest =
            format!("[[target]]\nname = \"{name}\"\nkind = \"sh_test\"\nsrcs = [\"{name}.sh\"]\n");
        let dir = if package.is_empty() {
            String::new()
        } else {
            format!("{package}/")
        };
        let path = format!("{dir}once.toml");
        let existing = std::fs::read_to_string(workspace.root().join(&path)).unwrap_or_default();
        workspace.write(&path, &format!("{existing}\n{manifest}"));
        workspace.write(&format!("{dir}{name}.sh"), "exit 0\n");
    };
    test("", "RootTest");
    test("apps/a", "ATest");
    test("apps/a/sub", "SubTest");
    test("apps/b", "BTest");
    test("libs/c", "CTest");
    workspace.write("apps/a/src/main.sh", "echo a\n");
    workspace
}

/// `once [ARGS…] --format json test [TEST_ARGS…]` run in `cwd`: the selection's mode and
/// the ids of the tests that ran.
fn tested(cwd: &Path, args: &[&str], test_args: &[&str]) -> (String, Vec<String>) {
    let mut all: Vec<&str> = args.to_vec();
    all.extend(["--format", "json", "test"]);
    all.extend_from_slice(test_args);
    let outcome = Once::new(&all).cwd(cwd).run();
    assert_eq!(outcome.code, 0, "{}", outcome.render());
    let answer = outcome.json();
    let ran: Vec<String> = answer["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|run| {
            assert_eq!(run["status"], "passed", "{run}");
            run["target"].as_str().unwrap().to_owned()
        })
        .collect();
    let selected: Vec<&str> = answer["selection"]["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|test| test["id"].as_str().unwrap())
        .collect();
    assert_eq!(ran, selected);
    (
        answer["selection"]["mode"].as_str().unwrap().to_owned(),
        ran,
    )
}

fn ids(ids: &[&str]) -> Vec<String> {
    ids.iter().map(|id| (*id).to_owned()).collect()
}

#[test]
fn without_targets_once_test_runs_the_tests_where_it_runs() {
    let workspace = shell_tests();
    let root = workspace.root();
    let every = ids(&[
        "RootTest",
        "apps/a/ATest",
        "apps/a/sub/SubTest",
        "apps/b/BTest",
        "libs/c/CTest",
    ]);
    // From the root: every test.
    assert_eq!(tested(root, &[], &[]), ("full".to_owned(), every.clone()));
    // From a package: its tests and those of the packages below it.
    assert_eq!(
        tested(&root.join("apps/a"), &[], &[]),
        (
            "directory".to_owned(),
            ids(&["apps/a/ATest", "apps/a/sub/SubTest"])
        )
    );
    // From a directory of a package: the package's tests.
    assert_eq!(
        tested(&root.join("apps/a/src"), &[], &[]),
        ("directory".to_owned(), ids(&["apps/a/ATest"]))
    );
    // From a directory holding packages: the packages below it, and the tests of the
    // package the directory belongs to (the root's).
    assert_eq!(
        tested(&root.join("apps"), &[], &[]),
        (
            "directory".to_owned(),
            ids(&[
                "RootTest",
                "apps/a/ATest",
                "apps/a/sub/SubTest",
                "apps/b/BTest"
            ])
        )
    );
    // `--all` and `-C` test the whole workspace wherever `once` runs.
    assert_eq!(
        tested(&root.join("apps/a"), &[], &["--all"]),
        ("full".to_owned(), every.clone())
    );
    let root_text = root.display().to_string();
    assert_eq!(
        tested(&root.join("apps/a"), &["-C", &root_text], &[]),
        ("full".to_owned(), every.clone())
    );
    // Named targets and changed paths are not narrowed by the directory.
    assert_eq!(
        tested(&root.join("apps/a"), &[], &["libs/c/CTest"]),
        ("explicit".to_owned(), ids(&["libs/c/CTest"]))
    );
    assert_eq!(
        tested(&root.join("apps/a"), &[], &["--changed", "libs/c/CTest.sh"]),
        ("affected".to_owned(), ids(&["libs/c/CTest"]))
    );
}

#[test]
fn the_human_answer_says_what_the_directory_selected() {
    let workspace = shell_tests();
    let outcome = Once::new(&["test"])
        .cwd(workspace.root().join("apps/a"))
        .run();
    assert_eq!(outcome.code, 0, "{}", outcome.render());
    let lines: Vec<&str> = outcome.stdout.lines().collect();
    assert_eq!(
        lines[0],
        "2 tests of the current directory's package and below it (`once test --all` runs every test)",
        "{}",
        outcome.render()
    );
    assert!(
        lines[1].starts_with("PASS    apps/a/ATest (sh_test)"),
        "{}",
        outcome.render()
    );
    assert!(
        lines[2].starts_with("PASS    apps/a/sub/SubTest (sh_test)"),
        "{}",
        outcome.render()
    );
    assert!(
        lines[3].starts_with("2 test targets: 2 passed, 0 failed"),
        "{}",
        outcome.render()
    );
}
