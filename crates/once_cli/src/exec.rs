//! `once exec`: runs an annotated script (and the scripts it `needs`) or a literal command
//! through the action cache (`docs/scripts.md`).
//!
//! - `once exec --script PATH [-- ARGS]` runs the script at PATH;
//! - `once exec -- CMD ARGS…` runs the first argument after `CMD` that names an existing
//!   file, when that file has `once` directives; that is also what the shebang
//!   `#!/usr/bin/env -S once exec -- bash` makes the kernel run for `./build.sh`;
//! - otherwise CMD is a literal command: cached only when `--input`/`--output` declare
//!   what it reads or writes, else run every time (a bypass), since nothing would tell
//!   when its result is stale.
//!
//! The program's stdout and stderr are replayed byte for byte (captured, so a hit replays
//! the same bytes), then a trailer goes to stderr: `once: cache hit|miss|bypass
//! action=<digest> exit=<n>`, a JSON object with `--format json`, nothing with `-q`. The
//! exit code is the program's (128 + N when signal N killed it). Needed scripts that ran
//! (not hits) and printed something come first, on stderr, each under a header line
//! (`-q` leaves them out); a failing need's streams go to stderr too.
//!
//! Only what the script names is read: the script, its needs and its inputs. No manifest
//! is loaded and no Starlark evaluated, so a hit costs a few file reads.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, anyhow, bail};
use once_analysis::{AnalysisHost, CommandRequest, OsSystem, ScriptRequest};
use once_build::scripts::{self, ScriptJob};
use once_build::session::{ScriptRun, Session};
use once_exec::{ActionResult, ActionStatus, ExecOptions, Store};

use crate::Outcome;
use crate::args::{Args, Format};
use crate::build::{Interruptible, answer, outcome_of, set_interruptible};

/// The command line of `once exec`.
pub struct ExecRequest<'a> {
    pub script: Option<&'a Path>,
    pub quiet: bool,
    pub inputs: &'a [String],
    pub outputs: &'a [String],
    pub verify_reproducible: bool,
    pub sandbox: Option<once_exec::SandboxMode>,
    pub store: Option<&'a Path>,
    pub command: &'a [String],
}

/// What runs, and in which workspace.
struct Lowered {
    root: PathBuf,
    job: ScriptJob,
}

pub fn exec(args: &Args, request: &ExecRequest<'_>) -> anyhow::Result<Outcome> {
    let cwd = crate::context::current_dir().context("cannot determine the current directory")?;
    let script = match request.script {
        Some(path) => Some((path.to_path_buf(), request.command.to_vec())),
        None => detect_script(&cwd, request.command)?,
    };
    if script.is_some() && (!request.inputs.is_empty() || !request.outputs.is_empty()) {
        bail!(
            "`--input` and `--output` are for literal commands; a script declares them with `# once input` and `# once output`"
        );
    }
    let lowered = match script {
        Some((path, script_args)) => lower_script(args, &cwd, &path, script_args)?,
        None => lower_command(args, &cwd, request)?,
    };
    if request.verify_reproducible {
        return verify_reproducible(args, request, &lowered);
    }
    let session = open_session(&lowered.root, request.store, true)?.with_sandbox(request.sandbox);
    let run = run(&session, &lowered)?;
    finish(args.format, request.quiet, &lowered, session.store(), &run)
}

/// The session `once exec` runs in: the store `--store` names (else the workspace's).
/// `--verify-reproducible`'s trials record no evidence.
fn open_session(root: &Path, store: Option<&Path>, evidence: bool) -> anyhow::Result<Session> {
    let session = Session::open(root, store, ExecOptions::default()).map_err(|e| anyhow!(e))?;
    Ok(if evidence {
        session
    } else {
        session.without_evidence()
    })
}

/// How much of a file named on the command line is read to find its `once` directives.
const HEADER_LIMIT: u64 = 1 << 20;

/// The script `once exec -- CMD ARGS…` runs: the first argument after `CMD` naming an
/// existing file, when it has `once` directives; `None` for a literal command.
fn detect_script(cwd: &Path, command: &[String]) -> anyhow::Result<Option<(PathBuf, Vec<String>)>> {
    let Some(program) = command.first() else {
        bail!("nothing to run: give `--script PATH` or a command after `--`");
    };
    for (index, argument) in command.iter().enumerate().skip(1) {
        let path = cwd.join(argument);
        if !path.is_file() {
            continue;
        }
        // A header is at the top: a large data file named on the command line is not
        // read whole.
        let mut bytes = Vec::new();
        let read = std::fs::File::open(&path).and_then(|file| {
            std::io::Read::read_to_end(&mut std::io::Read::take(file, HEADER_LIMIT), &mut bytes)
        });
        if read.is_err() {
            return Ok(None);
        }
        let text = String::from_utf8_lossy(&bytes);
        let (has_directives, runtime) = once_analysis::scripts::script_header(argument, &text);
        if !has_directives {
            return Ok(None);
        }
        let name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_owned();
        if !runtime.is_empty() && name(&runtime) != name(program) {
            bail!(
                "the script `{argument}` declares the runtime `{runtime}` in its shebang, but the command runs `{program}`; run it with its shebang's runtime (or `once exec --script {argument}`)"
            );
        }
        return Ok(Some((path, command[index + 1..].to_vec())));
    }
    Ok(None)
}

/// The workspace of a script: the one `-C`/`ONCE_WORKSPACE`/the current directory
/// names when the script is inside it, else the one found from the script's directory.
fn script_workspace(args: &Args, script: &Path) -> anyhow::Result<(PathBuf, String)> {
    let root = crate::query::workspace_root(args)?;
    let root = root.canonicalize().unwrap_or(root);
    let root = if script.starts_with(&root) {
        root
    } else if args.directory.is_some() {
        bail!(
            "the script `{}` is outside the workspace `{}`",
            script.display(),
            root.display()
        );
    } else {
        let directory = script.parent().unwrap_or(script);
        once_analysis::find_workspace_root(&OsSystem, directory)
    };
    let relative = script
        .strip_prefix(&root)
        .ok()
        .and_then(once_db_relative)
        .ok_or_else(|| anyhow!("the script `{}` has no workspace path", script.display()))?;
    Ok((root, relative))
}

fn once_db_relative(path: &Path) -> Option<String> {
    let parts: Option<Vec<&str>> = path.components().map(|c| c.as_os_str().to_str()).collect();
    Some(parts?.join("/"))
}

fn lower_script(
    args: &Args,
    cwd: &Path,
    path: &Path,
    script_args: Vec<String>,
) -> anyhow::Result<Lowered> {
    let absolute = cwd.join(path);
    let script = absolute
        .canonicalize()
        .with_context(|| format!("cannot open the script `{}`", path.display()))?;
    let (root, relative) = script_workspace(args, &script)?;
    let host = AnalysisHost::load_walked(Arc::new(OsSystem), root.clone(), &Default::default());
    let analysis = host.analysis();
    let plan = answer(analysis.script_plan(&ScriptRequest {
        path: relative,
        args: script_args,
        environment: crate::context::vars().into_iter().collect(),
    }))?
    .map_err(|e| anyhow!("{e}"))?;
    let job = answer(ScriptJob::of_script(&analysis, plan))?;
    let _ = analysis.save_digest_index();
    Ok(Lowered { root, job })
}

fn lower_command(args: &Args, cwd: &Path, request: &ExecRequest<'_>) -> anyhow::Result<Lowered> {
    let root = crate::query::workspace_root(args)?;
    let root = root.canonicalize().unwrap_or(root);
    let base = cwd
        .strip_prefix(&root)
        .ok()
        .and_then(once_db_relative)
        .unwrap_or_default();
    let declared = |paths: &[String], what: &str| -> anyhow::Result<Vec<String>> {
        paths
            .iter()
            .map(|path| {
                let joined = if Path::new(path).is_absolute() {
                    Path::new(path)
                        .strip_prefix(&root)
                        .ok()
                        .and_then(once_db_relative)
                } else {
                    once_model::paths::lexical_join(&base, path)
                };
                joined.filter(|p| !p.is_empty()).ok_or_else(|| {
                    anyhow!(
                        "the {what} `{path}` is not a path inside the workspace `{}`",
                        root.display()
                    )
                })
            })
            .collect()
    };
    let inputs = declared(request.inputs, "input")?;
    let outputs = declared(request.outputs, "output")?;
    let host = AnalysisHost::load_walked(Arc::new(OsSystem), root.clone(), &Default::default());
    let analysis = host.analysis();
    let planned = answer(analysis.command_plan(&CommandRequest {
        argv: request.command.to_vec(),
        cwd: base,
        inputs,
        outputs,
    }))?
    .map_err(|e| anyhow!("{e}"))?;
    let job = answer(ScriptJob::of_command(&analysis, planned))?;
    let _ = analysis.save_digest_index();
    Ok(Lowered { root, job })
}

fn run(session: &Session, lowered: &Lowered) -> anyhow::Result<ScriptRun> {
    set_interruptible(Interruptible::Execution(session.cancel_handle()));
    let run = session.exec_script(&lowered.job, None);
    set_interruptible(Interruptible::Nothing);
    run.map_err(|e| anyhow!(e))
}

/// Writes a captured stream whole (from the store) to `out`.
fn replay(store: &Store, stream: &once_exec::CapturedStream, mut out: &mut dyn std::io::Write) {
    let Some(digest) = &stream.digest else {
        return;
    };
    if stream.size == 0 {
        return;
    }
    // A stream short enough to be kept whole in memory was read (and checked against its
    // digest) once already: write it without reading the blob again.
    if stream.tail.len() as u64 == stream.size {
        let _ = out.write_all(&stream.tail);
        return;
    }
    if store.copy_blob_to(digest, &mut out).is_err() {
        // The stream's end is still in memory.
        let _ = out.write_all(&stream.tail);
    }
}

/// A writer that knows whether what went through it ended a line, so [`EndsLines::finish`]
/// can end the last one (the next header or the program's output starts a line).
struct EndsLines<'w> {
    out: &'w mut dyn std::io::Write,
    open_line: bool,
}

impl<'w> EndsLines<'w> {
    fn new(out: &'w mut dyn std::io::Write) -> EndsLines<'w> {
        EndsLines {
            out,
            open_line: false,
        }
    }

    fn finish(self) {
        if self.open_line {
            let _ = self.out.write_all(b"\n");
        }
    }
}

impl std::io::Write for EndsLines<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let written = self.out.write(bytes)?;
        if let Some(last) = bytes[..written].last() {
            self.open_line = *last != b'\n';
        }
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}

fn finish(
    format: Format,
    quiet: bool,
    lowered: &Lowered,
    store: &Store,
    run: &ScriptRun,
) -> anyhow::Result<Outcome> {
    let report = &run.report;
    // Needs that ran in this execution: what they printed goes to stderr, each under a
    // header (stdout stays the requested program's own); a hit shows nothing, `-q` none.
    if !quiet {
        let mut stderr = crate::output::stderr();
        for need in scripts::needs_to_show(&lowered.job, report) {
            let _ = stderr.write_all(scripts::need_header(&lowered.job, need).as_bytes());
            let mut lines = EndsLines::new(&mut stderr);
            replay(store, &need.stdout, &mut lines);
            replay(store, &need.stderr, &mut lines);
            lines.finish();
        }
    }
    // A need that failed: its streams (on stderr: the requested script did not run) and
    // why, and its exit code.
    if let Some(failed) = run.failed_need() {
        let mut stderr = crate::output::stderr();
        replay(store, &failed.stdout, &mut stderr);
        replay(store, &failed.stderr, &mut stderr);
        let _ = writeln!(
            stderr,
            "once: error: the script `{}` that `{}` needs failed: {}",
            failed.id,
            lowered.job.main,
            failed.message.as_deref().unwrap_or("failed")
        );
        return Ok(outcome_of(run.exit_code()));
    }
    let result = run
        .main_result()
        .ok_or_else(|| anyhow!("the execution has no result for `{}`", lowered.job.main))?;
    if result.status == ActionStatus::Cancelled {
        return Ok(outcome_of(run.exit_code()));
    }
    {
        let mut stdout = crate::output::stdout();
        replay(store, &result.stdout, &mut stdout);
        let _ = stdout.flush();
    }
    let mut stderr = crate::output::stderr();
    replay(store, &result.stderr, &mut stderr);
    // Failures before the program ran (a program not found, an output not written):
    // say why.
    if let Some(note) = once_build::scripts::failure_note(result) {
        let _ = writeln!(stderr, "once: error: {note}");
    }
    // What the execution met without failing (a source edited while the script ran: its
    // result not cached; a corrupt blob rebuilt; evidence not recorded), as `once build`
    // shows it.
    drop(stderr);
    crate::build::print_warnings(&run.warnings);
    let mut stderr = crate::output::stderr();
    let cache = result.cache.map_or("none", |c| c.as_str());
    let digest = result.key.map(|k| k.to_hex()).unwrap_or_default();
    let code = run.exit_code();
    // The program's code, unless once failed the action after it succeeded.
    let reported = once_build::scripts::reported_exit_code(result);
    match format {
        Format::Json => {
            let trailer = serde_json::json!({
                "action_digest": digest,
                "cache": cache,
                "exit_code": reported,
            });
            let _ = stderr.write_all(format!("{trailer}\n").as_bytes());
        }
        Format::Human if !quiet => {
            // One write: stderr is unbuffered, and `writeln!` writes each piece.
            let trailer = format!(
                "once: cache {cache} action={digest} exit={}\n",
                reported.map_or_else(|| format!("{code}"), |c| c.to_string())
            );
            let _ = stderr.write_all(trailer.as_bytes());
        }
        Format::Human => {}
    }
    Ok(outcome_of(code))
}

/// One difference between two trials.
struct Difference {
    kind: &'static str,
    path: Option<String>,
    first: String,
    second: String,
}

/// Runs the action twice without the cache (each trial with a fresh temporary store, so
/// nothing is reused) and compares exit codes, streams and outputs.
fn verify_reproducible(
    args: &Args,
    request: &ExecRequest<'_>,
    lowered: &Lowered,
) -> anyhow::Result<Outcome> {
    let _ = request;
    let mut trials = Vec::new();
    for trial in 0..2 {
        let directory = lowered
            .root
            .join(".once")
            .join("verify")
            .join(format!("{}-{trial}", std::process::id()));
        let session = open_session(&lowered.root, Some(&directory), false)?;
        let run = run(&session, lowered);
        drop(session);
        let _ = std::fs::remove_dir_all(&directory);
        let run = run?;
        let result = run
            .main_result()
            .cloned()
            .ok_or_else(|| anyhow!("the execution has no result for `{}`", lowered.job.main))?;
        if result.status == ActionStatus::Skipped || result.status == ActionStatus::Cancelled {
            bail!(
                "`{}` did not run: {}",
                lowered.job.main,
                result.message.as_deref().unwrap_or("skipped")
            );
        }
        trials.push(result);
    }
    let _ = std::fs::remove_dir(lowered.root.join(".once").join("verify"));
    let differences = compare(&trials[0], &trials[1]);
    let reproducible = differences.is_empty();
    if args.format == Format::Json {
        let value = serde_json::json!({
            "reproducible": reproducible,
            "trials": 2,
            "action_digest": trials[1].key.map(|k| k.to_hex()),
            "differences": differences.iter().map(|d| serde_json::json!({
                "kind": d.kind,
                "path": d.path,
                "first": d.first,
                "second": d.second,
            })).collect::<Vec<_>>(),
        });
        crate::query::print_json(&value)?;
    } else if reproducible {
        println!("reproducible: 2 trials, no divergence");
    } else {
        println!(
            "not reproducible: {} difference{} across 2 trials",
            differences.len(),
            if differences.len() == 1 { "" } else { "s" }
        );
        for d in &differences {
            match &d.path {
                Some(path) => println!("  - {} `{path}`: {} then {}", d.kind, d.first, d.second),
                None => println!("  - {}: {} then {}", d.kind, d.first, d.second),
            }
        }
    }
    Ok(if reproducible {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}

fn compare(first: &ActionResult, second: &ActionResult) -> Vec<Difference> {
    let mut differences = Vec::new();
    let code = |r: &ActionResult| match (r.exit_code, r.signal) {
        (_, Some(signal)) => format!("signal {signal}"),
        (Some(code), None) => code.to_string(),
        (None, None) => "none".to_owned(),
    };
    if code(first) != code(second) {
        differences.push(Difference {
            kind: "exit_code",
            path: None,
            first: code(first),
            second: code(second),
        });
    }
    let digest =
        |s: &once_exec::CapturedStream| s.digest.map_or_else(|| "none".to_owned(), |d| d.to_hex());
    for (kind, a, b) in [
        ("stdout", &first.stdout, &second.stdout),
        ("stderr", &first.stderr, &second.stderr),
    ] {
        if digest(a) != digest(b) {
            differences.push(Difference {
                kind,
                path: None,
                first: digest(a),
                second: digest(b),
            });
        }
    }
    let mut paths: Vec<&str> = first
        .outputs
        .iter()
        .chain(&second.outputs)
        .map(|o| o.path.as_str())
        .collect();
    paths.sort_unstable();
    paths.dedup();
    for path in paths {
        let find = |r: &ActionResult| {
            r.outputs
                .iter()
                .find(|o| o.path == path)
                .map_or_else(|| "missing".to_owned(), |o| o.digest.to_hex())
        };
        if find(first) != find(second) {
            differences.push(Difference {
                kind: "output",
                path: Some(path.to_owned()),
                first: find(first),
                second: find(second),
            });
        }
    }
    differences
}
