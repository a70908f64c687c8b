//! The contract of an annotated script: what its shebang runs and what its `# once`
//! directives declare (inputs, outputs, the scripts it needs, fingerprint commands,
//! forwarded environment variables, its working directory). Paths are workspace-relative
//! and normalised; input globs are kept as patterns, expanded against the workspace's
//! files by the query that reads the contract.

/// What `# once output-symlinks` says to do with an output that is a symbolic link.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputSymlinks {
    /// A link whose target lies outside its declared output's tree is replaced by a copy
    /// of the file or directory it points to; links within the tree stay links.
    #[default]
    MaterializeExternal,
    /// Every link is stored and restored as a link.
    Preserve,
}

impl OutputSymlinks {
    pub fn as_str(self) -> &'static str {
        match self {
            OutputSymlinks::MaterializeExternal => "materialize-external",
            OutputSymlinks::Preserve => "preserve",
        }
    }

    pub fn from_name(name: &str) -> Option<OutputSymlinks> {
        match name {
            "materialize-external" => Some(OutputSymlinks::MaterializeExternal),
            "preserve" => Some(OutputSymlinks::Preserve),
            _ => None,
        }
    }
}

/// A script's contract, as its header declares it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct ScriptContract {
    /// The script, workspace-relative.
    pub path: String,
    /// The program the shebang names (`bash`, `python3`, `/bin/sh`).
    pub runtime: String,
    /// The shebang's arguments for the runtime.
    pub runtime_args: Vec<String>,
    /// Declared inputs: files, directories or glob patterns, workspace-relative.
    pub inputs: Vec<String>,
    /// Declared outputs: files or directories, workspace-relative.
    pub outputs: Vec<String>,
    /// Scripts that run first, workspace-relative.
    pub needs: Vec<String>,
    /// Shell commands whose result joins the cache key.
    pub fingerprints: Vec<String>,
    /// Names of environment variables forwarded to the script (their values join the key).
    pub env: Vec<String>,
    /// The working directory, workspace-relative; the script's directory when unset.
    pub cwd: Option<String>,
    pub output_symlinks: OutputSymlinks,
}
