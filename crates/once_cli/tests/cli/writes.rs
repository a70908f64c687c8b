//! Writes by `once edit …` with the real binary: concurrent writers, file modes, leftover
//! temporary files, bounded input.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::support::{Once, Workspace};

/// An edit adding a `filegroup` named `name` to `pkg`.
fn create_target(name: &str) -> String {
    serde_json::json!({
        "package": "pkg",
        "operations": [{"op": "create", "target": {"name": name, "kind": "filegroup", "srcs": []}}],
    })
    .to_string()
}

/// Runs `once -C root --format json edit apply` on `edit`; true when it answered `applied`.
fn apply(root: &Path, edit: &str) -> bool {
    let outcome = Once::new(&[
        "-C",
        &root.display().to_string(),
        "--format",
        "json",
        "edit",
        "apply",
    ])
    .stdin(edit)
    .run();
    outcome.code == 0 && outcome.json()["applied"] == true
}

fn target_names(root: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(root.join("pkg/once.toml")).unwrap();
    text.lines()
        .filter_map(|l| l.strip_prefix("name = \""))
        .map(|l| l.trim_end_matches('"').to_owned())
        .collect()
}

#[test]
fn two_concurrent_writers_lose_no_edit() {
    const EDITS_PER_WRITER: usize = 40;
    let workspace = Workspace::copy("workspaces/valid");
    let root = workspace.root().to_path_buf();
    let writers: Vec<_> = ["a", "b"]
        .into_iter()
        .map(|prefix| {
            let root = root.clone();
            std::thread::spawn(move || {
                (0..EDITS_PER_WRITER)
                    .map(|i| format!("{prefix}{i}"))
                    .filter(|name| apply(&root, &create_target(name)))
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let applied: Vec<String> = writers
        .into_iter()
        .flat_map(|w| w.join().unwrap())
        .collect();
    assert_eq!(applied.len(), 2 * EDITS_PER_WRITER, "every edit applied");
    let names = target_names(&root);
    let lost: Vec<&String> = applied.iter().filter(|n| !names.contains(n)).collect();
    assert!(lost.is_empty(), "applied but not in the manifest: {lost:?}");
}

/// Runs `once -C root edit apply` from a shell with `umask`, the edit on stdin.
fn apply_with_umask(root: &Path, umask: &str, edit: &str) {
    let mut child = Command::new("sh")
        .arg("-c")
        .arg(format!("umask {umask} && exec \"$0\" -C \"$1\" edit apply"))
        .arg(env!("CARGO_BIN_EXE_once"))
        .arg(root)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), edit.as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
}

fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
}

#[test]
fn new_files_get_the_umask_mode_and_rewrites_keep_theirs() {
    let workspace = Workspace::copy("workspaces/valid");
    let root = workspace.root();
    let manifest = root.join("pkg/once.toml");
    apply_with_umask(root, "022", &create_target("First"));
    assert_eq!(mode(&manifest), 0o644, "a new file: 0666 less the umask");
    assert_eq!(
        mode(&root.join("pkg")),
        0o755,
        "a new directory: 0777 less the umask"
    );
    std::fs::remove_file(&manifest).unwrap();
    apply_with_umask(root, "002", &create_target("Second"));
    assert_eq!(mode(&manifest), 0o664);
    std::fs::set_permissions(
        &manifest,
        std::os::unix::fs::PermissionsExt::from_mode(0o640),
    )
    .unwrap();
    apply_with_umask(root, "022", &create_target("Third"));
    assert_eq!(mode(&manifest), 0o640, "a rewritten file keeps its mode");
}

#[test]
fn leftover_temporary_files_are_removed_by_the_next_write() {
    let workspace = Workspace::copy("workspaces/valid");
    let root = workspace.root();
    // What a writer killed between creating its temporary file and the rename leaves.
    let leftover = workspace.write("lib/.once-write-4242-0", "[[target]]\nname = \"Ghost\"\n");
    let edit = create_target("New").replace("\"pkg\"", "\"lib\"");
    assert!(apply(root, &edit));
    assert!(!leftover.exists(), "the stale temporary file is removed");
    let names: Vec<String> = std::fs::read_dir(root.join("lib"))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert!(
        names.iter().all(|n| !n.starts_with(".once-write-")),
        "{names:?}"
    );
}

/// `once -C root edit apply <args…>` with stdin from `stdin`; the outcome must come
/// within a generous bound (it read until memory ran out before).
fn edit_apply_from(root: &Path, args: &[&str], stdin: Stdio) -> (i32, String) {
    let started = std::time::Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["edit", "apply"])
        .args(args)
        .stdin(stdin)
        .output()
        .unwrap();
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    (
        output.status.code().unwrap(),
        String::from_utf8(output.stderr).unwrap(),
    )
}

#[test]
fn endless_or_special_json_input_is_refused() {
    let workspace = Workspace::copy("workspaces/valid");
    let root = workspace.root();
    let zero = || Stdio::from(std::fs::File::open("/dev/zero").unwrap());
    let (code, stderr) = edit_apply_from(root, &[], zero());
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "once: error: cannot read the edit from stdin: the edit is larger than the 16 MiB limit\n"
    );
    let (code, stderr) = edit_apply_from(root, &["--file", "/dev/zero"], Stdio::null());
    assert_eq!(code, 2);
    assert_eq!(
        stderr,
        "once: error: cannot read `/dev/zero`: not a regular file (give the edit on stdin instead)\n"
    );
    let large = workspace.write("large.json", &" ".repeat(16 * 1024 * 1024 + 1));
    let large = large.display().to_string();
    let (code, stderr) = edit_apply_from(root, &["--file", &large], Stdio::null());
    assert_eq!(code, 2);
    assert!(
        stderr.ends_with("the edit is larger than the 16 MiB limit\n"),
        "{stderr}"
    );
}

#[test]
fn materializing_outside_the_workspace_include_warns() {
    let workspace = Workspace::copy("demo");
    let outcome = Once::at(
        &workspace,
        &[
            "edit",
            "materialize-example",
            "filegroup",
            "filegroup-minimal",
            "--destination",
            "extra",
        ],
    )
    .run();
    expect_test::expect![[r#"
        $ once -C $WORKSPACE edit materialize-example filegroup filegroup-minimal --destination extra
        exit: 0
        --- stdout
        created   extra/fixtures/once.toml
        created   extra/fixtures/settings.json
        created   extra/fixtures/users.json
        warning: the package `extra/fixtures` is outside `[workspace] include` (`apps/*`, `libs/*`, `data`, `tools`, `tools/*`), so its files are written but its targets are not part of the workspace; change `[workspace]` in the root `once.toml` to add it

        workspace valid: 17 targets
        --- stderr
    "#]]
    .assert_eq(&outcome.render());
}

/// `validate-workspace --fix` on copies of the fixture workspaces whose diagnostics carry
/// a fix: each is written through the confined write path and the workspace validates
/// afterwards. Shown: the answer, then every changed manifest.
#[test]
fn validate_workspace_fix_writes_every_preferred_fix() {
    let mut shown = String::new();
    for fixture in [
        "attr_value_not_allowed",
        "missing_dependency",
        "missing_required_attr",
        "unknown_attr",
        "unknown_key",
        "unknown_target_kind",
    ] {
        let workspace = Workspace::copy(&format!("workspaces/{fixture}"));
        let fix = || {
            Once::at(
                &workspace,
                &["--format", "json", "query", "validate-workspace", "--fix"],
            )
            .run()
        };
        let outcome = fix();
        assert_eq!(outcome.code, 0, "{fixture}: {}", outcome.render());
        let answer = outcome.json();
        assert_eq!(answer["valid"], true, "{fixture}: {answer}");
        let fixed = answer["fixed"].as_array().cloned().unwrap_or_default();
        shown.push_str(&format!("== {fixture}\n"));
        for fix in &fixed {
            shown.push_str(&format!(
                "fixed {}:{} [{}] {}\n",
                fix["file"].as_str().unwrap_or(""),
                fix["range"]["start"]["line"],
                fix["code"].as_str().unwrap_or(""),
                fix["title"].as_str().unwrap_or(""),
            ));
        }
        let mut files: Vec<&str> = fixed.iter().filter_map(|f| f["file"].as_str()).collect();
        files.dedup();
        for file in files {
            let text = std::fs::read_to_string(workspace.root().join(file)).unwrap();
            shown.push_str(&format!("-- {file}\n{text}"));
        }
        // Nothing is left to fix: a second run changes nothing.
        assert_eq!(fix().json()["fixed"], serde_json::json!([]), "{fixture}");
    }
    expect_test::expect![[r#"
        == attr_value_not_allowed
        fixed lib/once.toml:7 [attr_value_not_allowed] Replace `2020` with `2021`
        -- lib/once.toml
        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]

        [target.attrs]
        edition = "2021"
        == missing_dependency
        fixed app/once.toml:5 [missing_dependency] Depend on `lib/Lib`
        -- app/once.toml
        [[target]]
        name = "App"
        kind = "rust_binary"
        srcs = ["src/main.rs"]
        deps = ["lib/Lib"]
        == missing_required_attr
        fixed tools/once.toml:2 [missing_required_attr] Add required attribute `script_runtime`
        -- tools/once.toml
        [[target]]
        name = "Cleanup"
        kind = "script"
        srcs = ["cleanup.sh"]

        [target.attrs]
        script_path = "cleanup.sh"
        script_runtime = ""
        == unknown_attr
        fixed lib/once.toml:7 [unknown_attr] Rename `editoin` to `edition`
        -- lib/once.toml
        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]

        [target.attrs]
        edition = "2021"
        == unknown_key
        fixed app/once.toml:5 [unknown_key] Rename `label` to `labels`
        -- app/once.toml
        [[target]]
        name = "Docs"
        kind = "filegroup"
        srcs = ["README.md"]
        labels = ["docs"]
        == unknown_target_kind
        fixed app/once.toml:3 [unknown_target_kind] Use kind `rust_binary`
        -- app/once.toml
        [[target]]
        name = "App"
        kind = "rust_binary"
        srcs = ["src/main.rs"]
    "#]]
    .assert_eq(&shown);
}
