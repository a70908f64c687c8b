//! The `once` binary: parses the command line, runs the command, maps outcomes to exit codes.
//!
//! Exit codes: 0 when the command ran (even if the workspace has problems), 1 when a
//! `validate-*` command found the workspace or target invalid, an `edit` command was
//! rejected or conflicted (nothing written), a `build` or `run` failed, or a test failed
//! (`test`), 2 for usage and I/O errors, 141 (quietly) when stdout or stderr was closed
//! before the command finished (`once … | head`, [`output`]).

#![allow(
    clippy::print_stdout,
    clippy::print_stderr,
    reason = "the CLI's job is printing"
)]

/// `println!` for the whole crate (defined before the modules, so it replaces std's in
/// each): a closed stdout is recorded ([`output`]), never a panic.
macro_rules! println {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::output::stdout(), $($arg)*);
    }};
}

/// `print!` for the whole crate, as [`println!`].
macro_rules! print {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = write!($crate::output::stdout(), $($arg)*);
    }};
}

/// `eprintln!` for the whole crate: a closed stderr is recorded, never a panic.
macro_rules! eprintln {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!($crate::output::stderr(), $($arg)*);
    }};
}

mod args;
mod build;
mod cache;
mod context;
mod edit;
mod exec;
mod human;
mod init;
mod isolation;
mod output;
mod panic;
mod query;
mod runtime;
mod server;
mod test;
mod test_adapter;

use std::io::Write;
use std::process::ExitCode;

use clap::Parser;

use crate::args::{Args, Command, Format};

/// mimalloc instead of the system allocator: parsing and resolving a workspace makes
/// millions of small allocations, freed by several threads (docs/benchmarks.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    // The sandbox's launcher must stay single-threaded (it joins a user namespace), so
    // it is served before anything else of `once` starts.
    if std::env::args_os().nth(1).as_deref()
        == Some(std::ffi::OsStr::new(
            once_exec::launch::SANDBOX_LAUNCHER_ROLE,
        ))
    {
        return match once_exec::launch::serve_sandbox_launcher() {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("once: the sandbox's launcher failed: {error}");
                ExitCode::FAILURE
            }
        };
    }
    panic::install_hook();
    if std::env::var_os("ONCE_SANDBOX_LAUNCHER").as_deref() != Some(std::ffi::OsStr::new("off"))
        && let Ok(executable) = std::env::current_exe()
    {
        once_exec::launch::use_sandbox_launcher(executable);
    }
    panic::guard(run)
}

/// Parses the command line and runs the command.
fn run() -> ExitCode {
    let args = match Args::try_parse() {
        Ok(args) => args,
        Err(err) => {
            // clap echoes the offending argument: when an argument holds control characters,
            // print the message uncoloured (clap's plain rendering drops escape sequences)
            // and escaped; otherwise as clap renders it.
            if !std::env::args_os().all(|a| human::is_printable(&a.to_string_lossy())) {
                let plain = err.render().to_string();
                let _ = std::io::stderr().write_all(human::printable(&plain).as_bytes());
            } else {
                let _ = err.print();
            }
            return match err.kind() {
                clap::error::ErrorKind::DisplayHelp | clap::error::ErrorKind::DisplayVersion => {
                    ExitCode::SUCCESS
                }
                _ => ExitCode::from(2),
            };
        }
    };
    if args.format == Format::Json {
        panic::report_as_json();
    }
    // The workspace server answers when it is there (`docs/server.md`); else, or when it
    // cannot, the command is computed here.
    if let Some(code) = server::client::forward(&args) {
        return ExitCode::from(code);
    }
    ExitCode::from(execute(&args))
}

/// Runs the parsed command and answers its exit status: here, or on a thread of the
/// workspace server for a client (`crate::context`).
pub(crate) fn execute(args: &Args) -> u8 {
    let format = args.format;
    if !matches!(
        args.command,
        Command::EvaluateModule | Command::TestAdapter { .. } | Command::Supervise { .. }
    ) && let Some(isolation) = isolation::ProcessIsolation::of_current_executable()
    {
        once_starlark::install_isolation(Box::new(isolation));
    }
    let outcome = match &args.command {
        Command::Server(command) => server::run(args, command),
        Command::Query(args::Query::ValidateActions {
            targets,
            capability,
            store,
        }) => build::validate_actions(args, targets, capability, store.as_deref()),
        Command::Query(query) => query::run(args, query),
        Command::Edit(edit) => edit::run(args, edit),
        Command::Cache(cache) => cache::run(args, cache),
        Command::Build { targets, exec } => build::build(args, targets, exec),
        Command::Test {
            targets,
            changed,
            all,
            jobs,
            rerun,
            attempts,
            sandbox,
            store,
        } => test::test(
            args,
            &test::TestArgs {
                targets,
                changed,
                all: *all,
                jobs: *jobs,
                rerun: *rerun,
                attempts: *attempts,
                sandbox: args::SandboxArg::mode(*sandbox),
                store: store.as_deref(),
            },
        ),
        Command::Run {
            target,
            args: extra,
            exec,
        } => build::run(args, target, extra, exec),
        Command::Exec {
            script,
            quiet,
            inputs,
            outputs,
            verify_reproducible,
            sandbox,
            store,
            command,
        } => exec::exec(
            args,
            &exec::ExecRequest {
                script: script.as_deref(),
                quiet: *quiet,
                inputs,
                outputs,
                verify_reproducible: *verify_reproducible,
                sandbox: args::SandboxArg::mode(*sandbox),
                store: store.as_deref(),
                command,
            },
        ),
        Command::Runtime(runtime) => runtime::run(args, runtime),
        Command::Supervise { session_dir } => once_runtime::supervise(session_dir)
            .map(|()| Outcome::Success)
            .map_err(Into::into),
        Command::Mcp { allow_run, store } => query::workspace_root(args).and_then(|root| {
            let config = once_mcp::ServerConfig {
                // Relative to where `once mcp` started, as every `--store`.
                store: store.as_ref().map(|store| {
                    std::env::current_dir().map_or_else(|_| store.clone(), |cwd| cwd.join(store))
                }),
                root,
                allow_run: *allow_run,
                threads: query::analysis_threads()?,
            };
            // SIGINT, SIGTERM or SIGHUP: kill the running builds' processes, then exit.
            let _ = ctrlc::set_handler(|| {
                once_mcp::server::stop_all_builds();
                std::process::exit(0);
            });
            once_mcp::run_stdio(config)?;
            Ok(Outcome::Success)
        }),
        Command::Lsp => {
            // `-C`/`ONCE_WORKSPACE` pin the workspace; otherwise the client's root decides.
            let explicit = args.directory.is_some() || std::env::var_os("ONCE_WORKSPACE").is_some();
            let root = if explicit {
                Some(query::workspace_root(args))
            } else {
                None
            };
            match root
                .transpose()
                .and_then(|root| Ok((root, query::analysis_threads()?)))
            {
                Ok((root, threads)) => once_lsp::run_stdio(root, threads)
                    .map(|()| Outcome::Success)
                    .map_err(|e| anyhow::anyhow!("language server: {e}")),
                Err(e) => Err(e),
            }
        }
        Command::EvaluateModule => isolation::run_worker().map(|()| Outcome::Success),
        Command::TestAdapter {
            results_format,
            target,
            runner,
            results,
            log,
            native,
            subtests,
            cwd,
            allow_no_tests,
            staged,
            retry_cases,
            shard,
            list_args,
            command,
        } => test_adapter::run(&test_adapter::AdapterArgs {
            format: results_format,
            target,
            runner,
            results,
            log,
            native: native.as_deref(),
            subtests: subtests.as_deref(),
            cwd,
            allow_no_tests: *allow_no_tests,
            staged: staged.as_deref(),
            retry_cases,
            shard: shard.as_deref(),
            list_args,
            argv: command,
        })
        .map(|code| {
            let _ = std::io::stdout().flush();
            std::process::exit(code)
        }),
        Command::Init {
            dir,
            dry_run,
            check,
        } => init::run(args, dir.as_deref(), *dry_run, *check),
        Command::ManPages { dir } => {
            let command = <Args as clap::CommandFactory>::command();
            std::fs::create_dir_all(dir)
                .and_then(|()| clap_mangen::generate_to(command, dir))
                .map(|()| Outcome::Success)
                .map_err(|e| {
                    anyhow::anyhow!(
                        "cannot write the manual pages into `{}`: {e}",
                        dir.display()
                    )
                })
        }
        Command::Completions { shell } => {
            let mut command = <Args as clap::CommandFactory>::command();
            let mut script = Vec::new();
            clap_complete::generate(*shell, &mut command, "once", &mut script);
            // A reader that stops early (`| head`) is not an error.
            let _ = output::stdout().write_all(&script);
            Ok(Outcome::Success)
        }
        Command::DebugPanic => panic!("`once debug-panic` panics on purpose"),
    };
    // A reader that left early (`once … | head`): whatever happened, nobody reads on.
    if output::closed() {
        return output::CLOSED_PIPE_EXIT;
    }
    match outcome {
        Ok(Outcome::Success) => 0,
        Ok(Outcome::Invalid) => 1,
        Ok(Outcome::Exit(code)) => code,
        Ok(Outcome::Interrupted(signal)) => u8::try_from(128 + signal.clamp(0, 127)).unwrap_or(1),
        Err(err) => {
            report_error(format, &err);
            2
        }
    }
}

/// `once --version`: the package version and the commit it was built from
/// (`build.rs`), such as `0.1.0 (3b17397a1c2e)`.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("ONCE_COMMIT"), ")");

/// How a command that ran ended.
pub enum Outcome {
    Success,
    /// A validation found errors, or a build or run failed.
    Invalid,
    /// `once run` got this termination signal while its program ran (forwarded to it):
    /// the exit status is 128 + the signal, as a shell reports a program it killed.
    Interrupted(i32),
    /// `once exec`: the program's own exit code (128 + N when signal N killed it).
    Exit(u8),
}

/// Prints an error with its whole cause chain to stderr (control characters escaped in
/// human output; JSON escapes them itself).
fn report_error(format: Format, err: &anyhow::Error) {
    let chain: Vec<String> = err.chain().map(|c| c.to_string()).collect();
    let mut stderr = output::stderr();
    match format {
        Format::Json => {
            let value =
                serde_json::json!({ "error": { "message": chain.join(": "), "causes": chain } });
            let _ = writeln!(stderr, "{value}");
        }
        Format::Human => {
            // Arguments echoed in a message must not drive the terminal.
            let message = chain.join(": ");
            let _ = writeln!(stderr, "once: error: {}", human::printable(&message));
        }
    }
}
