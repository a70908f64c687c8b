//! The change layer is always right: events bump exactly the file they name, and a rescan
//! bumps exactly the files whose stamp differs from what their reads saw (modules, sources
//! and manifests alike), never everything and never nothing.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_db::{
    ChangeEvent, Db, ExecutionLog, MemorySystem, RootDatabase, System, Workspace, apply_changes,
    file_digest, source_text,
};
use once_fixture::Fixture;
use once_graph::{kind_catalog, workspace_diagnostics};
use salsa::plumbing::AsId;

const ROOT: &str = once_fixture::ROOT;

/// Three packages, a module registered by the root manifest, and a source file each.
fn fixture() -> Fixture {
    Fixture::parse(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/*.star"]
        //- /modules/text.star
        target_kind("text_kind", "Text.")
        //- /modules/other.star
        target_kind("other_kind", "Other.")
        //- /pkgs/p0/once.toml
        [[target]]
        name = "Text"
        kind = "text_kind"

        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]
        //- /pkgs/p0/src/lib.rs
        pub fn f() {}
        //- /pkgs/p1/once.toml
        [[target]]
        name = "Text"
        kind = "text_kind"

        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]
        //- /pkgs/p1/src/lib.rs
        pub fn f() {}
        //- /pkgs/p2/once.toml
        [[target]]
        name = "Text"
        kind = "text_kind"

        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]
        //- /pkgs/p2/src/lib.rs
        pub fn f() {}
        "#,
    )
}

fn system() -> MemorySystem {
    fixture().system()
}

fn load(system: &MemorySystem) -> (RootDatabase, Workspace, ExecutionLog) {
    let (mut db, log) = RootDatabase::with_execution_log(Arc::new(system.clone()));
    let workspace = db.load(PathBuf::from(ROOT));
    (db, workspace, log)
}

fn codes(db: &RootDatabase, workspace: Workspace) -> Vec<String> {
    workspace_diagnostics(db, workspace)
        .iter()
        .map(|d| format!("{} {}", d.code, d.file.as_deref().unwrap_or("")))
        .collect()
}

/// The workspace-relative paths (files of the fixture) whose `source_text` ran, sorted.
fn files_read(db: &RootDatabase, executed: &[String]) -> Vec<String> {
    let fixture = fixture();
    let mut paths: Vec<String> = executed
        .iter()
        .filter_map(|entry| entry.strip_prefix("source_text("))
        .filter_map(|id| {
            fixture
                .files
                .iter()
                .map(|file| file.path.clone())
                .find(|path| {
                    db.file(path)
                        .is_some_and(|file| id == format!("{:?})", file.as_id()))
                })
        })
        .collect();
    paths.sort();
    paths
}

fn write(system: &MemorySystem, path: &str, text: &str) {
    system.write(format!("{ROOT}/{path}"), text);
}

#[test]
fn a_rescan_without_a_change_reruns_nothing() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    log.take();
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let executed = log.take();
    assert_eq!(executed, Vec::<String>::new(), "a rescan bumped something");
}

#[test]
fn a_rescan_sees_an_edited_module_and_reevaluates_only_it() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    log.take();
    // The module no longer defines the kind the packages use; no event reports it.
    write(
        &system,
        "modules/text.star",
        "target_kind(\"renamed_kind\", \"Text.\")\n",
    );
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert!(kind_catalog(&db, workspace).get("renamed_kind").is_some());
    assert_eq!(
        codes(&db, workspace),
        [
            "unknown_target_kind pkgs/p0/once.toml",
            "unknown_target_kind pkgs/p1/once.toml",
            "unknown_target_kind pkgs/p2/once.toml",
        ]
    );
    let executed = log.take();
    assert_eq!(files_read(&db, &executed), ["modules/text.star"]);
    let modules = executed
        .iter()
        .filter(|e| e.starts_with("module_kinds("))
        .count();
    assert_eq!(modules, 1, "{executed:?}");
}

#[test]
fn a_rescan_rereads_only_the_edited_manifest() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    log.take();
    write(
        &system,
        "pkgs/p1/once.toml",
        "[[target]]\nname = \"Text\"\nkind = \"no_such_kind\"\n",
    );
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert_eq!(
        codes(&db, workspace),
        ["unknown_target_kind pkgs/p1/once.toml"]
    );
    assert_eq!(files_read(&db, &log.take()), ["pkgs/p1/once.toml"]);
}

#[test]
fn a_source_file_is_an_input_that_events_and_rescans_bump() {
    let system = system();
    let (mut db, _workspace, log) = load(&system);
    let path = "pkgs/p2/src/lib.rs";
    let file = db.file_for_path(path);
    let text = |db: &RootDatabase| source_text(db, file).text.to_string();
    assert_eq!(text(&db), "pub fn f() {}\n");

    // A content change reported by the watcher.
    write(&system, path, "pub fn g() {}\n");
    apply_changes(
        &mut db,
        &[ChangeEvent::Changed(PathBuf::from(format!(
            "{ROOT}/{path}"
        )))],
    );
    assert_eq!(text(&db), "pub fn g() {}\n");

    // A content change only a rescan finds.
    write(&system, path, "pub fn h() {}\n");
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert_eq!(text(&db), "pub fn h() {}\n");

    // A metadata-only change is re-read; nothing else reruns.
    log.take();
    system.touch(Path::new(&format!("{ROOT}/{path}")));
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert_eq!(text(&db), "pub fn h() {}\n");
    assert_eq!(files_read(&db, &log.take()), [path]);

    // The file becomes a directory.
    system.remove(Path::new(&format!("{ROOT}/{path}")));
    write(&system, &format!("{path}/inner.rs"), "\n");
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert!(
        source_text(&db, file).read_error.is_some(),
        "a directory reads as an error"
    );
    assert!(
        system
            .walk(Path::new(ROOT))
            .is_ok_and(|files| files.contains(&format!("{path}/inner.rs")))
    );
}

#[test]
fn editing_one_source_file_reruns_its_digest_and_nothing_manifest_related() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    let sources: Vec<_> = (0..3)
        .map(|i| db.file_for_path(&format!("pkgs/p{i}/src/lib.rs")))
        .collect();
    let digests = |db: &RootDatabase| -> Vec<String> {
        sources
            .iter()
            .map(|file| match file_digest(db, *file) {
                Ok(digest) => digest.to_hex(),
                Err(err) => err.to_string(),
            })
            .collect()
    };
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let before = digests(&db);
    log.take();

    write(&system, "pkgs/p1/src/lib.rs", "pub fn edited() {}\n");
    apply_changes(
        &mut db,
        &[ChangeEvent::Changed(PathBuf::from(format!(
            "{ROOT}/pkgs/p1/src/lib.rs"
        )))],
    );
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    let after = digests(&db);
    assert_eq!(
        (before[0] == after[0], before[1] == after[1]),
        (true, false)
    );
    let executed = log.take();
    assert_eq!(
        executed,
        [
            format!("source_file({:?})", sources[1].as_id()),
            format!("file_digest({:?})", sources[1].as_id())
        ],
        "only the edited file's digest reruns"
    );

    // A rescan finds a second edit the same way.
    write(&system, "pkgs/p2/src/lib.rs", "pub fn also_edited() {}\n");
    apply_changes(&mut db, &[ChangeEvent::Rescan]);
    assert_eq!(codes(&db, workspace), Vec::<String>::new());
    assert_ne!(digests(&db)[2], after[2]);
    assert_eq!(
        log.take(),
        [
            format!("source_file({:?})", sources[2].as_id()),
            format!("file_digest({:?})", sources[2].as_id())
        ]
    );
}
