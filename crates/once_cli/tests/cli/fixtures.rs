//! `once query validate-workspace` on every fixture under `test_data/workspaces/`.

use expect_test::expect_file;
use once_model::DiagnosticCode;

use crate::support::{Once, Workspace, check, test_data};

/// Codes that no workspace can produce yet, with why. A fixture directory still exists
/// for each; the coverage test fails once the code does appear, so the entry is removed.
const UNREACHABLE: &[(&str, &str)] = &[];

/// Codes only `once edit apply` reports (a proposed edit, not a workspace on disk, is
/// wrong); `crates/once_analysis/tests/edit.rs` covers them.
const EDIT_ONLY: &[&str] = &[
    "target_already_exists",
    "target_not_found",
    "edit_not_applicable",
];

/// Codes only planning reports (`once query actions`: a kind's implementation failed), not
/// validation; `crates/once_graph/tests/actions.rs`, `crates/once_starlark` and
/// `module_limits.rs` cover them.
const PLAN_ONLY: &[&str] = &["implementation_error"];

/// Codes only an annotated script's validation reports (`once query script`, MCP
/// `once_validate_script`, the language server): scripts are not part of the workspace's
/// graph. `test_data/scripts/` with `crates/once_graph/tests/scripts.rs` and
/// `cli/scripts.rs` cover them.
const SCRIPT_ONLY: &[&str] = &[
    "invalid_script_contract",
    "invalid_script_path",
    "script_directive_ignored",
];

/// Codes that only ever come beside other codes, with the codes their fixture shows too.
const SUMMARIES: &[(&str, &[&str])] = &[("diagnostics_omitted", &["syntax_error"])];

/// The codes `validate-workspace` can report.
fn workspace_codes() -> impl Iterator<Item = &'static str> {
    DiagnosticCode::ALL
        .iter()
        .map(|c| c.as_str())
        .filter(|c| !EDIT_ONLY.contains(c) && !PLAN_ONLY.contains(c) && !SCRIPT_ONLY.contains(c))
}

fn fixture_names() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(test_data().join("workspaces"))
        .expect("test_data/workspaces is missing")
        .map(|e| e.expect("bad entry"))
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            e.file_name()
                .into_string()
                .expect("fixture names are UTF-8")
        })
        .collect();
    names.sort();
    names
}

fn validate(workspace: &Workspace, format: &str) -> Once {
    Once::at(
        workspace,
        &["query", "validate-workspace", "--format", format],
    )
}

/// Every fixture's validation, in both formats, against `tests/snapshots/<fixture>.txt`.
#[test]
fn validate_workspace_snapshots() {
    let names = fixture_names();
    assert!(
        names.len() > workspace_codes().count(),
        "fixtures are missing: {names:?}"
    );
    for name in names {
        let workspace = Workspace::copy(&format!("workspaces/{name}"));
        let outcomes = check(
            &[validate(&workspace, "json"), validate(&workspace, "human")],
            &expect_file![format!("../snapshots/{name}.txt")],
        );
        let valid = outcomes[0].json()["valid"]
            .as_bool()
            .expect("`valid` is a bool");
        for outcome in &outcomes {
            assert_eq!(
                outcome.code,
                if valid { 0 } else { 1 },
                "{name}: exit code disagrees with `valid`"
            );
            assert_eq!(outcome.stderr, "", "{name}: validation printed to stderr");
        }
        // Every diagnostic of a fixture is placed: a workspace-relative file and a 1-based range.
        for diagnostic in outcomes[0].json()["diagnostics"]
            .as_array()
            .expect("diagnostics is a list")
        {
            let file = diagnostic["file"]
                .as_str()
                .unwrap_or_else(|| panic!("{name}: diagnostic without file: {diagnostic}"));
            assert!(
                !file.starts_with('/') && !file.contains('\\'),
                "{name}: file `{file}` is not workspace-relative"
            );
            for end in ["start", "end"] {
                for field in ["line", "column"] {
                    let n = diagnostic["range"][end][field].as_u64().unwrap_or(0);
                    assert!(
                        n >= 1,
                        "{name}: range.{end}.{field} is not 1-based: {diagnostic}"
                    );
                }
            }
        }
    }
}

/// No snapshot outlives its fixture.
#[test]
fn every_snapshot_has_a_fixture() {
    let names = fixture_names();
    let snapshots = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots");
    for entry in std::fs::read_dir(snapshots).expect("tests/snapshots is missing") {
        let path = entry.expect("bad entry").path();
        if path.extension().is_some_and(|e| e == "txt") {
            let stem = path
                .file_stem()
                .and_then(|s| s.to_str())
                .expect("snapshot names are UTF-8");
            assert!(
                names.iter().any(|n| n == stem),
                "snapshot {} has no fixture in test_data/workspaces",
                path.display()
            );
        }
    }
}

/// Each diagnostic code has a fixture named after it that produces it (and only it), so a
/// new code without a fixture fails here.
#[test]
fn every_diagnostic_code_has_a_fixture() {
    let names = fixture_names();
    let mut problems = Vec::new();
    for code in workspace_codes() {
        if !names.iter().any(|n| n == code) {
            problems.push(format!("no fixture test_data/workspaces/{code}/"));
            continue;
        }
        let workspace = Workspace::copy(&format!("workspaces/{code}"));
        let json = validate(&workspace, "json").run().json();
        let codes: Vec<&str> = json["diagnostics"]
            .as_array()
            .expect("a list")
            .iter()
            .filter_map(|d| d["code"].as_str())
            .collect();
        match UNREACHABLE.iter().find(|(c, _)| *c == code) {
            Some((_, why)) if codes.contains(&code) => problems.push(format!(
                "`{code}` is listed as unreachable ({why}) but its fixture now produces it"
            )),
            Some(_) => {}
            None if !codes.contains(&code) => {
                problems.push(format!("fixture `{code}` yields {codes:?}, not `{code}`"))
            }
            None if codes.iter().any(|c| {
                *c != code
                    && !SUMMARIES
                        .iter()
                        .any(|(summary, beside)| *summary == code && beside.contains(c))
            }) =>
            {
                problems.push(format!(
                    "fixture `{code}` also yields other codes: {codes:?}"
                ));
            }
            None => {}
        }
    }
    assert!(
        problems.is_empty(),
        "diagnostic fixtures:\n{}",
        problems.join("\n")
    );
}

/// A syntax error in one manifest is a diagnostic on that file; the other packages'
/// targets still answer.
#[test]
fn broken_manifest_keeps_the_rest_of_the_graph() {
    let workspace = Workspace::copy("workspaces/broken_manifest");
    let validation = validate(&workspace, "json").run();
    assert_eq!(validation.code, 1);
    let json = validation.json();
    let diagnostics = json["diagnostics"].as_array().expect("a list");
    assert_eq!(diagnostics.len(), 1, "{json}");
    let diagnostic = &diagnostics[0];
    assert_eq!(diagnostic["code"], "syntax_error");
    assert_eq!(diagnostic["file"], "tools/once.toml");
    assert_eq!(
        diagnostic["range"]["start"],
        serde_json::json!({ "line": 6, "column": 9 })
    );

    let targets = Once::at(&workspace, &["query", "targets", "--format", "json"]).run();
    assert_eq!(targets.code, 0);
    let ids: Vec<String> = targets
        .json()
        .as_array()
        .expect("a list")
        .iter()
        .map(|t| t["id"].as_str().expect("id").to_owned())
        .collect();
    for healthy in ["app/App", "lib/Lib"] {
        assert!(
            ids.iter().any(|id| id == healthy),
            "`{healthy}` is missing from {ids:?}"
        );
    }
}
