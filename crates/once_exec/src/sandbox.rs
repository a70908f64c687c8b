//! The sandbox of an action: what its program may read, list and write, whether it
//! reaches the network, and the private home and temporary directory it gets.
//!
//! [`SandboxMode::On`] (`--sandbox on`, `[workspace] sandbox = "on"`) runs every program an action declares confined by
//! `once_sandbox`: a user, PID and (unless the command declares `network`) network
//! namespace, and a Landlock ruleset allowing
//!
//! - **reading** its declared inputs (sources and its dependencies' outputs), its program
//!   and the directory it was installed in, the directories of the `PATH` outside the
//!   workspace with their install prefixes, the toolchain homes ([`TOOLCHAIN_HOMES`]:
//!   rustup's toolchains, Cargo's registry, pyenv's versions), and the system
//!   ([`SYSTEM_READ`]);
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
//! [`SandboxMode::Off`] (the default for now) runs programs as the caller's own processes; its results are
//! keyed apart ([`crate::key`]), so a sandboxed build never reuses them.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use once_model::action::{Action, Command, build_dir};
use once_model::label::TargetLabel;
use once_sandbox::Confinement;

use crate::environment::HostEnvironment;

/// Whether actions run sandboxed.
///
/// The default is still `Off` while the built-in kinds learn to declare everything
/// their tools read (a Cargo workspace's member manifests, for one); `--sandbox on` and
/// `[workspace] sandbox = "on"` opt in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SandboxMode {
    /// Confined.
    On,
    /// Not confined: unsafe for caching (an undeclared read is outside the key), so its
    /// results are keyed apart.
    #[default]
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

/// Toolchain homes outside the workspace: each variable, and where it defaults to under
/// the caller's home. A confined program gets the variable set to the directory (its own
/// `HOME` is elsewhere) and may read it.
pub const TOOLCHAIN_HOMES: &[(&str, &str)] = &[
    ("RUSTUP_HOME", ".rustup"),
    ("CARGO_HOME", ".cargo"),
    ("PYENV_ROOT", ".pyenv"),
];

/// Tool-local state directories of the workspace: writable by an action whose command
/// line or environment names them (they are outside every key, see
/// `docs/execution.md`).
pub const TOOL_STATE: &[&str] = &[".once/cargo", ".once/go"];

/// Where the scratch directories of running actions are made, under the workspace root.
pub const SCRATCH_DIR: &str = ".once/tmp";

/// An action's sandbox, ready to install on its process: the confinement and the
/// scratch directory (removed when this is dropped).
#[derive(Debug)]
pub struct ActionSandbox {
    pub prepared: once_sandbox::Prepared,
    scratch: tempfile::TempDir,
}

impl ActionSandbox {
    /// The sandbox of `action` running `command`'s program `program` in the workspace at
    /// `root`, with the complete `environment` it would get unconfined; that environment
    /// gets its private `HOME` and `TMPDIR` and the toolchain homes.
    pub fn prepare(
        root: &Path,
        action: &Action,
        command: &Command,
        program: &Path,
        build_dirs: &[String],
        host: &HostEnvironment,
        environment: &mut BTreeMap<String, String>,
    ) -> io::Result<ActionSandbox> {
        let scratch_parent = root.join(SCRATCH_DIR);
        std::fs::create_dir_all(&scratch_parent)?;
        let scratch = tempfile::Builder::new()
            .prefix("action-")
            .tempdir_in(&scratch_parent)?;
        let home = scratch.path().join("home");
        let tmp = scratch.path().join("tmp");
        std::fs::create_dir(&home)?;
        std::fs::create_dir(&tmp)?;
        environment.insert("HOME".to_owned(), home.to_string_lossy().into_owned());
        environment.insert("TMPDIR".to_owned(), tmp.to_string_lossy().into_owned());

        let mut confinement = if action.cacheable {
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
            if !command.env.contains_key(variable) {
                environment.insert(variable.to_owned(), path.to_string_lossy().into_owned());
            }
            confinement.read.push(path);
        }
        confinement.read.extend(install_prefixes(program, root));
        let path_variable = environment.get("PATH").cloned().unwrap_or_default();
        for entry in path_variable
            .split(':')
            .filter(|entry| entry.starts_with('/'))
        {
            confinement
                .read
                .extend(install_prefixes(Path::new(entry), root));
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
        let prepared = confinement.prepare()?;
        Ok(ActionSandbox { prepared, scratch })
    }

    /// The scratch directory (`HOME` and `TMPDIR` are inside it).
    pub fn scratch(&self) -> &Path {
        self.scratch.path()
    }
}

/// The toolchain homes of this host that exist: [`TOOLCHAIN_HOMES`], from the caller's
/// variables or their defaults under its home.
pub fn toolchain_homes(host: &HostEnvironment) -> Vec<(&'static str, PathBuf)> {
    let home = host.variables.get("HOME").map(PathBuf::from);
    TOOLCHAIN_HOMES
        .iter()
        .filter_map(|(variable, default)| {
            let path = match host.variables.get(*variable) {
                Some(value) => PathBuf::from(value),
                None => home.as_ref()?.join(default),
            };
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
}
