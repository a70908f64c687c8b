//! Actions: the plain-data steps a target's capability declares.
//!
//! A kind's implementation (Starlark, in the prelude or a project module) receives the
//! resolved target and declares actions; the execution layer schedules them, keys them and
//! caches their results. Nothing here runs anything: an [`Action`] is what to do, not how.
//!
//! Paths are workspace-relative and `/`-separated. Every output lies under the target's
//! build directory ([`build_dir`]); an action consumes another action's output by naming
//! that output among its `inputs`, which is how the executor finds the edges between
//! actions (of one target or of its dependencies).

use std::collections::BTreeMap;

pub use crate::script::OutputSymlinks;

/// The directory, relative to the workspace root, that holds every build output.
pub const OUT_DIR: &str = ".once/out";

/// The build directory of a target: `.once/out/<package>/<name>` (`.once/out/<name>` for a
/// target of the root package).
pub fn build_dir(package: &str, name: &str) -> String {
    if package.is_empty() {
        format!("{OUT_DIR}/{name}")
    } else {
        format!("{OUT_DIR}/{package}/{name}")
    }
}

/// One declared step of a target's capability.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Action {
    /// Unique within the workspace: `<target id>#<capability>/<identifier>`, where the
    /// identifier is the one the implementation gave or the action's position.
    pub id: String,
    /// The canonical id of the target that declared it.
    pub target: String,
    /// `build`, `run` or `test`.
    pub capability: String,
    /// What the action does.
    pub step: ActionStep,
    /// Workspace-relative files it reads: sources of the target, or outputs of other
    /// actions (which makes those actions run first).
    pub inputs: Vec<String>,
    /// Workspace-relative files (or directories) it writes, all under the build directory.
    pub outputs: Vec<String>,
    /// Whether a result may be reused from the action cache. Runs of programs and tests
    /// that talk to the outside world say `false`.
    pub cacheable: bool,
}

/// What an action does.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ActionStep {
    /// Run a program.
    Run(Command),
    /// Write `content` to `path` (one of the outputs).
    WriteFile {
        path: String,
        content: String,
        executable: bool,
    },
    /// Copy the file `from` (an input) to `to` (an output).
    Copy { from: String, to: String },
    /// Make `link` (an output) a symbolic link to `to`.
    Symlink { to: String, link: String },
    /// Make the directory `path` (an output) and its parents.
    MakeDir { path: String },
    /// Copy the host file at the absolute path `source` (a toolchain's file outside the
    /// workspace) to `to` (an output). Its content digest joins the key, as a program's
    /// does, and the copy is verified against it: a file that changed in between fails
    /// the action.
    MaterializeHostFile { source: String, to: String },
}

/// A program to run: the command line, its environment and what counts as success.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Command {
    /// The program and its arguments. A program without a `/` is looked up on the
    /// allowlisted `PATH`; its resolved path and content digest are part of the key.
    pub argv: Vec<String>,
    /// The declared environment, on top of the executor's documented allowlist.
    pub env: BTreeMap<String, String>,
    /// The working directory, workspace-relative (`""` is the workspace root).
    pub cwd: String,
    /// Exit codes that mean success (sorted, deduplicated, never empty; usually `[0]`).
    pub success_exit_codes: Vec<i32>,
    /// Commands whose output identifies the toolchain this command really uses, when the
    /// program's own content does not (a `rustup` or `pyenv` proxy, a wrapper shell):
    /// `["rustc", "-vV"]`. The executor runs each once per execution with the command's
    /// environment and working directory; its exit status and output join the key.
    pub probes: Vec<Vec<String>>,
    /// An output in which the program lists the files it read (a compiler's `-MD -MF`
    /// dependency file, Make syntax). After a successful run the executor checks that
    /// every workspace file listed is declared; one that is not fails the action.
    pub depfile: Option<String>,
    /// Seconds the program may run: at the limit its whole process group is killed and
    /// the action fails as timed out. `None` runs it to its end.
    pub timeout_seconds: Option<u64>,
    /// What becomes of an output that is, or holds, a symbolic link: kept as a link
    /// ([`OutputSymlinks::Preserve`], every target's action) or, for a link leading out of
    /// its output, replaced by a copy of what it points to (annotated scripts' default).
    pub output_symlinks: OutputSymlinks,
    /// Whether the program may reach the network. Without it, a sandboxed program gets a
    /// network namespace of its own holding only a loopback device.
    pub network: bool,
}

impl Command {
    /// A command run from the workspace root that succeeds with exit code 0.
    pub fn new(argv: Vec<String>) -> Self {
        Command {
            argv,
            env: BTreeMap::new(),
            cwd: String::new(),
            success_exit_codes: vec![0],
            probes: Vec::new(),
            depfile: None,
            timeout_seconds: None,
            output_symlinks: OutputSymlinks::Preserve,
            network: false,
        }
    }
}

/// What a capability's implementation declared for one target: its actions, and the
/// outputs it hands to dependents and to the user.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct TargetActions {
    pub actions: Vec<Action>,
    /// The outputs that make up the capability's result (what `once build` reports and
    /// what dependents consume), workspace-relative.
    pub default_outputs: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn build_dirs_of_root_and_nested_targets() {
        assert_eq!(build_dir("", "Tool"), ".once/out/Tool");
        assert_eq!(build_dir("libs/text", "Text"), ".once/out/libs/text/Text");
    }
}
