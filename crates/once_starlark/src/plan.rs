//! Planning: calling a kind's implementation of one capability with a resolved target's
//! context, and collecting what it declares through the `actions` namespace as plain
//! [`Action`]s.
//!
//! A kind names its implementations in `target_kind(…, implementations = {"build": f})`;
//! the functions are kept in the frozen module (see [`implementation_slot`]). Planning
//! evaluates the kind's module (the prelude's once per process, a project module per
//! call, under its [`EvalLimits`]), calls the function with the context as its only
//! argument and returns the actions, or one diagnostic at the line that failed.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::OnceLock;

use anyhow::{anyhow, bail};
use once_model::action::{Action, ActionStep, Command, TargetActions};
use once_model::{AttrValue, KindOrigin};
use starlark::environment::{FrozenModule, GlobalsBuilder};
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::{AllocDict, UnpackDictEntries};
use starlark::values::list::AllocList;
use starlark::values::list_or_tuple::UnpackListOrTuple;
use starlark::values::none::{NoneOr, NoneType};
use starlark::values::structs::AllocStruct;
use starlark::values::{Heap, UnpackValue, Value};

use crate::values::DeclarationContext;
use crate::{EvalLimits, ModuleDiagnostic, ModuleErrorKind, ModuleSource};

/// The module variable holding a kind's implementation of a capability. Not an
/// identifier, so no module can read or overwrite it.
pub(crate) fn implementation_slot(kind: &str, capability: &str) -> String {
    format!("once implementation {kind} {capability}")
}

/// The fields of the context an implementation receives, with what each holds: the
/// module contract's list (a test keeps it equal to the struct [`PlanRequest`] becomes).
pub const CONTEXT_FIELDS: &[(&str, &str)] = &[
    ("ctx.target", "The canonical target id, `<package>/<name>`."),
    (
        "ctx.package",
        "The package directory, workspace-relative (`\"\"` for the root package).",
    ),
    ("ctx.name", "The target's name."),
    ("ctx.kind", "The target's kind."),
    (
        "ctx.capability",
        "The capability being planned: `build`, `run` or `test`.",
    ),
    (
        "ctx.attrs",
        "A struct of the kind's attributes: the value the target sets (a `select` resolved for \
         the workspace configuration) or the default; attributes with neither are absent \
         (test with `hasattr(ctx.attrs, \"name\")`).",
    ),
    (
        "ctx.srcs",
        "The files the target's `srcs` patterns match, workspace-relative and sorted.",
    ),
    (
        "ctx.build_dir",
        "`.once/out/<package>/<name>`: every output must lie under it.",
    ),
    (
        "ctx.deps",
        "The direct dependencies in declaration order, each a struct of `target`, `kind`, \
         `role` (`deps` or the `dependencies` role), `providers` and `outputs` (the default \
         outputs of its `build` implementation; empty without one).",
    ),
    (
        "ctx.tools",
        "The kind's declared tools: a dict from tool name to the program to run (looked up on \
         `PATH` when the action runs).",
    ),
    (
        "ctx.toolchains",
        "The workspace's toolchain settings from the root manifest's `[workspace]` table: a \
         dict from setting name to the value as written, holding only those set (`python`: \
         the Python interpreter, a virtual environment or installation directory or an \
         interpreter file, relative to the workspace root or absolute).",
    ),
    (
        "ctx.workspace_inputs",
        "The workspace files the kind's `workspace_inputs` globs select (workspace-relative, \
         sorted; after its `!` exclusions): files its tools read wherever they are, to declare among an action's \
         `inputs`.",
    ),
];

/// Everything an implementation's context holds: the resolved target.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PlanRequest {
    /// The canonical target id (`pkg/Name`).
    pub target: String,
    /// The package directory, workspace-relative (`""` for the root package).
    pub package: String,
    pub name: String,
    pub kind: String,
    /// `build`, `run` or `test`.
    pub capability: String,
    /// Every attribute of the kind: the value set (selects resolved) or the default.
    /// Attributes without either are absent.
    pub attrs: Vec<(String, AttrValue)>,
    /// The files `srcs` matches, workspace-relative, sorted.
    pub srcs: Vec<String>,
    /// `.once/out/<package>/<name>`.
    pub build_dir: String,
    /// Direct dependencies, in declaration order.
    pub deps: Vec<PlanDep>,
    /// The tools the kind declares (program names looked up on `PATH`).
    pub tools: Vec<String>,
    /// The workspace files the kind's `workspace_inputs` globs match, workspace-relative,
    /// sorted.
    pub workspace_inputs: Vec<String>,
    /// The root manifest's toolchain settings (`python`), each set one with its value as
    /// written, sorted by name.
    pub toolchains: Vec<(String, String)>,
}

/// A direct dependency as its dependent's implementation sees it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PlanDep {
    pub target: String,
    pub kind: String,
    /// `deps` or the `dependencies` role it was listed under.
    pub role: String,
    pub providers: Vec<String>,
    /// The `default` outputs of its `build` capability (empty without one).
    pub outputs: Vec<String>,
}

/// What planning one capability of one target gave.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum PlanOutcome {
    Planned(TargetActions),
    /// The kind declares no implementation for the capability.
    NoImplementation,
    /// The module or the implementation failed, or declared something invalid.
    Failed(ModuleDiagnostic),
}

/// The state `actions.*` write to while an implementation runs.
pub(crate) struct PlanState {
    target: String,
    capability: String,
    build_dir: String,
    actions: RefCell<Vec<Action>>,
}

/// Plans with a kind of the built-in prelude, declared in `prelude/<file>`.
pub fn plan_prelude(file: &str, request: &PlanRequest) -> PlanOutcome {
    // One slot per prelude module, frozen the first time a target of one of its kinds
    // plans: a build of `command` targets evaluates `generic.star` only.
    static FROZEN: OnceLock<
        HashMap<&'static str, OnceLock<Result<FrozenModule, ModuleDiagnostic>>>,
    > = OnceLock::new();
    let slots = FROZEN.get_or_init(|| {
        crate::prelude::prelude_modules()
            .map(|(path, _)| (path, OnceLock::new()))
            .collect()
    });
    let frozen = slots.get(file).map(|slot| {
        slot.get_or_init(|| {
            let contents = crate::prelude::prelude_file(file).unwrap_or_default();
            let display = format!("prelude/{file}");
            let source = String::from_utf8_lossy(contents).into_owned();
            let mut ctx = DeclarationContext::new(KindOrigin::Prelude(file.to_owned()));
            ctx.strict = true;
            ctx.embedded = Some(crate::prelude::embedded_files());
            crate::eval::freeze(&display, &source, &prelude_limits(), &ctx, None)
        })
    });
    match frozen {
        None => PlanOutcome::Failed(ModuleDiagnostic {
            kind: ModuleErrorKind::Invalid,
            message: format!("internal error: no prelude module `{file}`"),
            path: format!("prelude/{file}"),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
        }),
        Some(Err(diagnostic)) => PlanOutcome::Failed(diagnostic.clone()),
        Some(Ok(module)) => call(
            &format!("prelude/{file}"),
            module,
            &prelude_limits(),
            request,
            None,
        ),
    }
}

fn prelude_limits() -> EvalLimits {
    EvalLimits {
        deadline: std::time::Duration::MAX,
        ..EvalLimits::default()
    }
}

/// Plans with a kind of the project module `path` (text `source`), under `limits`: first
/// through the installed [`crate::Isolation`] (a child process, when the binary installed
/// one), then on an evaluation thread with a deadline, like
/// [`crate::evaluate_module_with_loads`].
pub fn plan_module(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
    request: &PlanRequest,
) -> PlanOutcome {
    if let Some(isolation) = crate::runner::isolation()
        && let Some(diagnostic) = isolation.check_plan(path, source, limits, modules, request)
    {
        return PlanOutcome::Failed(diagnostic);
    }
    let progress = crate::EvaluationProgress::default();
    plan_module_on_thread(path, source, limits, modules, request, &progress).unwrap_or_else(
        |message| match crate::stopped(path, &progress, message).diagnostics.pop() {
            Some(diagnostic) => PlanOutcome::Failed(diagnostic),
            None => PlanOutcome::NoImplementation,
        },
    )
}

/// [`plan_module`] without isolation, with `progress` following the module's statements
/// (the isolated evaluator's side). `Err` with the reason when planning did not end by
/// itself within the deadline.
pub fn plan_module_on_thread(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
    request: &PlanRequest,
    progress: &crate::EvaluationProgress,
) -> Result<PlanOutcome, String> {
    crate::reserved_kind_names();
    let (job_path, job_source, job_limits, job_request, job_progress) = (
        path.to_owned(),
        source.to_owned(),
        limits.clone(),
        request.clone(),
        progress.clone(),
    );
    crate::runner::run_on_thread(limits, modules, move |modules| {
        let ctx = crate::module_context(&job_path);
        let loads = crate::eval::Loads::new(modules, &job_limits, Some(job_progress.clone()));
        match crate::eval::freeze(&job_path, &job_source, &job_limits, &ctx, Some(&loads)) {
            Ok(module) => call(
                &job_path,
                &module,
                &job_limits,
                &job_request,
                Some(&job_progress),
            ),
            Err(diagnostic) => PlanOutcome::Failed(diagnostic),
        }
    })
    .map_err(|(message, _)| message)
}

fn call(
    path: &str,
    module: &FrozenModule,
    limits: &EvalLimits,
    request: &PlanRequest,
    progress: Option<&crate::EvaluationProgress>,
) -> PlanOutcome {
    let Ok((function, _)) =
        module.get_any_visibility(&implementation_slot(&request.kind, &request.capability))
    else {
        return PlanOutcome::NoImplementation;
    };
    let mut ctx = crate::module_context(path);
    ctx.plan = Some(PlanState {
        target: request.target.clone(),
        capability: request.capability.clone(),
        build_dir: request.build_dir.clone(),
        actions: RefCell::new(Vec::new()),
    });
    let returned = crate::eval::call_function(path, &function, limits, &ctx, progress, |heap| {
        context_value(heap, request)
    });
    let actions = ctx.plan.map(|p| p.actions.into_inner()).unwrap_or_default();
    match returned {
        Ok(default_outputs) => PlanOutcome::Planned(TargetActions {
            actions,
            default_outputs,
        }),
        Err(diagnostic) => PlanOutcome::Failed(diagnostic),
    }
}

/// The `ctx` argument: a struct of the request's fields.
fn context_value<'v>(heap: Heap<'v>, request: &PlanRequest) -> Value<'v> {
    let strings = |items: &[String]| heap.alloc(AllocList(items.iter().map(|s| s.as_str())));
    let attrs = heap.alloc(AllocStruct(
        request
            .attrs
            .iter()
            .map(|(name, value)| (name.as_str(), attr_value(heap, value))),
    ));
    let deps = heap.alloc(AllocList(request.deps.iter().map(|dep| {
        heap.alloc(AllocStruct([
            ("target", heap.alloc(dep.target.as_str())),
            ("kind", heap.alloc(dep.kind.as_str())),
            ("role", heap.alloc(dep.role.as_str())),
            ("providers", strings(&dep.providers)),
            ("outputs", strings(&dep.outputs)),
        ]))
    })));
    let tools = heap.alloc(AllocDict(
        request.tools.iter().map(|t| (t.as_str(), t.as_str())),
    ));
    let toolchains = heap.alloc(AllocDict(
        request
            .toolchains
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str())),
    ));
    heap.alloc(AllocStruct([
        ("target", heap.alloc(request.target.as_str())),
        ("package", heap.alloc(request.package.as_str())),
        ("name", heap.alloc(request.name.as_str())),
        ("kind", heap.alloc(request.kind.as_str())),
        ("capability", heap.alloc(request.capability.as_str())),
        ("attrs", attrs),
        ("srcs", strings(&request.srcs)),
        ("build_dir", heap.alloc(request.build_dir.as_str())),
        ("deps", deps),
        ("tools", tools),
        ("workspace_inputs", strings(&request.workspace_inputs)),
        ("toolchains", toolchains),
    ]))
}

fn attr_value<'v>(heap: Heap<'v>, value: &AttrValue) -> Value<'v> {
    match value {
        AttrValue::String(s) | AttrValue::Datetime(s) => heap.alloc(s.as_str()),
        AttrValue::Bool(b) => Value::new_bool(*b),
        AttrValue::Int(i) => heap.alloc(*i),
        AttrValue::Float(f) => heap.alloc(f.0),
        AttrValue::List(items) => heap.alloc(AllocList(items.iter().map(|i| attr_value(heap, i)))),
        AttrValue::Dict(entries) => heap.alloc(AllocDict(
            entries
                .iter()
                .map(|(k, v)| (heap.alloc(k.as_str()), attr_value(heap, v))),
        )),
    }
}

fn state<'a>(eval: &Evaluator<'_, 'a, '_>, primitive: &str) -> anyhow::Result<&'a PlanState> {
    eval.extra
        .and_then(|extra| extra.downcast_ref::<DeclarationContext>())
        .and_then(|ctx| ctx.plan.as_ref())
        .ok_or_else(|| {
            anyhow!(
                "`actions.{primitive}` declares an action of the target being planned: call it \
                 inside a kind's implementation, not while the module is loaded"
            )
        })
}

/// A workspace-relative `/`-separated path without empty, `.` or `..` segments.
fn check_path(what: &str, path: &str) -> anyhow::Result<()> {
    let bad = path.is_empty()
        || path.starts_with('/')
        || path.contains('\\')
        || path
            .split('/')
            .any(|s| s.is_empty() || s == "." || s == "..");
    if bad {
        bail!(
            "{what} `{path}` must be a workspace-relative `/`-separated path without empty, \
             `.` or `..` segments"
        );
    }
    Ok(())
}

impl PlanState {
    fn check_output(&self, path: &str) -> anyhow::Result<()> {
        check_path("output", path)?;
        let inside = path
            .strip_prefix(&self.build_dir)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'));
        if !inside {
            bail!(
                "output `{path}` lies outside the target's build directory `{}`; declare \
                 outputs under `ctx.build_dir`",
                self.build_dir
            );
        }
        Ok(())
    }

    fn push(
        &self,
        id: NoneOr<&str>,
        step: ActionStep,
        inputs: Vec<String>,
        outputs: Vec<String>,
        cacheable: bool,
    ) -> anyhow::Result<()> {
        let mut inputs = inputs;
        for input in &inputs {
            check_path("input", input)?;
        }
        let mut seen = std::collections::HashSet::new();
        inputs.retain(|input| seen.insert(input.clone()));
        let mut declared = std::collections::HashSet::with_capacity(outputs.len());
        for output in &outputs {
            self.check_output(output)?;
            if !declared.insert(output.as_str()) {
                bail!("output `{output}` is declared twice by this action");
            }
        }
        let mut actions = self.actions.borrow_mut();
        let identifier = match id {
            NoneOr::Other(id) => {
                let ok = !id.is_empty()
                    && id
                        .chars()
                        .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
                if !ok {
                    bail!("action id `{id}`: use letters, digits, `_`, `-` and `.`");
                }
                id.to_owned()
            }
            NoneOr::None => actions.len().to_string(),
        };
        let full_id = format!("{}#{}/{identifier}", self.target, self.capability);
        if actions.iter().any(|a| a.id == full_id) {
            bail!("action id `{identifier}` is used twice in this implementation");
        }
        for output in &outputs {
            if let Some(other) = actions.iter().find(|a| a.outputs.contains(output)) {
                bail!(
                    "output `{output}` is already declared by action `{}`; every output has \
                     one producer",
                    other.id
                );
            }
        }
        actions.push(Action {
            id: full_id,
            target: self.target.clone(),
            capability: self.capability.clone(),
            step,
            inputs,
            outputs,
            cacheable,
        });
        Ok(())
    }
}

fn owned(items: Vec<&str>) -> Vec<String> {
    items.into_iter().map(str::to_owned).collect()
}

/// The `actions` namespace: the primitives an implementation declares actions with.
#[starlark_module]
pub(crate) fn actions_namespace(builder: &mut GlobalsBuilder) {
    /// Declares a command to run.
    // One Rust parameter per Starlark keyword.
    #[allow(clippy::too_many_arguments)]
    fn run<'v>(
        argv: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        inputs: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        outputs: UnpackListOrTuple<&'v str>,
        #[starlark(require = named, default = UnpackDictEntries::default())] env: UnpackDictEntries<
            &'v str,
            &'v str,
        >,
        #[starlark(require = named, default = "")] cwd: &str,
        #[starlark(require = named, default = true)] cacheable: bool,
        #[starlark(require = named, default = UnpackListOrTuple { items: vec![0] })]
        success_exit_codes: UnpackListOrTuple<i32>,
        #[starlark(require = named, default = UnpackListOrTuple::default())]
        probes: UnpackListOrTuple<UnpackListOrTuple<&'v str>>,
        #[starlark(require = named, default = NoneOr::None)] depfile: NoneOr<&str>,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        #[starlark(require = named, default = NoneOr::None)] timeout_seconds: NoneOr<i32>,
        #[starlark(require = named, default = false)] network: bool,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<NoneType> {
        let state = state(eval, "run")?;
        let probes: Vec<Vec<String>> = probes
            .items
            .into_iter()
            .map(|probe| owned(probe.items))
            .collect();
        if probes
            .iter()
            .any(|probe| probe.first().is_none_or(String::is_empty))
        {
            bail!("every probe in `probes` needs a program: a non-empty first element");
        }
        let depfile = depfile.into_option().map(str::to_owned);
        if let Some(depfile) = &depfile
            && !outputs.items.contains(&depfile.as_str())
        {
            bail!("the `depfile` `{depfile}` must be one of the action's `outputs`");
        }
        if argv.items.is_empty() || argv.items[0].is_empty() {
            bail!("`argv` needs a program: a non-empty first element");
        }
        if !cwd.is_empty() {
            check_path("cwd", cwd)?;
        }
        let mut environment = BTreeMap::new();
        for (key, value) in env.entries {
            if key.is_empty() || key.contains('=') || key.contains('\0') {
                bail!("environment variable name `{key}` must be non-empty without `=`");
            }
            environment.insert(key.to_owned(), value.to_owned());
        }
        let mut codes = success_exit_codes.items;
        codes.sort_unstable();
        codes.dedup();
        if codes.is_empty() {
            bail!("`success_exit_codes` must name at least one exit code");
        }
        let timeout_seconds = match timeout_seconds {
            NoneOr::None => None,
            NoneOr::Other(seconds) => match u64::try_from(seconds) {
                Ok(seconds) if seconds > 0 => Some(seconds),
                _ => bail!("`timeout_seconds` must be a positive number of seconds, not {seconds}"),
            },
        };
        let step = ActionStep::Run(Command {
            argv: owned(argv.items),
            env: environment,
            cwd: cwd.to_owned(),
            success_exit_codes: codes,
            probes,
            depfile,
            timeout_seconds,
            output_symlinks: once_model::action::OutputSymlinks::Preserve,
            network,
        });
        state.push(
            id,
            step,
            owned(inputs.items),
            owned(outputs.items),
            cacheable,
        )?;
        Ok(NoneType)
    }

    /// Declares writing `content` to the output `path`; returns `path`.
    fn write<'v>(
        path: &'v str,
        content: &str,
        #[starlark(require = named, default = false)] executable: bool,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<&'v str> {
        let state = state(eval, "write")?;
        let step = ActionStep::WriteFile {
            path: path.to_owned(),
            content: content.to_owned(),
            executable,
        };
        state.push(id, step, Vec::new(), vec![path.to_owned()], true)?;
        Ok(path)
    }

    /// Declares copying the file `src` to the output `dst`; returns `dst`.
    fn copy<'v>(
        src: &str,
        dst: &'v str,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<&'v str> {
        let state = state(eval, "copy")?;
        let step = ActionStep::Copy {
            from: src.to_owned(),
            to: dst.to_owned(),
        };
        state.push(id, step, vec![src.to_owned()], vec![dst.to_owned()], true)?;
        Ok(dst)
    }

    /// Declares snapshotting the host file at the absolute path `source` (a toolchain's
    /// file) into the output `destination`, content-verified: its digest is keyed, and a
    /// copy that does not match it fails. Returns `destination`.
    fn materialize_host_file<'v>(
        source: &str,
        destination: &'v str,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<&'v str> {
        let state = state(eval, "materialize_host_file")?;
        if !source.starts_with('/')
            || source.contains('\0')
            || source.split('/').any(|part| part == "." || part == "..")
        {
            bail!(
                "`materialize_host_file` needs an absolute host path without `.` or `..`, not `{source}`"
            );
        }
        let step = ActionStep::MaterializeHostFile {
            source: source.to_owned(),
            to: destination.to_owned(),
        };
        state.push(id, step, Vec::new(), vec![destination.to_owned()], true)?;
        Ok(destination)
    }

    /// Declares the output `link` as a symbolic link to `to`; returns `link`.
    fn symlink<'v>(
        link: &'v str,
        to: &str,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<&'v str> {
        let state = state(eval, "symlink")?;
        if to.is_empty() || to.contains('\0') {
            bail!("a symbolic link needs a non-empty target");
        }
        let step = ActionStep::Symlink {
            to: to.to_owned(),
            link: link.to_owned(),
        };
        state.push(id, step, Vec::new(), vec![link.to_owned()], true)?;
        Ok(link)
    }

    /// Declares making the output directory `path` and its parents; returns `path`.
    fn mkdir<'v>(
        path: &'v str,
        #[starlark(require = named, default = NoneOr::None)] id: NoneOr<&str>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<&'v str> {
        let state = state(eval, "mkdir")?;
        let step = ActionStep::MakeDir {
            path: path.to_owned(),
        };
        state.push(id, step, Vec::new(), vec![path.to_owned()], true)?;
        Ok(path)
    }
}

/// The default outputs an implementation returns: `None` or a list of paths.
pub(crate) fn default_outputs(value: Value<'_>) -> anyhow::Result<Vec<String>> {
    if value.is_none() {
        return Ok(Vec::new());
    }
    let items = UnpackListOrTuple::<&str>::unpack_value_opt(value).ok_or_else(|| {
        anyhow!(
            "an implementation returns `None` or a list of its default output paths, got {}",
            value.get_type()
        )
    })?;
    // A set for the duplicates: re-exported outputs grow along a chain of dependencies,
    // and a linear search per item made planning a 3,000-deep filegroup chain cubic.
    let mut seen = std::collections::HashSet::with_capacity(items.items.len());
    let mut out = Vec::with_capacity(items.items.len());
    for item in items.items {
        check_path("default output", item)?;
        if seen.insert(item) {
            out.push(item.to_owned());
        }
    }
    Ok(out)
}
