//! The Starlark embedding of `once`: the declaration helpers (`target_kind`, `attr.*`,
//! `dep`, `capability`, `tool`, `source_reference`, `example`), evaluation of one module
//! into plain [`KindSchema`]s plus diagnostics, and the built-in prelude with its starter
//! example trees, embedded in the binary.
//!
//! Nothing Starlark-shaped leaves this crate: callers get `once_model` data.
//!
//! - [`prelude_kinds`]: the built-in kinds, from the checked-in catalog of what
//!   `prelude/*.star` declare (evaluated instead when the catalog is stale).
//! - [`evaluate_module`]: one project module, under [`EvalLimits`];
//!   [`evaluate_module_with_loads`] resolves `load()` through a caller's [`ModuleSource`].
//! - [`declaration_source`]: the helper signatures and rules, as text for docs.
//! - [`helpers`]: the registered helper names with signatures and docs, for the
//!   module-authoring contract.

mod catalog;
mod contract;
mod eval;
mod guards;
mod helpers;
mod plan;
mod prelude;
mod runner;
mod values;

#[cfg(test)]
mod tests;

use std::collections::HashSet;
use std::sync::OnceLock;

use once_model::{KindOrigin, KindSchema};

pub use catalog::CATALOG_PATH as PRELUDE_CATALOG_PATH;
pub use contract::{HelperDoc, helpers, registered_helper_names};
pub use plan::{
    CONTEXT_FIELDS, PlanDep, PlanOutcome, PlanRequest, plan_module, plan_module_on_thread,
    plan_prelude,
};
pub use prelude::{generated_prelude_catalog, prelude_file, prelude_kinds};
pub use runner::{
    DEADLINE_GRACE, EVALUATION_STACK_BYTES, EvaluationProgress, FirstSight, Isolation,
    StatementLocation, evaluate_on_thread, install_isolation, over_deadline, stopped,
};

/// Resource limits for evaluating a project module (docs/modules.md, "Limits").
///
/// Steps, heap and the deadline are checked before every statement; `range`, `str`,
/// `repr` and `json.encode` check their own work up front. A single operator that runs
/// too long (`"x" * n`, `==` on a value sharing itself) is stopped by the deadline: the
/// caller stops waiting, and the binary's [`Isolation`] kills the evaluator process.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EvalLimits {
    /// Function calls plus loop iterations; also the longest `range`.
    pub max_steps: u64,
    /// Bytes on the Starlark heap (garbage included: nothing is collected during an
    /// evaluation); also the longest text `str`, `repr` and `json.encode` produce.
    pub max_bytes: usize,
    /// Nested Starlark calls.
    pub max_call_depth: usize,
    /// Wall-clock time for the whole evaluation, loads included.
    pub deadline: std::time::Duration,
}

impl Default for EvalLimits {
    fn default() -> EvalLimits {
        EvalLimits {
            max_steps: 2_000_000,
            max_bytes: 64 << 20,
            max_call_depth: 200,
            deadline: std::time::Duration::from_secs(3),
        }
    }
}

/// What one module declared, plus what went wrong. Evaluation stops at the first error,
/// so there is at most one error diagnostic; kinds declared before it are kept.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ModuleEvaluation {
    /// Sorted by kind name.
    pub kinds: Vec<KindSchema>,
    pub diagnostics: Vec<ModuleDiagnostic>,
    /// Where each kind was declared (the outermost call in this module), sorted by name.
    pub sites: Vec<KindSite>,
    /// Workspace-relative paths of every module `load()`ed, directly or not, sorted.
    pub loads: Vec<String>,
}

/// The `target_kind(…)` call (in the evaluated module) that declared a kind.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct KindSite {
    pub kind: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// What kind of problem a [`ModuleDiagnostic`] reports.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum ModuleErrorKind {
    /// A Starlark syntax or runtime error, a broken helper contract, a resource limit.
    #[default]
    Invalid,
    /// A kind name that is already built in.
    DuplicateKind,
    /// `load()` named a module that does not exist or lies outside the workspace.
    LoadNotFound,
}

/// Where `load()` reads other modules from. Paths are workspace-relative and already
/// normalised (`load("base.star")` in `modules/a.star` asks for `modules/base.star`;
/// `load("//lib/x.star")` for `lib/x.star`).
pub trait ModuleSource {
    /// The module's text, or why it cannot be read.
    fn read(&self, path: &str) -> Result<String, String>;
}

/// A [`ModuleSource`] with no modules: every `load()` fails.
pub struct NoModules;

impl ModuleSource for NoModules {
    fn read(&self, path: &str) -> Result<String, String> {
        Err(format!("module `{path}` does not exist"))
    }
}

/// A problem in a module, with a 1-based line/column range (columns count Unicode scalar
/// values; the end is exclusive).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleDiagnostic {
    pub kind: ModuleErrorKind,
    pub message: String,
    /// The path the module was evaluated under.
    pub path: String,
    pub line: u32,
    pub column: u32,
    pub end_line: u32,
    pub end_column: u32,
}

/// Evaluates one project module's source with the declaration helpers. Kind names of the
/// prelude are reserved. `example(files = …)` must be a `{path: contents}` dict here.
pub fn evaluate_module(path: &str, source: &str, limits: &EvalLimits) -> ModuleEvaluation {
    evaluate_module_with_loads(path, source, limits, &NoModules)
}

/// Like [`evaluate_module`], with `load()` reading other modules from `modules`. A loaded
/// module is evaluated with the same helpers and limits; the symbols it exports are
/// visible to the loader, but kinds it declares itself belong to it, not to `path`.
/// Load cycles and paths escaping the workspace are errors at the `load` statement.
///
/// Evaluation runs on its own thread under `limits` (see [`runner`]); an evaluation that
/// exceeds them is one `invalid_module` diagnostic at the statement that was running.
pub fn evaluate_module_with_loads(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
) -> ModuleEvaluation {
    runner::evaluate(path, source, limits, modules)
}

/// The evaluation itself, on the calling thread; `progress` follows its statements.
pub(crate) fn evaluate_here(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    modules: &dyn ModuleSource,
    progress: Option<&EvaluationProgress>,
) -> ModuleEvaluation {
    let ctx = module_context(path);
    let loads = eval::Loads::new(modules, limits, progress.cloned());
    let (mut kinds, error) = eval::run_with_loads(path, source, limits, ctx, &loads);
    kinds.sort_by(|a, b| a.0.name.cmp(&b.0.name));
    let sites = kinds.iter().filter_map(|(_, site)| site.clone()).collect();
    ModuleEvaluation {
        kinds: kinds.into_iter().map(|(kind, _)| kind).collect(),
        diagnostics: error.into_iter().collect(),
        sites,
        loads: loads.loaded(),
    }
}

pub(crate) fn module_context(path: &str) -> values::DeclarationContext {
    let mut ctx = values::DeclarationContext::new(KindOrigin::Module(path.to_owned()));
    ctx.reserved = reserved_kind_names().clone();
    ctx
}

static RESERVED_KIND_NAMES: OnceLock<HashSet<String>> = OnceLock::new();

/// The kind names a module may not declare: those of the prelude.
pub fn reserved_kind_names() -> &'static HashSet<String> {
    RESERVED_KIND_NAMES.get_or_init(|| match prelude_kinds() {
        Ok(kinds) => kinds.iter().map(|k| k.name.clone()).collect(),
        Err(_) => HashSet::new(),
    })
}

/// Sets [`reserved_kind_names`] before any evaluation instead of evaluating the prelude:
/// the isolated evaluator receives them from its parent. `false` if already set.
pub fn preset_reserved_kind_names(names: impl IntoIterator<Item = String>) -> bool {
    RESERVED_KIND_NAMES.set(names.into_iter().collect()).is_ok()
}

/// The public declaration helpers: signatures, defaults and validation rules, written as
/// Starlark stubs (for documentation and the module-authoring contract).
pub fn declaration_source() -> &'static str {
    include_str!("declarations.star")
}
