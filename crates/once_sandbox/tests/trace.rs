//! The tracer with real processes: every kind of access with absolute paths, descendants
//! (background, `setsid`), threads, exit statuses and signals, nothing left behind, and
//! a Landlock denial named with its errno.
#![cfg(all(target_os = "linux", target_arch = "x86_64"))]
use once_sandbox::trace::AccessKind::*;
use once_sandbox::trace::*;
use std::os::unix::process::{CommandExt as _, ExitStatusExt as _};
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

/// A fresh temporary directory and its canonical path (cwd links are canonical).
fn tmp() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().canonicalize().expect("canonicalize");
    (dir, path)
}

/// `sh -c script` with `$D` = `dir`, also its cwd.
fn sh(script: &str, dir: &Path) -> Command {
    let mut command = Command::new("sh");
    command.arg("-c").arg(script).env("D", dir).current_dir(dir);
    command
}

fn trace(mut command: Command) -> (ExitStatus, Vec<Access>) {
    run_traced(&mut command).expect("run_traced")
}

#[track_caller]
fn expect(accesses: &[Access], kind: AccessKind, path: impl AsRef<Path>, errno: Option<i32>) {
    let want = (kind, path.as_ref(), errno);
    let found = accesses
        .iter()
        .any(|a| (a.kind, a.path.as_path(), a.errno) == want);
    assert!(found, "{want:?} not in {accesses:#?}");
}

#[test]
fn records_each_kind_with_absolute_paths() {
    let (_guard, d) = tmp();
    let script = "cat /etc/hostname >/dev/null; cat /etc/hostname >/dev/null; \
        cat /nonexistent/x 2>/dev/null; echo hi > $D/out; mkdir $D/d; rm $D/out; \
        ls $D >/dev/null; echo > $D/a; mv $D/a $D/b; ln $D/b $D/h; ln -s b $D/s; \
        chmod 600 $D/b; rmdir $D/d; mkfifo $D/f; \
        echo > rel; mkdir sub; cat sub 2>/dev/null; cd sub; cat ./nope ../sub/../rel2 2>/dev/null; cat ../rel";
    let (status, acc) = trace(sh(script, &d));
    assert_eq!(status.code(), Some(0));
    let first = acc[0].path.to_string_lossy();
    assert!(acc[0].kind == Execute && first.ends_with("sh"), "{acc:#?}");
    expect(&acc, Read, "/etc/hostname", None);
    let reads = acc.iter().filter(|a| a.path == Path::new("/etc/hostname"));
    assert_eq!(reads.count(), 1, "duplicates kept: {acc:#?}");
    expect(&acc, Read, "/nonexistent/x", Some(libc::ENOENT));
    let cat = |a: &Access| a.kind == Execute && a.path.ends_with("bin/cat") && a.errno.is_none();
    assert!(acc.iter().any(cat), "{acc:#?}");
    expect(&acc, List, &d, None);
    let kinds = "Write out, Create d, Remove out, Remove a, Create b, Create h, Create s, \
        Write b, Remove d, Create f, Write rel, Read rel, List sub";
    for (kind, name) in kinds.split(", ").filter_map(|s| s.split_once(' ')) {
        let want = |a: &&Access| format!("{:?}", a.kind) == kind && a.errno.is_none();
        let found = acc.iter().filter(want).any(|a| a.path == d.join(name));
        assert!(found, "{kind} {name} not in {acc:#?}");
    }
    expect(&acc, Read, d.join("sub/nope"), Some(libc::ENOENT));
    expect(&acc, Read, d.join("rel2"), Some(libc::ENOENT));
}

#[test]
fn sees_grandchildren_and_new_sessions() {
    let (_guard, d) = tmp();
    let script = "(cat /etc/passwd > $D/m &); setsid sh -c 'cat /etc/hosts >/dev/null'; \
        setsid -f sh -c 'cat /etc/group > $D/g'; \
        while [ ! -s $D/m ] || [ ! -s $D/g ]; do sleep 0.01; done";
    let (status, acc) = trace(sh(script, &d));
    assert!(status.success());
    for path in ["/etc/passwd", "/etc/hosts", "/etc/group"] {
        expect(&acc, Read, path, None);
    }
}

#[test]
fn reports_exit_status_with_caller_pre_exec() {
    let (_guard, d) = tmp();
    let mut command = sh("cat /etc/hostname >/dev/null; exit 7", &d);
    // SAFETY: the step does nothing.
    unsafe { command.pre_exec(|| Ok(())) };
    for _ in 0..2 {
        let (status, acc) = run_traced(&mut command).expect("run_traced");
        assert_eq!(status.code(), Some(7));
        expect(&acc, Read, "/etc/hostname", None);
    }
    let (status, _) = trace(sh("kill -9 $$", &d));
    assert_eq!(status.signal(), Some(libc::SIGKILL));
    let (status, acc) = trace(sh("kill -STOP $$; cat /etc/hostname", &d));
    assert!(status.success());
    expect(&acc, Read, "/etc/hostname", None);
    let err = run_traced(&mut Command::new("/nonexistent/prog")).expect_err("no program");
    assert_eq!(err.raw_os_error(), Some(libc::ENOENT));
}

#[test]
fn leaves_no_process_behind() {
    let (_guard, d) = tmp();
    let script =
        "echo $$ > $D/pid; sleep 30 & echo $! > $D/bg; (sleep 31 & echo $! > $D/gc); sleep 0.3";
    let started = Instant::now();
    assert!(trace(sh(script, &d)).0.success());
    assert!(started.elapsed() < Duration::from_secs(20));
    for name in ["pid", "bg", "gc"] {
        let pid = std::fs::read_to_string(d.join(name)).expect("pid file");
        // Gone, or a zombie waiting for its (new) parent: neither runs nor is stopped.
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()));
        let state = stat.map(|s| s.rsplit(") ").next().unwrap_or("").chars().next());
        let gone = matches!(state, Err(_) | Ok(Some('Z' | 'X')));
        assert!(gone, "{name} {pid}: {state:?}");
    }
}

#[test]
fn reports_landlock_denial() {
    let (_guard, d) = tmp();
    let mut command = sh("echo hi > $D/denied; cat /etc/hostname", &d);
    // SAFETY: raw syscalls on stack data only, between fork and exec.
    unsafe {
        command.pre_exec(|| {
            let handled: u64 = 1 << 1; // LANDLOCK_ACCESS_FS_WRITE_FILE
            let fd = libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &raw const handled,
                8usize,
                0usize,
            );
            if fd >= 0 {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                libc::syscall(libc::SYS_landlock_restrict_self, fd, 0usize);
            }
            Ok(())
        })
    };
    let (_, acc) = trace(command);
    expect(&acc, Read, "/etc/hostname", None);
    // SAFETY: LANDLOCK_CREATE_RULESET_VERSION (1) only returns the ABI version.
    if unsafe { libc::syscall(libc::SYS_landlock_create_ruleset, 0usize, 0usize, 1usize) } > 0 {
        expect(&acc, Write, d.join("denied"), Some(libc::EACCES));
    }
}

/// Three threads open `$1/t<i>`; with a second argument thread 1 execs `cat $1/t1`.
const THREADS_C: &str = r#"#include <pthread.h>
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
static char **args;
static void *run(void *i) {
char path[4096];
snprintf(path, sizeof path, "%s/t%ld", args[1], (long)i);
if (args[2] && i == (void *)1) execl("/bin/cat", "cat", path, (char *)0);
if (args[2]) pause();
close(open(path, O_RDONLY));
return 0;
}
int main(int argc, char **argv) {
pthread_t t[3];
args = argv;
for (long i = 0; i < 3; i++) pthread_create(&t[i], 0, run, (void *)i);
for (int i = 0; i < 3; i++) pthread_join(t[i], 0);
return 3;
}"#;

#[test]
fn traces_threads_and_exec_from_a_thread() {
    let (_guard, d) = tmp();
    std::fs::write(d.join("threads.c"), THREADS_C).expect("write c");
    let mut gcc = Command::new("gcc");
    gcc.args(["-pthread", "-o", "threads", "threads.c"])
        .current_dir(&d);
    assert!(gcc.status().expect("gcc").success());
    let (status, acc) = trace(sh("./threads $D", &d));
    assert_eq!(status.code(), Some(3));
    for i in 0..3 {
        expect(&acc, Read, d.join(format!("t{i}")), Some(libc::ENOENT));
    }
    std::fs::write(d.join("t1"), "x").expect("write t1");
    let (status, acc) = trace(sh("exec ./threads $D exec >/dev/null", &d));
    assert_eq!(status.code(), Some(0), "{acc:#?}");
    expect(&acc, Execute, "/bin/cat", None);
    expect(&acc, Read, d.join("t1"), None);
}
