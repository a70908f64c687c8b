//! Confining one program: what it may touch ([`Confinement`]), made ready in the parent
//! ([`Prepared`]) and applied to a `std::process::Command` between `fork` and `exec`.
//!
//! The child of the command (A, which the caller sees and waits for) does, before
//! anything of the program runs:
//!
//! 1. join the process's shared user namespace (its user and group mapped to
//!    themselves, so files keep their owners; being its owner lets an unprivileged user
//!    make the other namespaces in it) and, unless the program may use the network, the
//!    shared offline network namespace (only a loopback device, up, so that a test can
//!    still serve itself on `127.0.0.1`); both are made once per process
//!    ([`SharedNamespaces`]);
//! 2. `unshare` a new PID namespace;
//! 3. restrict itself with the Landlock ruleset made in the parent (after
//!    `PR_SET_NO_NEW_PRIVS`, which Landlock asks for);
//! 4. fork B, the first process of the new PID namespace, which forks C, the program.
//!
//! B is the namespace's `init`: it reaps whatever is orphaned inside and, when C ends,
//! hands C's wait status to A through a pipe and exits; the kernel then kills every
//! process left in the namespace, however it escaped its process group (`setsid`, a
//! double fork, `nohup`). A waits for B and ends the way C ended (the same exit code, or
//! the same signal), so the caller sees the program's own status. A and B close every
//! descriptor they inherited beyond the standard streams, so neither holds a pipe or a
//! lock of the parent's open. B dies with A (`PR_SET_PDEATHSIG`), and the caller kills
//! A's process group (B and C are in it) to cancel.
//!
//! Everything in the child is a raw system call: it runs between `fork` and `exec` of a
//! multithreaded parent, where allocating or taking a lock could deadlock.

use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::process::CommandExt as _;
use std::path::PathBuf;
use std::process::Command;
use std::sync::OnceLock;

use crate::landlock::{self, Ruleset};

/// What one program may touch.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Confinement {
    /// Whether the file system is restricted at all ([`Confinement::contain_only`] turns
    /// it off: the program then only gets its namespaces).
    pub filesystem: bool,
    /// Files and directories (with everything beneath) it may read and execute.
    pub read: Vec<PathBuf>,
    /// Directories (with everything beneath) whose entries it may list, without reading
    /// the files.
    pub list: Vec<PathBuf>,
    /// Directories (with everything beneath) it may read, write, create and remove in.
    pub write: Vec<PathBuf>,
    /// Files it may write (and truncate) but not replace or remove.
    pub write_files: Vec<PathBuf>,
    /// Whether it may reach the network; otherwise it gets a network namespace of its
    /// own with only a loopback device.
    pub network: bool,
    /// Whether it starts in a PID namespace of its own (the default). Without one the
    /// program is the child itself, which a tracer needs (`crate::trace`): nothing then
    /// contains what it leaves behind but its process group.
    pub own_pids: bool,
}

impl Confinement {
    /// A confinement restricting the file system to what is then allowed.
    pub fn new(network: bool) -> Confinement {
        Confinement {
            filesystem: true,
            network,
            own_pids: true,
            ..Confinement::default()
        }
    }

    /// A confinement that only contains the program (its own PID namespace, and no
    /// network unless `network`), with the file system as the caller sees it.
    pub fn contain_only(network: bool) -> Confinement {
        Confinement {
            filesystem: false,
            network,
            own_pids: true,
            ..Confinement::default()
        }
    }

    /// Makes the confinement ready to apply: builds its Landlock ruleset and the user
    /// namespace's maps. Fails when the kernel cannot confine (see [`crate::Support`]).
    pub fn prepare(&self) -> io::Result<Prepared> {
        let support = crate::Support::detect();
        if let Some(missing) = support.missing(self.filesystem) {
            return Err(io::Error::new(io::ErrorKind::Unsupported, missing));
        }
        let ruleset = if self.filesystem {
            // The network is the namespace's business: a program without it still serves
            // itself on its own loopback, which a TCP rule would forbid.
            let mut ruleset = Ruleset::new(false)?;
            for path in &self.list {
                ruleset.allow(path, landlock::READ_DIR)?;
            }
            for path in &self.read {
                ruleset.allow(path, landlock::READ)?;
            }
            for path in &self.write_files {
                ruleset.allow(
                    path,
                    landlock::READ_FILE | landlock::WRITE_FILE | landlock::TRUNCATE,
                )?;
            }
            for path in &self.write {
                ruleset.allow(path, landlock::WRITE)?;
            }
            Some(ruleset)
        } else {
            None
        };
        let shared = shared_namespaces()?;
        Ok(Prepared {
            ruleset,
            user_namespace: shared.user.as_raw_fd(),
            offline_network: shared.offline_network.as_raw_fd(),
            network: self.network,
            own_pids: self.own_pids,
        })
    }
}

/// A confinement ready to apply to a command; keep it alive until the command has been
/// spawned (the child restricts itself with its ruleset's descriptor).
#[derive(Debug)]
pub struct Prepared {
    ruleset: Option<Ruleset>,
    /// The shared user namespace ([`shared_namespaces`]), open for the process's life.
    user_namespace: libc::c_int,
    /// The shared network namespace without a way out.
    offline_network: libc::c_int,
    network: bool,
    own_pids: bool,
}

/// The process file the child writes its maps to.
const SETGROUPS: &[u8] = b"/proc/self/setgroups\0";
const UID_MAP: &[u8] = b"/proc/self/uid_map\0";
const GID_MAP: &[u8] = b"/proc/self/gid_map\0";

impl Prepared {
    /// Adds the confinement to `command` as a step between `fork` and `exec`: the program
    /// `command` starts runs confined, and the process the caller waits for ends as the
    /// program did. Call it after the command's other settings; its step must be the
    /// last one the command takes before `exec` (but a tracer's).
    pub fn install(&self, command: &mut Command) {
        let ruleset = self.ruleset.as_ref().map(Ruleset::raw_fd);
        let user_namespace = self.user_namespace;
        let offline_network = self.offline_network;
        let network = self.network;
        let own_pids = self.own_pids;
        let step = move || {
            // SAFETY: `setns` and `unshare` take a descriptor and flags; the descriptors
            // are the shared namespaces', open for this process's life.
            unsafe {
                check(libc::setns(user_namespace, libc::CLONE_NEWUSER))?;
                if !network {
                    check(libc::setns(offline_network, libc::CLONE_NEWNET))?;
                }
                if own_pids {
                    check(libc::unshare(libc::CLONE_NEWPID))?;
                }
            }
            if let Some(ruleset) = ruleset {
                // SAFETY: `prctl` with these arguments only sets a flag of this process.
                check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
                // SAFETY: `ruleset` is the descriptor of a ruleset the parent keeps open
                // until the spawn returns; the call takes no memory.
                let restricted =
                    unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
                if restricted != 0 {
                    return Err(io::Error::last_os_error());
                }
            }
            if !own_pids {
                return Ok(());
            }
            split_into_namespace()
        };
        // SAFETY: the step makes only system calls (no allocation, no lock): see
        // `split_into_namespace` for the processes it makes.
        unsafe {
            command.pre_exec(step);
        }
    }
}

/// The user namespace every confined program of this process joins (its user and group
/// mapped to themselves) and, in it, the network namespace of the programs without the
/// network: made once, by a short-lived child, and kept by their descriptors. Making a
/// network namespace per program would cost each one its creation and, worse, a
/// teardown the kernel serialises: hundreds of programs in a row then wait on each
/// other's. Programs without the network therefore share one loopback.
struct SharedNamespaces {
    user: OwnedFd,
    offline_network: OwnedFd,
}

fn shared_namespaces() -> io::Result<&'static SharedNamespaces> {
    static SHARED: OnceLock<Result<SharedNamespaces, (io::ErrorKind, String)>> = OnceLock::new();
    SHARED
        .get_or_init(|| make_shared_namespaces().map_err(|e| (e.kind(), e.to_string())))
        .as_ref()
        .map_err(|(kind, message)| {
            io::Error::new(
                *kind,
                format!("cannot make the sandbox's namespaces: {message}"),
            )
        })
}

fn make_shared_namespaces() -> io::Result<SharedNamespaces> {
    // SAFETY: `geteuid` and `getegid` cannot fail and touch no memory.
    let (user, group) = unsafe { (libc::geteuid(), libc::getegid()) };
    let uid_map = format!("{user} {user} 1\n").into_bytes();
    let gid_map = format!("{group} {group} 1\n").into_bytes();
    let mut ready = [0; 2];
    let mut release = [0; 2];
    // SAFETY: each array has room for two descriptors.
    check(unsafe { libc::pipe2(ready.as_mut_ptr(), libc::O_CLOEXEC) })?;
    // SAFETY: as above.
    if let Err(error) = check(unsafe { libc::pipe2(release.as_mut_ptr(), libc::O_CLOEXEC) }) {
        close_all(&ready);
        return Err(error);
    }
    // SAFETY: the child only makes system calls on memory made before the fork (the maps,
    // the pipes) and ends with `_exit`.
    let child = unsafe { libc::fork() };
    if child == 0 {
        let made = (|| {
            // SAFETY: `unshare` takes flags only.
            check(unsafe { libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWNET) })?;
            write_file(SETGROUPS, b"deny")?;
            write_file(UID_MAP, &uid_map)?;
            write_file(GID_MAP, &gid_map)?;
            loopback_up()
        })();
        let answer = [u8::from(made.is_ok())];
        let mut held = [0u8; 1];
        // SAFETY: the buffers are valid; the parent reads `ready`, then closes `release`
        // once it holds the namespaces, and this child ends.
        unsafe {
            libc::write(ready[1], answer.as_ptr().cast(), 1);
            libc::close(release[1]);
            libc::read(release[0], held.as_mut_ptr().cast(), 1);
            libc::_exit(0);
        }
    }
    // SAFETY: closing this process's ends it does not use.
    unsafe {
        libc::close(ready[1]);
        libc::close(release[0]);
    }
    let result = (|| {
        if child < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut answer = [0u8; 1];
        // SAFETY: `answer` has room for one byte.
        let read = unsafe { libc::read(ready[0], answer.as_mut_ptr().cast(), 1) };
        if read != 1 || answer[0] != 1 {
            return Err(io::Error::other(
                "a child could not make a user and network namespace",
            ));
        }
        let open = |name: &str| std::fs::File::open(format!("/proc/{child}/ns/{name}"));
        Ok(SharedNamespaces {
            user: open("user")?.into(),
            offline_network: open("net")?.into(),
        })
    })();
    // SAFETY: closing the remaining ends lets the child end; it is then reaped.
    unsafe {
        libc::close(ready[0]);
        libc::close(release[1]);
        if child > 0 {
            let mut status = 0;
            while libc::waitpid(child, &raw mut status, 0) == -1
                && io::Error::last_os_error().raw_os_error() == Some(libc::EINTR)
            {}
        }
    }
    result
}

/// Closes both ends of a pipe.
fn close_all(pipe: &[libc::c_int; 2]) {
    // SAFETY: the descriptors are this process's and closed once.
    unsafe {
        libc::close(pipe[0]);
        libc::close(pipe[1]);
    }
}

/// Turns an answer of -1 into the error it reports.
fn check(answer: libc::c_int) -> io::Result<()> {
    if answer == -1 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Writes `content` to the file `path` (NUL-terminated).
fn write_file(path: &[u8], content: &[u8]) -> io::Result<()> {
    // SAFETY: `path` is NUL-terminated and lives for the call.
    let fd = unsafe { libc::open(path.as_ptr().cast(), libc::O_WRONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `content` is valid for `content.len()` bytes; `fd` is open.
    let written = unsafe { libc::write(fd, content.as_ptr().cast(), content.len()) };
    let error = io::Error::last_os_error();
    // SAFETY: `fd` is ours and closed once.
    unsafe { libc::close(fd) };
    if usize::try_from(written).ok() != Some(content.len()) {
        return Err(error);
    }
    Ok(())
}

/// Brings the new network namespace's loopback device up.
fn loopback_up() -> io::Result<()> {
    // SAFETY: `socket` takes plain arguments.
    let socket = unsafe { libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0) };
    if socket < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `ifreq` is plain data; zero is a valid value.
    let mut request: libc::ifreq = unsafe { std::mem::zeroed() };
    for (slot, byte) in request.ifr_name.iter_mut().zip(b"lo\0") {
        *slot = *byte as libc::c_char;
    }
    // SAFETY: `request` names a device and has room for the answer.
    let mut answer = unsafe { libc::ioctl(socket, libc::SIOCGIFFLAGS, &raw mut request) };
    if answer == 0 {
        // SAFETY: the flags member is the one SIOCGIFFLAGS filled.
        unsafe {
            request.ifr_ifru.ifru_flags |= libc::IFF_UP as libc::c_short;
        }
        // SAFETY: as above.
        answer = unsafe { libc::ioctl(socket, libc::SIOCSIFFLAGS, &raw mut request) };
    }
    let error = io::Error::last_os_error();
    // SAFETY: `socket` is ours and closed once.
    unsafe { libc::close(socket) };
    if answer != 0 {
        return Err(error);
    }
    Ok(())
}

/// Closes every descriptor from `first` on.
fn close_from(first: libc::c_uint) {
    // SAFETY: closing descriptors this process holds touches no memory of it; nothing
    // after this point uses them.
    unsafe {
        libc::syscall(libc::SYS_close_range, first, libc::c_uint::MAX, 0u32);
    }
}

/// Ends this process the way `status` (a wait status) says a process ended: with its
/// exit code, or killed by its signal.
fn end_as(status: libc::c_int) -> ! {
    if libc::WIFSIGNALED(status) {
        let signal = libc::WTERMSIG(status);
        // SAFETY: resetting a disposition, unblocking and sending a signal to oneself
        // take plain arguments; a core dump is turned off first (the program's own
        // already happened, if any).
        unsafe {
            let no_core = libc::rlimit {
                rlim_cur: 0,
                rlim_max: 0,
            };
            libc::setrlimit(libc::RLIMIT_CORE, &raw const no_core);
            libc::signal(signal, libc::SIG_DFL);
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut set);
            libc::sigaddset(&raw mut set, signal);
            libc::sigprocmask(libc::SIG_UNBLOCK, &raw const set, std::ptr::null_mut());
            libc::kill(libc::getpid(), signal);
            libc::_exit(128 + signal);
        }
    }
    let code = if libc::WIFEXITED(status) {
        libc::WEXITSTATUS(status)
    } else {
        1
    };
    // SAFETY: `_exit` ends the process without running anything of the parent's.
    unsafe { libc::_exit(code) }
}

/// Waits for `pid`, retrying when interrupted; its wait status, or `None` when it cannot.
fn wait_for(pid: libc::pid_t) -> Option<libc::c_int> {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid place for the answer.
        let answer = unsafe { libc::waitpid(pid, &raw mut status, libc::__WALL) };
        if answer == pid {
            return Some(status);
        }
        if answer == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return None;
        }
    }
}

/// Does nothing: the handler A and B take the termination signals with, so that a signal
/// sent to the program's process group reaches the program (C) and ends it as it
/// chooses, rather than ending A or B (which would kill C at once). A handler, unlike
/// ignoring, is reset by `exec`: C starts with the default dispositions.
extern "C" fn ignore_signal(_: libc::c_int) {}

/// The signals a program's group is sent to end it politely.
const FORWARDED_SIGNALS: [libc::c_int; 8] = [
    libc::SIGHUP,
    libc::SIGINT,
    libc::SIGQUIT,
    libc::SIGTERM,
    libc::SIGUSR1,
    libc::SIGUSR2,
    libc::SIGALRM,
    libc::SIGPIPE,
];

/// Takes [`FORWARDED_SIGNALS`] with [`ignore_signal`].
fn outlast_polite_signals() {
    for signal in FORWARDED_SIGNALS {
        // SAFETY: installing a handler that does nothing; `sigaction` is plain data.
        unsafe {
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = ignore_signal as *const () as libc::sighandler_t;
            action.sa_flags = libc::SA_RESTART;
            libc::sigemptyset(&raw mut action.sa_mask);
            libc::sigaction(signal, &raw const action, std::ptr::null_mut());
        }
    }
}

/// Makes B (the namespace's init) and C (the program); returns in C only.
fn split_into_namespace() -> io::Result<()> {
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for two descriptors.
    check(unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [read_end, write_end] = pipe;
    // SAFETY: the child of this fork only makes system calls (below) or returns to
    // `exec`.
    let init = unsafe { libc::fork() };
    if init == -1 {
        return Err(io::Error::last_os_error());
    }
    if init > 0 {
        // A: hold only the status pipe, wait for B, end as the program ended.
        outlast_polite_signals();
        // SAFETY: moving a descriptor this process owns to 3.
        unsafe {
            libc::close(write_end);
            if read_end != 3 {
                libc::dup3(read_end, 3, libc::O_CLOEXEC);
            }
        }
        close_from(4);
        let init_status = wait_for(init);
        let mut raw = [0u8; 4];
        // SAFETY: `raw` has room for 4 bytes; 3 is the status pipe.
        let read = unsafe { libc::read(3, raw.as_mut_ptr().cast(), raw.len()) };
        let status = if read == 4 {
            libc::c_int::from_ne_bytes(raw)
        } else {
            // B ended before the program did (killed): end as B did.
            init_status.unwrap_or(libc::SIGKILL)
        };
        end_as(status);
    }
    // B, PID 1 of the new namespace: die with A.
    // SAFETY: `prctl` with these arguments only sets a flag of this process.
    unsafe {
        libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0);
        libc::close(read_end);
    }
    outlast_polite_signals();
    // SAFETY: as the fork above.
    let program = unsafe { libc::fork() };
    if program == -1 {
        // SAFETY: ending B; A then ends as B did.
        unsafe { libc::_exit(127) };
    }
    if program == 0 {
        // C: the program. The status pipe closes on `exec`.
        return Ok(());
    }
    // SAFETY: moving a descriptor this process owns to 3.
    unsafe {
        if write_end != 3 {
            libc::dup3(write_end, 3, libc::O_CLOEXEC);
        }
    }
    close_from(4);
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid place for the answer.
        let reaped = unsafe { libc::waitpid(-1, &raw mut status, libc::__WALL) };
        if reaped == program {
            let bytes = status.to_ne_bytes();
            // SAFETY: `bytes` is valid for 4 bytes; 3 is the status pipe; then B ends,
            // and with it every process left in the namespace.
            unsafe {
                libc::write(3, bytes.as_ptr().cast(), bytes.len());
                libc::_exit(0);
            }
        }
        if reaped == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // SAFETY: ending B.
            unsafe { libc::_exit(127) };
        }
    }
}
