//! Lowering an annotated script into plain actions for `once exec` (and MCP
//! `once_exec_script`): [`Analysis::script_plan`].
//!
//! The script and every script it `needs`, transitively, each become one `run` action:
//!
//! - `argv`: the shebang's runtime and arguments, the script's path relative to its
//!   working directory, then the arguments given to it (only the requested script gets
//!   any);
//! - `cwd`: the `cwd` directive, else the script's directory;
//! - `env`: the values of the declared `env` names in the caller's environment (an unset
//!   name is left out); on top of the executor's allowlist;
//! - `probes`: each `fingerprint` command as `/bin/sh -c COMMAND` (its exit status and
//!   output join the key at execution);
//! - `inputs`: the script itself, every file its `input` directives name (a directory is
//!   every file below it, a glob every matching file; at most [`MAX_INPUT_FILES`]), and
//!   the outputs of the scripts it needs, so the executor orders them and keys this
//!   script by the *digests* of those outputs (early cutoff);
//! - `outputs`: the `output` directives, workspace paths the executor captures and
//!   restores; `output_symlinks`: the `output-symlinks` directive (a link leading out of
//!   an output is stored as a copy of its target unless it says `preserve`). A literal
//!   command's outputs are materialised the same way.
//!
//! A script without any `once` directive is planned uncacheable (it declares nothing it
//! reads, so its first result would otherwise be reused forever).
//!
//! A needed script without outputs is an ordering edge (`order`), and its static key
//! joins the dependent's, since no output digest can stand for it. The static key covers
//! the declaration and the digest and permission bits of every input file that no action
//! of the plan writes; an input that is a symbolic link once does not follow is refused.
//! Directives in a cycle of `needs` are a `dependency_cycle` diagnostic naming the cycle,
//! located at the `needs` directive that closes it.

use once_model::paths::is_under;
use std::collections::{BTreeMap, BTreeSet};

use once_db::{
    Db as _, DigestError, EntryKind, LineIndex, RootDatabase, Sha256Digest, Workspace, source_file,
};
use once_graph::resolve::SourcePattern;
use once_model::action::{Action, ActionStep, Command, OutputSymlinks};
use once_model::{Diagnostic, DiagnosticCode};

use crate::scripts::{ScriptValidation, validate_script};
use crate::{Analysis, Cancellable, LocatedDiagnostic, PlannedAction};

/// The most files the inputs of one script may expand to.
pub const MAX_INPUT_FILES: usize = 10_000;

/// The capability name of script actions (in evidence and progress).
pub const SCRIPT_CAPABILITY: &str = "exec";

/// What to plan: a script, its arguments and the caller's environment (the values of
/// declared `env` names are read from it).
#[derive(Clone, Debug, Default)]
pub struct ScriptRequest {
    /// Workspace-relative path of the script.
    pub path: String,
    pub args: Vec<String>,
    pub environment: BTreeMap<String, String>,
}

/// The actions that run a script: its needs first, the script's own action last.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptPlan {
    /// The requested script, workspace-relative and normalised.
    pub script: String,
    pub actions: Vec<PlannedAction>,
    /// `(before, after)` action ids for needs without outputs.
    pub order: Vec<(String, String)>,
}

impl ScriptPlan {
    /// The requested script's own action (the last one).
    pub fn script_action(&self) -> Option<&PlannedAction> {
        self.actions.last()
    }
}

/// Why a script cannot be planned.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ScriptPlanError {
    /// The path cannot name a workspace file.
    Path(String),
    /// A script of the closure has an invalid header, or the needs form a cycle.
    Invalid(Vec<LocatedDiagnostic>),
    /// An input cannot be expanded (too many files, an unreadable directory).
    Inputs(String),
}

impl std::fmt::Display for ScriptPlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScriptPlanError::Path(message) | ScriptPlanError::Inputs(message) => {
                f.write_str(message)
            }
            ScriptPlanError::Invalid(diagnostics) => {
                let messages: Vec<String> = diagnostics
                    .iter()
                    .map(|d| {
                        let file = d.diagnostic.file.as_deref().unwrap_or("");
                        match &d.range {
                            Some(range) => format!(
                                "{file}:{}:{}: {}",
                                range.start.line, range.start.column, d.diagnostic.message
                            ),
                            None => format!("{file}: {}", d.diagnostic.message),
                        }
                    })
                    .collect();
                f.write_str(&messages.join("; "))
            }
        }
    }
}

impl Analysis {
    /// The actions that run the script `request.path` through the action cache.
    pub fn script_plan(
        &self,
        request: &ScriptRequest,
    ) -> Cancellable<Result<ScriptPlan, ScriptPlanError>> {
        let request = request.clone();
        self.with_db(move |db, ws| plan_script(db, ws, &request))
    }
}

/// A literal command for `once exec -- CMD`: cached only when it declares inputs or
/// outputs (with neither, nothing says when its result would be stale).
#[derive(Clone, Debug, Default)]
pub struct CommandRequest {
    pub argv: Vec<String>,
    /// Workspace-relative working directory (`""` for the root).
    pub cwd: String,
    /// Workspace-relative files, directories or globs the command reads.
    pub inputs: Vec<String>,
    /// Workspace-relative files or directories it writes.
    pub outputs: Vec<String>,
}

/// The id of a literal command's action.
pub const COMMAND_ACTION: &str = "command";

impl Analysis {
    /// The action of a literal command: cacheable when it declares inputs or outputs,
    /// else a bypass that always runs.
    pub fn command_plan(
        &self,
        request: &CommandRequest,
    ) -> Cancellable<Result<PlannedAction, ScriptPlanError>> {
        let request = request.clone();
        self.with_db(move |db, ws| plan_command(db, ws, &request))
    }
}

fn plan_command(
    db: &RootDatabase,
    workspace: Workspace,
    request: &CommandRequest,
) -> Result<PlannedAction, ScriptPlanError> {
    let mut inputs = BTreeSet::new();
    for declared in &request.inputs {
        inputs.extend(expand_input(db, workspace, "the command", declared)?);
    }
    if inputs.len() > MAX_INPUT_FILES {
        return Err(ScriptPlanError::Inputs(format!(
            "the command's inputs expand to {} files, more than the limit of {MAX_INPUT_FILES}",
            inputs.len()
        )));
    }
    let hashed = hash_inputs(db, "the command", &inputs)?;
    let mut command = Command::new(request.argv.clone());
    command.cwd = request.cwd.clone();
    // Like a script's outputs: a link leading out of an output is stored as a copy.
    command.output_symlinks = OutputSymlinks::MaterializeExternal;
    let action = Action {
        id: COMMAND_ACTION.to_owned(),
        target: COMMAND_ACTION.to_owned(),
        capability: SCRIPT_CAPABILITY.to_owned(),
        step: ActionStep::Run(command),
        inputs: inputs.into_iter().collect(),
        outputs: request.outputs.clone(),
        cacheable: !request.inputs.is_empty() || !request.outputs.is_empty(),
    };
    let static_key = static_key(&action, &hashed, &[]);
    Ok(PlannedAction { action, static_key })
}

/// What the key holds of each input file of `whose` inputs: its digest and permission
/// bits, or why it has none. A symbolic link once does not follow (out of the workspace,
/// to nothing, …: `once_db::links`) is refused by name, as a target's source would be.
fn hash_inputs(
    db: &RootDatabase,
    whose: &str,
    inputs: &BTreeSet<String>,
) -> Result<Vec<(String, String)>, ScriptPlanError> {
    inputs
        .iter()
        .map(|input| {
            let key = match source_file(db, db.file_for_path(input)) {
                Ok(source) => format!("{} {:o}", source.digest.to_hex(), source.permissions),
                Err(DigestError::Link(target)) => {
                    let why = target.refusal().unwrap_or_default();
                    return Err(ScriptPlanError::Inputs(format!(
                        "the input `{input}` of {whose} is a symbolic link {why}; once follows \
                         links to files of the workspace only"
                    )));
                }
                Err(error) => format!("missing: {error}"),
            };
            Ok((input.clone(), key))
        })
        .collect()
}

fn plan_script(
    db: &RootDatabase,
    workspace: Workspace,
    request: &ScriptRequest,
) -> Result<ScriptPlan, ScriptPlanError> {
    let scripts = closure(db, workspace, &request.path)?;
    let root_script = scripts.last().map(|s| s.path.clone()).unwrap_or_default();
    // Every path an action of the plan writes: inputs below them are not hashed (their
    // digests join at execution).
    let produced: Vec<(&str, &str)> = scripts
        .iter()
        .flat_map(|s| {
            s.contract
                .outputs
                .iter()
                .map(|output| (s.contract.path.as_str(), output.as_str()))
        })
        .collect();
    let mut keys: BTreeMap<String, Sha256Digest> = BTreeMap::new();
    let mut actions = Vec::new();
    let mut order = Vec::new();
    for script in &scripts {
        let contract = &script.contract;
        let args: &[String] = if script.path == root_script {
            &request.args
        } else {
            &[]
        };
        // The workspace root is `""` (the contract may say `.`).
        let cwd = contract
            .cwd
            .clone()
            .map(|cwd| if cwd == "." { String::new() } else { cwd })
            .unwrap_or_else(|| parent(&contract.path).to_owned());
        let mut argv = vec![contract.runtime.clone()];
        argv.extend(contract.runtime_args.iter().cloned());
        argv.push(relative_to(&cwd, &contract.path));
        argv.extend(args.iter().cloned());
        let env: BTreeMap<String, String> = contract
            .env
            .iter()
            .filter_map(|name| {
                request
                    .environment
                    .get(name)
                    .map(|value| (name.clone(), value.clone()))
            })
            .collect();
        let mut command = Command::new(argv);
        command.env = env;
        command.cwd = cwd;
        command.output_symlinks = contract.output_symlinks;
        command.probes = contract
            .fingerprints
            .iter()
            .map(|c| vec!["/bin/sh".to_owned(), "-c".to_owned(), c.clone()])
            .collect();
        let mut inputs = BTreeSet::new();
        let mut produced_inputs = BTreeSet::new();
        inputs.insert(contract.path.clone());
        for declared in &contract.inputs {
            for file in expand_input(db, workspace, &contract.path, declared)? {
                // A file another script of the plan writes: that output is the input
                // (ordered after it, keyed by its digest at execution).
                match produced
                    .iter()
                    .find(|(writer, output)| *writer != contract.path && is_under(&file, output))
                {
                    Some((_, output)) => {
                        produced_inputs.insert((*output).to_owned());
                    }
                    None => {
                        inputs.insert(file);
                    }
                }
            }
        }
        if inputs.len() > MAX_INPUT_FILES {
            return Err(ScriptPlanError::Inputs(format!(
                "the inputs of `{}` expand to {} files, more than the limit of {MAX_INPUT_FILES}; narrow the `input` directives",
                contract.path,
                inputs.len()
            )));
        }
        let hashed = hash_inputs(db, &format!("`{}`", contract.path), &inputs)?;
        inputs.extend(produced_inputs);
        let mut after_keys = Vec::new();
        for need in &contract.needs {
            let Some(needed) = scripts.iter().find(|s| s.path == *need) else {
                continue;
            };
            if needed.contract.outputs.is_empty() {
                order.push((need.clone(), contract.path.clone()));
                if let Some(key) = keys.get(need) {
                    after_keys.push((need.clone(), *key));
                }
            } else {
                inputs.extend(needed.contract.outputs.iter().cloned());
            }
        }
        let action = Action {
            id: contract.path.clone(),
            target: contract.path.clone(),
            capability: SCRIPT_CAPABILITY.to_owned(),
            step: ActionStep::Run(command),
            inputs: inputs.into_iter().collect(),
            outputs: contract.outputs.clone(),
            // A file without any directive declares nothing it reads: caching it would
            // make its first result permanent, so it always runs (a bypass).
            cacheable: script.has_directives,
        };
        let static_key = static_key(&action, &hashed, &after_keys);
        keys.insert(contract.path.clone(), static_key);
        actions.push(PlannedAction { action, static_key });
    }
    Ok(ScriptPlan {
        script: root_script,
        actions,
        order,
    })
}

/// The scripts of the closure of `path`'s needs, dependencies before dependents (the
/// requested script last).
fn closure(
    db: &RootDatabase,
    workspace: Workspace,
    path: &str,
) -> Result<Vec<ScriptValidation>, ScriptPlanError> {
    let root = validate_script(db, workspace, path).map_err(ScriptPlanError::Path)?;
    let mut done: Vec<ScriptValidation> = Vec::new();
    // Depth-first: (script, index of the next need to visit).
    let mut stack: Vec<(ScriptValidation, usize)> = vec![(root, 0)];
    while let Some((script, next)) = stack.pop() {
        if !script.valid {
            return Err(ScriptPlanError::Invalid(script.diagnostics));
        }
        let Some(need) = script.contract.needs.get(next).cloned() else {
            done.push(script);
            continue;
        };
        stack.push((script, next + 1));
        if done.iter().any(|s| s.contract.path == need) {
            continue;
        }
        if let Some(position) = stack.iter().position(|(s, _)| s.contract.path == need) {
            let mut cycle: Vec<&str> = stack[position..]
                .iter()
                .map(|(s, _)| s.contract.path.as_str())
                .collect();
            cycle.push(&need);
            let message = format!("script dependency cycle: {}", cycle.join(" -> "));
            let (closing, _) = &stack[stack.len() - 1];
            return Err(ScriptPlanError::Invalid(vec![cycle_diagnostic(
                db, closing, &need, message,
            )]));
        }
        let needed = validate_script(db, workspace, &need).map_err(ScriptPlanError::Path)?;
        stack.push((needed, 0));
    }
    Ok(done)
}

/// The `dependency_cycle` diagnostic, at the `needs` directive of `script` naming `need`.
fn cycle_diagnostic(
    db: &RootDatabase,
    script: &ScriptValidation,
    need: &str,
    message: String,
) -> LocatedDiagnostic {
    let path = &script.contract.path;
    let mut diagnostic = Diagnostic::new(DiagnosticCode::DependencyCycle, message)
        .with_target(path.clone())
        .with_attribute("needs")
        .with_repair("Remove one `needs` directive of the cycle");
    let directory = parent(path);
    let directive = script.directives.iter().find(|d| {
        d.keyword == "needs"
            && d.value.as_deref().is_some_and(|value| {
                once_model::paths::lexical_join(directory, value).as_deref() == Some(need)
            })
    });
    match directive.and_then(|d| d.value_range.or(Some(d.keyword_range))) {
        Some(range) => {
            diagnostic = diagnostic.at(path.clone(), range);
            let file = db.file_for_path(path);
            let index: &LineIndex = once_db::line_index(db, file);
            LocatedDiagnostic::new(diagnostic, Some(index))
        }
        None => LocatedDiagnostic::unlocated(diagnostic.in_file(path.clone())),
    }
}

/// The workspace files the `input` directive `declared` (workspace-relative) of `script`
/// names: itself, every file below it, or every file matching it.
fn expand_input(
    db: &RootDatabase,
    workspace: Workspace,
    script: &str,
    declared: &str,
) -> Result<Vec<String>, ScriptPlanError> {
    let root = workspace.root(db).clone();
    let system = db.system();
    let too_many = |count: usize| {
        ScriptPlanError::Inputs(format!(
            "the input `{declared}` of `{script}` matched {count} files, more than the limit of {MAX_INPUT_FILES}; narrow the pattern"
        ))
    };
    let under = |directory: &str| -> Result<Vec<String>, ScriptPlanError> {
        let absolute = if directory.is_empty() {
            root.clone()
        } else {
            root.join(directory)
        };
        let files = system.walk(&absolute).map_err(|e| {
            ScriptPlanError::Inputs(format!(
                "cannot list the input directory `{directory}` of `{script}`: {e}"
            ))
        })?;
        Ok(files
            .into_iter()
            .map(|file| {
                if directory.is_empty() {
                    file
                } else {
                    format!("{directory}/{file}")
                }
            })
            .filter(|file| !is_under(file, ".once"))
            .collect())
    };
    if declared.contains(['*', '?', '[', '{']) {
        let pattern = SourcePattern::new(declared).map_err(|e| {
            ScriptPlanError::Inputs(format!(
                "the input pattern `{declared}` of `{script}` is invalid: {e}"
            ))
        })?;
        let literal: Vec<&str> = declared
            .split('/')
            .take_while(|part| !part.contains(['*', '?', '[', '{']))
            .collect();
        let base = literal.join("/");
        if !base.is_empty()
            && !matches!(
                system.entry_kind(&root.join(&base)),
                Ok(Some(EntryKind::Directory))
            )
        {
            return Ok(Vec::new());
        }
        let matched: Vec<String> = under(&base)?
            .into_iter()
            .filter(|file| pattern.matches(file))
            .collect();
        if matched.len() > MAX_INPUT_FILES {
            return Err(too_many(matched.len()));
        }
        return Ok(matched);
    }
    match system.entry_kind(&root.join(declared)) {
        Ok(Some(EntryKind::Directory)) => {
            let files = under(declared)?;
            if files.len() > MAX_INPUT_FILES {
                return Err(too_many(files.len()));
            }
            Ok(files)
        }
        // A file, a link, or nothing (keyed as missing, so creating it re-runs the script).
        _ => Ok(vec![declared.to_owned()]),
    }
}

/// The static key of a script action: its declaration, the digest of each input file
/// (`hashed`) and the static keys of the needs without outputs it waits for.
fn static_key(
    action: &Action,
    hashed: &[(String, String)],
    after: &[(String, Sha256Digest)],
) -> Sha256Digest {
    let mut encoded = Vec::new();
    let mut field = |name: &str, value: &str| {
        for part in [name.as_bytes(), value.as_bytes()] {
            encoded.extend_from_slice(&(part.len() as u64).to_le_bytes());
            encoded.extend_from_slice(part);
        }
    };
    field("format", "once.script-action.v2");
    if let ActionStep::Run(command) = &action.step {
        for arg in &command.argv {
            field("argv", arg);
        }
        for (name, value) in &command.env {
            field("env.name", name);
            field("env.value", value);
        }
        field("cwd", &command.cwd);
        for probe in &command.probes {
            field("fingerprint", &probe.join("\0"));
        }
        field("output-symlinks", command.output_symlinks.as_str());
    }
    for (path, digest) in hashed {
        field("input", path);
        field("input.digest", digest);
    }
    for input in &action.inputs {
        field("input.declared", input);
    }
    for output in &action.outputs {
        field("output", output);
    }
    for (need, key) in after {
        field("after", need);
        field("after.key", &key.to_hex());
    }
    Sha256Digest::of(&encoded)
}

fn parent(path: &str) -> &str {
    path.rsplit_once('/').map_or("", |(directory, _)| directory)
}

/// The path of the workspace path `to` seen from the workspace directory `from`.
fn relative_to(from: &str, to: &str) -> String {
    let from: Vec<&str> = from
        .split('/')
        .filter(|p| !p.is_empty() && *p != ".")
        .collect();
    let to_parts: Vec<&str> = to.split('/').filter(|p| !p.is_empty()).collect();
    let common = from
        .iter()
        .zip(&to_parts)
        .take_while(|(a, b)| a == b)
        .count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to_parts[common..]);
    let joined = parts.join("/");
    if joined.starts_with("..") {
        joined
    } else {
        format!("./{joined}")
    }
}

#[cfg(test)]
mod tests {
    use super::relative_to;

    #[test]
    fn script_paths_are_relative_to_the_working_directory() {
        assert_eq!(relative_to("", "build.sh"), "./build.sh");
        assert_eq!(relative_to("scripts", "scripts/build.sh"), "./build.sh");
        assert_eq!(relative_to("a/b", "a/c/s.sh"), "../c/s.sh");
        assert_eq!(relative_to("a", "s.sh"), "../s.sh");
    }
}
