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
//! 4. start B, the first process of the new PID namespace, which starts C, the program.
//!
//! B and C are made with `clone` sharing A's memory (B on a stack of its own, C with
//! `vfork` semantics, executing the program at once): only the command's own fork
//! copies the parent's page tables. B is the namespace's `init`: it reaps whatever is
//! orphaned inside and, when C ends,
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

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
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
            // One rule per path, with every right asked for it (the same directory is
            // often reached several ways: `/usr` through each `PATH` entry).
            let mut rules: BTreeMap<&Path, u64> = BTreeMap::new();
            let asked = [
                (&self.list, landlock::READ_DIR),
                (&self.read, landlock::READ),
                (
                    &self.write_files,
                    landlock::READ_FILE | landlock::WRITE_FILE | landlock::TRUNCATE,
                ),
                (&self.write, landlock::WRITE),
            ];
            for (paths, rights) in asked {
                for path in paths {
                    *rules.entry(path.as_path()).or_default() |= rights;
                }
            }
            for (path, rights) in rules {
                ruleset.allow(path, rights)?;
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

impl Prepared {
    /// The Landlock ruleset's descriptor, if the file system is restricted.
    pub(crate) fn ruleset_fd(&self) -> Option<std::os::fd::BorrowedFd<'_>> {
        use std::os::fd::AsFd as _;
        self.ruleset.as_ref().map(|ruleset| ruleset.fd().as_fd())
    }

    /// Whether the program may reach the network.
    pub(crate) fn network(&self) -> bool {
        self.network
    }

    /// Whether the program starts in a PID namespace of its own.
    pub fn own_pids(&self) -> bool {
        self.own_pids
    }
}

/// The process file the child writes its maps to.
const SETGROUPS: &[u8] = b"/proc/self/setgroups\0";
const UID_MAP: &[u8] = b"/proc/self/uid_map\0";
const GID_MAP: &[u8] = b"/proc/self/gid_map\0";

/// What a confined program runs: the file, its whole command line (`argv[0]` first) and
/// its whole environment, exactly as the command was made with them. With a PID
/// namespace of its own the program is started by the confinement rather than by
/// `std` (see [`Prepared::install`]), so it needs them itself.
#[derive(Clone, Copy, Debug)]
pub struct Exec<'a> {
    pub path: &'a Path,
    pub argv: &'a [String],
    pub env: &'a BTreeMap<String, String>,
}

/// An [`Exec`] made ready before the fork: NUL-terminated strings and the pointer arrays
/// `execve` takes, and the command line of `/bin/sh` for a script without a `#!` line
/// (what `execvp` does on `ENOEXEC`). Nothing here is allocated after the fork.
pub(crate) struct ExecImage {
    path: CString,
    argv: Vec<*const libc::c_char>,
    shell_argv: Vec<*const libc::c_char>,
    envp: Vec<*const libc::c_char>,
    /// The strings the pointers point into; kept alive, never moved (their heap buffers
    /// stay put when the vector moves).
    _strings: Vec<CString>,
}

// SAFETY: the raw pointers point into `_strings`, which the image owns and never
// changes; nothing reads them but the confined child, after the fork.
unsafe impl Send for ExecImage {}
// SAFETY: as above: the image is read-only once made.
unsafe impl Sync for ExecImage {}

/// The shell a script without a `#!` line is run with.
const SHELL: &[u8] = b"/bin/sh\0";

impl ExecImage {
    pub(crate) fn new(exec: &Exec<'_>) -> io::Result<ExecImage> {
        let text = |bytes: &[u8]| {
            CString::new(bytes).map_err(|_| {
                io::Error::new(io::ErrorKind::InvalidInput, "an argument holds a NUL byte")
            })
        };
        let path = text(exec.path.as_os_str().as_bytes())?;
        let mut strings = Vec::new();
        let mut argv_at = Vec::new();
        if exec.argv.is_empty() {
            strings.push(path.clone());
        } else {
            for word in exec.argv {
                strings.push(text(word.as_bytes())?);
            }
        }
        argv_at.extend(0..strings.len());
        let shell = strings.len();
        strings.push(text(b"sh")?);
        strings.push(path.clone());
        let mut envp_at = Vec::new();
        for (name, value) in exec.env {
            envp_at.push(strings.len());
            strings.push(text(format!("{name}={value}").as_bytes())?);
        }
        let pointers = |indices: &mut dyn Iterator<Item = usize>| {
            let mut pointers: Vec<*const libc::c_char> =
                indices.map(|index| strings[index].as_ptr()).collect();
            pointers.push(std::ptr::null());
            pointers
        };
        let argv = pointers(&mut argv_at.iter().copied());
        let shell_argv = pointers(
            &mut [shell, shell + 1]
                .into_iter()
                .chain(argv_at.iter().copied().skip(1)),
        );
        let envp = pointers(&mut envp_at.iter().copied());
        Ok(ExecImage {
            path,
            argv,
            shell_argv,
            envp,
            _strings: strings,
        })
    }
}

/// The stack of a process made with `CLONE_VM` (B and C, which run in A's memory).
const STACK_SIZE: usize = 64 * 1024;

/// A stack for a `CLONE_VM` child, allocated before the fork (not written: a stack
/// needs no initial content).
pub(crate) struct Stack(Box<[std::mem::MaybeUninit<u128>]>);

impl Stack {
    pub(crate) fn new() -> Stack {
        Stack(Box::new_uninit_slice(STACK_SIZE / 16))
    }

    /// The top of the stack (stacks grow down), 16-byte aligned.
    fn top(&mut self) -> *mut libc::c_void {
        self.0.as_mut_ptr_range().end.cast()
    }
}

/// What B needs to start C and report on it.
pub(crate) struct InitArguments {
    pub(crate) image: ExecImage,
    pub(crate) program_stack: Stack,
    /// The write end of the status pipe.
    pub(crate) status: libc::c_int,
}

impl Prepared {
    /// Adds the confinement to `command`, which was made to run `exec`, as a step between
    /// `fork` and `exec`: the program runs confined, and the process the caller waits for
    /// ends as the program did. Call it after the command's other settings; its step
    /// must be the last one the command takes before `exec` (but a tracer's).
    ///
    /// With a PID namespace of its own, the command's own `exec` never happens: its
    /// child (A) makes the namespace's `init` (B) and the program (C) with `clone`
    /// sharing A's memory, and C executes `exec` itself. Forking copies the parent's page
    /// tables (and later its written pages); doing it three times per action was most of
    /// the sandbox's cost.
    pub fn install(&self, command: &mut Command, exec: &Exec<'_>) -> io::Result<()> {
        let ruleset = self.ruleset.as_ref().map(Ruleset::raw_fd);
        let user_namespace = self.user_namespace;
        let offline_network = self.offline_network;
        let network = self.network;
        let own_pids = self.own_pids;
        let mut init = if own_pids {
            Some(Box::new(InitArguments {
                image: ExecImage::new(exec)?,
                program_stack: Stack::new(),
                status: -1,
            }))
        } else {
            None
        };
        let mut init_stack = Stack::new();
        let step = move || {
            enter(
                Some(user_namespace),
                (!network).then_some(offline_network),
                own_pids,
                ruleset,
            )?;
            match init.as_deref_mut() {
                Some(arguments) => split_into_namespace(arguments, &mut init_stack),
                None => Ok(()),
            }
        };
        // SAFETY: the step makes only system calls (no allocation, no lock): see
        // `split_into_namespace` for the processes it makes.
        unsafe {
            command.pre_exec(step);
        }
        Ok(())
    }
}

/// The confinement's steps in the child before it splits into the PID namespace: join
/// the shared user namespace (`None`: the process is in it already, as the
/// [`crate::launcher`]'s children are) and the offline network namespace (`None`: the
/// program keeps the network), make a PID namespace for the children to come when
/// `own_pids`, and restrict the process with the Landlock ruleset, if any. Only system
/// calls: it runs between `fork` and `exec` of a multithreaded parent too.
pub(crate) fn enter(
    user_namespace: Option<libc::c_int>,
    offline_network: Option<libc::c_int>,
    own_pids: bool,
    ruleset: Option<libc::c_int>,
) -> io::Result<()> {
    // SAFETY: `setns` and `unshare` take a descriptor and flags; the descriptors are the
    // shared namespaces', open for the caller's life.
    unsafe {
        if let Some(user_namespace) = user_namespace {
            check(libc::setns(user_namespace, libc::CLONE_NEWUSER))?;
        }
        if let Some(offline_network) = offline_network {
            check(libc::setns(offline_network, libc::CLONE_NEWNET))?;
        }
        if own_pids {
            check(libc::unshare(libc::CLONE_NEWPID))?;
        }
    }
    if let Some(ruleset) = ruleset {
        // SAFETY: `prctl` with these arguments only sets a flag of this process.
        check(unsafe { libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) })?;
        // SAFETY: `ruleset` is the descriptor of a ruleset kept open until the program
        // started; the call takes no memory.
        let restricted = unsafe { libc::syscall(libc::SYS_landlock_restrict_self, ruleset, 0u32) };
        if restricted != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The user namespace every confined program of this process joins (its user and group
/// mapped to themselves) and, in it, the network namespace of the programs without the
/// network: made once, by a short-lived child, and kept by their descriptors. Making a
/// network namespace per program would cost each one its creation and, worse, a
/// teardown the kernel serialises: hundreds of programs in a row then wait on each
/// other's. Programs without the network therefore share one loopback.
pub(crate) struct SharedNamespaces {
    pub(crate) user: OwnedFd,
    pub(crate) offline_network: OwnedFd,
}

pub(crate) fn shared_namespaces() -> io::Result<&'static SharedNamespaces> {
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
pub(crate) fn check(answer: libc::c_int) -> io::Result<()> {
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

/// Makes B (the namespace's init, sharing this process's memory, on `init_stack`), which
/// makes and reports on C (the program); this process (A) then waits and ends as C did.
/// Returns only when it cannot start B.
pub(crate) fn split_into_namespace(
    arguments: &mut InitArguments,
    init_stack: &mut Stack,
) -> io::Result<()> {
    let mut pipe = [0; 2];
    // SAFETY: `pipe` has room for two descriptors.
    check(unsafe { libc::pipe2(pipe.as_mut_ptr(), libc::O_CLOEXEC) })?;
    let [read_end, write_end] = pipe;
    arguments.status = write_end;
    // A child that ends must be waitable: not auto-reaped by an inherited `SIG_IGN`.
    // SAFETY: resetting a disposition takes plain arguments.
    unsafe { libc::signal(libc::SIGCHLD, libc::SIG_DFL) };
    // SAFETY: B runs `run_init` on its own stack in this process's memory; it only makes
    // system calls on memory made before the fork (`arguments`), as does this process
    // while B lives, so neither disturbs the other.
    let init = unsafe {
        libc::clone(
            run_init,
            init_stack.top(),
            libc::CLONE_VM | libc::SIGCHLD,
            std::ptr::from_mut(arguments).cast(),
        )
    };
    if init == -1 {
        let error = io::Error::last_os_error();
        close_all(&pipe);
        return Err(error);
    }
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
    let mut raw = [0u8; 4];
    // A read interrupted by a signal is retried; it ends when B writes the status or ends.
    let read = loop {
        // SAFETY: `raw` has room for 4 bytes; 3 is the status pipe.
        let read = unsafe { libc::read(3, raw.as_mut_ptr().cast(), raw.len()) };
        if read != -1 {
            break read;
        }
    };
    // B shares this process's `errno`, so nothing here depends on it: B is this
    // process's only child and nothing else reaps it, so the wait ends with it.
    let mut init_status = 0;
    // SAFETY: `init_status` is a valid place for the answer.
    while unsafe { libc::waitpid(init, &raw mut init_status, libc::__WALL) } != init {}
    let status = if read == 4 {
        libc::c_int::from_ne_bytes(raw)
    } else {
        // B ended before the program did (killed): end as B did.
        init_status
    };
    end_as(status);
}

/// B, PID 1 of the new namespace, on its own stack in A's memory: makes C (the program)
/// with `vfork` semantics, reaps whatever is orphaned in the namespace, and hands C's
/// wait status to A; when it then ends the kernel kills every process left in the
/// namespace.
extern "C" fn run_init(arguments: *mut libc::c_void) -> libc::c_int {
    // SAFETY: A passed a pointer to its `InitArguments`, alive for A's life (A never
    // returns from the step) and only read here.
    let arguments = unsafe { &mut *arguments.cast::<InitArguments>() };
    // SAFETY: `prctl` with these arguments only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) };
    outlast_polite_signals();
    let image: *const ExecImage = &raw const arguments.image;
    // SAFETY: C runs `run_program` on its own stack while B waits (`CLONE_VFORK`) until
    // C has executed its program or ended; C only calls `execve` and `_exit`.
    let program = unsafe {
        libc::clone(
            run_program,
            arguments.program_stack.top(),
            libc::CLONE_VM | libc::CLONE_VFORK | libc::SIGCHLD,
            image.cast_mut().cast(),
        )
    };
    if program == -1 {
        // SAFETY: ending B; A then ends as B did.
        unsafe { libc::_exit(127) };
    }
    let status_pipe = arguments.status;
    // SAFETY: moving a descriptor this process owns to 3.
    unsafe {
        if status_pipe != 3 {
            libc::dup3(status_pipe, 3, libc::O_CLOEXEC);
        }
    }
    close_from(4);
    loop {
        let mut status = 0;
        // SAFETY: `status` is a valid place for the answer. Until C is reaped B has a
        // child, so a failed wait was interrupted: `errno` (shared with A) is not read.
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
    }
}

/// C, the program: executes it (a file without a `#!` line through `/bin/sh`, as
/// `execvp` does); when it cannot, says why on its standard error and ends with 127.
extern "C" fn run_program(image: *mut libc::c_void) -> libc::c_int {
    // SAFETY: B passed a pointer to the image, alive while C runs (B waits for it).
    let image = unsafe { &*image.cast::<ExecImage>() };
    // SAFETY: every pointer array is NUL-terminated and points into the image's strings.
    unsafe {
        libc::execve(
            image.path.as_ptr(),
            image.argv.as_ptr(),
            image.envp.as_ptr(),
        );
    }
    let mut error = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    if error == libc::ENOEXEC {
        // SAFETY: as above.
        unsafe {
            libc::execve(
                SHELL.as_ptr().cast(),
                image.shell_argv.as_ptr(),
                image.envp.as_ptr(),
            );
        }
        error = io::Error::last_os_error().raw_os_error().unwrap_or(0);
    }
    let reason: &[u8] = match error {
        libc::EACCES => b"permission denied",
        libc::ENOENT => b"no such file or directory",
        libc::ENOEXEC => b"not an executable format",
        libc::E2BIG => b"its arguments and environment are too long",
        libc::ENOMEM => b"out of memory",
        _ => b"the system refused to run it",
    };
    let parts: [&[u8]; 5] = [
        b"once: cannot execute `",
        image.path.as_bytes(),
        b"`: ",
        reason,
        b"\n",
    ];
    for part in parts {
        // SAFETY: `part` is valid for its length; 2 is the standard error.
        unsafe { libc::write(2, part.as_ptr().cast(), part.len()) };
    }
    // SAFETY: ending C without running anything of B's (whose memory it shares).
    unsafe { libc::_exit(127) }
}
