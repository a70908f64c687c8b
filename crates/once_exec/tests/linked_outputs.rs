//! Outputs restored as hard links to sealed blobs: what they look like (read-only, the
//! blob's inode), and every way of writing to the store through one (an in-place write
//! keeping the size, a truncation, a `chmod`, writes within the same clock tick) ends in
//! a miss that rebuilds, or a hit with the right bytes, never a hit with wrong bytes. A
//! re-run action never writes into a linked inode; a store on another file system falls
//! back to copies; linking a blob again (which moves its change time) costs no wrong hit.

use std::fs::OpenOptions;
use std::io::{Seek as _, SeekFrom, Write as _};
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use once_exec::record::OutputKind;
use once_exec::store::SEAL_SECONDS;
use once_exec::{
    ActionResult, CacheState, ExecOptions, ExecutionReport, Executor, HostEnvironment,
    PlannedAction, Store,
};
use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep, Command};

/// An action of target `T` running `sh -c script` from the workspace root, counting its
/// runs in `runs.log`; `key` is its static key (a new one re-runs it).
fn shell(key: &str, script: &str, outputs: &[&str]) -> PlannedAction {
    let script = format!("echo {key} >> runs.log; mkdir -p $OUT; {script}");
    let mut command = Command::new(vec!["sh".to_owned(), "-c".to_owned(), script]);
    command
        .env
        .insert("OUT".to_owned(), ".once/out/T".to_owned());
    PlannedAction {
        action: Action {
            id: "T#build/a".to_owned(),
            target: "T".to_owned(),
            capability: "build".to_owned(),
            step: ActionStep::Run(command),
            inputs: Vec::new(),
            outputs: outputs
                .iter()
                .map(|output| format!(".once/out/T/{output}"))
                .collect(),
            cacheable: true,
        },
        static_key: Sha256Digest::of(key.as_bytes()),
    }
}

/// Writes `content` (no newline) to `$OUT/a` with the shell's default mode (0644).
fn writes_a(key: &str, content: &str) -> PlannedAction {
    shell(key, &format!("printf {content} > $OUT/a"), &["a"])
}

fn run_with_store(root: &Path, store_path: &Path, plan: &[PlannedAction]) -> ExecutionReport {
    let store = Store::open(store_path).unwrap();
    Executor::new(root, &store)
        .with_options(ExecOptions {
            jobs: Some(2),
            keep_going: false,
            host_env: HostEnvironment::from_pairs([("PATH", "/usr/bin:/bin")]),
            stream_memory_limit: 4096,
            once_program: None,
            sandbox: once_exec::SandboxMode::Off,
            validate: false,
        })
        .run(plan)
        .unwrap()
}

struct Workspace {
    directory: tempfile::TempDir,
}

impl Workspace {
    fn new() -> Workspace {
        Workspace {
            directory: tempfile::tempdir().unwrap(),
        }
    }

    fn root(&self) -> &Path {
        self.directory.path()
    }

    fn store(&self) -> PathBuf {
        Store::default_path(self.root())
    }

    fn output(&self, name: &str) -> PathBuf {
        self.root().join(".once/out/T").join(name)
    }

    fn run(&self, plan: &[PlannedAction]) -> ExecutionReport {
        run_with_store(self.root(), &self.store(), plan)
    }

    fn runs(&self) -> usize {
        std::fs::read_to_string(self.root().join("runs.log"))
            .unwrap_or_default()
            .lines()
            .count()
    }
}

/// The path of the blob holding the first output of `result`.
fn blob_of(store: &Path, result: &ActionResult) -> PathBuf {
    let OutputKind::File { digest, .. } = result.entries[0].kind else {
        panic!("a file output: {:?}", result.entries)
    };
    let hex = digest.to_hex();
    store.join("blobs").join(&hex[..2]).join(&hex[2..])
}

/// Checks the one action's cache state, the output's bytes, that it is read-only, and
/// whether it is linked to its blob (same inode) and that blob still sealed.
fn check(
    report: &ExecutionReport,
    workspace: &Workspace,
    store: &Path,
    cache: CacheState,
    content: &str,
    linked: bool,
) {
    let result = &report.results[0];
    assert!(report.succeeded(), "{result:?}");
    assert_eq!(result.cache, Some(cache), "{result:?}");
    let output = workspace.output("a");
    assert_eq!(std::fs::read_to_string(&output).unwrap(), content);
    let metadata = std::fs::symlink_metadata(&output).unwrap();
    assert_eq!(metadata.mode() & 0o7777, 0o444, "outputs are read-only");
    let blob = std::fs::metadata(blob_of(store, result)).unwrap();
    assert_eq!(
        metadata.ino() == blob.ino(),
        linked,
        "linked to the blob: {linked}"
    );
    assert_eq!(blob.mtime(), SEAL_SECONDS, "the blob is sealed");
    assert_eq!(blob.mode() & 0o7777, 0o444);
}

#[test]
fn restored_and_fresh_outputs_are_read_only_links_to_sealed_blobs() {
    let workspace = Workspace::new();
    let store = workspace.store();
    let plan = [writes_a("v1", "hello")];
    let first = workspace.run(&plan);
    check(&first, &workspace, &store, CacheState::Miss, "hello", true);
    let hit = workspace.run(&plan);
    check(&hit, &workspace, &store, CacheState::Hit, "hello", true);
    std::fs::remove_dir_all(workspace.root().join(".once/out")).unwrap();
    let restored = workspace.run(&plan);
    check(
        &restored,
        &workspace,
        &store,
        CacheState::Hit,
        "hello",
        true,
    );
    assert_eq!(workspace.runs(), 1);
    // The recorded mode is the one the action wrote; dependents' keys see that one.
    let OutputKind::File { mode, .. } = restored.results[0].entries[0].kind else {
        panic!("a file")
    };
    assert_eq!(mode, 0o644);
}

/// Each way of writing through a linked output, done right after the build (within the
/// same clock tick as the blob's link and the stamp file), then the next build.
#[test]
fn writes_through_a_linked_output_never_give_a_hit_with_wrong_bytes() {
    type Tamper = fn(&Path);
    let tampers: [(&str, Tamper, bool); 5] = [
        (
            "in-place write keeping the size",
            |path| {
                let mut file = OpenOptions::new().write(true).open(path).unwrap();
                file.write_all(b"HELLO").unwrap();
            },
            true,
        ),
        (
            "one byte in the middle, size kept",
            |path| {
                let mut file = OpenOptions::new().write(true).open(path).unwrap();
                file.seek(SeekFrom::Start(2)).unwrap();
                file.write_all(b"L").unwrap();
            },
            true,
        ),
        (
            "truncation",
            |path| {
                OpenOptions::new()
                    .write(true)
                    .truncate(true)
                    .open(path)
                    .unwrap();
            },
            true,
        ),
        (
            "truncation and the same length rewritten",
            |path| {
                std::fs::write(path, "jello").unwrap();
            },
            true,
        ),
        (
            "chmod only",
            |path| {
                std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o644)).unwrap();
            },
            false,
        ),
    ];
    for (what, tamper, changes_bytes) in tampers {
        let workspace = Workspace::new();
        let store = workspace.store();
        let plan = [writes_a("v1", "hello")];
        let first = workspace.run(&plan);
        check(&first, &workspace, &store, CacheState::Miss, "hello", true);
        let blob = blob_of(&store, &first.results[0]);
        // Immediately: no clock tick needs to pass for the seal to break.
        tamper(&workspace.output("a"));
        let next = workspace.run(&plan);
        if changes_bytes {
            check(&next, &workspace, &store, CacheState::Miss, "hello", true);
            assert_eq!(workspace.runs(), 2, "{what}: rebuilt");
            let warnings = &next.results[0].warnings;
            assert!(
                warnings.len() == 1 && warnings[0].contains("does not match its digest"),
                "{what}: reported: {warnings:?}"
            );
        } else {
            // Same bytes: hashed again, sealed again, reused.
            check(&next, &workspace, &store, CacheState::Hit, "hello", true);
            assert_eq!(workspace.runs(), 1, "{what}: reused");
        }
        assert_eq!(std::fs::read_to_string(&blob).unwrap(), "hello", "{what}");
        let after = workspace.run(&plan);
        check(&after, &workspace, &store, CacheState::Hit, "hello", true);
    }
}

#[test]
fn a_write_after_the_output_was_removed_and_restored_is_caught_too() {
    // The blob is linked by a restore (not by the capture), then written in place.
    let workspace = Workspace::new();
    let store = workspace.store();
    let plan = [writes_a("v1", "hello")];
    workspace.run(&plan);
    std::fs::remove_dir_all(workspace.root().join(".once/out")).unwrap();
    let restored = workspace.run(&plan);
    check(
        &restored,
        &workspace,
        &store,
        CacheState::Hit,
        "hello",
        true,
    );
    std::fs::write(workspace.output("a"), "HELLO").unwrap();
    // Outputs removed: the restore would link the (now unsound) blob again.
    std::fs::remove_dir_all(workspace.root().join(".once/out")).unwrap();
    let next = workspace.run(&plan);
    check(&next, &workspace, &store, CacheState::Miss, "hello", true);
    assert_eq!(workspace.runs(), 2);
}

#[test]
fn a_re_run_action_never_writes_into_a_linked_inode() {
    let workspace = Workspace::new();
    let store = workspace.store();
    let first = workspace.run(&[writes_a("v1", "hello")]);
    check(&first, &workspace, &store, CacheState::Miss, "hello", true);
    let blob = blob_of(&store, &first.results[0]);
    // A new revision of the action writes the same output in place (`>` truncates an
    // existing file; as root the missing write bit would not stop it). The executor
    // unlinks the declared outputs first, so the old blob keeps its bytes and its seal.
    let second = workspace.run(&[writes_a("v2", "world")]);
    check(&second, &workspace, &store, CacheState::Miss, "world", true);
    assert_eq!(std::fs::read_to_string(&blob).unwrap(), "hello");
    assert_eq!(std::fs::metadata(&blob).unwrap().mtime(), SEAL_SECONDS);
    let back = workspace.run(&[writes_a("v1", "hello")]);
    check(&back, &workspace, &store, CacheState::Hit, "hello", true);
    assert_eq!(workspace.runs(), 2);
}

#[test]
fn linking_a_blob_again_elsewhere_only_causes_a_re_check() {
    // Two checkouts share one store; both link the same blob (each link moves the
    // shared inode's change time, which the output stamps contain).
    let store_directory = tempfile::tempdir().unwrap();
    let store = store_directory.path().to_path_buf();
    let first = Workspace::new();
    let second = Workspace::new();
    let plan = [writes_a("v1", "hello")];
    let built = run_with_store(first.root(), &store, &plan);
    check(&built, &first, &store, CacheState::Miss, "hello", true);
    for _ in 0..2 {
        let linked = run_with_store(second.root(), &store, &plan);
        check(&linked, &second, &store, CacheState::Hit, "hello", true);
        let again = run_with_store(first.root(), &store, &plan);
        check(&again, &first, &store, CacheState::Hit, "hello", true);
        std::fs::remove_dir_all(second.root().join(".once/out")).unwrap();
    }
    // A write through the second checkout's link is seen from the first one.
    run_with_store(second.root(), &store, &plan);
    std::fs::write(second.output("a"), "HELLO").unwrap();
    let next = run_with_store(first.root(), &store, &plan);
    check(&next, &first, &store, CacheState::Miss, "hello", true);
    assert_eq!(first.runs(), 2);
}

#[test]
fn executables_are_copied_and_checked_by_their_stamps() {
    let workspace = Workspace::new();
    let store = workspace.store();
    let plan = [shell(
        "x",
        "printf '#!/bin/sh\\n' > $OUT/a; chmod 755 $OUT/a",
        &["a"],
    )];
    let first = workspace.run(&plan);
    assert_eq!(first.results[0].cache, Some(CacheState::Miss));
    let output = workspace.output("a");
    let blob = std::fs::metadata(blob_of(&store, &first.results[0])).unwrap();
    let metadata = std::fs::metadata(&output).unwrap();
    assert_ne!(metadata.ino(), blob.ino(), "copied, not linked");
    assert_eq!(metadata.mode() & 0o777, 0o755);
    // Changed in place, keeping the size, within the same tick as the build.
    std::fs::write(&output, "#!/bin/X\n").unwrap();
    let next = workspace.run(&plan);
    assert_eq!(next.results[0].cache, Some(CacheState::Hit));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "#!/bin/sh\n");
    assert_eq!(workspace.runs(), 1);
}

#[test]
fn a_store_on_another_file_system_falls_back_to_read_only_copies() {
    // /dev/shm is a tmpfs; the workspace is on the temporary directory's file system.
    let shm = Path::new("/dev/shm");
    let workspace = Workspace::new();
    if std::fs::metadata(shm).map(|m| m.dev()).ok()
        == Some(std::fs::metadata(workspace.root()).unwrap().dev())
    {
        panic!("this test needs /dev/shm on another file system than the temporary directory");
    }
    let store_directory = tempfile::tempdir_in(shm).unwrap();
    let store = store_directory.path().to_path_buf();
    let plan = [writes_a("v1", "hello")];
    let first = run_with_store(workspace.root(), &store, &plan);
    check(&first, &workspace, &store, CacheState::Miss, "hello", false);
    std::fs::remove_dir_all(workspace.root().join(".once/out")).unwrap();
    let restored = run_with_store(workspace.root(), &store, &plan);
    check(
        &restored,
        &workspace,
        &store,
        CacheState::Hit,
        "hello",
        false,
    );
    std::fs::write(workspace.output("a"), "HELLO").unwrap();
    let next = run_with_store(workspace.root(), &store, &plan);
    check(&next, &workspace, &store, CacheState::Hit, "hello", false);
    assert_eq!(workspace.runs(), 1, "the copy was wrong, the store was not");
}

/// An output the action wrote itself becomes its blob (the same inode, no copy); one that
/// is a hard link of another file (here a source of the workspace) is copied into the
/// store instead, so sealing never touches the source.
#[test]
fn a_fresh_output_becomes_its_blob_unless_it_has_other_links() {
    let workspace = Workspace::new();
    let store = workspace.store();
    let report = workspace.run(&[writes_a("v1", "fresh")]);
    check(&report, &workspace, &store, CacheState::Miss, "fresh", true);

    let source = workspace.root().join("source.txt");
    std::fs::write(&source, "shared").unwrap();
    let report = workspace.run(&[shell("v2", "ln source.txt $OUT/a", &["a"])]);
    let result = &report.results[0];
    assert!(report.succeeded(), "{result:?}");
    let source_metadata = std::fs::metadata(&source).unwrap();
    assert_eq!(
        source_metadata.mode() & 0o7777,
        0o644,
        "the source keeps its mode"
    );
    assert_ne!(
        source_metadata.mtime(),
        SEAL_SECONDS,
        "the source is not sealed"
    );
    let blob = std::fs::metadata(blob_of(&store, result)).unwrap();
    assert_ne!(blob.ino(), source_metadata.ino(), "the blob is a copy");
    assert_eq!(
        std::fs::read_to_string(blob_of(&store, result)).unwrap(),
        "shared"
    );
}

/// Runs `plan` on another thread while the workspace's lock of `outputs` is held (as an
/// executor rewriting them would hold it), and answers whether it finished before the
/// lock was released, with its report.
fn run_while_outputs_locked(
    workspace: &Workspace,
    outputs: &[&str],
    plan: &[PlannedAction],
) -> (bool, ExecutionReport) {
    let root = once_exec::outputs::WorkspaceRoot::open(workspace.root()).unwrap();
    let outputs: Vec<String> = outputs
        .iter()
        .map(|output| format!(".once/out/T/{output}"))
        .collect();
    let lock = root.lock_outputs(&outputs, || false).unwrap().unwrap();
    std::thread::scope(|scope| {
        let (done, finished) = std::sync::mpsc::channel();
        let running = scope.spawn(move || {
            let report = workspace.run(plan);
            let _ = done.send(());
            report
        });
        // Long enough for a hit (milliseconds) on a loaded machine.
        let before_release = finished
            .recv_timeout(std::time::Duration::from_secs(3))
            .is_ok();
        drop(lock);
        (before_release, running.join().unwrap())
    })
}

/// A hit whose outputs are in place is decided from metadata alone, without the output
/// lock; whatever is not provably in place (missing, another revision's bytes, changed)
/// waits for the lock as before and is then restored.
#[test]
fn only_a_hit_with_its_outputs_in_place_skips_the_output_lock() {
    let workspace = Workspace::new();
    let store = workspace.store();
    let v1 = [writes_a("v1", "hello")];
    let v2 = [writes_a("v2", "world")];
    workspace.run(&v1);

    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &v1);
    assert!(early, "in place: no wait for the lock");
    check(&report, &workspace, &store, CacheState::Hit, "hello", true);

    // Another revision's output, itself a link to its own sealed blob: not in place for
    // v1, so v1 waits for whoever rewrites it.
    workspace.run(&v2);
    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &v1);
    assert!(!early, "another key's bytes are not in place");
    check(&report, &workspace, &store, CacheState::Hit, "hello", true);

    // Missing.
    std::fs::remove_dir_all(workspace.root().join(".once/out")).unwrap();
    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &v1);
    assert!(!early, "a missing output is restored under the lock");
    check(&report, &workspace, &store, CacheState::Hit, "hello", true);

    // Written through the link (the blob's seal breaks): the lock, then a rebuild.
    std::fs::write(workspace.output("a"), "HELLO").unwrap();
    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &v1);
    assert!(!early, "a changed output is checked under the lock");
    check(&report, &workspace, &store, CacheState::Miss, "hello", true);
    assert_eq!(workspace.runs(), 3, "v1, v2, and v1 after the write");
}

/// A copied output (an executable) is in place without the lock only through a stamp
/// recorded with its digest; a change keeping its size moves the stamp.
#[test]
fn a_copied_output_skips_the_output_lock_only_while_its_stamp_holds() {
    let workspace = Workspace::new();
    let plan = [shell(
        "x",
        "printf '#!/bin/sh\\n' > $OUT/a; chmod 755 $OUT/a",
        &["a"],
    )];
    workspace.run(&plan);
    let output = workspace.output("a");
    // The first hit hashes the copy (its stamp was recorded within the build's clock
    // tick, so it is not trusted yet) and records a stamp a later build trusts.
    std::thread::sleep(std::time::Duration::from_millis(20));
    workspace.run(&plan);
    std::thread::sleep(std::time::Duration::from_millis(20));
    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &plan);
    assert!(early, "a trusted stamp: no wait for the lock");
    assert_eq!(report.results[0].cache, Some(CacheState::Hit));

    std::fs::write(&output, "#!/bin/X\n").unwrap();
    let (early, report) = run_while_outputs_locked(&workspace, &["a"], &plan);
    assert!(!early, "a changed copy is hashed under the lock");
    assert_eq!(report.results[0].cache, Some(CacheState::Hit));
    assert_eq!(std::fs::read_to_string(&output).unwrap(), "#!/bin/sh\n");
    assert_eq!(workspace.runs(), 1);
}
