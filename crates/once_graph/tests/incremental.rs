//! Incrementality, proven with salsa's execution log: an edit re-runs only the queries
//! of the file it touched.
//!
//! The workspaces are generated (n packages alike, n up to 50), so the package is a fixture
//! template rendered once per package below a hand-written root.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_db::{
    ChangeEvent, ExecutionLog, MemorySystem, RootDatabase, System, Workspace, apply_changes,
};
use once_fixture::{Fixture, render};
use once_graph::{ChangedPaths, affected_tests, target_count, workspace_diagnostics};

const ROOT: &str = once_fixture::ROOT;

/// The root of the generated workspace.
const ROOT_MANIFEST: &str = r#"
    //- /once.toml
    [workspace]
"#;

/// One package of the generated workspace, rendered per package: `{{i}}` is its number and
/// `{{deps}}` the previous package's library (nothing for the first).
const PACKAGE: &str = r#"
    //- /pkgs/p{{i}}/once.toml
    [[target]]
    name = "Lib"
    kind = "rust_library"
    srcs = ["src/lib.rs"]
    deps = [{{deps}}]

    [[target]]
    name = "Test"
    kind = "rust_test"
    srcs = ["tests/t.rs"]
    deps = ["./Lib"]
    //- /pkgs/p{{i}}/src/lib.rs
    pub fn f() {}
    //- /pkgs/p{{i}}/tests/t.rs
    #[test]
    fn t() {}
"#;

/// A workspace of `n` packages `pkgs/pN`, each with a library depending on the previous
/// package's library and a test.
fn workspace(n: usize) -> MemorySystem {
    workspace_with(ROOT_MANIFEST, n)
}

/// The `n` packages below the hand-written `root` fixture.
fn workspace_with(root: &str, n: usize) -> MemorySystem {
    let mut fixture = Fixture::parse(root);
    for i in 0..n {
        let deps = match i {
            0 => String::new(),
            _ => format!("\"pkgs/p{}/Lib\"", i - 1),
        };
        fixture.extend(Fixture::parse(&render(
            PACKAGE,
            &[("i", &i.to_string()), ("deps", &deps)],
        )));
    }
    fixture.system()
}

fn load(system: &MemorySystem) -> (RootDatabase, Workspace, ExecutionLog) {
    let (mut db, log) = RootDatabase::with_execution_log(Arc::new(system.clone()));
    let workspace = db.load(PathBuf::from(ROOT));
    (db, workspace, log)
}

/// The executed queries, as `name(file or package path)` with ids mapped back to paths.
fn executed(db: &RootDatabase, log: &ExecutionLog) -> Vec<String> {
    let _ = db;
    let mut names = log.take();
    names.sort();
    names
}

/// Changes `path` once (a trailing comment), so that the changes a test measures are not
/// its first: the first change of a file lowers its durability.
fn warm_up(system: &MemorySystem, db: &mut RootDatabase, path: &str) {
    let text = system.read_to_string(Path::new(path)).unwrap();
    system.write(path, format!("{text}\n# warm-up\n"));
    apply_changes(db, &[ChangeEvent::Changed(PathBuf::from(path))]);
}

fn count(executed: &[String], query: &str) -> usize {
    executed
        .iter()
        .filter(|e| e.starts_with(&format!("{query}(")))
        .count()
}

#[test]
fn editing_one_manifest_reruns_only_its_queries() {
    let system = workspace(50);
    let (mut db, workspace, log) = load(&system);
    let diagnostics = workspace_diagnostics(&db, workspace);
    assert!(
        diagnostics.is_empty(),
        "{} diagnostics, first: {:?}",
        diagnostics.len(),
        diagnostics.first()
    );
    let cold = executed(&db, &log);
    assert_eq!(count(&cold, "manifest"), 51, "{cold:?}");
    // Nothing on the workspace-wide path keeps (or builds) a memoised tree.
    assert_eq!(count(&cold, "parse_manifest"), 0, "{cold:?}");

    // The first change of a file lowers its durability (see `once_db`'s `file_input`):
    // what read it cannot backdate then. Measured from the second change on.
    let path = format!("{ROOT}/pkgs/p17/once.toml");
    warm_up(&system, &mut db, &path);
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    let _ = log.take();
    // A comment-free but meaningful edit: add an attribute to p17's library.
    let text = system.read_to_string(Path::new(&path)).unwrap().replace(
        "srcs = [\"src/lib.rs\"]\ndeps",
        "srcs = [\"src/lib.rs\"]\nattrs = { edition = \"2021\" }\ndeps",
    );
    system.write(&path, text);
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    let warm = executed(&db, &log);
    let names: Vec<&str> = warm
        .iter()
        .map(|e| e.split('(').next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "file_diagnostics",
            "interpreter_diagnostics",
            "manifest",
            "package_nodes",
            "package_reference_diagnostics",
            "resolved_targets",
            "source_text",
            "target_summaries"
        ],
        "exactly these queries of the edited package re-run, each once; the package's graph \
         nodes and name table backdate, so nothing global re-runs: {warm:?}"
    );
    for query in [
        "source_text",
        "manifest",
        "resolved_targets",
        "file_diagnostics",
    ] {
        assert_eq!(
            count(&warm, query),
            1,
            "{query} should re-run once for the edited file: {warm:?}"
        );
    }
    // The name table backdated, so no dependent package re-validated.
    assert_eq!(count(&warm, "target_summaries"), 1, "{warm:?}");
}

#[test]
fn editing_a_source_file_reruns_no_manifest_query() {
    let system = workspace(10);
    let (mut db, workspace, log) = load(&system);
    let _ = workspace_diagnostics(&db, workspace);
    let _ = log.take();
    let path = format!("{ROOT}/pkgs/p3/src/lib.rs");
    system.write(&path, "pub fn g() {}\n");
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    let _ = workspace_diagnostics(&db, workspace);
    let paths = ChangedPaths::new(&db, vec!["pkgs/p3/src/lib.rs".to_owned()]);
    let affected = affected_tests(&db, workspace, paths);
    assert_eq!(affected.len(), 7, "{affected:?}");
    let warm = executed(&db, &log);
    for query in [
        "source_text",
        "parse_manifest",
        "manifest",
        "resolved_targets",
        "file_diagnostics",
        "workspace_diagnostics",
    ] {
        assert_eq!(
            count(&warm, query),
            0,
            "{query} re-ran after a source edit: {warm:?}"
        );
    }
}

/// Affected tests after a manifest edit re-derive the edited package's tests only, and
/// owning a path reads two indexes, not every package.
#[test]
fn affected_tests_after_a_manifest_edit_rederive_one_package() {
    let system = workspace(30);
    let (mut db, workspace, log) = load(&system);
    let paths = ChangedPaths::new(&db, vec!["pkgs/p3/src/lib.rs".to_owned()]);
    assert_eq!(affected_tests(&db, workspace, paths).len(), 27);
    let cold = executed(&db, &log);
    // One per package, the root included.
    assert_eq!(count(&cold, "package_tests"), 31, "{cold:?}");

    let path = format!("{ROOT}/pkgs/p17/once.toml");
    let text = system
        .read_to_string(Path::new(&path))
        .unwrap()
        .replace("name = \"Test\"", "name = \"Test\"\nlabels = [\"slow\"]");
    system.write(&path, text);
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    let paths = ChangedPaths::new(&db, vec!["pkgs/p3/src/lib.rs".to_owned()]);
    assert_eq!(affected_tests(&db, workspace, paths).len(), 27);
    let warm = executed(&db, &log);
    assert_eq!(count(&warm, "package_tests"), 1, "{warm:?}");
    // The test list it reads changed (a label), so the answer is computed once more.
    assert_eq!(count(&warm, "affected_tests"), 1, "{warm:?}");
    assert_eq!(count(&warm, "package_directories"), 0, "{warm:?}");
}

/// A changed project module affects every test, each once and for that one reason.
#[test]
fn a_changed_module_affects_every_test_once() {
    let system = workspace_with(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/*.star"]
        //- /modules/extra.star
        target_kind("extra_kind", "Unused by the targets.")
        "#,
        5,
    );
    let (db, workspace, _log) = load(&system);
    let paths = ChangedPaths::new(&db, vec!["modules/extra.star".to_owned()]);
    let affected = affected_tests(&db, workspace, paths);
    let rendered: Vec<String> = affected
        .iter()
        .map(|t| format!("{}: {}", t.id, t.reasons.join(" | ")))
        .collect();
    assert_eq!(
        rendered,
        (0..5)
            .map(|i| format!("pkgs/p{i}/Test: changed module `modules/extra.star`"))
            .collect::<Vec<_>>()
    );
}

/// A new target changes its package's set of targets: the package's queries and its
/// dependents' validation re-run, and the whole-workspace work only as a sum and a check
/// of one package's dependencies; neither the graph nor cycle detection is rebuilt.
#[test]
fn appending_a_target_reruns_no_whole_workspace_graph_work() {
    let system = workspace(50);
    let (mut db, workspace, log) = load(&system);
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    assert_eq!(*target_count(&db, workspace), 100);
    let path = format!("{ROOT}/pkgs/p17/once.toml");
    warm_up(&system, &mut db, &path);
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    assert_eq!(*target_count(&db, workspace), 100);
    let _ = log.take();
    let text = system.read_to_string(Path::new(&path)).unwrap()
        + "\n[[target]]\nname = \"Extra\"\nkind = \"rust_library\"\nsrcs = [\"src/lib.rs\"]\ndeps = [\"./Lib\"]\n";
    system.write(&path, text);
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    assert_eq!(*target_count(&db, workspace), 101);
    let warm = executed(&db, &log);
    let names: Vec<&str> = warm
        .iter()
        .map(|e| e.split('(').next().unwrap_or(""))
        .collect();
    assert_eq!(
        names,
        [
            "chunk_target_count",
            "file_diagnostics",
            "interpreter_diagnostics",
            "manifest",
            "package_dependencies",
            "package_has_internal_cycle",
            "package_nodes",
            "package_reference_diagnostics",
            "package_reference_diagnostics",
            "resolved_targets",
            "source_text",
            "target_count",
            "target_summaries",
        ],
        "p17's queries (its own cycle check included), its dependent p18's reference checks \
         (unchanged: its validation backdates), the sum of p17's chunk of packages and the \
         total; no graph, no workspace-wide cycle search"
    );

    // A dependency that closes a cycle of packages is found.
    let path = format!("{ROOT}/pkgs/p3/once.toml");
    let text = system.read_to_string(Path::new(&path)).unwrap().replace(
        "deps = [\"pkgs/p2/Lib\"]",
        "deps = [\"pkgs/p2/Lib\", \"pkgs/p5/Lib\"]",
    );
    system.write(&path, text);
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    let codes: Vec<String> = workspace_diagnostics(&db, workspace)
        .iter()
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(
        codes,
        ["dependency cycle: pkgs/p3/Lib -> pkgs/p5/Lib -> pkgs/p4/Lib -> pkgs/p3/Lib"]
    );
}

/// The interpreter checks look at paths no file input tracks (a hidden virtual
/// environment, an interpreter outside the workspace): each is a host path input that
/// every change batch looks at again. A virtual environment made, broken or removed is
/// seen at the next batch, an empty one too (a server applies its watcher's batch before
/// each request), and re-runs only the check of the package naming it; an unrelated edit
/// re-runs no check and leaves the answer as the disk has it.
#[test]
fn interpreter_checks_follow_the_disk_and_rerun_only_when_what_they_looked_at_changed() {
    let root = r#"
        //- /once.toml
        [workspace]
        python = "/opt/python/bin/python3"
        //- /py/once.toml
        [[target]]
        name = "Tests"
        kind = "pytest_test"
        srcs = ["test_a.py"]

        [target.attrs]
        python = ".venv"

        [[target]]
        name = "Unit"
        kind = "unittest_test"
        srcs = ["test_a.py"]
        //- /py/test_a.py
        def test_a(): pass
    "#;
    let system = workspace_with(root, 3);
    let (mut db, workspace, log) = load(&system);
    let invalid = |db: &RootDatabase| {
        workspace_diagnostics(db, workspace)
            .iter()
            .filter(|d| d.code.as_str() == "invalid_interpreter")
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
    };
    let missing = [
        "`[workspace] python` names `/opt/python/bin/python3`, which does not exist",
        "attribute `python` names `.venv`, which does not exist",
    ];
    assert_eq!(invalid(&db), missing);
    let _ = log.take();
    let venv_python = PathBuf::from(format!("{ROOT}/.venv/bin/python3"));
    let edit_unrelated = |db: &mut RootDatabase| {
        let path = format!("{ROOT}/pkgs/p1/once.toml");
        let text = system.read_to_string(Path::new(&path)).unwrap_or_default();
        system.write(&path, format!("{text}\n# edited\n"));
        apply_changes(db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    };

    // (The first change of a file lowers its durability, and what read it cannot
    // backdate then: measured from the second change on.)
    edit_unrelated(&mut db);
    assert_eq!(invalid(&db), missing);
    let _ = log.take();
    // An unrelated edit: no check runs again, and the answer stands.
    edit_unrelated(&mut db);
    assert_eq!(invalid(&db), missing);
    let warm = executed(&db, &log);
    assert_eq!(count(&warm, "interpreter_diagnostics"), 0, "{warm:?}");
    assert_eq!(count(&warm, "host_entry"), 0, "{warm:?}");

    // The environment and the interpreter appear; nothing in the workspace changes.
    system.write(venv_python.clone(), "#!");
    system.chmod(&venv_python, 0o755);
    system.write("/opt/python/bin/python3", "#!");
    system.chmod(Path::new("/opt/python/bin/python3"), 0o755);
    apply_changes(&mut db, &[]);
    assert_eq!(invalid(&db), Vec::<String>::new());
    let warm = executed(&db, &log);
    assert_eq!(
        count(&warm, "interpreter_diagnostics"),
        2,
        "only the checks of the root (`[workspace] python`) and of `py` ran again: {warm:?}"
    );

    // An unrelated edit again: nothing re-checks, nothing goes stale.
    edit_unrelated(&mut db);
    assert_eq!(invalid(&db), Vec::<String>::new());
    let warm = executed(&db, &log);
    assert_eq!(count(&warm, "interpreter_diagnostics"), 0, "{warm:?}");

    // A change no check decides by (the file written again, same kind and mode).
    system.write(venv_python.clone(), "#!/bin/sh");
    apply_changes(&mut db, &[]);
    assert_eq!(invalid(&db), Vec::<String>::new());
    let warm = executed(&db, &log);
    assert_eq!(count(&warm, "interpreter_diagnostics"), 0, "{warm:?}");

    // The environment's interpreter loses its execute bits, then the environment goes.
    system.chmod(&venv_python, 0o644);
    apply_changes(&mut db, &[]);
    assert_eq!(
        invalid(&db),
        ["attribute `python` names `.venv`, but `.venv/bin/python3` is not executable"]
    );
    system.remove(&venv_python);
    apply_changes(&mut db, &[]);
    assert_eq!(
        invalid(&db),
        ["attribute `python` names `.venv`, which does not exist"]
    );
    let warm = executed(&db, &log);
    assert_eq!(count(&warm, "interpreter_diagnostics"), 2, "{warm:?}");

    // A database loaded afresh agrees with the warm one.
    let (cold, cold_workspace, _) = load(&system);
    let cold_invalid: Vec<String> = workspace_diagnostics(&cold, cold_workspace)
        .iter()
        .filter(|d| d.code.as_str() == "invalid_interpreter")
        .map(|d| d.message.clone())
        .collect();
    assert_eq!(cold_invalid, invalid(&db));
}

/// Durability and chunks: the first edit of a manifest re-verifies what read any file;
/// from the second edit of the same file on, the workspace-wide queries check one
/// dependency per chunk of packages and each untouched chunk in one step, so the memos
/// validated are a small fraction of the workspace (they were several per package).
#[test]
fn a_repeated_edit_validates_a_few_memos_not_every_package() {
    let packages = 1000;
    let system = workspace(packages);
    let (mut db, executions, validations) =
        RootDatabase::with_validation_log(Arc::new(system.clone()));
    let workspace = db.load(PathBuf::from(ROOT));
    assert!(workspace_diagnostics(&db, workspace).is_empty());
    assert_eq!(*target_count(&db, workspace), 2 * packages);
    let path = format!("{ROOT}/pkgs/p17/once.toml");
    let original = system.read_to_string(Path::new(&path)).unwrap();
    let mut validated = Vec::new();
    for round in 0..3 {
        system.write(&path, format!("{original}\n# edit {round}\n"));
        let _ = (executions.take(), validations.take());
        apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
        assert!(workspace_diagnostics(&db, workspace).is_empty());
        assert_eq!(*target_count(&db, workspace), 2 * packages);
        let names = validations.take();
        validated.push(names.len());
        let executed = executions.take();
        assert_eq!(count(&executed, "source_text"), 1, "{executed:?}");
    }
    // The first edit still checks every package (the file's input was MEDIUM).
    assert!(validated[0] > 2 * packages, "{validated:?}");
    for later in &validated[1..] {
        assert!(
            *later < packages / 2 && *later * 10 < validated[0],
            "a repeated edit validated {later} memos of a {packages}-package workspace: \
             {validated:?}"
        );
    }
}
