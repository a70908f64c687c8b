//! Planning: the actions a target's capability declares, and their static keys.
//!
//! [`target_actions`] builds the implementation context of one target (attributes after
//! `select` with defaults, `srcs` expanded, the build directory, the build outputs of its
//! direct dependencies, the kind's tools), calls the kind's Starlark implementation and
//! returns plain [`TargetActions`]. It reads the package's resolved targets and file list
//! and its dependencies' plans, never file contents, so editing a source file re-plans
//! nothing; [`action_static_keys`] reads the digests and permission bits of the source
//! files the actions name, so the same edit (or `chmod`) re-keys only the actions that
//! read that file.
//!
//! A one-shot front end lends the database a [`once_db::PlanMemo`]: [`target_actions`]
//! then answers from it when an earlier process planned the same request with the same
//! implementation ([`crate::plan_memo`]), and records what it plans.
//!
//! **Architecture Invariant:** an implementation error is a diagnostic in the plan, never
//! a failed query; a dependency cycle plans the targets on it without their dependencies'
//! outputs (the cycle itself is reported by `dependency_cycles`).

use once_db::{
    Db, DigestError, FileStamp, LineIndex, Package, Sha256Digest, Workspace, source_file,
    source_text,
};
use once_model::action::{ActionStep, OUT_DIR, TargetActions, build_dir};
use once_model::codec::{ValueWriter, decode_target_actions, encode_target_actions};
use once_model::{
    AttrValue, Diagnostic, DiagnosticCode, KindOrigin, LineCol, TargetLabel, TextRange,
};
use once_starlark::{ModuleDiagnostic, PlanDep, PlanOutcome, PlanRequest};

use crate::kinds::{DbModules, kind_catalog, module_limits};
use crate::plan_memo::{MemoOrigin, plan_memo_key, workspace_modules_digest};
use crate::resolve::{ResolvedTarget, SourceSelection, resolved_targets, target_summaries};
use crate::settings::{package_by_path, workspace_packages, workspace_settings};
use crate::validate::planning_errors;

/// One capability of one target, as a query key.
#[salsa::interned(debug)]
pub struct PlanKey<'db> {
    #[returns(ref)]
    pub target: String,
    #[returns(ref)]
    pub capability: String,
}

/// What a capability of a target plans.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct TargetPlan {
    pub actions: TargetActions,
    /// Whether the target's kind implements the capability (`false` for an unknown
    /// target or kind, or a capability without an implementation: nothing to run).
    pub implemented: bool,
    /// Why the capability is not planned (the actions are then empty): the target's
    /// errors as validation reports them, or its implementation's failure.
    pub diagnostics: Vec<Diagnostic>,
}

/// The plan of `capability` of the target `id`.
pub fn target_actions<'db>(
    db: &'db dyn Db,
    workspace: Workspace,
    id: &str,
    capability: &str,
) -> &'db TargetPlan {
    plan_of(
        db,
        workspace,
        PlanKey::new(db, id.to_owned(), capability.to_owned()),
    )
}

/// The static key of each action of [`target_actions`], in the same order (the
/// `static_key` of `once_exec`'s planned actions).
pub fn action_static_keys<'db>(
    db: &'db dyn Db,
    workspace: Workspace,
    id: &str,
    capability: &str,
) -> &'db [Sha256Digest] {
    static_keys_of(
        db,
        workspace,
        PlanKey::new(db, id.to_owned(), capability.to_owned()),
    )
}

/// The plan of every target on a dependency cycle: nothing, and why.
fn plan_cycle<'db>(
    db: &'db dyn Db,
    _id: salsa::Id,
    workspace: Workspace,
    key: PlanKey<'db>,
) -> TargetPlan {
    let id = key.target(db);
    let mut diagnostic = Diagnostic::new(
        DiagnosticCode::DependencyCycle,
        format!(
            "`{}` of `{id}` is not planned: the target is on a dependency cycle, so the \
             outputs of its dependencies are undefined",
            key.capability(db)
        ),
    )
    .with_repair("Break the cycle `once query validate-workspace` reports".to_owned());
    // At the target's declaration, so the problem a refused build reports is one a
    // client can navigate to (the cycle's own diagnostic points at one of its edges).
    if let Some((package, target)) = find(db, workspace, id) {
        let manifest = crate::manifest(db, package);
        if let Some(declaration) = manifest.targets.get(target.declaration) {
            diagnostic = diagnostic.at(manifest.file.clone(), declaration.anchor());
        }
    }
    diagnostic.target = Some(id.clone());
    TargetPlan {
        diagnostics: vec![diagnostic],
        ..TargetPlan::default()
    }
}

/// Finds a target by id: its package and resolved declaration.
fn find<'db>(
    db: &'db dyn Db,
    workspace: Workspace,
    id: &str,
) -> Option<(Package, &'db ResolvedTarget)> {
    let label = TargetLabel::from_id(id);
    let package = package_by_path(db, workspace).get(&label.package)?;
    let target = resolved_targets(db, package)
        .targets
        .iter()
        .find(|t| t.label.name == label.name)?;
    Some((package, target))
}

#[salsa::tracked(returns(ref), cycle_result = plan_cycle)]
fn plan_of<'db>(db: &'db dyn Db, workspace: Workspace, key: PlanKey<'db>) -> TargetPlan {
    let id = key.target(db);
    let capability = key.capability(db);
    let Some((package, target)) = find(db, workspace, id) else {
        return TargetPlan::default();
    };
    let errors = planning_errors(db, package);
    if !errors.is_empty() {
        return TargetPlan {
            actions: TargetActions::default(),
            implemented: true,
            diagnostics: errors.to_vec(),
        };
    }
    let catalog = kind_catalog(db, workspace);
    let Some(kind) = catalog.get(&target.kind) else {
        return TargetPlan::default();
    };
    if kind.capability(capability).is_none() {
        return TargetPlan::default();
    }
    let interpreter_errors =
        crate::interpreters::target_interpreter_errors(db, workspace, package, target);
    if !interpreter_errors.is_empty() {
        return TargetPlan {
            actions: TargetActions::default(),
            implemented: true,
            diagnostics: interpreter_errors,
        };
    }
    let package_path = package.path(db);
    let attrs = kind
        .attrs
        .iter()
        .filter_map(|spec| {
            let set = target
                .attrs
                .iter()
                .find(|(name, _)| *name == spec.name)
                .map(|(_, value)| value.clone());
            set.or_else(|| spec.default.clone())
                .map(|value| (spec.name.clone(), value))
        })
        .collect::<Vec<(String, AttrValue)>>();
    let selection = SourceSelection::new(target.srcs.iter().map(String::as_str));
    let srcs = package
        .files(db)
        .iter()
        .filter(|file| selection.selects(file))
        .map(|file| Package::join(package_path, file))
        .collect();
    let deps = target
        .deps
        .iter()
        .map(|dep| {
            let dep_id = dep.label.id();
            let summary = package_by_path(db, workspace)
                .get(&dep.label.package)
                .and_then(|p| {
                    target_summaries(db, p)
                        .iter()
                        .find(|s| s.name == dep.label.name)
                });
            PlanDep {
                outputs: plan_of(
                    db,
                    workspace,
                    PlanKey::new(db, dep_id.clone(), "build".to_owned()),
                )
                .actions
                .default_outputs
                .clone(),
                target: dep_id,
                kind: summary.and_then(|s| s.kind.clone()).unwrap_or_default(),
                role: dep.role.clone(),
                providers: summary.map(|s| s.providers.clone()).unwrap_or_default(),
            }
        })
        .collect();
    let request = PlanRequest {
        target: id.clone(),
        package: package_path.clone(),
        name: target.label.name.clone(),
        kind: target.kind.clone(),
        capability: capability.clone(),
        attrs,
        srcs,
        build_dir: build_dir(package_path, &target.label.name),
        deps,
        tools: kind.tools.iter().map(|t| t.name.clone()).collect(),
        workspace_inputs: workspace_files_matching(
            db,
            workspace,
            package_path,
            &kind.workspace_inputs,
        ),
        toolchains: workspace_settings(db, workspace)
            .python
            .iter()
            .map(|python| ("python".to_owned(), python.clone()))
            .collect(),
    };
    // A one-shot front end's memo answers for plans an earlier process made from the
    // same inputs, without starting Starlark (see `crate::plan_memo`).
    let limits = module_limits();
    let memo = db.plan_memo().and_then(|memo| {
        let origin = match &kind.origin {
            KindOrigin::Prelude(file) => MemoOrigin::Prelude(file),
            KindOrigin::Module(path) => MemoOrigin::Module {
                path,
                limits: &limits,
                modules: (*workspace_modules_digest(db, workspace))?,
            },
        };
        Some((memo, plan_memo_key(origin, &request)))
    });
    if let Some((memo, key)) = &memo
        && let Some(actions) = memo
            .lookup(key)
            .and_then(|bytes| decode_target_actions(&bytes))
    {
        return TargetPlan {
            actions,
            implemented: true,
            diagnostics: Vec::new(),
        };
    }
    let outcome = match &kind.origin {
        KindOrigin::Prelude(file) => once_starlark::plan_prelude(file, &request),
        KindOrigin::Module(path) => {
            let text = workspace
                .star_files(db)
                .iter()
                .find(|f| f.path(db) == path)
                .map(|f| source_text(db, *f).text.to_string())
                .unwrap_or_default();
            let modules = DbModules { db, workspace };
            once_starlark::plan_module(path, &text, &limits, &modules, &request)
        }
    };
    if let (Some((memo, key)), PlanOutcome::Planned(actions)) = (&memo, &outcome) {
        memo.record(*key, encode_target_actions(actions));
    }
    match outcome {
        PlanOutcome::Planned(actions) => TargetPlan {
            actions,
            implemented: true,
            diagnostics: Vec::new(),
        },
        PlanOutcome::NoImplementation => TargetPlan::default(),
        PlanOutcome::Failed(failure) => TargetPlan {
            actions: TargetActions::default(),
            implemented: true,
            diagnostics: vec![implementation_diagnostic(
                db, workspace, id, capability, &failure,
            )],
        },
    }
}

/// A failed implementation as a diagnostic in its module file (the prelude's own path,
/// `prelude/<file>.star`, for a built-in kind).
fn implementation_diagnostic(
    db: &dyn Db,
    workspace: Workspace,
    id: &str,
    capability: &str,
    failure: &ModuleDiagnostic,
) -> Diagnostic {
    let text = match failure.path.strip_prefix("prelude/") {
        Some(file) => once_starlark::prelude_file(file)
            .map(|bytes| String::from_utf8_lossy(bytes).into_owned())
            .unwrap_or_default(),
        None => workspace
            .star_files(db)
            .iter()
            .find(|f| *f.path(db) == failure.path)
            .map(|f| source_text(db, *f).text.to_string())
            .unwrap_or_default(),
    };
    let index = LineIndex::new(text.into());
    let range = TextRange {
        start: index.offset(LineCol {
            line: failure.line,
            column: failure.column,
        }),
        end: index.offset(LineCol {
            line: failure.end_line,
            column: failure.end_column,
        }),
    };
    let mut diagnostic = Diagnostic::new(
        DiagnosticCode::ImplementationError,
        format!(
            "planning `{capability}` of `{id}` failed: {}",
            failure.message
        ),
    )
    .at(failure.path.clone(), range)
    .with_repair(
        "Fix the kind's implementation, then plan again (`once query actions`)".to_owned(),
    );
    diagnostic.target = Some(id.to_owned());
    diagnostic
}

/// The version of the static key encoding; part of every key.
pub const ACTION_KEY_FORMAT: &str = "once.action.static.v2";

#[salsa::tracked(returns(ref))]
fn static_keys_of<'db>(
    db: &'db dyn Db,
    workspace: Workspace,
    key: PlanKey<'db>,
) -> Vec<Sha256Digest> {
    let plan = plan_of(db, workspace, key);
    plan.actions
        .actions
        .iter()
        .map(|action| {
            let mut encoder = ValueWriter::default();
            encoder.field("format", ACTION_KEY_FORMAT);
            match &action.step {
                ActionStep::Run(command) => {
                    encoder.field("step", "run");
                    for arg in &command.argv {
                        encoder.field("argv", arg);
                    }
                    for (name, value) in &command.env {
                        encoder.field("env.name", name);
                        encoder.field("env.value", value);
                    }
                    encoder.field("cwd", &command.cwd);
                    for code in &command.success_exit_codes {
                        encoder.field("success_exit_code", &code.to_string());
                    }
                    if let Some(seconds) = command.timeout_seconds {
                        encoder.field("timeout_seconds", &seconds.to_string());
                    }
                }
                ActionStep::WriteFile {
                    path,
                    content,
                    executable,
                } => {
                    encoder.field("step", "write");
                    encoder.field("path", path);
                    encoder.field("content", content);
                    encoder.field("executable", if *executable { "true" } else { "false" });
                }
                ActionStep::Copy { from, to } => {
                    encoder.field("step", "copy");
                    encoder.field("from", from);
                    encoder.field("to", to);
                }
                ActionStep::MaterializeHostFile { source, to } => {
                    encoder.field("step", "materialize_host_file");
                    encoder.field("from", source);
                    encoder.field("to", to);
                }
                ActionStep::Symlink { to, link } => {
                    encoder.field("step", "symlink");
                    encoder.field("to", to);
                    encoder.field("link", link);
                }
                ActionStep::MakeDir { path } => {
                    encoder.field("step", "mkdir");
                    encoder.field("path", path);
                }
            }
            let mut inputs: Vec<&String> = action.inputs.iter().collect();
            inputs.sort();
            inputs.dedup();
            for input in inputs {
                encoder.field("input", input);
                if is_build_output(input) {
                    // Another action's output: its digest joins the key at execution.
                    encoder.field("input.produced", "");
                    continue;
                }
                match source_input(db, input).key {
                    Ok((digest, permissions)) => {
                        encoder.field("input.digest", &digest.to_hex());
                        encoder.field("input.permissions", &format!("{permissions:o}"));
                    }
                    Err(error) => encoder.field("input.missing", &error),
                }
            }
            let mut outputs: Vec<&String> = action.outputs.iter().collect();
            outputs.sort();
            for output in outputs {
                encoder.field("output", output);
            }
            encoder.field("cacheable", if action.cacheable { "true" } else { "false" });
            Sha256Digest::of(&encoder.0)
        })
        .collect()
}

/// What an action's static key holds of an input that is a workspace file (not a build
/// output), and the stamp of the file it was read from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SourceInput {
    /// The content's digest and the permission bits (`mode & 0o7777`), or why the file
    /// has none (missing, a directory, a link once does not follow, …).
    pub key: Result<(Sha256Digest, u32), String>,
    /// The stamp of the file the key was read from (a followed link's target's):
    /// `Some(None)` when nothing was there, `None` when that is not known (a directory,
    /// an unreadable file, a link not followed).
    pub stamp: Option<Option<FileStamp>>,
}

/// [`SourceInput`] of the workspace file `path`.
pub fn source_input(db: &dyn Db, path: &str) -> SourceInput {
    match source_file(db, db.file_for_path(path)) {
        Ok(source) => SourceInput {
            key: Ok((source.digest, source.permissions)),
            stamp: Some(Some(source.stamp)),
        },
        Err(error) => SourceInput {
            key: Err(error.to_string()),
            stamp: (*error == DigestError::Missing).then_some(None),
        },
    }
}

/// Whether a workspace-relative path lies under the build output directory.
pub fn is_build_output(path: &str) -> bool {
    path.strip_prefix(OUT_DIR)
        .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// The files of the workspace's packages that `patterns` (workspace-relative globs, as a
/// kind's `workspace_inputs` declares them; a leading `$PACKAGE/` stands for the target's
/// package directory, after an exclusion's `!`) select, workspace-relative and sorted.
fn workspace_files_matching(
    db: &dyn Db,
    workspace: Workspace,
    package: &str,
    patterns: &[String],
) -> Vec<String> {
    let selection =
        SourceSelection::rewritten(patterns.iter().map(String::as_str), |pattern| match pattern
            .strip_prefix("$PACKAGE/")
        {
            Some(rest) if package.is_empty() => rest.to_owned(),
            Some(rest) => format!("{package}/{rest}"),
            None => pattern.to_owned(),
        });
    if selection.is_empty() {
        return Vec::new();
    }
    let mut files: Vec<String> = workspace_packages(db, workspace)
        .iter()
        .flat_map(|package| {
            let path = package.path(db);
            package
                .files(db)
                .iter()
                .map(move |file| Package::join(path, file))
        })
        .filter(|file| selection.selects(file))
        .collect();
    files.sort_unstable();
    files
}
