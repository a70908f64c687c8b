//! The Starlark embedding of `once`: the declaration helpers (`target_kind`, `attr.*`,
//! `dep`, `capability`, `tool`, `source_reference`, `example`), evaluation of one module
//! into plain [`KindSchema`]s plus diagnostics, and the built-in prelude with its starter
//! example trees, embedded in the binary.
//!
//! Nothing Starlark-shaped leaves this crate: callers get `once_model` data.
//!
//! - [`prelude_kinds`]: the built-in kinds, evaluated from `prelude/*.star`.
//! - [`evaluate_module`]: one project module, under [`EvalLimits`].
//! - [`declaration_source`]: the helper signatures and rules, as text for docs.

mod eval;
mod helpers;
mod prelude;
mod values;

#[cfg(test)]
mod tests;

use std::collections::HashSet;

use once_model::{KindOrigin, KindSchema};

pub use prelude::{prelude_file, prelude_kinds};

/// Resource limits for evaluating a project module. The limits are checked periodically
/// by the interpreter (every thousand steps), so they bound runaway loops and gradual
/// memory growth; one single giant allocation can still overshoot `max_bytes` before it
/// is noticed.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct EvalLimits {
    /// Function calls plus loop iterations.
    pub max_steps: u64,
    /// Bytes on the Starlark heap.
    pub max_bytes: usize,
    /// Nested Starlark calls.
    pub max_call_depth: usize,
}

impl Default for EvalLimits {
    fn default() -> EvalLimits {
        EvalLimits {
            max_steps: 2_000_000,
            max_bytes: 64 << 20,
            max_call_depth: 200,
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
}

/// A problem in a module, with a 1-based line/column range (columns count Unicode scalar
/// values; the end is exclusive).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ModuleDiagnostic {
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
    let mut ctx = values::DeclarationContext::new(KindOrigin::Module(path.to_owned()));
    ctx.reserved = match prelude_kinds() {
        Ok(kinds) => kinds.into_iter().map(|k| k.name).collect(),
        Err(_) => HashSet::new(),
    };
    let (mut kinds, error) = eval::run(path, source, limits, ctx);
    kinds.sort_by(|a, b| a.name.cmp(&b.name));
    ModuleEvaluation {
        kinds,
        diagnostics: error.into_iter().collect(),
    }
}

/// The public declaration helpers: signatures, defaults and validation rules, written as
/// Starlark stubs (for documentation and the module-authoring contract).
pub fn declaration_source() -> &'static str {
    include_str!("declarations.star")
}
