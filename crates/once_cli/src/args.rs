//! The command line, declared with clap.

use std::path::PathBuf;

use clap::{Parser, Subcommand, ValueEnum};

/// A typed, self-describing build graph.
#[derive(Parser, Debug)]
#[command(name = "once", version = crate::VERSION, about, propagate_version = true)]
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

/// How the workspace flag was spelled in `argv` (`-C`, `--directory` or `--workspace`),
/// so messages name the flag the user typed; `-C` when none is found.
pub fn directory_flag(argv: impl IntoIterator<Item = std::ffi::OsString>) -> &'static str {
    let mut used = "-C";
    for arg in argv {
        let Some(arg) = arg.to_str() else { continue };
        if arg == "--" {
            break;
        }
        let long = |name: &str| arg == name || arg.starts_with(&format!("{name}="));
        if long("--workspace") {
            used = "--workspace";
        } else if long("--directory") {
            used = "--directory";
        } else if arg.starts_with("-C") {
            used = "-C";
        }
    }
    used
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// Readable text; coloured on a terminal.
    Human,
    /// One compact JSON line, the same record as the matching MCP tool.
    Json,
}

#[derive(Subcommand, Debug)]
// Each subcommand's arguments are built only when it is the one parsed (or help and
// completions ask for it): building all of them cost every start about 0.3 ms.
#[command(defer = true)]
pub enum Command {
    /// Ask questions about the workspace's build graph.
    #[command(subcommand)]
    Query(Query),
    /// Serve the Model Context Protocol over stdin/stdout for coding agents.
    Mcp {
        /// Enable the tools that change the workspace or run processes (edits, examples,
        /// builds and runs).
        #[arg(long)]
        allow_run: bool,
        /// The store the executing tools use (default: `.once/cache` in the workspace),
        /// as `--store` of `once build`, `run`, `test` and `exec`.
        #[arg(long, value_name = "DIR")]
        store: Option<PathBuf>,
    },
    /// Change manifests: apply target edits, materialize starter examples.
    #[command(subcommand)]
    Edit(Edit),
    /// Serve the Language Server Protocol on stdin/stdout for editors (`once.toml` files).
    Lsp,
    /// Build targets: run their `build` actions (and their dependencies'), reusing cached
    /// results. Exits 1 when a build fails.
    Build {
        /// Target ids (`libs/text/Text`), `PKG/...` for every target in a package and
        /// below it (`libs/...`), or `...` for every target.
        #[arg(required = true, value_name = "TARGET")]
        targets: Vec<String>,
        #[command(flatten)]
        exec: ExecArgs,
    },
    /// Run an annotated script (`--script PATH`, or the first file of `-- CMD` with
    /// `# once` directives, or a script whose shebang is `once exec -- RUNTIME`) through
    /// the action cache: its `needs` first, then the script; a hit replays its streams
    /// and restores its outputs. stdout and stderr are the program's (what needs that ran
    /// printed comes first on stderr, under a header), then a trailer on stderr
    /// (`once: cache hit|miss action=<digest> exit=<n>`); the exit code is the program's.
    /// A literal command is cached only with `--input`/`--output`.
    Exec {
        /// The annotated script to run (arguments after `--` go to it).
        #[arg(long, value_name = "PATH")]
        script: Option<PathBuf>,
        /// Only the program's own streams: no trailer (human format), nothing of the
        /// needs that succeeded.
        #[arg(short = 'q', long)]
        quiet: bool,
        /// A file, directory or glob a literal command reads (makes it cached).
        #[arg(long = "input", value_name = "PATH")]
        inputs: Vec<String>,
        /// A file or directory a literal command writes (makes it cached).
        #[arg(long = "output", value_name = "PATH")]
        outputs: Vec<String>,
        /// Run the action twice without the cache and report every difference (exit
        /// code, streams, each output's digest); exits 1 on a divergence.
        #[arg(long)]
        verify_reproducible: bool,
        /// `on` (the default, unless `[workspace] sandbox = "off"`): every action runs
        /// confined to what it declares; `off`: unconfined, unsafe for caching (its results
        /// are kept apart from sandboxed ones). See docs/sandbox.md.
        #[arg(long, value_enum, value_name = "MODE")]
        sandbox: Option<SandboxArg>,
        /// The store's directory (default: `.once/cache` in the workspace).
        #[arg(long, value_name = "DIR")]
        store: Option<PathBuf>,
        /// The command (or, with `--script`, the script's arguments).
        #[arg(last = true, value_name = "CMD")]
        command: Vec<String>,
    },
    /// Build what a target's `run` capability needs, then run it with the terminal
    /// attached; ARGS after `--` go to the program. Exits with the program's exit code
    /// (1 when the build fails), 128 + N when signal N reached `once` (it is passed on to
    /// the program).
    Run {
        /// The target id, such as `apps/greeter/Greeter`.
        target: String,
        /// Arguments for the program.
        #[arg(last = true, value_name = "ARGS")]
        args: Vec<String>,
        #[command(flatten)]
        exec: ExecArgs,
    },
    /// Run tests: build what each test target needs, run its `test` capability (test
    /// targets in parallel), and report each target's normalized results
    /// (`once.test_results.v1`). A passing test whose inputs are unchanged is a cache hit.
    /// Exits 0 when every test passed, 1 when one failed, 2 for usage and I/O errors.
    Test {
        /// Test target ids (`libs/text/TextTest`), `PKG/...` or `...`. Without any (and
        /// without `--changed`): the tests of the current directory's package and of the
        /// packages below the directory, which from the workspace root is every test.
        #[arg(value_name = "TARGET", conflicts_with_all = ["changed", "all"])]
        targets: Vec<String>,
        /// Run the tests affected by this changed workspace-relative path (repeatable):
        /// the selection of `once query affected-tests`.
        #[arg(long, value_name = "PATH", conflicts_with = "all")]
        changed: Vec<String>,
        /// Run every test target of the workspace, wherever `once` runs (what `once test`
        /// runs from the workspace root).
        #[arg(long)]
        all: bool,
        /// How many actions run at once (default: the number of cores).
        #[arg(short = 'j', long, value_name = "N")]
        jobs: Option<usize>,
        /// Run the tests even when a cached pass exists.
        #[arg(long)]
        rerun: bool,
        /// Run failing cases again, up to N runs in all (uncached; filtered by case where
        /// the runner can select cases); a case that fails and then passes is `flaky`.
        /// Without it: each target's `attempts` attribute, else `[workspace]
        /// test_attempts`, else 1.
        #[arg(
            long,
            value_name = "N",
            value_parser = clap::value_parser!(u32).range(1..=20),
        )]
        attempts: Option<u32>,
        /// `on` (the default, unless `[workspace] sandbox = "off"`): every action runs
        /// confined to what it declares; `off`: unconfined, unsafe for caching (its results
        /// are kept apart from sandboxed ones). See docs/sandbox.md.
        #[arg(long, value_enum, value_name = "MODE")]
        sandbox: Option<SandboxArg>,
        /// The store's directory (default: `.once/cache` in the workspace).
        #[arg(long, value_name = "DIR")]
        store: Option<PathBuf>,
    },
    /// Inspect and trim the local store of build results (`.once/cache`).
    #[command(subcommand)]
    Cache(Cache),
    /// A warm workspace server that `once query`, `build`, `test` and `exec` ask first,
    /// answering in milliseconds from a database a file watcher keeps fresh
    /// (docs/server.md).
    #[command(subcommand)]
    Server(Server),
    /// Start targets in the background under a supervisor, follow their status and
    /// logs, stop them (sessions under `.once/runtime`, docs/runtime.md).
    #[command(subcommand)]
    Runtime(Runtime),
    /// Internal: the supervisor of a runtime session (started detached by
    /// `once runtime start`).
    #[command(name = "__supervise", hide = true)]
    Supervise {
        /// The session's directory.
        session_dir: PathBuf,
    },
    /// Internal: the isolated module evaluator `once` starts for itself (one request on
    /// stdin, progress and `load()` requests on stdout).
    #[command(name = "__evaluate-module", hide = true)]
    EvaluateModule,
    /// Internal: what a test kind's `test` action runs: the test runner after `--`, its
    /// output passed through and logged, then its native results normalized into a
    /// `once.test_results.v1` record. Exits with the runner's status.
    #[command(name = "__test-adapter", hide = true)]
    TestAdapter {
        /// The native format: libtest, pytest_junit, junit, go_test_json, tap,
        /// unittest_json, exit_code.
        #[arg(long)]
        results_format: String,
        /// The test target's canonical id.
        #[arg(long)]
        target: String,
        /// The runner's name in the record (`libtest`, `pytest`, `go`, `node`, `sh`, …).
        #[arg(long)]
        runner: String,
        /// Where the record goes (relative to the working directory).
        #[arg(long)]
        results: PathBuf,
        /// Where the runner's whole output goes.
        #[arg(long)]
        log: PathBuf,
        /// The runner's own results file, for file formats (JUnit XML, the unittest
        /// runner's report).
        #[arg(long)]
        native: Option<PathBuf>,
        /// pytest's subtests report (once's plugin's JSON lines, which the JUnit XML
        /// cannot carry), merged into the `--native` JUnit XML's cases.
        #[arg(long)]
        subtests: Option<PathBuf>,
        /// The working directory, relative to the workspace root (`libs/text`).
        #[arg(long, default_value = ".")]
        cwd: String,
        /// A successful run that reports no case passes (the target's `allow_no_tests`);
        /// otherwise it fails.
        #[arg(long)]
        allow_no_tests: bool,
        /// A staged copy of the package directory (relative to the working directory):
        /// files the runner reports below it are recorded as the package's own.
        #[arg(long)]
        staged: Option<PathBuf>,
        /// Run only this failing case again (repeatable; a retry): the case ids of the
        /// previous record, passed to the runner as its own filter (libtest `--exact`
        /// names, pytest node ids, go `-test.run`, node `--test-name-pattern`, the
        /// unittest runner's `--once-case`). Formats without a filter run everything
        /// again.
        #[arg(long = "retry-case", value_name = "ID")]
        retry_cases: Vec<String>,
        /// Run only batch INDEX of COUNT (`INDEX/COUNT`, from 0) of the cases the runner
        /// lists (libtest `--list`, go `-test.list`): the sorted case names split into
        /// COUNT contiguous groups of nearly equal size. A retry's cases win over it.
        #[arg(long, value_name = "INDEX/COUNT")]
        shard: Option<String>,
        /// An argument added only to the command listing the cases of a `--shard`
        /// (repeatable): a libtest filter, which the exact names then replace.
        #[arg(long = "list-arg", value_name = "ARG", allow_hyphen_values = true)]
        list_args: Vec<String>,
        /// The test runner and its arguments.
        #[arg(last = true, required = true, value_name = "COMMAND")]
        command: Vec<String>,
    },
    /// Describe the repository from its own ecosystem files (Cargo, Python, Node, Go and
    /// shell tests) and keep its manifests in step with them: writes one batch per
    /// package, updating the targets it generated and leaving hand-written ones alone
    /// (docs/init.md).
    Init {
        /// The repository to describe (default: the workspace root, as `-C` finds it).
        #[arg(value_name = "DIR")]
        dir: Option<PathBuf>,
        /// Print what would change (a diff per manifest) and write nothing.
        #[arg(long)]
        dry_run: bool,
        /// Write nothing; exit 1 and print the diff when the manifests are out of step
        /// with the ecosystem files (for CI and pre-commit).
        #[arg(long, conflicts_with = "dry_run")]
        check: bool,
    },
    /// Write the manual pages (`once.1` and one per subcommand, such as `once-init.1`),
    /// generated from this command line, into DIR (for example `~/.local/share/man/man1`).
    ManPages {
        #[arg(value_name = "DIR")]
        dir: PathBuf,
    },
    /// Print a shell completion script.
    Completions {
        /// The shell to complete for.
        #[arg(value_enum)]
        shell: clap_complete::Shell,
    },
    /// Panics on purpose (hidden): the tests of the panic guard need a real panic.
    #[command(name = "debug-panic", hide = true)]
    DebugPanic,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Cache {
    /// How many blobs and action records the store holds, and their bytes.
    Stats {
        #[command(flatten)]
        store: StoreArg,
    },
    /// Remove everything from the store (waits until no build uses it).
    Clean {
        #[command(flatten)]
        store: StoreArg,
    },
    /// Shrink the store to at most SIZE: unreferenced blobs first, then the least
    /// recently used results.
    Gc {
        /// The size to shrink to: bytes, or with a unit (`500M`, `2G`, `1GiB`).
        #[arg(long, value_name = "SIZE")]
        max_size: String,
        #[command(flatten)]
        store: StoreArg,
    },
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Server {
    /// Start the workspace's server in the background (once it has loaded the workspace
    /// it answers; nothing happens when one already runs).
    Start {
        /// Stop after this long without a request: `90s`, `30m`, `3h` (default `3h`, or
        /// `ONCE_SERVER_IDLE_TIMEOUT`).
        #[arg(long, value_name = "DURATION")]
        idle_timeout: Option<String>,
    },
    /// Stop the workspace's server.
    Stop {
        /// Stop every server of this user, whatever their workspace.
        #[arg(long)]
        all: bool,
    },
    /// Whether the workspace's server runs: its process, version, requests, idle
    /// timeout, resident memory and the database's memory per query. Exits 1 when none
    /// runs.
    Status,
    /// Internal: the server itself (started by `once server start`).
    #[command(name = "__serve", hide = true)]
    Serve {
        /// Seconds without a request before it stops.
        #[arg(long)]
        idle_seconds: u64,
    },
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Runtime {
    /// Build what TARGET's `run` capability needs, start its program under a detached
    /// supervisor and print the session's record at once (status `starting`). ARGS after
    /// `--` go to the program. Exits 1 when the build fails.
    Start {
        /// The target id, such as `apps/service/Service`.
        target: String,
        /// Arguments for the program.
        #[arg(last = true, value_name = "ARGS")]
        args: Vec<String>,
        #[command(flatten)]
        exec: ExecArgs,
    },
    /// A session's record: status, process ids, exit code or signal, times. A session
    /// whose supervisor died is reported `failed` (and what is left of it killed).
    Status {
        /// The session id `once runtime start` printed.
        session_id: String,
    },
    /// Every session of the workspace, oldest first.
    List,
    /// A session's output as line records, stdout and stderr interleaved in arrival
    /// order.
    Logs {
        /// The session id.
        session_id: String,
        /// Only this stream's records.
        #[arg(long, value_parser = ["stdout", "stderr"])]
        source: Option<String>,
        /// Only the records after this one (the `cursor` of a record, or `next_cursor`).
        #[arg(long, value_name = "CURSOR")]
        cursor: Option<String>,
        /// At most N records (default 200; with --follow, per read).
        #[arg(long, value_name = "N")]
        limit: Option<usize>,
        /// Keep printing new records until the session ends.
        #[arg(short, long)]
        follow: bool,
    },
    /// Stop a session: SIGTERM to the program's process group, SIGKILL to everything
    /// left after the grace period. Waits for the end and prints the final record;
    /// stopping a finished session prints its record. Exits 1 when a session is still
    /// stopping after the wait.
    Stop {
        /// The session id (or --all).
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        session_id: Option<String>,
        /// Stop every unfinished session of the workspace.
        #[arg(long)]
        all: bool,
        /// The grace period between SIGTERM and SIGKILL, in seconds (default 10).
        #[arg(long, value_name = "SECONDS", default_value_t = 10.0)]
        timeout: f64,
    },
    /// Remove the finished sessions that finished more than DURATION ago (a session
    /// whose supervisor lives is never removed).
    Prune {
        /// `30s`, `10m`, `2h`, `7d`, or seconds (default `1d`; `0` removes every
        /// finished session).
        #[arg(long, value_name = "DURATION", default_value = "1d")]
        older_than: String,
    },
}

/// How `build` and `run` execute.
#[derive(clap::Args, Debug)]
pub struct ExecArgs {
    /// How many actions run at once (default: the number of cores).
    #[arg(short = 'j', long, value_name = "N")]
    pub jobs: Option<usize>,
    /// After a failure, keep running every action that does not depend on it.
    #[arg(short = 'k', long)]
    pub keep_going: bool,
    /// The store's directory (default: `.once/cache` in the workspace).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// `on` (the default, unless `[workspace] sandbox = "off"`): every action runs
    /// confined to what it declares; `off`: unconfined, unsafe for caching (its results
    /// are kept apart from sandboxed ones). See docs/sandbox.md.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Use this remote cache (`grpc://`, `grpcs://`, `http://`, `https://`): wins over
    /// `ONCE_REMOTE_CACHE` and the root `once.toml`'s `[cache] remote`. See
    /// docs/remote-cache.md.
    #[arg(long, value_name = "URL", conflicts_with = "no_remote_cache")]
    pub remote_cache: Option<String>,
    /// Use no remote cache, whatever the environment and `once.toml` say.
    #[arg(long)]
    pub no_remote_cache: bool,
    /// Look results up in the remote cache but upload nothing.
    #[arg(long)]
    pub remote_cache_read_only: bool,
}

impl ExecArgs {
    /// What the flags say of the remote cache.
    pub fn remote_cache(&self) -> once_remote::Overrides {
        once_remote::Overrides {
            url: self.remote_cache.clone(),
            disabled: self.no_remote_cache,
            read_only: self.remote_cache_read_only,
        }
    }
}

/// `--sandbox on|off`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SandboxArg {
    On,
    Off,
}

impl SandboxArg {
    /// The mode the flag asks for, `None` without it.
    pub fn mode(flag: Option<SandboxArg>) -> Option<once_exec::SandboxMode> {
        flag.map(|flag| match flag {
            SandboxArg::On => once_exec::SandboxMode::On,
            SandboxArg::Off => once_exec::SandboxMode::Off,
        })
    }
}

#[derive(clap::Args, Debug)]
pub struct StoreArg {
    /// The store's directory (default: `.once/cache` in the workspace).
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
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
    /// Each target's input files with their SHA-256 digests, and one digest over them;
    /// every target when none is named.
    Inputs {
        /// Canonical target ids, such as `apps/cli/Cli`; every target when absent.
        ids: Vec<String>,
    },
    /// The actions a target's capability plans (after the `build` plans of its
    /// dependencies), each with its static cache key. Nothing is run.
    Actions {
        /// Canonical target id, such as `apps/cli/Cli`.
        id: String,
        /// The capability to plan.
        #[arg(long, default_value = "build", value_parser = ["build", "run", "test"])]
        capability: String,
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
    ValidateWorkspace {
        /// Apply the preferred fix of every diagnostic that has one, then validate again
        /// and report what changed.
        #[arg(long)]
        fix: bool,
    },
    /// Validate one proposed target table (JSON) without reading other manifests; exits 1 when invalid.
    ValidateTarget {
        /// A JSON file holding `{"target": {...}}` or the target object; stdin when absent.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Run a target's actions (and its dependencies') in the strictest mode: every action
    /// runs sandboxed and traced, nothing is reused or recorded, and every file access
    /// the sandbox denied is listed with what to declare. Exits 1 when one was found or
    /// an action failed.
    ValidateActions {
        /// Target ids (`libs/text/Text`), `PKG/...` or `...`.
        #[arg(required = true, value_name = "TARGET")]
        targets: Vec<String>,
        /// The capability whose actions run.
        #[arg(long, default_value = "build", value_parser = ["build", "test"])]
        capability: String,
        /// The store's directory (default: `.once/cache` in the workspace).
        #[arg(long, value_name = "DIR")]
        store: Option<PathBuf>,
    },
    /// Every target with a `test` capability.
    Tests,
    /// The normalized results (`once.test_results.v1`) a test target's last run left.
    TestResults {
        /// The test target's canonical id, such as `libs/text/TextTest`.
        target: String,
        /// Only the status, the counts and the artifacts (`once.test_results_summary.v1`).
        #[arg(long)]
        summary_only: bool,
    },
    /// Test targets affected by changed workspace-relative paths (all tests when none).
    AffectedTests {
        /// Changed paths, relative to the workspace root.
        paths: Vec<String>,
        /// Also a changed path (repeatable), for scripts that build argument lists.
        #[arg(long = "changed-path", value_name = "PATH")]
        changed_paths: Vec<String>,
    },
    /// The project-module authoring contract: helpers, invariants, a starter module.
    ModuleContract,
    /// Evaluate one workspace-relative `.star` module; exits 1 when invalid.
    ValidateModule {
        /// Workspace-relative path, such as `modules/generated_text.star`.
        path: String,
    },
    /// Validate one annotated script's header (shebang and `# once` directives) and show
    /// its contract; exits 1 when invalid.
    Script {
        /// Workspace-relative path, such as `scripts/build.sh`.
        path: String,
    },
    /// Evidence of the actions run or reused for targets' capabilities, newest first:
    /// historical provenance, not proof that their inputs are unchanged.
    Evidence {
        /// Only this target (`cli`), target capability (`cli:test`) or action digest.
        #[arg(long, value_name = "S")]
        subject: Option<String>,
        /// At most this many records (1 to 100).
        #[arg(
            long,
            value_name = "N",
            default_value_t = once_evidence::DEFAULT_LIMIT as u64,
            value_parser = clap::value_parser!(u64).range(1..=once_evidence::MAX_LIMIT as u64),
        )]
        limit: u64,
    },
    /// Fetch bounded UTF-8 source from a public HTTPS address (no redirects, no private hosts).
    ExternalSource {
        /// A public `https://` address.
        url: String,
        /// Return at most this many bytes (1 to 1048576); `truncated` says when more arrived.
        #[arg(long, value_name = "N", default_value_t = once_fetch::DEFAULT_MAX_BYTES)]
        max_bytes: usize,
    },
}

#[derive(Subcommand, Debug)]
#[command(defer = true)]
pub enum Edit {
    /// Apply a batch of create/update/delete operations to one package's `once.toml`, all
    /// or nothing; exits 1 when rejected (the file is left unchanged).
    Apply {
        /// A JSON file holding `{"package": …, "operations": [...]}`; stdin when absent.
        #[arg(long)]
        file: Option<PathBuf>,
    },
    /// Write a kind's starter example under a workspace-relative directory; exits 1 on
    /// conflicts (nothing is written).
    MaterializeExample {
        /// Kind name, such as `rust_binary`.
        kind: String,
        /// Example slug from `once query schema KIND`.
        slug: String,
        /// Workspace-relative directory to write into; the root when absent.
        #[arg(long, value_name = "DIR")]
        destination: Option<String>,
    },
}
