//! Runs one program under `ptrace(2)` and reports every file-system access that it and all
//! its descendants attempt, with the absolute path and whether it succeeded: the files a
//! sandboxed (Landlock) build action was denied, with `EACCES`/`EPERM`, are named this way.
//!
//! # Design
//!
//! * [`run_traced`] adds `PTRACE_TRACEME` as the command's last `pre_exec` step and spawns the
//!   command itself, since ptrace's tracer is the thread that forked. The textbook
//!   `raise(SIGSTOP)` after it would deadlock: `Command::spawn` waits for the child's exec.
//!   The tracer instead waits for the `SIGTRAP` that a `PTRACE_TRACEME` tracee gets after a
//!   successful exec, before its first instruction, and sets the options there
//!   (`TRACESYSGOOD | TRACEFORK | TRACEVFORK | TRACECLONE | TRACEEXEC | EXITKILL`).
//! * Tracees are stepped with `PTRACE_SYSCALL`; `waitpid(-1, __WALL | __WNOTHREAD)` only sees
//!   this thread's tracees and children. `PTRACE_GET_SYSCALL_INFO` tells entry from exit. At
//!   entry the path arguments are read with `process_vm_readv` and made absolute against the
//!   cwd or dirfd (`/proc/<tid>/cwd`, `/proc/<tid>/fd/<n>`) while these still hold; the exit's
//!   result (negative: `-errno`) completes the record. Paths are normalised lexically, without
//!   resolving symlinks; identical records are kept once, in the order first seen.
//! * A new task's first `SIGSTOP` is suppressed; group-stops (no siginfo) are resumed; other
//!   signals are delivered. An exec by a non-leader thread moves it to the leader's tid.
//! * Once the spawned process has exited, the tracees left are killed with `SIGKILL` and the
//!   tracer reaps until `ECHILD`: no traced process is left behind, stopped or running.
//! * The syscall table (`arch`) uses `libc::SYS_*` and exists for x86_64 only; an aarch64 one
//!   (no `open`, `mkdir`, ...) can be added beside it. Not recorded, as Landlock does not
//!   restrict them: `stat`-family, `access`, `readlink`, fd-based calls, `O_PATH` opens.
//!
//! # Limitations
//!
//! * The calling thread must have no other unreaped children (the wait loop would reap them).
//! * The first program is reported by its resolved path (`/proc/<pid>/exe`); the `PATH`
//!   search of the spawning `execvp`, 32-bit (`int 0x80`) syscalls and `CLONE_UNTRACED`
//!   children are not seen. Stopping signals do not stop tracees, and tracees cannot be
//!   ptraced by their own tools (gdb, strace, LeakSanitizer get `EPERM`).
//! * `/proc/<tid>/cwd` and `fd` links read as seen from the tracer's root: under a chroot or a
//!   pivoted mount namespace, relative paths come out in the tracer's view.

use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};

use libc::{c_int, c_uint, c_ulong, pid_t};

/// What a syscall tried to do to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AccessKind {
    /// Opened read-only (a regular file or anything that is not a directory).
    Read,
    /// Opened for writing (`O_WRONLY`, `O_RDWR`, `O_TRUNC`, `O_APPEND`, `O_CREAT`, `creat`),
    /// truncated by path, or had its mode changed.
    Write,
    /// Made as a directory, node, hard link, symlink, or the destination of a rename.
    Create,
    /// Unlinked, removed as a directory, or the source of a rename.
    Remove,
    /// Executed with `execve`/`execveat`.
    Execute,
    /// A directory opened read-only (to list it).
    List,
}

/// One attempted access.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Access {
    /// What was attempted.
    pub kind: AccessKind,
    /// The absolute, lexically normalised path (symlinks are not resolved).
    pub path: PathBuf,
    /// errno when it failed, None when it succeeded
    pub errno: Option<i32>,
}

/// How the kind of a path argument is found.
#[derive(Clone, Copy)]
enum KindFrom {
    /// Always this kind.
    Fixed(AccessKind),
    /// From the open flags in argument `n`.
    OpenFlags(usize),
    /// From the `flags` of the `struct open_how` that argument `n` points to.
    OpenHow(usize),
}

/// A path argument: (index of the dirfd argument, `None` for the cwd; index of the path; kind).
type PathArg = (Option<usize>, usize, KindFrom);

/// The x86_64 syscall table.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
mod arch {
    use super::AccessKind::{Create, Execute, Remove, Write};
    use super::KindFrom::{Fixed, OpenFlags, OpenHow};
    use super::PathArg;

    /// `AUDIT_ARCH_X86_64`: syscall info of the native 64-bit ABI carries this `arch`.
    pub(super) const AUDIT_ARCH: u32 = 0xC000_003E;

    /// The path arguments of syscall `nr` that are recorded (empty for all other syscalls).
    pub(super) fn path_args(nr: u64) -> &'static [PathArg] {
        match i64::try_from(nr).unwrap_or(-1) {
            libc::SYS_open => &[(None, 0, OpenFlags(1))],
            libc::SYS_openat => &[(Some(0), 1, OpenFlags(2))],
            libc::SYS_openat2 => &[(Some(0), 1, OpenHow(2))],
            libc::SYS_creat | libc::SYS_truncate | libc::SYS_chmod => &[(None, 0, Fixed(Write))],
            libc::SYS_fchmodat | libc::SYS_fchmodat2 => &[(Some(0), 1, Fixed(Write))],
            libc::SYS_execve => &[(None, 0, Fixed(Execute))],
            libc::SYS_execveat => &[(Some(0), 1, Fixed(Execute))],
            libc::SYS_mkdir | libc::SYS_mknod => &[(None, 0, Fixed(Create))],
            libc::SYS_mkdirat | libc::SYS_mknodat => &[(Some(0), 1, Fixed(Create))],
            libc::SYS_unlink | libc::SYS_rmdir => &[(None, 0, Fixed(Remove))],
            libc::SYS_unlinkat => &[(Some(0), 1, Fixed(Remove))],
            libc::SYS_rename => &[(None, 0, Fixed(Remove)), (None, 1, Fixed(Create))],
            libc::SYS_renameat | libc::SYS_renameat2 => {
                &[(Some(0), 1, Fixed(Remove)), (Some(2), 3, Fixed(Create))]
            }
            libc::SYS_link | libc::SYS_symlink => &[(None, 1, Fixed(Create))],
            libc::SYS_linkat => &[(Some(2), 3, Fixed(Create))],
            libc::SYS_symlinkat => &[(Some(1), 2, Fixed(Create))],
            _ => &[],
        }
    }
}

/// Longest path read from a tracee, terminating NUL included.
const PATH_MAX: usize = 4096;
/// `PTRACE_SYSCALL_INFO_ENTRY`.
const OP_ENTRY: u8 = 1;
/// `PTRACE_SYSCALL_INFO_EXIT`.
const OP_EXIT: u8 = 2;
/// Kernel-internal errnos (`ERESTARTSYS` ..= `ERESTART_RESTARTBLOCK`): the syscall was
/// interrupted and will be restarted, so its exit is not a result.
const ERESTART: std::ops::RangeInclusive<i32> = 512..=516;

/// Set in a forked child once `PTRACE_TRACEME` succeeded there, so that preparing one
/// `Command` twice (reusing it for a second [`run_traced`]) stays harmless.
static TRACEME_DONE: AtomicBool = AtomicBool::new(false);

/// Adds the last `pre_exec` step: unblock `SIGTRAP` (the post-exec stop needs it) and
/// `PTRACE_TRACEME`. Private: only [`run_traced`] may spawn, on the tracing thread.
fn prepare(command: &mut Command) {
    // SAFETY: the closure runs in the forked child before exec. It only touches an atomic and
    // calls async-signal-safe functions (sigemptyset, sigaddset, sigprocmask, ptrace) on stack
    // data; it does not allocate (`io::Error::last_os_error` stores the raw errno).
    unsafe {
        command.pre_exec(|| {
            if TRACEME_DONE.load(Ordering::Relaxed) {
                return Ok(());
            }
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGTRAP);
            libc::sigprocmask(libc::SIG_UNBLOCK, &set, std::ptr::null_mut());
            if libc::ptrace(libc::PTRACE_TRACEME, 0, 0usize, 0usize) == -1 {
                return Err(io::Error::last_os_error());
            }
            TRACEME_DONE.store(true, Ordering::Relaxed);
            Ok(())
        });
    }
}

/// Spawns `command` and traces it and every descendant (fork, vfork, clone, exec) until the
/// spawned process exits; returns its exit status and the accesses in the order first seen
/// (identical ones once). Descendants still alive then are killed with `SIGKILL`.
///
/// Spawning is done here because ptrace's tracer is the spawning thread. The caller may have
/// added its own `pre_exec` steps (namespaces, Landlock): they run first. The calling thread
/// must not have other unreaped children; piped stdio handles of `command` are closed. The
/// tracing step stays in `command`: spawn it again only through `run_traced`.
pub fn run_traced(command: &mut Command) -> io::Result<(ExitStatus, Vec<Access>)> {
    prepare(command);
    let child = command.spawn()?;
    let mut tracer = Tracer {
        root: child.id() as pid_t,
        ..Tracer::default()
    };
    drop(child); // neither waits nor kills: the tracer reaps the process itself
    let result = tracer.start().and_then(|()| tracer.run());
    tracer.kill_and_drain();
    result?;
    let status = tracer
        .root_status
        .ok_or_else(|| io::Error::other("traced process was reaped by someone else"))?;
    Ok((ExitStatus::from_raw(status), tracer.accesses))
}

/// One traced thread.
#[derive(Default)]
struct Task {
    /// False until the task's initial (auto-attach) `SIGSTOP` was seen and suppressed.
    started: bool,
    /// Paths of the syscall this task entered, awaiting its exit.
    pending: Vec<(AccessKind, PathBuf)>,
}

/// The state of one tracing session.
#[derive(Default)]
struct Tracer {
    /// Pid of the spawned process.
    root: pid_t,
    /// Its wait status, once it has exited.
    root_status: Option<c_int>,
    /// Live tracees by tid.
    tasks: HashMap<pid_t, Task>,
    /// Accesses in the order first seen.
    accesses: Vec<Access>,
    /// The accesses already recorded.
    seen: HashSet<Access>,
}

impl Tracer {
    /// Waits for the post-exec `SIGTRAP` of the spawned process and sets the options.
    fn start(&mut self) -> io::Result<()> {
        loop {
            let Some((_, status)) = wait(self.root)? else {
                return Err(io::Error::other("traced process vanished"));
            };
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.root_status = Some(status);
                return Ok(());
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            if sig != libc::SIGTRAP {
                restart(libc::PTRACE_CONT, self.root, sig);
                continue;
            }
            let options = libc::PTRACE_O_TRACESYSGOOD
                | libc::PTRACE_O_TRACEFORK
                | libc::PTRACE_O_TRACEVFORK
                | libc::PTRACE_O_TRACECLONE
                | libc::PTRACE_O_TRACEEXEC
                | libc::PTRACE_O_EXITKILL;
            // SAFETY: PTRACE_SETOPTIONS takes no pointer; `data` is the option bit mask.
            if unsafe { libc::ptrace(libc::PTRACE_SETOPTIONS, self.root, 0usize, options as usize) }
                == -1
            {
                return Err(io::Error::last_os_error());
            }
            self.tasks.entry(self.root).or_default().started = true;
            if let Ok(exe) = std::fs::read_link(format!("/proc/{}/exe", self.root)) {
                self.record(AccessKind::Execute, exe, None);
            }
            restart(libc::PTRACE_SYSCALL, self.root, 0);
            return Ok(());
        }
    }

    /// Handles stops until the spawned process has exited.
    fn run(&mut self) -> io::Result<()> {
        while self.root_status.is_none() {
            let Some((tid, status)) = wait(-1)? else {
                break;
            };
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.tasks.remove(&tid);
                if tid == self.root {
                    self.root_status = Some(status);
                }
                continue;
            }
            if !libc::WIFSTOPPED(status) {
                continue;
            }
            let sig = libc::WSTOPSIG(status);
            let task = self.tasks.entry(tid).or_default();
            let started = std::mem::replace(&mut task.started, true);
            let deliver = if sig == libc::SIGTRAP | 0x80 {
                self.on_syscall(tid);
                0
            } else if sig == libc::SIGTRAP && status >> 16 != 0 {
                self.on_event(tid, status >> 16);
                0
            } else if (sig == libc::SIGSTOP && !started) || is_group_stop(tid, sig) {
                0
            } else {
                sig
            };
            restart(libc::PTRACE_SYSCALL, tid, deliver);
        }
        Ok(())
    }

    /// Handles a syscall-entry or syscall-exit stop of `tid`.
    fn on_syscall(&mut self, tid: pid_t) {
        let Some((op, arch, data)) = syscall_info(tid) else {
            return;
        };
        let Some(task) = self.tasks.get_mut(&tid) else {
            return;
        };
        match op {
            OP_ENTRY if arch == arch::AUDIT_ARCH => {
                task.pending = decode(tid, data[0], &data[1..7])
            }
            OP_EXIT => {
                let pending = std::mem::take(&mut task.pending);
                let rval = data[0] as i64;
                let errno = (data[1] as u8 != 0)
                    .then(|| i32::try_from(rval.unsigned_abs()).unwrap_or(i32::MAX));
                if errno.is_some_and(|e| ERESTART.contains(&e)) {
                    return;
                }
                for (mut kind, path) in pending {
                    if kind == AccessKind::Read && is_dir(tid, errno, rval, &path) {
                        kind = AccessKind::List;
                    }
                    self.record(kind, path, errno);
                }
            }
            _ => task.pending.clear(),
        }
    }

    /// Handles a `PTRACE_EVENT_*` stop of `tid`.
    fn on_event(&mut self, tid: pid_t, event: c_int) {
        match event {
            libc::PTRACE_EVENT_FORK | libc::PTRACE_EVENT_VFORK | libc::PTRACE_EVENT_CLONE => {
                if let Some(new) = event_msg(tid) {
                    self.tasks.entry(new as pid_t).or_default();
                }
            }
            libc::PTRACE_EVENT_EXEC => {
                if let Some(old) = event_msg(tid).map(|m| m as pid_t)
                    && old != tid
                {
                    // A non-leader thread exec'd and now has the leader's tid.
                    let pending = self
                        .tasks
                        .remove(&old)
                        .map(|t| t.pending)
                        .unwrap_or_default();
                    self.tasks.entry(tid).or_default().pending = pending;
                }
            }
            _ => {}
        }
    }

    /// Records an access unless an identical one was recorded before.
    fn record(&mut self, kind: AccessKind, path: PathBuf, errno: Option<i32>) {
        let access = Access { kind, path, errno };
        if !self.seen.contains(&access) {
            self.seen.insert(access.clone());
            self.accesses.push(access);
        }
    }

    /// Kills every tracee still alive and reaps until none is left (`ECHILD`).
    fn kill_and_drain(&mut self) {
        if self.root_status.is_none() {
            kill(self.root);
        }
        for &tid in self.tasks.keys() {
            kill(tid);
        }
        while let Ok(Some((tid, status))) = wait(-1) {
            if libc::WIFEXITED(status) || libc::WIFSIGNALED(status) {
                self.tasks.remove(&tid);
                if tid == self.root && self.root_status.is_none() {
                    self.root_status = Some(status);
                }
            } else {
                // A tracee we had not heard of yet (e.g. forked while being killed).
                kill(tid);
                restart(libc::PTRACE_CONT, tid, 0);
            }
        }
    }
}

/// Decodes the recorded path arguments of syscall `nr` entered by `tid`.
fn decode(tid: pid_t, nr: u64, args: &[u64]) -> Vec<(AccessKind, PathBuf)> {
    let mut out = Vec::new();
    for &(dirfd, path, kind) in arch::path_args(nr) {
        let kind = match kind {
            KindFrom::Fixed(kind) => Some(kind),
            KindFrom::OpenFlags(i) => open_kind(args[i]),
            KindFrom::OpenHow(i) => read_u64(tid, args[i]).and_then(open_kind),
        };
        let Some(kind) = kind else { continue };
        let Some(raw) = read_cstr(tid, args[path]) else {
            continue;
        };
        let dirfd = dirfd.map_or(libc::AT_FDCWD, |i| args[i] as c_int);
        if let Some(path) = resolve(tid, dirfd, &raw, kind) {
            out.push((kind, path));
        }
    }
    out
}

/// The access that open flags ask for; `None` for `O_PATH`, which reads nothing.
fn open_kind(flags: u64) -> Option<AccessKind> {
    let flags = flags as c_int;
    if flags & libc::O_PATH != 0 {
        None
    } else if flags & libc::O_ACCMODE != libc::O_RDONLY
        || flags & (libc::O_TRUNC | libc::O_APPEND | libc::O_CREAT) != 0
    {
        Some(AccessKind::Write)
    } else if flags & libc::O_DIRECTORY != 0 {
        Some(AccessKind::List)
    } else {
        Some(AccessKind::Read)
    }
}

/// Whether a read-only open hit a directory: the opened fd on success, else the path.
fn is_dir(tid: pid_t, errno: Option<i32>, fd: i64, path: &Path) -> bool {
    let opened = errno
        .is_none()
        .then(|| std::fs::metadata(format!("/proc/{tid}/fd/{fd}")));
    match opened {
        Some(Ok(meta)) => meta.is_dir(),
        _ => std::fs::metadata(path).is_ok_and(|m| m.is_dir()),
    }
}

/// Makes `raw` absolute against `dirfd` (or the cwd) of `tid`, normalised lexically.
fn resolve(tid: pid_t, dirfd: c_int, raw: &[u8], kind: AccessKind) -> Option<PathBuf> {
    let path = Path::new(OsStr::from_bytes(raw));
    if path.is_absolute() {
        return Some(normalize(path));
    }
    if raw.is_empty() && kind != AccessKind::Execute {
        return None; // fails with ENOENT; only execveat(AT_EMPTY_PATH) runs the fd itself
    }
    let link = if dirfd == libc::AT_FDCWD {
        format!("/proc/{tid}/cwd")
    } else {
        format!("/proc/{tid}/fd/{dirfd}")
    };
    let base = std::fs::read_link(link).ok()?;
    base.is_absolute().then(|| normalize(&base.join(path)))
}

/// Removes `.` and folds `..` without looking at the file system.
fn normalize(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// Reads up to `buf.len()` bytes at `addr` in `tid`'s memory; `None` on failure.
fn read_mem(tid: pid_t, addr: u64, buf: &mut [u8]) -> Option<usize> {
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    let remote = libc::iovec {
        iov_base: addr as *mut libc::c_void,
        iov_len: buf.len(),
    };
    // SAFETY: `local` describes `buf`, valid for writes of its length; `remote` is only
    // dereferenced by the kernel, in the other process, which checks it.
    let n = unsafe { libc::process_vm_readv(tid, &local, 1, &remote, 1, 0) };
    usize::try_from(n).ok().filter(|&n| n > 0)
}

/// Reads an unsigned 64-bit value at `addr` in `tid`'s memory.
fn read_u64(tid: pid_t, addr: u64) -> Option<u64> {
    let mut buf = [0u8; 8];
    (read_mem(tid, addr, &mut buf)? == 8).then(|| u64::from_ne_bytes(buf))
}

/// Reads a NUL-terminated string at `addr` in `tid`'s memory, page by page so that no read
/// crosses into an unmapped page; `None` if unreadable or longer than `PATH_MAX`.
fn read_cstr(tid: pid_t, mut addr: u64) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    while out.len() < PATH_MAX {
        let start = out.len();
        let len = (4096 - (addr % 4096) as usize).min(PATH_MAX - start);
        out.resize(start + len, 0);
        let n = read_mem(tid, addr, &mut out[start..])?;
        if let Some(nul) = out[start..start + n].iter().position(|&b| b == 0) {
            out.truncate(start + nul);
            return Some(out);
        }
        out.truncate(start + n);
        addr = addr.checked_add(n as u64)?;
    }
    None
}

/// `waitpid(pid, __WALL | __WNOTHREAD)`, retried on `EINTR`; `Ok(None)` on `ECHILD`.
fn wait(pid: pid_t) -> io::Result<Option<(pid_t, c_int)>> {
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid, writable c_int.
        let tid = unsafe { libc::waitpid(pid, &mut status, libc::__WALL | libc::__WNOTHREAD) };
        if tid > 0 {
            return Ok(Some((tid, status)));
        }
        let err = io::Error::last_os_error();
        match err.raw_os_error() {
            Some(libc::EINTR) => {}
            Some(libc::ECHILD) => return Ok(None),
            _ => return Err(err),
        }
    }
}

/// Restarts stopped tracee `tid` with `request`, delivering `sig` (0 for none). Errors
/// (`ESRCH`: the tracee died meanwhile) are ignored: its exit is reported by `wait`.
fn restart(request: c_uint, tid: pid_t, sig: c_int) {
    // SAFETY: restarting requests take no pointer; `data` is a signal number.
    unsafe { libc::ptrace(request, tid, 0usize, sig as usize) };
}

/// Sends `SIGKILL` to `tid` (and its thread group).
fn kill(tid: pid_t) {
    // SAFETY: plain syscall without pointers; a failure (already dead) is harmless.
    unsafe { libc::kill(tid, libc::SIGKILL) };
}

/// The `PTRACE_GETEVENTMSG` value of stopped tracee `tid`.
fn event_msg(tid: pid_t) -> Option<c_ulong> {
    let mut msg: c_ulong = 0;
    // SAFETY: PTRACE_GETEVENTMSG writes one unsigned long to `data`, which points to `msg`.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETEVENTMSG, tid, 0usize, &raw mut msg) };
    (r != -1).then_some(msg)
}

/// Whether the stop of `tid` with `sig` is a group-stop (no siginfo) rather than a
/// signal-delivery-stop.
fn is_group_stop(tid: pid_t, sig: c_int) -> bool {
    if ![libc::SIGSTOP, libc::SIGTSTP, libc::SIGTTIN, libc::SIGTTOU].contains(&sig) {
        return false;
    }
    // SAFETY: siginfo_t is a plain C struct, all zeroes is a valid value.
    let mut info: libc::siginfo_t = unsafe { std::mem::zeroed() };
    // SAFETY: PTRACE_GETSIGINFO writes one siginfo_t to `data`, which points to `info`.
    let r = unsafe { libc::ptrace(libc::PTRACE_GETSIGINFO, tid, 0usize, &raw mut info) };
    r == -1 && io::Error::last_os_error().raw_os_error() == Some(libc::EINVAL)
}

/// `PTRACE_GET_SYSCALL_INFO` of a tracee in a syscall stop, as `(op, arch, data)`, where
/// `data` is the union of `struct ptrace_syscall_info` as raw words: at entry the syscall
/// number then the six arguments; at exit the return value then `is_error` (low byte).
fn syscall_info(tid: pid_t) -> Option<(u8, u32, [u64; 8])> {
    // op (u8), 3 reserved bytes, arch (u32), instruction pointer, stack pointer, union.
    let mut raw = [0u64; 11];
    let (size, ptr) = (size_of_val(&raw), raw.as_mut_ptr());
    // SAFETY: the kernel writes at most `size` (passed as `addr`) bytes to `ptr`, i.e. `raw`.
    let r = unsafe { libc::ptrace(libc::PTRACE_GET_SYSCALL_INFO, tid, size, ptr) };
    let mut data = [0u64; 8];
    data.copy_from_slice(&raw[3..]);
    (r > 0).then_some((raw[0] as u8, (raw[0] >> 32) as u32, data))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_are_normalised_lexically() {
        assert_eq!(normalize(Path::new("/../a/./b/..//c")), Path::new("/a/c"));
    }
}
