//! Starting programs: the one place `once` makes a process `Command`, for every way it
//! runs one.
//!
//! Every process `once` puts on the machine starts here (the tidy's one-runner rule,
//! `crates/xtask/src/spawns.rs`), so what applies to all of them (the exact environment,
//! process groups, the retry of a start that meets a busy executable, the [`reaper`],
//! and next the sandbox) is written once:
//!
//! - **captured** ([`crate::runner::SystemRunner`]): an action, its output into files;
//! - **piped** ([`crate::piped`]): a helper whose output is read as it comes (a test
//!   runner, a probe);
//! - **attached** ([`run_attached`]): the program of `once run`, on the terminal;
//! - **grouped** ([`start_grouped`]): a program in a group of its own whose output its
//!   caller reads and whose end it waits for itself (a runtime session's program, under
//!   its supervisor);
//! - **companions** ([`start_companion`], [`start_detached`]): `once` itself in another
//!   role (the isolated module evaluator, a session's supervisor);
//! - **the sandbox's launcher** ([`sandbox_launcher`]): `once` itself, started once per
//!   process when the binary asked for it ([`use_sandbox_launcher`]), which then starts
//!   every confined action so that this process never forks for one.
//!
//! [`reaper`]: crate::reaper

use std::collections::BTreeMap;
use std::io;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, Ordering};

use once_sandbox::launcher::Launcher;

use rustix::process::{Pid, kill_process_group};

/// A program of the workspace, resolved: what runs, how it is called, in which
/// environment and where.
#[derive(Clone, Copy, Debug)]
pub struct Program<'a> {
    /// The program, absolute (as [`crate::tools::resolve_program`] finds it).
    pub path: &'a Path,
    /// The command line; `argv[0]` is passed as the program's name.
    pub argv: &'a [String],
    /// The complete environment: nothing else is inherited.
    pub env: &'a BTreeMap<String, String>,
    /// The working directory (absolute).
    pub cwd: &'a Path,
}

impl Program<'_> {
    /// The command that starts this program, standard input from `/dev/null`; the caller
    /// sets the other streams and the process group.
    pub(crate) fn command(&self) -> Command {
        let mut command = Command::new(self.path);
        if let Some((first, rest)) = self.argv.split_first() {
            command.arg0(first).args(rest);
        }
        command
            .env_clear()
            .envs(self.env)
            .current_dir(self.cwd)
            .stdin(Stdio::null());
        command
    }

    /// Confines `command` (made by [`Program::command`] for this program) with
    /// `prepared`.
    pub(crate) fn confine(
        &self,
        command: &mut Command,
        prepared: &once_sandbox::Prepared,
    ) -> io::Result<()> {
        prepared.install(
            command,
            &once_sandbox::Exec {
                path: self.path,
                argv: self.argv,
                env: self.env,
            },
        )
    }
}

/// Where the attached program runs: in a process group of its own, also in a PID
/// namespace of its own (nothing it starts outlives it, however it leaves the group), or
/// in `once`'s (the terminal's foreground group, so that it reads the terminal and the
/// terminal's `^C` reaches it directly).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AttachedGroup {
    Own,
    Contained,
    Terminal,
}

/// The attached program once it started: whom a signal `once` receives is forwarded to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AttachedProcess {
    pub pid: u32,
    /// Whether `pid` leads a group of its own (a signal then goes to the whole group).
    pub own_group: bool,
}

impl AttachedProcess {
    /// Sends `signal` (a raw number) to the program, to its whole group when it has one.
    pub fn signal(&self, signal: i32) {
        let (Some(pid), Some(signal)) = (
            Pid::from_raw(self.pid.cast_signed()),
            rustix::process::Signal::from_named_raw(signal),
        ) else {
            return;
        };
        let _ = if self.own_group {
            kill_process_group(pid, signal)
        } else {
            rustix::process::kill_process(pid, signal)
        };
    }
}

/// Runs `program` attached to `once`'s own standard streams (its standard input too)
/// until it ends. `started` learns the process as soon as it runs (to forward signals to
/// it) and `ended` once it ended. With a group of its own, the group is killed when the
/// program exits (nothing it left running survives, as for an action), and the
/// [`crate::reaper`] kills it if `once` is killed first.
pub fn run_attached(
    program: &Program<'_>,
    group: AttachedGroup,
    started: &mut dyn FnMut(AttachedProcess),
    ended: &mut dyn FnMut(),
) -> io::Result<ExitStatus> {
    let mut command = program.command();
    command.stdin(Stdio::inherit());
    let own_group = group != AttachedGroup::Terminal;
    if own_group {
        command.process_group(0);
    }
    // The program's namespaces (it keeps the caller's file system and network).
    let contained = match group {
        AttachedGroup::Contained => Some(once_sandbox::Confinement::contain_only(true).prepare()?),
        _ => None,
    };
    if let Some(contained) = &contained {
        program.confine(&mut command, contained)?;
    }
    let mut child = crate::runner::spawn(&mut command)?;
    let process = AttachedProcess {
        pid: child.id(),
        own_group,
    };
    started(process);
    let leader = Pid::from_raw(process.pid.cast_signed()).filter(|_| process.own_group);
    if let Some(group) = leader {
        crate::reaper::watch(group);
        crate::runner::wait_unreaped(group);
        let _ = kill_process_group(group, rustix::process::Signal::KILL);
        crate::reaper::forget(group);
    }
    let status = child.wait();
    ended();
    status
}

/// Starts `program` as the leader of a process group of its own (`contained`: in a PID
/// namespace of its own too, so nothing it starts outlives it), its standard output and
/// error on pipes the caller reads; the caller waits for it and ends its group.
pub fn start_grouped(program: &Program<'_>, contained: bool) -> io::Result<Child> {
    let mut command = program.command();
    command
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let confinement = contained
        .then(|| once_sandbox::Confinement::contain_only(true).prepare())
        .transpose()?;
    if let Some(confinement) = &confinement {
        program.confine(&mut command, confinement)?;
    }
    crate::runner::spawn(&mut command)
}

/// Starts `once` itself (`executable`) in another role, with `args`, this process's
/// environment and `env` on top of it, its standard input and output on pipes the
/// caller holds and its standard error discarded (the isolated module evaluator).
pub fn start_companion(
    executable: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> io::Result<Child> {
    let mut command = Command::new(executable);
    command
        .args(args)
        .envs(env.iter().copied())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    crate::runner::spawn(&mut command)
}

/// Starts `once` itself (`executable`) with `args` in `cwd`, with an empty environment
/// and the given streams, to outlive this process (a session's supervisor, which leaves
/// this process's session itself). It is reaped by a thread of its own when it ends, so
/// it never stays a zombie of a long-running caller.
pub fn start_detached(
    executable: &Path,
    args: &[&std::ffi::OsStr],
    cwd: &Path,
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
) -> io::Result<()> {
    let mut command = Command::new(executable);
    command
        .args(args)
        .env_clear()
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    let mut child = crate::runner::spawn(&mut command)?;
    let _ = std::thread::Builder::new()
        .name("once-detached-wait".into())
        .spawn(move || child.wait());
    Ok(())
}

/// Starts `once` itself (`executable`) with `args` in `cwd`, with this process's
/// environment and the given streams, to outlive this process (the workspace server,
/// which leaves this process's session itself; it must see the environment the commands
/// it answers would see). It is reaped by a thread of its own when it ends. Answers its
/// process id.
pub fn start_background(
    executable: &Path,
    args: &[&std::ffi::OsStr],
    cwd: &Path,
    stdin: Stdio,
    stdout: Stdio,
    stderr: Stdio,
) -> io::Result<u32> {
    let mut command = Command::new(executable);
    command
        .args(args)
        .current_dir(cwd)
        .stdin(stdin)
        .stdout(stdout)
        .stderr(stderr);
    let mut child = crate::runner::spawn(&mut command)?;
    let pid = child.id();
    let _ = std::thread::Builder::new()
        .name("once-background-wait".into())
        .spawn(move || child.wait());
    Ok(pid)
}

/// The first argument that starts `once` as the sandbox's launcher.
pub const SANDBOX_LAUNCHER_ROLE: &str = once_sandbox::launcher::ROLE;

/// The binary the sandbox's launcher runs (`once` itself), when it was asked for.
static LAUNCHER_EXECUTABLE: OnceLock<PathBuf> = OnceLock::new();

/// Set when the launcher could not start or stopped answering: confined programs are
/// then forked from this process, as without a launcher.
static LAUNCHER_BROKEN: AtomicBool = AtomicBool::new(false);

/// Asks for the sandbox's launcher: confined programs are started by `executable`
/// (this very binary, which must answer [`once_sandbox::launcher::ROLE`] with
/// [`serve_sandbox_launcher`]) rather than forked from this process. Binaries that do
/// not ask (tests) fork confined programs themselves.
pub fn use_sandbox_launcher(executable: PathBuf) {
    let _ = LAUNCHER_EXECUTABLE.set(executable);
}

/// Serves as the sandbox's launcher (the process [`sandbox_launcher`] starts), until
/// the process that started it ends.
pub fn serve_sandbox_launcher() -> io::Result<()> {
    once_sandbox::launcher::serve()
}

/// The running launcher, started on first use; `None` when none was asked for or it
/// cannot serve.
pub(crate) fn sandbox_launcher() -> Option<&'static Launcher> {
    static LAUNCHER: OnceLock<Option<Launcher>> = OnceLock::new();
    if LAUNCHER_BROKEN.load(Ordering::Relaxed) {
        return None;
    }
    LAUNCHER
        .get_or_init(|| start_sandbox_launcher(LAUNCHER_EXECUTABLE.get()?).ok())
        .as_ref()
}

/// Stops using the launcher for the rest of this process (it ended, or broke the
/// protocol); confined programs are forked from this process from then on.
pub(crate) fn sandbox_launcher_failed() {
    LAUNCHER_BROKEN.store(true, Ordering::Relaxed);
}

fn start_sandbox_launcher(executable: &Path) -> io::Result<Launcher> {
    let (ours, theirs) = once_sandbox::launcher::control_pair()?;
    let mut command = Command::new(executable);
    command
        .arg(once_sandbox::launcher::ROLE)
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::from(theirs))
        .stdout(Stdio::null())
        .stderr(Stdio::inherit());
    let mut child = crate::runner::spawn(&mut command)?;
    // Drop the command: it holds the launcher's end, whose closing tells the launcher
    // when this process ends.
    drop(command);
    let launcher = match Launcher::connect(ours) {
        Ok(launcher) => launcher,
        Err(error) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(error);
        }
    };
    // The launcher lives as long as this process; a thread reaps it should it end
    // first, and confined programs are forked here from then on.
    let _ = std::thread::Builder::new()
        .name("once-sandbox-launcher".into())
        .spawn(move || {
            let _ = child.wait();
            sandbox_launcher_failed();
        });
    Ok(launcher)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::piped::tests::alive;

    fn environment() -> BTreeMap<String, String> {
        BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())])
    }

    #[test]
    fn a_program_gets_exactly_its_environment_name_and_directory() {
        let env = environment();
        let argv = [
            "shown-name".to_owned(),
            "-c".to_owned(),
            "echo \"$0 $PATH $HOME\"; pwd".to_owned(),
        ];
        let program = Program {
            path: Path::new("/bin/sh"),
            argv: &argv,
            env: &env,
            cwd: Path::new("/usr"),
        };
        let child = start_grouped(&program, false).expect("sh starts");
        let output = child.wait_with_output().expect("sh ends");
        assert_eq!(
            String::from_utf8_lossy(&output.stdout),
            "shown-name /usr/bin:/bin \n/usr\n"
        );
    }

    #[test]
    fn an_attached_program_in_its_own_group_leaves_nothing_behind() {
        let env = environment();
        let directory = tempfile::tempdir().expect("a temporary directory");
        let file = directory.path().join("pid");
        let script = format!("sleep 600 & echo $! > '{}'", file.display());
        let argv = ["sh".to_owned(), "-c".to_owned(), script];
        let program = Program {
            path: Path::new("/bin/sh"),
            argv: &argv,
            env: &env,
            cwd: Path::new("/"),
        };
        let mut seen = None;
        let mut ended = false;
        let status = run_attached(
            &program,
            AttachedGroup::Own,
            &mut |process| seen = Some(process),
            &mut || ended = true,
        )
        .expect("sh starts");
        assert!(status.success());
        assert!(ended);
        assert!(seen.expect("announced").own_group);
        let sleeper = std::fs::read_to_string(&file).expect("the background pid");
        std::thread::sleep(std::time::Duration::from_millis(50));
        assert!(!alive(sleeper.trim()), "the background child survived");
    }

    #[test]
    fn a_contained_program_leaves_nothing_behind_even_what_left_its_group() {
        let env = environment();
        let marker = format!("8{}", std::process::id());
        let script = format!(
            "setsid sleep {marker} >/dev/null 2>&1 & (nohup sleep {marker} >/dev/null 2>&1 &); exit 4"
        );
        let argv = ["sh".to_owned(), "-c".to_owned(), script];
        let program = Program {
            path: Path::new("/bin/sh"),
            argv: &argv,
            env: &env,
            cwd: Path::new("/"),
        };
        let status = run_attached(&program, AttachedGroup::Contained, &mut |_| {}, &mut || {})
            .expect("sh starts");
        assert_eq!(status.code(), Some(4));
        std::thread::sleep(std::time::Duration::from_millis(100));
        let survivors: Vec<String> = std::fs::read_dir("/proc")
            .expect("/proc")
            .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
            .map(|line| String::from_utf8_lossy(&line).replace('\0', " "))
            .filter(|line| line.contains(&marker))
            .collect();
        assert!(survivors.is_empty(), "{survivors:?}");
    }
}
