//! The sandbox of an action: what its program may read, list and write, whether it
//! reaches the network, and the private home and temporary directory it gets.
//!
//! [`SandboxMode::On`] (the default) runs every program an action declares confined by
//! `once_sandbox`: a user, PID and (unless the command declares `network`) network
//! namespace, and a Landlock ruleset allowing
//!
//! - **reading** its declared inputs (sources and its dependencies' outputs), its program
//!   and the directory it was installed in, the directories of the `PATH` outside the
//!   workspace with their install prefixes, the Python virtual environment its program,
//!   a `PATH` directory or a probe's program belongs to, with the interpreter it was made
//!   from ([`environment_reads`]: a workspace's `.venv` too), the toolchain homes
//!   ([`TOOLCHAIN_HOMES`]: rustup's toolchains, Cargo's registry, pyenv's versions), and
//!   the system ([`SYSTEM_READ`]);
//! - **listing** the directories that hold its inputs (names only: an undeclared file's
//!   content stays unreadable);
//! - **writing** its target's build directory, the directories of outputs declared
//!   elsewhere (an annotated script's), the tool-local state its command names
//!   ([`TOOL_STATE`]), its scratch directory (`HOME` and `TMPDIR` point inside it) and
//!   the devices under `/dev`.
//!
//! Nothing else of the workspace, the home directory or `/tmp` can be read or written:
//! the system call fails with `EACCES`, so an undeclared file can never reach an output
//! and so never be missing from a key. An action that is not cacheable (its result is
//! never reused, so it cannot be a wrong hit) is contained only: namespaces, no
//! file-system restriction.
//!
//! [`SandboxMode::Off`] (`--sandbox off`, `[workspace] sandbox = "off"`) runs programs as
//! the caller's own processes; its results are
//! keyed apart ([`crate::key`]), so a sandboxed build never reuses them.

use std::collections::{BTreeMap, HashMap};
use std::io;
use std::path::{Path, PathBuf};

use once_model::action::{Action, Command, build_dir};
use once_model::label::TargetLabel;
use once_sandbox::Confinement;

use crate::environment::HostEnvironment;

/// Whether actions run sandboxed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Confined (the default).
    #[default]
    On,
    /// Not confined: unsafe for caching (an undeclared read is outside the key), so its
    /// results are keyed apart.
    Off,
}

impl SandboxMode {
    /// The mode a setting names (`"on"`, `"off"`), `None` for anything else.
    pub fn parse(text: &str) -> Option<SandboxMode> {
        match text {
            "on" => Some(SandboxMode::On),
            "off" => Some(SandboxMode::Off),
            _ => None,
        }
    }

    /// The setting's name.
    pub fn name(self) -> &'static str {
        match self {
            SandboxMode::On => "on",
            SandboxMode::Off => "off",
        }
    }
}

/// System directories every confined program may read and execute (those that exist).
pub const SYSTEM_READ: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc",
    "/opt",
    "/proc",
    "/sys",
    "/nix/store",
    "/gnu/store",
];

pub use crate::environment::TOOLCHAIN_HOMES;

/// Tool-local state directories of the workspace: writable by an action whose command
/// line or environment names them (they are outside every key, see
/// `docs/execution.md`): Cargo's and Go's, and `.once/state` for any other state a tool
/// or a test keeps between runs.
pub const TOOL_STATE: &[&str] = &[".once/cargo", ".once/go", ".once/state"];

/// Where the scratch directories of running actions are made, under the workspace root.
pub const SCRATCH_DIR: &str = ".once/tmp";

/// An action's sandbox, ready to install on its process: the confinement and the
/// scratch directory (given back to its pool when this is dropped).
#[derive(Debug)]
pub struct ActionSandbox<'p> {
    pub prepared: once_sandbox::Prepared,
    scratch: Option<tempfile::TempDir>,
    pool: &'p ScratchPool,
}

impl Drop for ActionSandbox<'_> {
    fn drop(&mut self) {
        if let Some(scratch) = self.scratch.take() {
            self.pool.give_back(scratch);
        }
    }
}

/// The scratch directories of one executor's actions: made under [`SCRATCH_DIR`] when
/// no free one is left, and reused by later actions when the action that had one left
/// it as it was made (its `home` and `tmp`, empty, with their modes); any other is
/// removed. Making and removing three directories per action was the largest part of
/// the sandbox's cost. The free ones are removed with the pool.
#[derive(Debug, Default)]
pub struct ScratchPool {
    free: std::sync::Mutex<Vec<tempfile::TempDir>>,
    /// [`install_prefixes`] of the programs and `PATH` directories outside the
    /// workspace, found once per executor rather than once per action (each costs a
    /// few `stat`s and a `readlink` per component).
    prefixes: std::sync::Mutex<HashMap<PathBuf, Vec<PathBuf>>>,
    /// [`environment_reads`] of the programs and `PATH` directories, found once per
    /// executor.
    environments: std::sync::Mutex<HashMap<PathBuf, Vec<PathBuf>>>,
}

/// The mode a scratch directory and its `home` and `tmp` are made with.
const SCRATCH_MODE: u32 = 0o700;

impl ScratchPool {
    /// [`install_prefixes`]`(path, root)`, remembered.
    fn install_prefixes(&self, path: &Path, root: &Path) -> Vec<PathBuf> {
        let mut known = self
            .prefixes
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known
            .entry(path.to_path_buf())
            .or_insert_with(|| install_prefixes(path, root))
            .clone()
    }

    /// [`environment_reads`]`(path, root)`, remembered.
    fn environment_reads(&self, path: &Path, root: &Path) -> Vec<PathBuf> {
        let mut known = self
            .environments
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        known
            .entry(path.to_path_buf())
            .or_insert_with(|| environment_reads(path, root))
            .clone()
    }

    /// A scratch directory with an empty `home` and `tmp`, under `root`'s
    /// [`SCRATCH_DIR`].
    fn take(&self, root: &Path) -> io::Result<tempfile::TempDir> {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .pop();
        if let Some(scratch) = reused {
            return Ok(scratch);
        }
        use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
        let scratch_parent = root.join(SCRATCH_DIR);
        std::fs::create_dir_all(&scratch_parent)?;
        let scratch = tempfile::Builder::new()
            .prefix("action-")
            .permissions(std::fs::Permissions::from_mode(SCRATCH_MODE))
            .tempdir_in(&scratch_parent)?;
        let mut builder = std::fs::DirBuilder::new();
        builder.mode(SCRATCH_MODE);
        builder.create(scratch.path().join("home"))?;
        builder.create(scratch.path().join("tmp"))?;
        Ok(scratch)
    }

    /// Keeps `scratch` for another action when it holds exactly its empty `home` and
    /// `tmp`, all three with the modes they were made with; removes it otherwise.
    fn give_back(&self, scratch: tempfile::TempDir) {
        if as_made(scratch.path()) {
            self.free
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(scratch);
        }
    }
}

/// Whether the scratch directory `path` is as [`ScratchPool::take`] made it.
fn as_made(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt as _;
    let is_private_dir = |path: &Path| {
        std::fs::symlink_metadata(path).is_ok_and(|metadata| {
            metadata.is_dir() && metadata.permissions().mode() & 0o7777 == SCRATCH_MODE
        })
    };
    let is_empty =
        |path: &Path| std::fs::read_dir(path).is_ok_and(|mut entries| entries.next().is_none());
    let Ok(entries) = std::fs::read_dir(path) else {
        return false;
    };
    let mut names: Vec<_> = entries
        .filter_map(|entry| entry.ok().map(|e| e.file_name()))
        .collect();
    names.sort();
    names == ["home", "tmp"]
        && [path.to_path_buf(), path.join("home"), path.join("tmp")]
            .iter()
            .all(|path| is_private_dir(path))
        && is_empty(&path.join("home"))
        && is_empty(&path.join("tmp"))
}

/// The action a sandbox is made for, and where.
#[derive(Clone, Copy, Debug)]
pub struct SandboxedAction<'a> {
    /// The workspace root.
    pub root: &'a Path,
    pub action: &'a Action,
    /// The action's command.
    pub command: &'a Command,
    /// Its program, resolved.
    pub program: &'a Path,
    /// The build directories of the plan's targets, sorted.
    pub build_dirs: &'a [String],
    /// The caller's allowlisted variables (the toolchain homes).
    pub host: &'a HostEnvironment,
    /// Whether the program runs traced (no PID namespace; file rules for a program that
    /// is not cacheable too).
    pub traced: bool,
}

impl<'p> ActionSandbox<'p> {
    /// The sandbox of `sandboxed`, whose program would get the complete `environment`
    /// unconfined; that environment gets its private `HOME` and `TMPDIR` (a scratch
    /// directory of `pool`) and the toolchain homes.
    pub fn prepare(
        sandboxed: &SandboxedAction<'_>,
        pool: &'p ScratchPool,
        environment: &mut BTreeMap<String, String>,
    ) -> io::Result<ActionSandbox<'p>> {
        let SandboxedAction {
            root,
            action,
            command,
            program,
            build_dirs,
            host,
            traced,
        } = *sandboxed;
        let scratch = pool.take(root)?;
        let home = scratch.path().join("home");
        let tmp = scratch.path().join("tmp");
        environment.insert("HOME".to_owned(), home.to_string_lossy().into_owned());
        environment.insert("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned());

        let mut confinement = if action.cacheable || traced {
            Confinement::new(command.network)
        } else {
            Confinement::contain_only(command.network)
        };
        for directory in SYSTEM_READ {
            confinement.read.push(PathBuf::from(directory));
        }
        confinement.write.push(PathBuf::from("/dev"));
        confinement.write.push(scratch.path().to_path_buf());
        for (variable, path) in toolchain_homes(host) {
            // A command declaring `NAME = "$NAME"` writes the home (Cargo's fetch step);
            // every other program gets it set and may read it.
            let declared = command.env.get(variable).map(String::as_str);
            if declared == Some(format!("${variable}").as_str()) {
                confinement.write.push(path);
                continue;
            }
            if declared.is_none() {
                environment.insert(variable.to_owned(), path.to_string_lossy().into_owned());
            }
            confinement.read.push(path);
        }
        confinement
            .read
            .extend(pool.install_prefixes(program, root));
        confinement
            .read
            .extend(pool.environment_reads(program, root));
        let path_variable = environment.get("PATH").cloned().unwrap_or_default();
        for entry in path_variable
            .split(':')
            .filter(|entry| entry.starts_with('/'))
        {
            confinement
                .read
                .extend(pool.install_prefixes(Path::new(entry), root));
            confinement
                .read
                .extend(pool.environment_reads(Path::new(entry), root));
        }
        // The toolchains the probes name, where they really are (a virtual environment's
        // `python3` is a link into the interpreter's installation), with their virtual
        // environments (a test runner's interpreter is named by a probe, not by the
        // action's program, which is `once`).
        let cwd = crate::executor::absolute(root, &command.cwd);
        for probe in &command.probes {
            let Some(name) = probe.first() else { continue };
            if let Ok(found) = crate::tools::resolve_program(name, &path_variable, &cwd) {
                confinement.read.extend(pool.install_prefixes(&found, root));
                confinement
                    .read
                    .extend(pool.environment_reads(&found, root));
            }
        }
        for input in &action.inputs {
            let path = crate::executor::absolute(root, input);
            if let Some(parent) = path.parent() {
                confinement.list.push(parent.to_path_buf());
            }
            // A generated input: its producer's build directory may be listed (an
            // interpreter lists a `PYTHONPATH` entry's directories to import from it).
            if let Some(directory) = producer_dir(build_dirs, input) {
                confinement
                    .list
                    .push(crate::executor::absolute(root, directory));
            }
            confinement.read.push(path);
        }
        confinement
            .list
            .push(crate::executor::absolute(root, &command.cwd));
        let label = TargetLabel::from_id(&action.target);
        let directory = build_dir(&label.package, &label.name);
        confinement
            .write
            .push(crate::executor::absolute(root, &directory));
        for output in &action.outputs {
            if once_model::paths::is_under(output, &directory) {
                continue;
            }
            let path = crate::executor::absolute(root, output);
            // A directory output is writable as a whole; a file output through its
            // directory (it may be written to a temporary file and renamed).
            match std::fs::symlink_metadata(&path) {
                Ok(metadata) if metadata.is_dir() => confinement.write.push(path),
                _ => confinement
                    .write
                    .extend(path.parent().map(Path::to_path_buf)),
            }
        }
        for state in TOOL_STATE {
            let named = command.argv.iter().any(|word| word.contains(state))
                || command.env.values().any(|value| value.contains(state));
            if named {
                let path = root.join(state);
                std::fs::create_dir_all(&path)?;
                confinement.write.push(path);
            }
        }
        // A tracer must be the parent of the program it traces: no PID namespace then.
        confinement.own_pids = !traced;
        let prepared = confinement.prepare()?;
        Ok(ActionSandbox {
            prepared,
            scratch: Some(scratch),
            pool,
        })
    }
}

/// The toolchain homes of this host that exist: [`TOOLCHAIN_HOMES`], from the caller's
/// variables or their defaults under its home.
pub fn toolchain_homes(host: &HostEnvironment) -> Vec<(&'static str, PathBuf)> {
    TOOLCHAIN_HOMES
        .iter()
        .filter_map(|(variable, _)| {
            let path = PathBuf::from(host.toolchain_home(variable)?);
            path.is_dir().then_some((*variable, path))
        })
        .collect()
}

/// What a program at `path` may read of where it is installed: the file, and its
/// installation (the directory above a `bin`, `sbin` or `shims` directory, else its
/// own directory), for the path as given and with its links resolved. Nothing inside
/// the workspace at `root` beyond the file itself (a workspace program is an input).
pub fn install_prefixes(path: &Path, root: &Path) -> Vec<PathBuf> {
    let mut prefixes = vec![path.to_path_buf()];
    let resolved = std::fs::canonicalize(path).ok();
    for candidate in std::iter::once(path.to_path_buf()).chain(resolved) {
        if candidate.starts_with(root) {
            continue;
        }
        let directory = if candidate.is_dir() {
            Some(candidate.as_path())
        } else {
            candidate.parent()
        };
        let Some(directory) = directory else {
            continue;
        };
        let named = directory.file_name().and_then(|name| name.to_str());
        let prefix = match named {
            Some("bin" | "sbin" | "shims") => directory.parent().unwrap_or(directory),
            _ => directory,
        };
        if prefix != Path::new("/") && !root.starts_with(prefix) {
            prefixes.push(prefix.to_path_buf());
        } else if prefix != Path::new("/") {
            // An installation holding the workspace (`/home/me` for `~/bin`): only the
            // directory the program is in.
            prefixes.push(directory.to_path_buf());
        }
    }
    prefixes
}

/// What a program at `path` (or the programs of the `PATH` directory `path`) may read of
/// the Python virtual environment it belongs to, when it belongs to one (PEP 405: a
/// `pyvenv.cfg` in the directory above its `bin`, or beside it): the environment's whole
/// directory, inside the workspace too (its interpreter reads its configuration and its
/// site packages; nothing of it is writable), and the installation of the interpreter it
/// was made from (`home` in `pyvenv.cfg`, as [`install_prefixes`] gives it: a link into
/// it is followed anyway, a copy made with `--copies` is not). Empty for any other
/// program.
pub fn environment_reads(path: &Path, root: &Path) -> Vec<PathBuf> {
    let path = lexical(path);
    let directory = if path.is_dir() {
        Some(path.as_path())
    } else {
        path.parent()
    };
    let candidates = directory
        .into_iter()
        .flat_map(|directory| [Some(directory), directory.parent()])
        .flatten();
    for candidate in candidates {
        let Ok(config) = std::fs::read_to_string(candidate.join("pyvenv.cfg")) else {
            continue;
        };
        let mut reads = vec![candidate.to_path_buf()];
        let home = config.lines().find_map(|line| {
            let (key, value) = line.split_once('=')?;
            (key.trim() == "home").then(|| PathBuf::from(value.trim()))
        });
        if let Some(home) = home.filter(|home| home.is_absolute() && home.is_dir()) {
            reads.extend(install_prefixes(&home, root));
        }
        reads.dedup();
        return reads;
    }
    Vec::new()
}

/// One file access a traced program attempted.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub use once_sandbox::trace::{Access, AccessKind};

/// One file access a traced program attempted (tracing needs Linux on x86_64).
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Access;

/// An access the sandbox denied a traced action, and what it was.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Finding {
    /// `read`, `write`, `create`, `remove`, `execute` or `list`.
    pub access: &'static str,
    pub denied: Denied,
}

/// The accesses of a traced action the sandbox denied (`EACCES`, `EPERM`), each once.
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub fn findings(root: &Path, action: &Action, accesses: &[Access]) -> Vec<Finding> {
    let mut found: Vec<Finding> = accesses
        .iter()
        .filter(|access| matches!(access.errno, Some(libc_errno::EACCES | libc_errno::EPERM)))
        .map(|access| {
            let access_name = match access.kind {
                AccessKind::Read => "read",
                AccessKind::Write => "write",
                AccessKind::Create => "create",
                AccessKind::Remove => "remove",
                AccessKind::Execute => "execute",
                AccessKind::List => "list",
            };
            let denied = match access.path.strip_prefix(root) {
                Ok(relative) => {
                    let relative = relative.to_string_lossy().into_owned();
                    if action.inputs.contains(&relative) {
                        Denied::Input(relative)
                    } else if std::fs::symlink_metadata(&access.path).is_err() {
                        Denied::Made(relative)
                    } else {
                        Denied::Undeclared(relative)
                    }
                }
                Err(_) => Denied::Outside(access.path.clone()),
            };
            Finding {
                access: access_name,
                denied,
            }
        })
        .collect();
    found.sort();
    found.dedup();
    found
}

/// No accesses are traced off Linux on x86_64.
#[cfg(not(all(target_os = "linux", target_arch = "x86_64")))]
pub fn findings(_root: &Path, _action: &Action, _accesses: &[Access]) -> Vec<Finding> {
    Vec::new()
}

/// The two errno values of a denial (Linux's numbers).
mod libc_errno {
    pub const EPERM: i32 = 1;
    pub const EACCES: i32 = 13;
}

/// A file the sandbox denied an action, as its output names it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum Denied {
    /// A workspace file the action does not declare (workspace-relative).
    Undeclared(String),
    /// One of the action's own inputs (it tried to change it).
    Input(String),
    /// A new workspace file outside the build directory (it tried to make it).
    Made(String),
    /// A file outside the workspace (absolute).
    Outside(PathBuf),
}

impl Denied {
    /// The file, workspace-relative (absolute outside the workspace).
    pub fn path(&self) -> String {
        match self {
            Denied::Undeclared(path) | Denied::Input(path) | Denied::Made(path) => path.clone(),
            Denied::Outside(path) => path.to_string_lossy().into_owned(),
        }
    }

    /// What is wrong, as a word: `undeclared`, `modifies_input`,
    /// `writes_outside_build_directory`, `outside_workspace`.
    pub fn problem(&self) -> &'static str {
        match self {
            Denied::Undeclared(_) => "undeclared",
            Denied::Input(_) => "modifies_input",
            Denied::Made(_) => "writes_outside_build_directory",
            Denied::Outside(_) => "outside_workspace",
        }
    }

    /// What is wrong and what to do about it, in words.
    pub fn describe(&self) -> String {
        match self {
            Denied::Undeclared(path) => format!(
                "`{path}` is not declared (add it to the target's `inputs` or `srcs`, or \
                 depend on the target that makes it)"
            ),
            Denied::Input(path) => format!(
                "`{path}` is one of its inputs, which it may read but not change (write \
                 into the build directory, `$OUT`, instead)"
            ),
            Denied::Made(path) if path == "Cargo.lock" || path.ends_with("/Cargo.lock") => {
                format!(
                    "`{path}` is outside its build directory, the only place it may write: \
                     Cargo writes a missing lockfile into the source tree; create it with \
                     `cargo generate-lockfile` and keep it with the sources"
                )
            }
            Denied::Made(path) => format!(
                "`{path}` is outside its build directory, the only place it may write \
                 (`$OUT`)"
            ),
            Denied::Outside(path) => format!(
                "`{}` is outside the workspace (an action reads only its inputs, its tools \
                 and the system directories; see docs/sandbox.md)",
                path.display()
            ),
        }
    }
}

/// What a failure whose output says the network was unreachable adds.
pub const NO_NETWORK_HINT: &str = "; the sandbox gives an action no network unless it \
     declares it (`network = true` in a `command`'s attrs, `actions.run(…, network = True)`); \
     Cargo's dependencies are fetched beforehand with `cargo fetch` (docs/sandbox.md)";

/// Whether a stream's end says a host could not be reached.
pub fn mentions_no_network(stream: &[u8]) -> bool {
    let text = String::from_utf8_lossy(stream);
    [
        "Could not resolve host",
        "Temporary failure in name resolution",
        "Network is unreachable",
        "getaddrinfo ENOTFOUND",
        "Name or service not known",
    ]
    .iter()
    .any(|marker| text.contains(marker))
}

/// The messages tools print for a denied access.
const DENIAL_MARKERS: &[&str] = &[
    "Permission denied",
    "permission denied",
    "EACCES",
    "Operation not permitted",
];

/// The existing files an action's output (`streams`: the ends of its stdout and stderr)
/// says were denied to it, from the lines holding a denial message: each path-like word
/// of such a line, taken relative to the action's working directory `cwd`.
pub fn denied_files<'s>(
    root: &Path,
    action: &Action,
    cwd: &str,
    streams: impl Iterator<Item = &'s [u8]>,
) -> Vec<Denied> {
    let directory = crate::executor::absolute(root, cwd);
    let mut denied = Vec::new();
    for stream in streams {
        let text = String::from_utf8_lossy(stream);
        for line in text.lines() {
            if !DENIAL_MARKERS.iter().any(|marker| line.contains(marker)) {
                continue;
            }
            let words = line.split(|c: char| {
                c.is_whitespace()
                    || matches!(c, '\'' | '"' | '`' | ',' | ';' | '(' | ')' | '[' | ']')
            });
            for word in words {
                let word = word.trim_end_matches(':');
                if word.is_empty() || !(word.contains('/') || word.contains('.')) {
                    continue;
                }
                let path = lexical(&directory.join(word));
                let exists = std::fs::symlink_metadata(&path).is_ok();
                let parent_exists = path.parent().is_some_and(Path::is_dir);
                if !exists && !parent_exists {
                    continue;
                }
                let found = match path.strip_prefix(root) {
                    Ok(relative) => {
                        let relative = relative.to_string_lossy().into_owned();
                        if !exists {
                            Denied::Made(relative)
                        } else if action.inputs.contains(&relative) {
                            Denied::Input(relative)
                        } else {
                            Denied::Undeclared(relative)
                        }
                    }
                    Err(_) if exists => Denied::Outside(path),
                    Err(_) => continue,
                };
                if !denied.contains(&found) {
                    denied.push(found);
                }
            }
        }
    }
    denied.sort();
    denied
}

/// What to do about `denied`, in one sentence; `None` when nothing was named.
pub fn describe_denials(denied: &[Denied]) -> Option<String> {
    if denied.is_empty() {
        return None;
    }
    let parts: Vec<String> = denied.iter().map(Denied::describe).collect();
    Some(format!("the sandbox denied it: {}", parts.join("; ")))
}

/// `path` with `.` and `..` folded away, without reading links.
fn lexical(path: &Path) -> PathBuf {
    let mut folded = PathBuf::new();
    for component in path.components() {
        match component {
            std::path::Component::CurDir => {}
            std::path::Component::ParentDir => {
                folded.pop();
            }
            other => folded.push(other),
        }
    }
    folded
}

/// The build directory among `build_dirs` (sorted) that `input` lies in, if any.
fn producer_dir<'d>(build_dirs: &'d [String], input: &str) -> Option<&'d str> {
    if !input.starts_with(once_model::action::OUT_DIR) {
        return None;
    }
    // The input itself, then each directory above it.
    let ancestors = std::iter::once(input).chain(
        input
            .char_indices()
            .rev()
            .filter(|(_, c)| *c == '/')
            .map(|(at, _)| &input[..at]),
    );
    for candidate in ancestors {
        if let Ok(found) =
            build_dirs.binary_search_by(|directory| directory.as_str().cmp(candidate))
        {
            return build_dirs.get(found).map(String::as_str);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scratch_directory_left_as_made_is_reused_and_any_other_is_removed() {
        let root = tempfile::tempdir().unwrap();
        let pool = ScratchPool::default();
        let first = pool.take(root.path()).unwrap();
        let first_path = first.path().to_path_buf();
        pool.give_back(first);
        let again = pool.take(root.path()).unwrap();
        assert_eq!(again.path(), first_path, "an untouched one is reused");
        std::fs::write(again.path().join("tmp/left"), "x").unwrap();
        pool.give_back(again);
        assert!(!first_path.exists(), "one with a file left is removed");
        let fresh = pool.take(root.path()).unwrap();
        assert_ne!(fresh.path(), first_path);
        let fresh_path = fresh.path().to_path_buf();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(
            fresh.path().join("home"),
            std::fs::Permissions::from_mode(0o500),
        )
        .unwrap();
        pool.give_back(fresh);
        assert!(!fresh_path.exists(), "one with another mode is removed");
        let kept = pool.take(root.path()).unwrap();
        let kept_path = kept.path().to_path_buf();
        pool.give_back(kept);
        drop(pool);
        assert!(!kept_path.exists(), "the free ones go with the pool");
    }

    #[test]
    fn a_generated_input_is_listed_through_its_producers_build_directory() {
        let mut dirs = [
            ".once/out/a/A".to_owned(),
            ".once/out/a/A-b".to_owned(),
            ".once/out/a/A2".to_owned(),
            ".once/out/b/B".to_owned(),
        ];
        dirs.sort();
        assert_eq!(
            producer_dir(&dirs, ".once/out/a/A/site/m/__init__.py"),
            Some(".once/out/a/A")
        );
        assert_eq!(
            producer_dir(&dirs, ".once/out/a/A2/x"),
            Some(".once/out/a/A2")
        );
        assert_eq!(
            producer_dir(&dirs, ".once/out/a/A-b/x"),
            Some(".once/out/a/A-b")
        );
        assert_eq!(producer_dir(&dirs, ".once/out/b/B"), Some(".once/out/b/B"));
        assert_eq!(producer_dir(&dirs, ".once/out/c/C/x"), None);
        assert_eq!(producer_dir(&dirs, "a/A/x"), None);
    }

    #[test]
    fn a_virtual_environment_is_readable_with_the_interpreter_it_was_made_from() {
        let directory = tempfile::tempdir().unwrap();
        let root = directory.path().join("ws");
        let base = directory.path().join("pythons/3.12");
        std::fs::create_dir_all(base.join("bin")).unwrap();
        std::fs::write(base.join("bin/python3.12"), "").unwrap();
        let venv = root.join(".venv");
        std::fs::create_dir_all(venv.join("bin")).unwrap();
        std::fs::create_dir_all(root.join("pkg")).unwrap();
        std::fs::write(
            venv.join("pyvenv.cfg"),
            format!("home = {}\nversion = 3.12.1\n", base.join("bin").display()),
        )
        .unwrap();
        std::fs::write(venv.join("bin/python3"), "").unwrap();
        let expected = vec![venv.clone(), base.join("bin"), base.clone()];
        // The program, named from a package directory, and the `PATH` directory.
        assert_eq!(
            environment_reads(&root.join("pkg/../.venv/bin/python3"), &root),
            expected
        );
        assert_eq!(environment_reads(&venv.join("bin"), &root), expected);
        // A program of no virtual environment reads nothing more.
        assert_eq!(
            environment_reads(&base.join("bin/python3.12"), &root),
            Vec::<PathBuf>::new()
        );
    }
}
