//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// A typed, self-describing build graph.
#[derive(Parser, Debug)]
#[command(name = "once", version, about, propagate_version = true)]
pub struct Args {
    /// Use DIR as the workspace root (`--workspace` is the same flag).
    #[arg(
        short = 'C',
        long = "directory",
        visible_alias = "workspace",
        global = true,
        value_name = "DIR"
    )]
    pub directory: Option<PathBuf>,

    /// Output format.
    #[arg(long, global = true, value_enum, default_value_t = Format::Human)]
    pub format: Format,

    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable text; coloured on a terminal.
    Human,
    /// One compact JSON line, the same record as the matching MCP tool.
    Json,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Ask questions about the workspace's build graph.
    #[command(subcommand)]
    Query(Query),
    /// Serve the Model Context Protocol over stdin/stdout for coding agents.
    Mcp {
        /// Enable tools that change the workspace.
        #[arg(long)]
        allow_run: bool,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
}

#[derive(Subcommand, Debug)]
pub enum Query {
    /// The workspace root, configuration, packages and counts.
    Workspace,
    /// Every target, optionally of one kind.
    Targets {
        /// Only targets of this kind.
        #[arg(long)]
        kind: Option<String>,
    },
    /// The resolved view of one target: kind, srcs, deps, attrs, capabilities, providers.
    Target {
        /// Canonical target id, such as `apps/cli/Cli`.
        id: String,
    },
    /// The capabilities of one target, with output groups and required outputs.
    Capabilities {
        /// Canonical target id.
        id: String,
    },
    /// The typed contract of a target kind.
    Schema {
        /// Kind name, such as `rust_binary`.
        kind: String,
    },
    /// The complete file tree of a kind's starter example.
    Example { kind: String, slug: String },
    /// Kinds matching an ecosystem, family or intent; all kinds without a query.
    #[command(alias = "kinds")]
    TargetKinds {
        /// Short text such as `rust binary` or `python tests`.
        #[arg(long)]
        query: Option<String>,
    },
    /// Validate the whole workspace; exits 1 when it has errors.
    ValidateWorkspace,
    /// Validate one proposed target table (JSON) without reading other manifests; exits 1 when invalid.
    ValidateTarget {
        /// A JSON file holding `{"target": {...}}` or the target object; stdin when absent.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Every target with a `test` capability.
    Tests,
    /// Test targets affected by changed workspace-relative paths (all tests when none).
    AffectedTests {
        /// Changed paths, relative to the workspace root.
        paths: Vec<String>,
        /// Also a changed path (repeatable), for scripts that build argument lists.
        #[arg(long = "changed-path", value_name = "PATH")]
        changed_paths: Vec<String>,
    },
}
