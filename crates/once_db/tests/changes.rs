//! Creation events agree with the walk: a file the walk would skip (`.gitignore`, hidden,
//! `target`) never joins a package's files, whoever reports it (the server's watcher, an
//! editor watching `**/*`).

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "tests set up and inspect real files and time real work"
)]

use std::sync::Arc;

use once_db::{ChangeEvent, OsSystem, RootDatabase, Workspace, apply_changes};

fn package_files(db: &RootDatabase, workspace: Workspace) -> Vec<String> {
    workspace
        .packages(db)
        .iter()
        .flat_map(|package| {
            package
                .files(db)
                .iter()
                .map(|file| once_db::Package::join(package.path(db), file))
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn created_files_the_walk_skips_stay_out_of_packages() {
    let dir = tempfile::tempdir().expect("temporary directory");
    let root = dir.path();
    let write = |path: &str, text: &str| {
        let path = root.join(path);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("directory");
        std::fs::write(path, text).expect("write");
    };
    write("once.toml", "[workspace]\n");
    write(".gitignore", "*.log\n");
    write("app/once.toml", "");
    write("app/.gitignore", "build/\n!keep.log\n");
    write("app/src/main.rs", "");
    let mut db = RootDatabase::new(Arc::new(OsSystem));
    let workspace = db.load(root.to_path_buf());
    let created = [
        "app/debug.log",
        "app/keep.log",
        "app/build/out.rs",
        "app/target/debug/x.rs",
        "app/.cache/y.rs",
        "app/src/new.rs",
    ];
    for path in created {
        write(path, "");
    }
    let events: Vec<ChangeEvent> = created
        .iter()
        .map(|path| ChangeEvent::Created(root.join(path)))
        .collect();
    apply_changes(&mut db, &events);
    let warm = package_files(&db, workspace);
    let mut fresh_db = RootDatabase::new(Arc::new(OsSystem));
    let fresh = fresh_db.load(root.to_path_buf());
    assert_eq!(warm, package_files(&fresh_db, fresh));
    assert!(warm.contains(&"app/src/new.rs".to_owned()), "{warm:?}");
    assert!(warm.contains(&"app/keep.log".to_owned()), "{warm:?}");
    assert!(
        !warm
            .iter()
            .any(|f| f.contains("build/") || f.ends_with("debug.log"))
    );
}
