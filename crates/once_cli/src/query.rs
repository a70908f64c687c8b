//! `once query …`: load the workspace, ask the analysis, print the answer.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, anyhow, bail};
use once_analysis::{Analysis, AnalysisHost, Cancellable, OsSystem, find_workspace_root};
use serde::Serialize;

use crate::Outcome;
use crate::args::{Args, Format, Query};
use crate::human;

/// The workspace root: `-C DIR` (or `--directory`/`--workspace`, named as typed in
/// errors), else `ONCE_WORKSPACE`, else the nearest ancestor of the
/// current directory whose `once.toml` has `[workspace]`, else the current directory.
pub fn workspace_root(args: &Args) -> anyhow::Result<PathBuf> {
    // The workspace server's client found the root (the server's) by this very rule.
    if let Some(root) = crate::context::server_root() {
        return Ok(root);
    }
    let explicit = match &args.directory {
        Some(dir) => Some((
            dir.clone(),
            crate::args::directory_flag(std::env::args_os().skip(1)),
        )),
        None => crate::context::var_os("ONCE_WORKSPACE")
            .filter(|v| !v.is_empty())
            .map(|v| (PathBuf::from(v), "ONCE_WORKSPACE")),
    };
    match explicit {
        Some((dir, source)) => {
            let root = dir.canonicalize().with_context(|| {
                format!(
                    "workspace directory `{}` (from {source}) cannot be opened",
                    dir.display()
                )
            })?;
            if !root.is_dir() {
                bail!(
                    "workspace directory `{}` (from {source}) is not a directory",
                    dir.display()
                );
            }
            Ok(root)
        }
        None => {
            let cwd = std::env::current_dir().context("cannot determine the current directory")?;
            Ok(find_workspace_root(&OsSystem, &cwd))
        }
    }
}

fn load(args: &Args) -> anyhow::Result<Analysis> {
    let root = workspace_root(args)?;
    let host = AnalysisHost::load(Arc::new(OsSystem), root);
    Ok(host.analysis())
}

fn answer<T>(value: Cancellable<T>) -> anyhow::Result<T> {
    value.map_err(|_| anyhow!("the query was cancelled"))
}

/// Prints one compact JSON line, encoded straight into a buffered stdout (a listing of
/// every target's inputs is megabytes; building it in memory first only costs time).
/// A reader that closed the pipe early (`once … | head`) is not an error.
pub(crate) fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let mut stdout = std::io::BufWriter::with_capacity(1 << 16, crate::output::stdout());
    let written = match serde_json::to_writer(&mut stdout, value) {
        // Not a write that failed but a value JSON cannot express (no answer has one).
        Err(err) if !err.is_io() => return Err(err).context("cannot encode the JSON answer"),
        Err(err) => Err(std::io::Error::from(err)),
        Ok(()) => stdout.write_all(b"\n").and_then(|()| stdout.flush()),
    };
    stdout_written(written)
}

/// Prints an answer already encoded as one compact JSON line (without its newline), as
/// [`print_json`] does.
pub(crate) fn print_json_bytes(answer: &[u8]) -> anyhow::Result<()> {
    let mut stdout = crate::output::stdout();
    let written = stdout
        .write_all(answer)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    stdout_written(written)
}

/// A write to stdout's outcome: a reader that closed the pipe early is not an error (it
/// was recorded, [`crate::output`]).
fn stdout_written(written: std::io::Result<()>) -> anyhow::Result<()> {
    match written {
        Err(err) if err.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(err).context("cannot write to stdout")
        }
        _ => Ok(()),
    }
}

pub fn run(args: &Args, query: &Query) -> anyhow::Result<Outcome> {
    if let Query::ExternalSource { url, max_bytes } = query {
        return external_source(args, url, *max_bytes);
    }
    if let Query::Evidence { subject, limit } = query {
        return evidence(args, subject.as_deref(), *limit);
    }
    if let Query::ValidateWorkspace { fix: true } = query {
        return fix_workspace(args);
    }
    if let Some(outcome) =
        crate::context::with_warm_analysis(|analysis| answer_query(args, query, analysis))
    {
        return outcome;
    }
    let analysis = load(args)?;
    // Only a head start: the query below computes whatever priming did not, and is the
    // one whose failure (a bug in a worker shows up as a cancellation) is reported.
    match primed(query) {
        Priming::Checks => {
            let _ = analysis.prime(analysis_threads()?);
        }
        Priming::Targets => {
            let _ = analysis.prime_targets(analysis_threads()?);
        }
        Priming::None => {}
    }
    let outcome = answer_query(args, query, &analysis);
    // The process ends right after: freeing every memo one by one would only cost time
    // (tens of milliseconds on a large workspace).
    once_build::plan_cache::leave_to_exit(analysis);
    outcome
}

/// `validate-workspace --fix`: writes the preferred fixes, then validates the result.
fn fix_workspace(args: &Args) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let mut host = AnalysisHost::load(Arc::new(OsSystem), root);
    let fixed = host.apply_preferred_fixes().map_err(|e| anyhow!(e))?;
    let validation = answer(host.analysis().validate_workspace())?;
    if args.format == Format::Json {
        print_json(&once_json::fixed_validation(&fixed, &validation))?
    } else {
        human::fixed(&fixed);
        human::validation(&validation)
    }
    Ok(if validation.valid {
        Outcome::Success
    } else {
        Outcome::Invalid
    })
}

/// The threads that compute packages side by side: `ONCE_THREADS` when set, else one per
/// core (at most eight).
pub(crate) fn analysis_threads() -> anyhow::Result<usize> {
    match crate::context::var("ONCE_THREADS") {
        Some(value) if !value.trim().is_empty() => match value.trim().parse::<usize>() {
            Ok(threads) if threads > 0 => Ok(threads),
            _ => bail!("ONCE_THREADS must be a positive number of threads, not `{value}`"),
        },
        _ => Ok(once_analysis::default_prime_threads()),
    }
}

/// What of every package a query reads, so computing it on every core first pays off (a
/// lookup of one target or kind reads only what it names).
enum Priming {
    /// Diagnostics and graph nodes (a validation, the dependency graph).
    Checks,
    /// Only the resolved targets (a listing).
    Targets,
    None,
}

fn primed(query: &Query) -> Priming {
    match query {
        Query::Workspace | Query::ValidateWorkspace { .. } | Query::AffectedTests { .. } => {
            Priming::Checks
        }
        Query::Targets { .. } | Query::Tests | Query::TestResults { .. } => Priming::Targets,
        Query::Inputs { ids } if ids.is_empty() => Priming::Targets,
        _ => Priming::None,
    }
}

fn answer_query(args: &Args, query: &Query, analysis: &Analysis) -> anyhow::Result<Outcome> {
    let json = args.format == Format::Json;
    match query {
        Query::Workspace => {
            let info = answer(analysis.workspace_info())?;
            if json {
                print_json(&once_json::workspace(&info))?
            } else {
                human::workspace(&info)
            }
        }
        Query::Targets { kind } => {
            if let Some(kind) = kind {
                find_kind(analysis, kind)?;
            }
            let targets = answer(analysis.targets(kind.as_deref()))?;
            if json {
                print_json(
                    &targets
                        .iter()
                        .map(once_json::target_summary)
                        .collect::<Vec<_>>(),
                )?
            } else {
                human::targets(&targets)
            }
        }
        Query::Target { id } => {
            let target = find_target(analysis, id)?;
            if json {
                let mut dto = once_json::graph_target(&target);
                dto.input_digest = answer(analysis.target_inputs(id))?.map(|i| i.input_digest);
                // The index only saves work; failing to write it changes no answer.
                let _ = analysis.save_digest_index();
                print_json(&dto)?
            } else {
                human::target(&target)
            }
        }
        Query::Inputs { ids } => {
            let answers: Vec<(String, once_analysis::TargetInputs)> = if ids.is_empty() {
                answer(analysis.every_target_inputs(analysis_threads()?))?
            } else {
                let mut answers = Vec::with_capacity(ids.len());
                for id in ids {
                    let Some(inputs) = answer(analysis.target_inputs(id))? else {
                        // The lookup's error names the target and suggests near misses.
                        find_target(analysis, id)?;
                        bail!("no target `{id}`");
                    };
                    answers.push((id.clone(), inputs));
                }
                answers
            };
            // The index only saves work; failing to write it changes no answer.
            let _ = analysis.save_digest_index();
            if json {
                print_json(
                    &answers
                        .iter()
                        .map(|(id, inputs)| once_json::target_inputs(id, inputs))
                        .collect::<Vec<_>>(),
                )?
            } else {
                human::target_inputs(&answers)
            }
        }
        Query::Actions { id, capability } => {
            let Some(plan) = answer(analysis.action_plan(id, capability))? else {
                // The lookup's error names the target and suggests near misses.
                find_target(analysis, id)?;
                bail!("no target `{id}`");
            };
            // The index only saves work; failing to write it changes no answer.
            let _ = analysis.save_digest_index();
            if json {
                print_json(&once_json::action_plan(&plan))?
            } else {
                human::action_plan(&plan)
            }
        }
        Query::Capabilities { id } => {
            let target = find_target(analysis, id)?;
            if json {
                print_json(&once_json::capabilities(&target))?
            } else {
                human::capabilities(&target)
            }
        }
        Query::Schema { kind } => {
            let schema = find_kind(analysis, kind)?;
            if json {
                print_json(&once_json::kind_schema(&schema))?
            } else {
                human::schema(&schema)
            }
        }
        Query::Example { kind, slug } => {
            let example = found(answer(analysis.lookup_example(kind, slug))?)?;
            if json {
                print_json(&once_json::example(&example))?
            } else {
                human::example(&example)
            }
        }
        Query::TargetKinds { query } => {
            let kinds = match query {
                Some(query) => answer(analysis.search_kinds(query))?,
                None => answer(analysis.kinds())?,
            };
            if json {
                print_json(
                    &kinds
                        .iter()
                        .map(once_json::kind_list_entry)
                        .collect::<Vec<_>>(),
                )?
            } else {
                human::kinds(&kinds)
            }
        }
        Query::ValidateWorkspace { .. } => {
            let validation = answer(analysis.validate_workspace())?;
            if json {
                print_json(&once_json::validation(&validation))?
            } else {
                human::validation(&validation)
            }
            if !validation.valid {
                return Ok(Outcome::Invalid);
            }
        }
        Query::ValidateTarget { file } => {
            let value = read_json_input(file.as_deref(), "the target")?;
            let target = match value.get("target") {
                Some(inner) if inner.is_object() && value.get("name").is_none() => inner,
                _ => &value,
            };
            let proposed = once_json::json_to_attr_value(target)
                .map_err(|e| anyhow!("the target cannot be read: {e}"))?;
            let validation = answer(analysis.validate_target(&proposed))?;
            if json {
                print_json(&once_json::target_validation(&validation))?
            } else {
                human::target_validation(&validation)
            }
            if !validation.valid {
                return Ok(Outcome::Invalid);
            }
        }
        Query::ModuleContract => {
            let contract = analysis.module_contract();
            if json {
                print_json(&once_json::module_contract(&contract))?
            } else {
                human::module_contract(&contract)
            }
        }
        Query::ValidateModule { path } => {
            let validation = answer(analysis.validate_module(path))?.map_err(|e| anyhow!(e))?;
            if json {
                print_json(&once_json::module_validation(&validation))?
            } else {
                human::module_validation(&validation)
            }
            if !validation.valid {
                return Ok(Outcome::Invalid);
            }
        }
        Query::Script { path } => {
            let validation = answer(analysis.script(path))?.map_err(|e| anyhow!(e))?;
            if json {
                print_json(&once_json::script_validation(&validation))?
            } else {
                human::script_validation(&validation)
            }
            if !validation.valid {
                return Ok(Outcome::Invalid);
            }
        }
        // Runs actions: dispatched to `build::validate_actions` before a query's analysis.
        Query::ValidateActions { .. } => bail!("`validate-actions` runs through the session"),
        Query::Tests => {
            let tests = answer(analysis.tests())?;
            if json {
                print_json(&tests.iter().map(once_json::test_target).collect::<Vec<_>>())?
            } else {
                human::tests(&tests)
            }
        }
        Query::ExternalSource { url, max_bytes } => return external_source(args, url, *max_bytes),
        Query::Evidence { subject, limit } => return evidence(args, subject.as_deref(), *limit),
        Query::TestResults {
            target,
            summary_only,
        } => {
            let root = workspace_root(args)?;
            let results = answer(once_build::test_results::read(
                analysis,
                &root,
                target,
                listing_hint,
            ))?
            .map_err(|error| anyhow!(error.to_string()))?;
            match (json, *summary_only) {
                (true, true) => print_json(&results.summary_only())?,
                (true, false) => print_json(&results)?,
                (false, _) => human::test_results(&results, *summary_only),
            }
        }
        Query::AffectedTests {
            paths,
            changed_paths,
        } => {
            let mut all = paths.clone();
            all.extend(changed_paths.iter().cloned());
            let affected = answer(analysis.affected_tests(&all))?;
            if json {
                print_json(&once_json::affected_tests(&affected))?
            } else {
                human::affected_tests(&affected)
            }
        }
    }
    Ok(Outcome::Success)
}

fn find_target(analysis: &Analysis, id: &str) -> anyhow::Result<once_analysis::TargetDetails> {
    found(answer(analysis.lookup_target(id))?)
}

fn find_kind(analysis: &Analysis, kind: &str) -> anyhow::Result<once_model::KindSchema> {
    found(answer(analysis.lookup_kind(kind))?)
}

/// A lookup's answer, or its error with the command that lists the candidates.
fn found<T>(lookup: Result<T, once_analysis::NotFound>) -> anyhow::Result<T> {
    lookup.map_err(|not_found| anyhow::anyhow!(not_found.with_hint(listing_hint)))
}

/// The command that lists the candidates of a failed lookup.
pub(crate) fn listing_hint(listing: once_analysis::Listing) -> &'static str {
    match listing {
        once_analysis::Listing::Targets => "`once query targets` lists them",
        once_analysis::Listing::TargetKinds => "`once query target-kinds` lists them",
    }
}

/// `once query evidence`: reads `.once/once.sqlite` (no database yet: no records); needs
/// no analysis.
fn evidence(args: &Args, subject: Option<&str>, limit: u64) -> anyhow::Result<Outcome> {
    let root = workspace_root(args)?;
    let limit = usize::try_from(limit).unwrap_or(usize::MAX);
    let records = once_evidence::query_workspace(&root, subject, limit)?;
    if args.format == Format::Json {
        print_json(
            &records
                .iter()
                .map(once_json::evidence_record)
                .collect::<Vec<_>>(),
        )?
    } else {
        human::evidence(&records, subject)
    }
    Ok(Outcome::Success)
}

/// `once query external-source`: needs no workspace. Always the strict policy.
fn external_source(args: &Args, url: &str, max_bytes: usize) -> anyhow::Result<Outcome> {
    let fetched =
        once_fetch::fetch_external_source(url, max_bytes, &once_fetch::FetchPolicy::strict())
            .map_err(|e| anyhow!(e.message()))
            .with_context(|| format!("cannot fetch external source `{url}`"))?;
    if args.format == Format::Json {
        print_json(&once_json::external_source(&fetched))?
    } else {
        human::external_source(&fetched)
    }
    Ok(Outcome::Success)
}

/// The most JSON a command reads from `--file` or stdin: the MCP server's line limit.
pub(crate) const MAX_JSON_INPUT_BYTES: usize = once_mcp::MAX_LINE_BYTES;

/// Reads a JSON document from `file`, or from stdin when there is none; `what` names it
/// in errors ("the target", "the edit"). `file` must be a regular file (a device or a
/// FIFO could block or never end; pipe such input to stdin instead), and neither may hold
/// more than [`MAX_JSON_INPUT_BYTES`].
pub(crate) fn read_json_input(
    file: Option<&std::path::Path>,
    what: &str,
) -> anyhow::Result<serde_json::Value> {
    let bytes = match file {
        Some(path) => {
            let metadata = std::fs::metadata(path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            if !metadata.is_file() {
                bail!(
                    "cannot read `{}`: not a regular file (give {what} on stdin instead)",
                    path.display()
                );
            }
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read `{}`", path.display()))?;
            read_bounded(file, what).with_context(|| format!("cannot read `{}`", path.display()))?
        }
        None => read_bounded(std::io::stdin().lock(), what)
            .with_context(|| format!("cannot read {what} from stdin"))?,
    };
    let text = String::from_utf8(bytes).map_err(|_| anyhow!("{what} is not UTF-8"))?;
    serde_json::from_str(&text).with_context(|| format!("{what} is not valid JSON"))
}

/// Reads at most [`MAX_JSON_INPUT_BYTES`], failing when there is more.
fn read_bounded(reader: impl Read, what: &str) -> anyhow::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    reader
        .take(MAX_JSON_INPUT_BYTES as u64 + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() > MAX_JSON_INPUT_BYTES {
        bail!(
            "{what} is larger than the {} MiB limit",
            MAX_JSON_INPUT_BYTES / (1024 * 1024)
        );
    }
    Ok(bytes)
}
