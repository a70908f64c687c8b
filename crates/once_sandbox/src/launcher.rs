//! The sandbox's launcher: a small companion process that starts confined programs, so
//! that `once` itself never forks for them.
//!
//! A confined program needs steps between `fork` and `exec` ([`crate::confine`]), and a
//! step there needs a real `fork`: `posix_spawn`'s copy-nothing `vfork` cannot run one.
//! Forking `once` copies its page tables (the database, the plans, the executor's
//! buffers) and then makes `once` pay a copy-on-write fault for every page it writes
//! while the child lives; for a short action that was most of what the sandbox cost.
//! The launcher is `once` started afresh in another role (`once __sandbox-launcher`):
//! small and single-threaded, it joins the shared user namespace once, and forks
//! *itself* for each program, which costs a fraction of forking `once`.
//!
//! # Protocol
//!
//! `once` holds one end of a `SOCK_SEQPACKET` socket pair (the control socket); the
//! launcher gets the other as its standard input.
//!
//! 1. **Handshake.** `once` sends `H` with the shared user and offline network
//!    namespaces' descriptors; the launcher joins the user namespace and answers `H`
//!    and an errno (0: ready).
//! 2. **A program.** For each program `once` makes a stream socket pair (the request
//!    socket), sends `R` on the control socket with the request socket's other end,
//!    the program's standard output and error and its Landlock ruleset, then writes
//!    the request's body (file, directory, command line, environment, network) on the
//!    request socket. The launcher forks A, which confines itself and splits into the
//!    namespace exactly as [`crate::confine`] describes, and answers `S` with A's
//!    process id and a pidfd of A (or `F` and the errno of the step that failed).
//! 3. **The end.** `once` polls the pidfd; when A has exited (A is not reaped yet, so
//!    its process group cannot be reused), `once` kills the group and sends `W`; the
//!    launcher reaps A and answers `E` with A's wait status (A ends as the program
//!    did).
//!
//! Datagrams on the control socket are sent whole, so threads of `once` share it
//! without a lock; every answer travels on the request's own socket.
//!
//! # Lifetime
//!
//! The launcher leaves `once`'s session (a `^C` on the terminal is `once`'s to handle)
//! and lives until the control socket closes: when `once` ends, however it ends, the
//! launcher kills the group of every program still running and ends. A request socket
//! closed before `W` (the thread of `once` gave up) gets its program's group killed
//! too. Each A dies with the launcher (`PR_SET_PDEATHSIG`), and the namespace's `init`
//! with A, so nothing outlives `once` even when the launcher is killed.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::io::{self, IoSlice, IoSliceMut};
use std::mem::MaybeUninit;
use std::os::fd::{AsFd as _, AsRawFd as _, BorrowedFd, FromRawFd as _, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};

use rustix::event::{PollFd, PollFlags, poll};
use rustix::net::{
    AddressFamily, RecvAncillaryBuffer, RecvAncillaryMessage, RecvFlags, SendAncillaryBuffer,
    SendAncillaryMessage, SendFlags, SocketFlags, SocketType, recvmsg, sendmsg, socketpair,
};

use crate::confine::{self, Exec, ExecImage, InitArguments, Prepared, Stack, check};

/// The argument that starts `once` as the launcher.
pub const ROLE: &str = "__sandbox-launcher";

/// The largest request body the launcher reads (a command line and environment are
/// bounded by the kernel's `ARG_MAX` well below it).
const MAX_BODY: usize = 64 << 20;

/// The most descriptors one message carries.
const MAX_FDS: usize = 4;

/// Makes the control socket pair: the first end is `once`'s, the second the
/// launcher's standard input.
pub fn control_pair() -> io::Result<(OwnedFd, OwnedFd)> {
    Ok(socketpair(
        AddressFamily::UNIX,
        SocketType::SEQPACKET,
        SocketFlags::CLOEXEC,
        None,
    )?)
}

/// `once`'s side of a running launcher.
#[derive(Debug)]
pub struct Launcher {
    control: OwnedFd,
}

/// Why a program could not be started through the launcher.
#[derive(Debug)]
pub enum LaunchError {
    /// The launcher is gone or broke the protocol: nothing was started, and the program
    /// can be started another way.
    Unavailable(io::Error),
    /// The launcher tried and a step failed (the program's directory is missing, the
    /// kernel refused a namespace): the program cannot run.
    Failed(io::Error),
}

impl Launcher {
    /// Greets the launcher whose standard input is the other end of `control`: hands it
    /// the shared namespaces and waits until it joined them.
    pub fn connect(control: OwnedFd) -> io::Result<Launcher> {
        let shared = confine::shared_namespaces()?;
        send_with_fds(
            &control,
            b"H",
            &[shared.user.as_fd(), shared.offline_network.as_fd()],
        )?;
        let mut answer = [0u8; 5];
        let (read, _) = receive_with_fds(&control, &mut answer)?;
        if read != answer.len() || answer[0] != b'H' {
            return Err(io::Error::other("the sandbox's launcher did not answer"));
        }
        let errno = i32::from_ne_bytes([answer[1], answer[2], answer[3], answer[4]]);
        if errno != 0 {
            return Err(io::Error::from_raw_os_error(errno));
        }
        Ok(Launcher { control })
    }

    /// Starts `exec` in `cwd`, confined by `prepared` (which must give it a PID
    /// namespace of its own), its standard output and error on the given descriptors.
    pub fn start(
        &self,
        prepared: &Prepared,
        exec: &Exec<'_>,
        cwd: &Path,
        stdout: BorrowedFd<'_>,
        stderr: BorrowedFd<'_>,
    ) -> Result<Launched, LaunchError> {
        if !prepared.own_pids() {
            return Err(LaunchError::Unavailable(io::Error::new(
                io::ErrorKind::Unsupported,
                "the launcher starts programs in a PID namespace of their own only",
            )));
        }
        let body = encode(exec, cwd, prepared.network()).map_err(LaunchError::Failed)?;
        let unavailable = LaunchError::Unavailable;
        let (ours, theirs) = socketpair(
            AddressFamily::UNIX,
            SocketType::STREAM,
            SocketFlags::CLOEXEC,
            None,
        )
        .map_err(|e| unavailable(e.into()))?;
        let mut fds = vec![theirs.as_fd(), stdout, stderr];
        fds.extend(prepared.ruleset_fd());
        send_with_fds(&self.control, b"R", &fds).map_err(unavailable)?;
        drop(fds);
        drop(theirs);
        write_all(&ours, &body).map_err(unavailable)?;
        let mut answer = [0u8; 5];
        let (read, pidfd) = receive_with_fds(&ours, &mut answer).map_err(unavailable)?;
        if read != answer.len() {
            return Err(unavailable(io::Error::other(
                "the sandbox's launcher ended before it started the program",
            )));
        }
        let number = i32::from_ne_bytes([answer[1], answer[2], answer[3], answer[4]]);
        match (answer[0], pidfd) {
            (b'S', Some(pidfd)) => Ok(Launched {
                pid: number,
                pidfd,
                socket: ours,
            }),
            (b'F', _) => Err(LaunchError::Failed(io::Error::from_raw_os_error(number))),
            _ => Err(unavailable(io::Error::other(
                "the sandbox's launcher answered out of turn",
            ))),
        }
    }
}

/// A program the launcher started: its process group (led by A) is the caller's to
/// kill until [`Launched::reap`].
#[derive(Debug)]
pub struct Launched {
    pid: i32,
    pidfd: OwnedFd,
    socket: OwnedFd,
}

impl Launched {
    /// The process id of A, which leads the program's process group.
    pub fn pid(&self) -> i32 {
        self.pid
    }

    /// Waits until A has exited (it is not reaped yet, so its id is not reused).
    pub fn wait_exited(&self) {
        loop {
            let mut fds = [PollFd::new(&self.pidfd, PollFlags::IN)];
            match poll(&mut fds, None) {
                Ok(_) if !fds[0].revents().is_empty() => return,
                Ok(_) | Err(rustix::io::Errno::INTR) => {}
                // A pidfd that cannot be polled: nothing to wait on.
                Err(_) => return,
            }
        }
    }

    /// Has the launcher reap A; returns A's wait status (the program's).
    pub fn reap(self) -> io::Result<libc::c_int> {
        write_all(&self.socket, b"W")?;
        let mut answer = [0u8; 5];
        let (read, _) = receive_with_fds(&self.socket, &mut answer)?;
        if read != answer.len() || answer[0] != b'E' {
            return Err(io::Error::other(
                "the sandbox's launcher ended before it reported how the program ended",
            ));
        }
        Ok(libc::c_int::from_ne_bytes([
            answer[1], answer[2], answer[3], answer[4],
        ]))
    }
}

/// The request's body: its length, then whether the program may reach the network,
/// the file, the directory, the command line and the environment, each string with its
/// length.
fn encode(exec: &Exec<'_>, cwd: &Path, network: bool) -> io::Result<Vec<u8>> {
    let mut body = vec![0; 4];
    body.push(u8::from(network));
    let mut string = |bytes: &[u8]| -> io::Result<()> {
        let length = u32::try_from(bytes.len())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "an argument is too long"))?;
        body.extend_from_slice(&length.to_le_bytes());
        body.extend_from_slice(bytes);
        Ok(())
    };
    string(exec.path.as_os_str().as_bytes())?;
    string(cwd.as_os_str().as_bytes())?;
    string(&count(exec.argv.len())?)?;
    for word in exec.argv {
        string(word.as_bytes())?;
    }
    string(&count(exec.env.len())?)?;
    for (name, value) in exec.env {
        string(name.as_bytes())?;
        string(value.as_bytes())?;
    }
    if body.len() > MAX_BODY {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "the command line and environment are too long",
        ));
    }
    let length = u32::try_from(body.len() - 4).unwrap_or(u32::MAX);
    body[..4].copy_from_slice(&length.to_le_bytes());
    Ok(body)
}

fn count(n: usize) -> io::Result<[u8; 4]> {
    u32::try_from(n)
        .map(u32::to_le_bytes)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "too many arguments"))
}

/// A request's body, decoded.
struct Request {
    network: bool,
    path: PathBuf,
    cwd: PathBuf,
    argv: Vec<String>,
    env: BTreeMap<String, String>,
}

fn decode(body: &[u8]) -> Option<Request> {
    let (&network, mut rest) = body.split_first()?;
    let mut bytes = || -> Option<&[u8]> {
        let length = u32::from_le_bytes(rest.get(..4)?.try_into().ok()?) as usize;
        let value = rest.get(4..4 + length)?;
        rest = &rest[4 + length..];
        Some(value)
    };
    let path = PathBuf::from(OsStr::from_bytes(bytes()?));
    let cwd = PathBuf::from(OsStr::from_bytes(bytes()?));
    let number = |field: &[u8]| Some(u32::from_le_bytes(field.try_into().ok()?) as usize);
    let argc = number(bytes()?)?;
    let mut argv = Vec::new();
    for _ in 0..argc {
        argv.push(String::from_utf8(bytes()?.to_vec()).ok()?);
    }
    let envc = number(bytes()?)?;
    let mut env = BTreeMap::new();
    for _ in 0..envc {
        let name = String::from_utf8(bytes()?.to_vec()).ok()?;
        let value = String::from_utf8(bytes()?.to_vec()).ok()?;
        env.insert(name, value);
    }
    Some(Request {
        network: network != 0,
        path,
        cwd,
        argv,
        env,
    })
}

/// Sends `bytes` with `fds` as one message.
fn send_with_fds(socket: &OwnedFd, bytes: &[u8], fds: &[BorrowedFd<'_>]) -> io::Result<()> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    let mut control = SendAncillaryBuffer::new(&mut space);
    if !fds.is_empty() && !control.push(SendAncillaryMessage::ScmRights(fds)) {
        return Err(io::Error::other("too many descriptors for one message"));
    }
    loop {
        match sendmsg(
            socket,
            &[IoSlice::new(bytes)],
            &mut control,
            SendFlags::NOSIGNAL,
        ) {
            Ok(sent) if sent == bytes.len() => return Ok(()),
            Ok(_) => return Err(io::Error::other("a message was cut short")),
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
}

/// Receives one message into `buffer`: how many bytes, and the first descriptor it
/// carried (every other one is closed). Zero bytes: the other end is closed.
fn receive_with_fds(socket: &OwnedFd, buffer: &mut [u8]) -> io::Result<(usize, Option<OwnedFd>)> {
    let (read, mut fds) = receive_all_fds(socket, buffer)?;
    let first = if fds.is_empty() {
        None
    } else {
        Some(fds.remove(0))
    };
    Ok((read, first))
}

/// Receives one message into `buffer`, with every descriptor it carried (close-on-exec).
fn receive_all_fds(socket: &OwnedFd, buffer: &mut [u8]) -> io::Result<(usize, Vec<OwnedFd>)> {
    let mut space = [MaybeUninit::uninit(); rustix::cmsg_space!(ScmRights(MAX_FDS))];
    loop {
        let mut control = RecvAncillaryBuffer::new(&mut space);
        match recvmsg(
            socket,
            &mut [IoSliceMut::new(buffer)],
            &mut control,
            RecvFlags::CMSG_CLOEXEC,
        ) {
            Ok(received) => {
                let mut fds = Vec::new();
                for message in control.drain() {
                    if let RecvAncillaryMessage::ScmRights(received) = message {
                        fds.extend(received);
                    }
                }
                return Ok((received.bytes, fds));
            }
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
}

fn write_all(socket: &OwnedFd, mut bytes: &[u8]) -> io::Result<()> {
    while !bytes.is_empty() {
        match rustix::net::send(socket, bytes, SendFlags::NOSIGNAL) {
            Ok(0) => return Err(io::ErrorKind::WriteZero.into()),
            Ok(sent) => bytes = &bytes[sent..],
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

fn read_exact(socket: &OwnedFd, mut buffer: &mut [u8]) -> io::Result<()> {
    while !buffer.is_empty() {
        match rustix::io::read(socket, &mut *buffer) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(read) => buffer = &mut buffer[read..],
            Err(rustix::io::Errno::INTR) => {}
            Err(error) => return Err(error.into()),
        }
    }
    Ok(())
}

/// A program the launcher started and has not reaped.
struct Running {
    pid: libc::pid_t,
    socket: OwnedFd,
}

/// The launcher's side: serves the control socket on standard input until it closes.
/// Runs in a process of its own, started with [`ROLE`], before anything else of `once`
/// (it must stay single-threaded: joining a user namespace asks for it).
pub fn serve() -> io::Result<()> {
    // The control socket moves off standard input (which becomes `/dev/null`), so no
    // program inherits it; leaving `once`'s session keeps the terminal's signals away.
    // SAFETY: `fcntl` duplicates a descriptor this process holds; `setsid` takes nothing.
    let control = unsafe {
        let duplicate = libc::fcntl(0, libc::F_DUPFD_CLOEXEC, 3);
        if duplicate < 0 {
            return Err(io::Error::last_os_error());
        }
        libc::setsid();
        OwnedFd::from_raw_fd(duplicate)
    };
    let null = std::fs::File::open("/dev/null")?;
    // SAFETY: replacing standard input with a descriptor this process holds.
    check(unsafe { libc::dup2(null.as_raw_fd(), 0) })?;
    drop(null);
    let offline_network = handshake(&control)?;
    let mut running: Vec<Running> = Vec::new();
    loop {
        let mut fds = Vec::with_capacity(running.len() + 1);
        fds.push(PollFd::new(&control, PollFlags::IN));
        for program in &running {
            fds.push(PollFd::new(&program.socket, PollFlags::IN));
        }
        match poll(&mut fds, None) {
            Ok(_) => {}
            Err(rustix::io::Errno::INTR) => continue,
            // Out of memory for the poll (nothing else fails it here): try again soon.
            Err(_) => {
                std::thread::sleep(std::time::Duration::from_millis(1));
                continue;
            }
        }
        let ready: Vec<bool> = fds.iter().map(|fd| !fd.revents().is_empty()).collect();
        drop(fds);
        // Programs first (from the back, so removing keeps the indices right).
        for index in (0..running.len()).rev() {
            if ready[index + 1] {
                let program = running.swap_remove(index);
                finish(program);
            }
        }
        if ready[0] {
            let mut tag = [0u8; 1];
            // A control socket that fails is as good as closed.
            let (read, fds) = receive_all_fds(&control, &mut tag).unwrap_or_default();
            if read == 0 {
                // `once` ended: so do its programs.
                for program in running.drain(..) {
                    kill_group(program.pid);
                    reap(program.pid);
                }
                return Ok(());
            }
            if tag[0] == b'R'
                && let Some(program) = start(fds, offline_network.as_raw_fd())
            {
                running.push(program);
            }
        }
    }
}

/// Receives the shared namespaces, joins the user namespace and says so.
fn handshake(control: &OwnedFd) -> io::Result<OwnedFd> {
    let mut tag = [0u8; 1];
    let (read, mut fds) = receive_all_fds(control, &mut tag)?;
    if read != 1 || tag[0] != b'H' || fds.len() != 2 {
        return Err(io::Error::other("the launcher's handshake was malformed"));
    }
    let offline_network = fds.pop().ok_or_else(|| io::Error::other("no namespace"))?;
    let user = fds.pop().ok_or_else(|| io::Error::other("no namespace"))?;
    // SAFETY: `setns` takes a descriptor this process holds and a flag; this process is
    // single-threaded, as joining a user namespace requires.
    let joined = check(unsafe { libc::setns(user.as_raw_fd(), libc::CLONE_NEWUSER) });
    let errno = match &joined {
        Ok(()) => 0,
        Err(error) => error.raw_os_error().unwrap_or(libc::EINVAL),
    };
    let mut answer = vec![b'H'];
    answer.extend_from_slice(&errno.to_ne_bytes());
    send_with_fds(control, &answer, &[])?;
    joined?;
    Ok(offline_network)
}

/// Answers on a request socket: `tag` and a number, with `fd` if any.
fn answer(socket: &OwnedFd, tag: u8, number: i32, fd: Option<BorrowedFd<'_>>) {
    let mut message = vec![tag];
    message.extend_from_slice(&number.to_ne_bytes());
    let fds: Vec<BorrowedFd<'_>> = fd.into_iter().collect();
    let _ = send_with_fds(socket, &message, &fds);
}

/// Starts the program a request (its descriptors: request socket, standard output,
/// standard error, and the ruleset if any) asks for: reads the body, forks A and
/// reports. Returns the program when it runs.
fn start(mut fds: Vec<OwnedFd>, offline_network: RawFd) -> Option<Running> {
    if !(3..=4).contains(&fds.len()) {
        return None;
    }
    let ruleset = (fds.len() == 4).then(|| fds.pop()).flatten();
    let stderr = fds.pop()?;
    let stdout = fds.pop()?;
    let socket = fds.pop()?;
    let mut length = [0u8; 4];
    read_exact(&socket, &mut length).ok()?;
    let length = u32::from_le_bytes(length) as usize;
    if length > MAX_BODY {
        answer(&socket, b'F', libc::E2BIG, None);
        return None;
    }
    let mut body = vec![0; length];
    read_exact(&socket, &mut body).ok()?;
    let Some(request) = decode(&body) else {
        answer(&socket, b'F', libc::EINVAL, None);
        return None;
    };
    let exec = Exec {
        path: &request.path,
        argv: &request.argv,
        env: &request.env,
    };
    let cwd = match std::ffi::CString::new(request.cwd.as_os_str().as_bytes()) {
        Ok(cwd) => cwd,
        Err(_) => {
            answer(&socket, b'F', libc::EINVAL, None);
            return None;
        }
    };
    let mut init = match ExecImage::new(&exec) {
        Ok(image) => InitArguments {
            image,
            program_stack: Stack::new(),
            status: -1,
        },
        Err(_) => {
            answer(&socket, b'F', libc::EINVAL, None);
            return None;
        }
    };
    let mut init_stack = Stack::new();
    let mut error_pipe = [0; 2];
    // SAFETY: `error_pipe` has room for two descriptors.
    if let Err(error) = check(unsafe { libc::pipe2(error_pipe.as_mut_ptr(), libc::O_CLOEXEC) }) {
        answer(
            &socket,
            b'F',
            error.raw_os_error().unwrap_or(libc::EIO),
            None,
        );
        return None;
    }
    // SAFETY: this process is single-threaded, so the child may run any code; it ends
    // with `_exit` (through `run_a`), never returning here.
    let child = unsafe { libc::fork() };
    if child == 0 {
        run_a(ChildSetup {
            stdout: stdout.as_raw_fd(),
            stderr: stderr.as_raw_fd(),
            cwd: &cwd,
            offline_network: (!request.network).then_some(offline_network),
            ruleset: ruleset.as_ref().map(std::os::fd::AsRawFd::as_raw_fd),
            error: error_pipe[1],
            init: &mut init,
            init_stack: &mut init_stack,
        });
    }
    // SAFETY: closing this process's copy of the pipe's write end.
    unsafe { libc::close(error_pipe[1]) };
    // SAFETY: the read end is this process's, and owned from here on.
    let error_read = unsafe { OwnedFd::from_raw_fd(error_pipe[0]) };
    if child < 0 {
        let errno = io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EAGAIN);
        answer(&socket, b'F', errno, None);
        return None;
    }
    drop((stdout, stderr, ruleset));
    // The pipe ends (EOF) once the program was executed (every copy of the write end is
    // closed then); four bytes are the errno of a step that failed first.
    let mut errno = [0u8; 4];
    let failed = read_exact(&error_read, &mut errno).is_ok();
    if failed {
        reap(child);
        answer(&socket, b'F', i32::from_ne_bytes(errno), None);
        return None;
    }
    // SAFETY: `child` is this process's unreaped child, so its id is still its own.
    let pidfd = match rustix::process::Pid::from_raw(child)
        .map(|pid| rustix::process::pidfd_open(pid, rustix::process::PidfdFlags::empty()))
    {
        Some(Ok(pidfd)) => pidfd,
        _ => {
            kill_group(child);
            reap(child);
            answer(&socket, b'F', libc::ESRCH, None);
            return None;
        }
    };
    answer(&socket, b'S', child, Some(pidfd.as_fd()));
    Some(Running { pid: child, socket })
}

/// Ends a program's request: on `W` reaps A and reports its status; when the request
/// socket closed first (the caller gave up), kills the program's group and reaps it.
fn finish(program: Running) {
    let mut tag = [0u8; 1];
    let asked = matches!(rustix::io::read(&program.socket, &mut tag), Ok(1)) && tag[0] == b'W';
    if !asked {
        kill_group(program.pid);
    }
    let status = reap(program.pid);
    if asked {
        answer(&program.socket, b'E', status, None);
    }
}

fn kill_group(pid: libc::pid_t) {
    // SAFETY: `kill` takes plain arguments; `pid` is an unreaped child's, so its group
    // is the program's.
    unsafe { libc::kill(-pid, libc::SIGKILL) };
}

/// Reaps the child `pid`; returns its wait status.
fn reap(pid: libc::pid_t) -> libc::c_int {
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid place for the answer.
        let answer = unsafe { libc::waitpid(pid, &raw mut status, 0) };
        if answer == pid {
            return status;
        }
        if answer == -1 && io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            // Not a child any more: report a kill.
            return libc::SIGKILL;
        }
    }
}

/// What A needs to become the program's confined leader.
struct ChildSetup<'a> {
    stdout: RawFd,
    stderr: RawFd,
    cwd: &'a std::ffi::CStr,
    /// The offline network namespace to join (`None`: the program keeps the network).
    offline_network: Option<RawFd>,
    ruleset: Option<RawFd>,
    /// The write end of the pipe a failed step's errno goes to.
    error: RawFd,
    init: &'a mut InitArguments,
    init_stack: &'a mut Stack,
}

/// A: leads a process group of its own with the program's streams and directory,
/// confines itself and splits into the namespace ([`confine::split_into_namespace`],
/// which ends this process as the program ends). A failed step writes its errno to the
/// error pipe and ends A.
fn run_a(setup: ChildSetup<'_>) -> ! {
    let ChildSetup {
        stdout,
        stderr,
        cwd,
        offline_network,
        ruleset,
        error,
        init,
        init_stack,
    } = setup;
    let result = (|| {
        // SAFETY: each call takes plain arguments or a NUL-terminated string that lives
        // for the call; the descriptors are this process's.
        unsafe {
            check(libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0))?;
            // The launcher may have ended before the flag was set.
            if libc::getppid() == 1 {
                libc::_exit(127);
            }
            check(libc::setpgid(0, 0))?;
            // The program starts with the dispositions and mask a fresh process has
            // (the Rust runtime ignores `SIGPIPE`).
            let mut empty: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&raw mut empty);
            libc::sigprocmask(libc::SIG_SETMASK, &raw const empty, std::ptr::null_mut());
            libc::signal(libc::SIGPIPE, libc::SIG_DFL);
            check(libc::dup2(stdout, 1))?;
            check(libc::dup2(stderr, 2))?;
            check(libc::chdir(cwd.as_ptr()))?;
        }
        confine::enter(None, offline_network, true, ruleset)?;
        confine::split_into_namespace(init, init_stack)
    })();
    let errno = match result {
        Ok(()) => libc::EINVAL,
        Err(e) => e.raw_os_error().unwrap_or(libc::EINVAL),
    }
    .to_ne_bytes();
    // SAFETY: `errno` is valid for 4 bytes; `error` is the pipe's write end; `_exit`
    // ends A without running anything of the launcher's.
    unsafe {
        libc::write(error, errno.as_ptr().cast(), errno.len());
        libc::_exit(127);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_body_decodes_to_what_was_encoded() {
        let argv = vec!["sh".to_owned(), "-c".to_owned(), "echo ünïcode".to_owned()];
        let env = BTreeMap::from([
            ("PATH".to_owned(), "/usr/bin".to_owned()),
            ("EMPTY".to_owned(), String::new()),
        ]);
        let exec = Exec {
            path: Path::new("/bin/sh"),
            argv: &argv,
            env: &env,
        };
        let body = encode(&exec, Path::new("/work dir"), true).expect("encodes");
        let length = u32::from_le_bytes(body[..4].try_into().expect("4 bytes")) as usize;
        assert_eq!(length, body.len() - 4);
        let request = decode(&body[4..]).expect("decodes");
        assert!(request.network);
        assert_eq!(request.path, Path::new("/bin/sh"));
        assert_eq!(request.cwd, Path::new("/work dir"));
        assert_eq!(request.argv, argv);
        assert_eq!(request.env, env);
        // A body cut anywhere is refused, never misread.
        for cut in 0..body.len() - 4 {
            assert!(decode(&body[4..4 + cut]).is_none(), "cut at {cut}");
        }
    }
}
