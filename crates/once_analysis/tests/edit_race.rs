//! Edits applied while an attacker swaps the package directory with a symbolic link to a
//! directory outside the workspace (`renameat2(RENAME_EXCHANGE)` every millisecond): no
//! edit may land outside, and an edit that meets the link fails saying so.
//!
//! The race needs a real directory and a real `renameat2`, so the workspace is written to
//! disk here rather than as an in-memory fixture.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test races real writes on a real directory"
)]
#![cfg(target_os = "linux")]

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use once_analysis::{AnalysisHost, EditOperation, EditOutcome, EditRequest, OsSystem};
use once_model::AttrValue;
use rustix::fs::{CWD, RenameFlags, renameat_with};

const MANIFEST: &str = "[[target]]\nname = \"T\"\nkind = \"filegroup\"\nsrcs = []\n";

#[test]
fn edits_racing_a_directory_swapped_with_a_symlink_never_write_outside() {
    const ATTEMPTS: usize = 2_000;
    // Memory-backed when the machine has it: 2,000 flushes to a disk take half a minute.
    let scratch = Path::new("/dev/shm");
    let tempdir = || match scratch.is_dir() {
        true => tempfile::tempdir_in(scratch),
        false => tempfile::tempdir(),
    };
    let outside = tempdir().unwrap();
    std::fs::write(outside.path().join("once.toml"), MANIFEST).unwrap();
    let workspace = tempdir().unwrap();
    let root = workspace.path().to_path_buf();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::fs::write(root.join("pkg/once.toml"), MANIFEST).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("pkg-swap")).unwrap();
    let mut host = AnalysisHost::load(Arc::new(OsSystem), root.clone());

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, a, b) = (stop.clone(), root.join("pkg"), root.join("pkg-swap"));
        std::thread::spawn(move || {
            let started = Instant::now();
            let mut swaps = 0;
            while !stop.load(Ordering::Relaxed) && started.elapsed() < Duration::from_secs(120) {
                if renameat_with(CWD, &a, CWD, &b, RenameFlags::EXCHANGE).is_ok() {
                    swaps += 1;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            swaps
        })
    };
    let (mut applied, mut refused) = (0, 0);
    for attempt in 0..ATTEMPTS {
        // Start each attempt while `pkg` is the real directory, so that a swap lands in
        // the middle of the edit.
        let waiting = Instant::now();
        while !root
            .join("pkg")
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir())
            && waiting.elapsed() < Duration::from_millis(50)
        {
            std::thread::yield_now();
        }
        let request = EditRequest {
            package: "pkg".into(),
            operations: vec![EditOperation::Update {
                target_name: "T".into(),
                set: vec![(
                    "srcs".into(),
                    Some(AttrValue::List(vec![AttrValue::String(format!(
                        "{attempt}.txt"
                    ))])),
                )],
            }],
        };
        match host.apply_edit(&request) {
            Ok(EditOutcome::Applied { .. }) => applied += 1,
            Ok(rejected) => panic!("attempt {attempt} was rejected: {rejected:?}"),
            Err(message) => {
                refused += 1;
                assert!(
                    message.contains("; once does not write through links"),
                    "attempt {attempt}: unclear error: {message}"
                );
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    assert!(swaps > 10, "the swapper ran ({swaps} swaps)");
    assert!(applied > 0, "{applied} applied, {refused} refused");
    let outside_files: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(outside_files, ["once.toml"], "nothing new outside");
    assert_eq!(
        std::fs::read_to_string(outside.path().join("once.toml")).unwrap(),
        MANIFEST,
        "the outside manifest was not edited ({applied} applied, {refused} refused, {swaps} swaps)"
    );
}
