//! Project modules in the graph: kinds from `[modules] paths` join the catalog, `load()`
//! is tracked, and editing one module re-evaluates only it and the modules loading it.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "a test times runaway modules"
)]

use std::path::PathBuf;
use std::sync::Arc;

use once_db::{ChangeEvent, ExecutionLog, MemorySystem, RootDatabase, Workspace, apply_changes};
use once_fixture::Fixture;
use once_graph::{kind_catalog, workspace_diagnostics};
use once_model::DiagnosticCode;
use salsa::plumbing::AsId;

const ROOT: &str = once_fixture::ROOT;

/// The root manifest registering `modules/*.star`.
const ROOT_MANIFEST: &str = r#"
    //- /once.toml
    [workspace]

    [modules]
    paths = ["modules/*.star"]
"#;

/// The modules (one loading another) and a package using their kinds.
const MODULES_AND_PACKAGE: &str = r#"
    //- /modules/lib/common.star
    def text_kind(name):
        target_kind(name, "Generated text.", attrs = {"lines": attr.string_list("Lines.")})
    //- /modules/app.star
    load("lib/common.star", "text_kind")

    text_kind("app_text")
    //- /modules/other.star
    target_kind("other_kind", "Unrelated.")
    //- /pkg/once.toml
    [[target]]
    name = "Text"
    kind = "app_text"
    attrs = { lines = ["a"] }

    [[target]]
    name = "Other"
    kind = "other_kind"
"#;

fn system() -> MemorySystem {
    system_with(ROOT_MANIFEST)
}

/// The fixture `root` (the root manifest and any further files), then the modules and
/// the package.
fn system_with(root: &str) -> MemorySystem {
    let mut fixture = Fixture::parse(root);
    fixture.extend(Fixture::parse(MODULES_AND_PACKAGE));
    fixture.system()
}

fn load(system: &MemorySystem) -> (RootDatabase, Workspace, ExecutionLog) {
    let (mut db, log) = RootDatabase::with_execution_log(Arc::new(system.clone()));
    let workspace = db.load(PathBuf::from(ROOT));
    (db, workspace, log)
}

fn edit(db: &mut RootDatabase, system: &MemorySystem, path: &str, text: &str) {
    let path = format!("{ROOT}/{path}");
    system.write(&path, text);
    apply_changes(db, &[ChangeEvent::Changed(PathBuf::from(path))]);
}

/// The `module_kinds` executions, as module paths.
fn evaluated_modules(db: &RootDatabase, executed: &[String]) -> Vec<String> {
    let mut paths: Vec<String> = [
        "modules/app.star",
        "modules/other.star",
        "modules/lib/common.star",
    ]
    .into_iter()
    .filter(|path| {
        let file = db.file(path).expect("module input");
        let key = format!("module_kinds({:?})", file.as_id());
        executed.contains(&key)
    })
    .map(str::to_owned)
    .collect();
    paths.sort();
    paths
}

fn codes(db: &RootDatabase, workspace: Workspace) -> Vec<String> {
    workspace_diagnostics(db, workspace)
        .iter()
        .map(|d| format!("{} {}", d.code, d.file.as_deref().unwrap_or("")))
        .collect()
}

#[test]
fn module_kinds_join_the_catalog_and_edits_reevaluate_only_dependents() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let catalog = kind_catalog(&db, workspace);
    assert!(catalog.get("app_text").is_some() && catalog.get("other_kind").is_some());
    assert!(catalog.get("rust_binary").is_some(), "the prelude stays");
    let cold = log.take();
    assert_eq!(
        evaluated_modules(&db, &cold),
        ["modules/app.star", "modules/other.star"],
        "only registered modules are queries; lib/common.star is loaded inside app.star's"
    );

    // Editing one module re-evaluates it alone: not the prelude, not the other module.
    edit(
        &mut db,
        &system,
        "modules/other.star",
        "target_kind(\"other_kind\", \"Unrelated, edited.\")\n",
    );
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let warm = log.take();
    assert_eq!(
        evaluated_modules(&db, &warm),
        ["modules/other.star"],
        "{warm:?}"
    );

    // Editing a loaded module re-evaluates the module loading it, not the unrelated one.
    edit(
        &mut db,
        &system,
        "modules/lib/common.star",
        "def text_kind(name):\n    target_kind(name, \"Generated text (v2).\", attrs = {\"lines\": attr.string_list(\"Lines.\")})\n",
    );
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let warm = log.take();
    assert_eq!(
        evaluated_modules(&db, &warm),
        ["modules/app.star"],
        "{warm:?}"
    );

    // Breaking the loaded module: a located diagnostic in app.star, and the target of its
    // kind reports the missing kind.
    edit(
        &mut db,
        &system,
        "modules/lib/common.star",
        "def text_kind(name):\n    target_kind(name, attrs = {\"lines\": attr.strng_list()})\n",
    );
    let broken = workspace_diagnostics(&db, workspace);
    let module_error = broken
        .iter()
        .find(|d| d.code == DiagnosticCode::InvalidModule)
        .expect("invalid_module");
    assert_eq!(module_error.file.as_deref(), Some("modules/app.star"));
    assert!(
        module_error.message.contains("modules/lib/common.star:2:"),
        "{}",
        module_error.message
    );
    let unknown = broken
        .iter()
        .find(|d| d.code == DiagnosticCode::UnknownTargetKind)
        .expect("unknown_target_kind");
    assert_eq!(unknown.file.as_deref(), Some("pkg/once.toml"));
    assert_eq!(unknown.target.as_deref(), Some("pkg/Text"));
    assert_eq!(evaluated_modules(&db, &log.take()), ["modules/app.star"]);

    // Fixing it restores validity.
    edit(
        &mut db,
        &system,
        "modules/lib/common.star",
        "def text_kind(name):\n    target_kind(name, \"Fixed.\", attrs = {\"lines\": attr.string_list(\"Lines.\")})\n",
    );
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
}

#[test]
fn runaway_modules_are_stopped_and_reported() {
    let system = system_with(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/*.star"]
        //- /modules/spin.star
        def spin():
            n = 0
            for i in range(2000000):
                for j in range(2000000):
                    n += j
            return n

        spin()
        //- /modules/hog.star
        parts = []
        for i in range(2000000):
            parts.append("x" * 100000 + str(i))
        "#,
    );
    let (db, workspace, _log) = load(&system);
    let started = std::time::Instant::now();
    let diagnostics = workspace_diagnostics(&db, workspace);
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
    let mut found: Vec<(String, String)> = diagnostics
        .iter()
        .filter(|d| d.code == DiagnosticCode::InvalidModule)
        .map(|d| {
            (
                d.file.clone().unwrap_or_default(),
                d.message.lines().next().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    found.sort();
    assert_eq!(found.len(), 2, "{found:?}");
    assert_eq!(found[0].0, "modules/hog.star");
    // The memory limit, or on a loaded machine the time limit first.
    assert!(found[0].1.contains("limit"), "{found:?}");
    assert_eq!(found[1].0, "modules/spin.star");
    assert!(found[1].1.contains("limit"), "{found:?}");
    assert!(diagnostics.iter().all(|d| d.range.is_some()));
}

#[test]
fn pattern_and_name_problems_are_diagnostics() {
    let system = system_with(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/*.star", "kinds/*.star", "../x/*.star"]
        //- /modules/zz.star
        target_kind("other_kind", "Taken.")
        "#,
    );
    let (db, workspace, _log) = load(&system);
    assert_eq!(
        codes(&db, workspace),
        [
            "duplicate_kind modules/zz.star",
            "module_not_found once.toml",
            "invalid_module_path once.toml"
        ]
    );
}
