//! Project modules through the real binary: `validate-workspace` over a workspace whose
//! kinds come from two modules (one loading the other), broken and fixed again;
//! `validate-module`; `module-contract`.

use crate::support::{Once, Workspace};

fn validate(workspace: &Workspace) -> serde_json::Value {
    let outcome = Once::at(
        workspace,
        &["query", "validate-workspace", "--format", "json"],
    )
    .run();
    let json = outcome.json();
    let valid = json["valid"].as_bool().expect("valid");
    assert_eq!(outcome.code, if valid { 0 } else { 1 }, "{json}");
    json
}

#[test]
fn breaking_and_fixing_a_module() {
    let workspace = Workspace::copy("workspaces/project_modules");
    assert_eq!(validate(&workspace)["valid"], true);
    let base = std::fs::read_to_string(workspace.root().join("modules/base.star")).unwrap();

    // A typo in the loaded module: the loading module reports it with a location, and
    // every target of the kinds it declares reports the missing kind.
    workspace.write(
        "modules/base.star",
        &base.replace("attr.string_list(", "attr.string_lst("),
    );
    let broken = validate(&workspace);
    assert_eq!(broken["valid"], false);
    let diagnostics = broken["diagnostics"].as_array().unwrap();
    let invalid: Vec<&serde_json::Value> = diagnostics
        .iter()
        .filter(|d| d["code"] == "invalid_module")
        .collect();
    assert_eq!(invalid.len(), 2, "{broken}");
    let base_error = invalid
        .iter()
        .find(|d| d["file"] == "modules/base.star")
        .expect("an error in base.star");
    assert_eq!(base_error["range"]["start"]["line"], 4, "{base_error}");
    assert_eq!(base_error["range"]["start"]["column"], 14, "{base_error}");
    let app_error = invalid
        .iter()
        .find(|d| d["file"] == "modules/app.star")
        .expect("an error in app.star");
    assert_eq!(app_error["range"]["start"]["line"], 1, "{app_error}");
    let mut missing: Vec<&str> = diagnostics
        .iter()
        .filter(|d| d["code"] == "unknown_target_kind")
        .map(|d| d["target"].as_str().unwrap())
        .collect();
    missing.sort();
    assert_eq!(missing, ["app/Bundle", "app/Config", "app/Greeting"]);

    let module = Once::at(
        &workspace,
        &[
            "query",
            "validate-module",
            "modules/base.star",
            "--format",
            "json",
        ],
    )
    .run();
    assert_eq!(module.code, 1);
    assert_eq!(module.json()["diagnostics"][0]["code"], "invalid_module");

    workspace.write("modules/base.star", &base);
    assert_eq!(validate(&workspace)["valid"], true);
    let module = Once::at(
        &workspace,
        &[
            "query",
            "validate-module",
            "modules/app.star",
            "--format",
            "json",
        ],
    )
    .run();
    assert_eq!(module.code, 0, "{}", module.render());
    let json = module.json();
    let kinds: Vec<&str> = json["target_kinds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| k["kind"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["app_config", "config_bundle"]);
}

#[test]
fn validate_module_paths_and_the_contract_starter() {
    let workspace = Workspace::copy("workspaces/project_modules");
    let escape = Once::at(
        &workspace,
        &["query", "validate-module", "../x.star", "--format", "json"],
    )
    .run();
    assert_eq!(escape.code, 1);
    assert_eq!(
        escape.json()["diagnostics"][0]["code"],
        "invalid_module_path"
    );
    let not_star = Once::at(&workspace, &["query", "validate-module", "once.toml"]).run();
    assert_eq!(not_star.code, 2, "{}", not_star.render());
    #[cfg(unix)]
    {
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("x.star"), "target_kind(\"x_kind\")\n").unwrap();
        std::os::unix::fs::symlink(
            outside.path().join("x.star"),
            workspace.root().join("modules/linked.star"),
        )
        .unwrap();
        let linked = Once::at(
            &workspace,
            &[
                "query",
                "validate-module",
                "modules/linked.star",
                "--format",
                "json",
            ],
        )
        .run();
        assert_eq!(linked.code, 1);
        assert_eq!(
            linked.json()["diagnostics"][0]["code"],
            "invalid_module_path"
        );
    }

    // The contract's starter, written where it says, validates and registers its kind.
    let contract = Once::at(
        &workspace,
        &["query", "module-contract", "--format", "json"],
    )
    .run();
    assert_eq!(contract.code, 0);
    let contract = contract.json();
    let path = contract["starter_path"].as_str().unwrap();
    workspace.write(path, contract["starter"].as_str().unwrap());
    // `generated_text` is also declared by the fixture's base.star: a duplicate.
    let starter = Once::at(
        &workspace,
        &["query", "validate-module", path, "--format", "json"],
    )
    .run();
    assert_eq!(starter.json()["diagnostics"][0]["code"], "duplicate_kind");
    let fresh = Workspace::copy("workspaces/module_not_found");
    fresh.write(
        "kinds/generated_text.star",
        contract["starter"].as_str().unwrap(),
    );
    fresh.write(
        "app/once.toml",
        contract["starter_target"].as_str().unwrap(),
    );
    assert_eq!(validate(&fresh)["valid"], true);
}
