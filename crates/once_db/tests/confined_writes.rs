//! Confined writes against a real file system under attack: a package directory swapped
//! with a symbolic link to a directory outside the workspace while files are written.

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

use once_db::{FileWrite, OsSystem, System, write_files};
use rustix::fs::{CWD, RenameFlags, renameat_with};

/// Swaps `a` and `b` (a directory and a symbolic link) every millisecond until `stop`,
/// for at most `limit`; returns how many swaps happened.
fn swap_until(a: &Path, b: &Path, stop: &AtomicBool, limit: Duration) -> usize {
    let started = Instant::now();
    let mut swaps = 0;
    while !stop.load(Ordering::Relaxed) && started.elapsed() < limit {
        if renameat_with(CWD, a, CWD, b, RenameFlags::EXCHANGE).is_ok() {
            swaps += 1;
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    swaps
}

#[test]
fn a_directory_swapped_with_a_symlink_never_receives_a_write_outside() {
    const ATTEMPTS: usize = 2_000;
    // Memory-backed when the machine has it: 2,000 flushes to a disk take half a minute.
    let scratch = Path::new("/dev/shm");
    let tempdir = || match scratch.is_dir() {
        true => tempfile::tempdir_in(scratch),
        false => tempfile::tempdir(),
    };
    let outside = tempdir().unwrap();
    let workspace = tempdir().unwrap();
    let root = workspace.path().to_path_buf();
    std::fs::write(root.join("once.toml"), "[workspace]\n").unwrap();
    std::fs::create_dir(root.join("pkg")).unwrap();
    std::os::unix::fs::symlink(outside.path(), root.join("pkg-swap")).unwrap();

    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (stop, a, b) = (stop.clone(), root.join("pkg"), root.join("pkg-swap"));
        std::thread::spawn(move || swap_until(&a, &b, &stop, Duration::from_secs(60)))
    };
    let mut refused = 0;
    for attempt in 0..ATTEMPTS {
        // Start each attempt while `pkg` is the real directory, so that a swap lands in
        // the middle of the write (a write checking the path first, then using it, sent
        // about 1 in 1,000 of these attempts outside).
        let waiting = Instant::now();
        while !root
            .join("pkg")
            .symlink_metadata()
            .is_ok_and(|m| m.is_dir())
            && waiting.elapsed() < Duration::from_millis(50)
        {
            std::thread::yield_now();
        }
        let write = FileWrite {
            path: format!("pkg/file-{attempt}.txt"),
            contents: format!("{attempt}\n").into_bytes(),
        };
        let lock = OsSystem.lock_writes(&root).unwrap();
        if let Err(e) = write_files(&OsSystem, &lock, &root, &[write]) {
            refused += 1;
            assert!(
                e.message.contains("; once does not write through links"),
                "unclear error: {e}"
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    let swaps = swapper.join().unwrap();
    let escaped: Vec<_> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(swaps > 10, "the swapper ran ({swaps} swaps)");
    assert!(
        escaped.is_empty(),
        "written outside the workspace: {escaped:?}"
    );
    // Whichever name the package directory has now, it holds every accepted write.
    let inside = ["pkg", "pkg-swap"]
        .iter()
        .map(|name| root.join(name))
        .filter(|path| path.symlink_metadata().is_ok_and(|m| m.is_dir()))
        .map(|path| std::fs::read_dir(path).unwrap().count())
        .sum::<usize>();
    assert_eq!(inside, ATTEMPTS - refused);
}
