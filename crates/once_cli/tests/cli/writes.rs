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
