//! Running one `.star` source: the dialect, the globals, resource limits, `load()`
//! through a [`ModuleSource`], and turning starlark errors into [`ModuleDiagnostic`]s.

#![allow(
    clippy::disallowed_methods,
    reason = "the evaluation deadline of project modules reads the clock: a resource limit, not a workspace fact"
)]

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::rc::Rc;
use std::sync::OnceLock;
use std::time::Instant;

use once_model::KindSchema;
use starlark::codemap::{FileSpan, FileSpanRef};
use starlark::environment::{FrozenModule, Globals, GlobalsBuilder, LibraryExtension, Module};
use starlark::eval::{BeforeStmtFunc, BeforeStmtFuncDyn, Evaluator, FileLoader};
use starlark::syntax::{AstModule, Dialect, DialectTypes};

use crate::guards::{guarded_globals, json_namespace};
use crate::helpers::{attr_namespace, declaration_globals};
use crate::runner::{EvaluationProgress, StatementLocation};
use crate::values::DeclarationContext;
use crate::{EvalLimits, KindSite, ModuleDiagnostic, ModuleErrorKind, ModuleSource};

/// Starlark as modules are written: top-level `if`/`for`, f-strings, type annotations and
/// keyword-only arguments are allowed; `load()` only where a [`ModuleSource`] answers it.
pub(crate) fn dialect(enable_load: bool) -> Dialect {
    Dialect {
        enable_types: DialectTypes::Enable,
        enable_keyword_only_arguments: true,
        enable_f_strings: true,
        enable_top_level_stmt: true,
        enable_load,
        ..Dialect::Standard
    }
}

/// The modules loaded during one evaluation: frozen once each, with a stack for cycles;
/// and the evaluation's deadline and progress, shared by the modules it loads.
pub(crate) struct Loads<'a> {
    source: &'a dyn ModuleSource,
    limits: &'a EvalLimits,
    frozen: RefCell<BTreeMap<String, FrozenModule>>,
    stack: RefCell<Vec<String>>,
    /// `None` when the deadline is too far away to be represented (no deadline).
    deadline: Option<Instant>,
    /// Follows the statements of the module the evaluation started with.
    progress: Option<EvaluationProgress>,
}

impl<'a> Loads<'a> {
    pub(crate) fn new(
        source: &'a dyn ModuleSource,
        limits: &'a EvalLimits,
        progress: Option<EvaluationProgress>,
    ) -> Loads<'a> {
        Loads {
            source,
            limits,
            frozen: RefCell::default(),
            stack: RefCell::default(),
            deadline: Instant::now().checked_add(limits.deadline),
            progress,
        }
    }

    pub(crate) fn loaded(&self) -> Vec<String> {
        self.frozen.borrow().keys().cloned().collect()
    }
}

/// The [`FileLoader`] of one module: resolves `load` paths against its directory.
struct LoaderFor<'l, 'a> {
    loads: &'l Loads<'a>,
    importer: String,
}

/// Resolves a `load()` argument: `//x/y.star` is workspace-relative, anything else is
/// relative to the importing module's directory. `..` may not climb above the root.
pub(crate) fn resolve_load(importer: &str, target: &str) -> Result<String, String> {
    if !target.ends_with(".star") {
        return Err(format!(
            "`load(\"{target}\")`: a module path ends in `.star`"
        ));
    }
    let (base, rest): (Vec<&str>, &str) = if let Some(rest) = target.strip_prefix("//") {
        (Vec::new(), rest)
    } else if target.starts_with('/') || target.contains('\\') || target.contains(':') {
        return Err(format!(
            "`load(\"{target}\")`: use a path relative to this module, or `//` for the workspace root"
        ));
    } else {
        let mut dir: Vec<&str> = importer.split('/').collect();
        dir.pop();
        (dir, target)
    };
    let mut segments = base;
    for segment in rest.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() {
                    return Err(format!("`load(\"{target}\")` escapes the workspace"));
                }
            }
            other => segments.push(other),
        }
    }
    Ok(segments.join("/"))
}

impl FileLoader for LoaderFor<'_, '_> {
    fn load(&self, path: &str) -> starlark::Result<FrozenModule> {
        let resolved = resolve_load(&self.importer, path).map_err(load_error)?;
        if let Some(frozen) = self.loads.frozen.borrow().get(&resolved) {
            return Ok(frozen.clone());
        }
        if self.loads.stack.borrow().contains(&resolved) {
            let mut cycle = self.loads.stack.borrow().clone();
            cycle.push(resolved);
            return Err(load_error(format!("load cycle: {}", cycle.join(" -> "))));
        }
        let source = self
            .loads
            .source
            .read(&resolved)
            .map_err(|why| load_error(format!("cannot load `{resolved}`: {why}")))?;
        self.loads.stack.borrow_mut().push(resolved.clone());
        let ctx = crate::module_context(&resolved);
        let result = Module::with_temp_heap(|module| {
            evaluate_in(
                &resolved,
                &source,
                self.loads.limits,
                &ctx,
                self.loads,
                &module,
            )?;
            module.freeze().map_err(starlark::Error::from)
        });
        self.loads.stack.borrow_mut().pop();
        let frozen = result.map_err(|error| {
            let d = to_diagnostic(&resolved, &error, ModuleErrorKind::Invalid);
            load_error(format!(
                "loaded module {}:{}:{}: {}",
                d.path, d.line, d.column, d.message
            ))
        })?;
        self.loads
            .frozen
            .borrow_mut()
            .insert(resolved, frozen.clone());
        Ok(frozen)
    }
}

/// Marks load failures so they become [`ModuleErrorKind::LoadNotFound`] diagnostics
/// when the module could not be found.
fn load_error(message: String) -> starlark::Error {
    starlark::Error::new_other(anyhow::anyhow!(message))
}

/// The standard library (no `print`: stdout belongs to protocols) plus the helpers.
pub(crate) fn globals() -> &'static Globals {
    static GLOBALS: OnceLock<Globals> = OnceLock::new();
    GLOBALS.get_or_init(|| {
        let mut builder = GlobalsBuilder::extended_by(&[
            LibraryExtension::StructType,
            LibraryExtension::Map,
            LibraryExtension::Filter,
            LibraryExtension::Partial,
            LibraryExtension::Debug,
            LibraryExtension::Typing,
        ]);
        guarded_globals(&mut builder);
        builder.namespace("json", json_namespace);
        declaration_globals(&mut builder);
        builder.namespace("attr", attr_namespace);
        builder.namespace("actions", crate::plan::actions_namespace);
        builder.build()
    })
}

/// Evaluates `source` with `ctx` as the declaration registry. Returns the kinds declared
/// (in declaration order) and the error that stopped evaluation, if any; kinds declared
/// before an error are kept.
pub(crate) fn run(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: DeclarationContext,
) -> (Vec<KindSchema>, Option<ModuleDiagnostic>) {
    let no_modules = crate::NoModules;
    let loads = Loads::new(&no_modules, limits, None);
    let (kinds, error) = run_inner(path, source, limits, ctx, &loads, false);
    (kinds.into_iter().map(|(k, _)| k).collect(), error)
}

/// [`run`] with `load()` enabled; each kind comes with its declaration site.
pub(crate) fn run_with_loads(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: DeclarationContext,
    loads: &Loads<'_>,
) -> (
    Vec<(KindSchema, Option<KindSite>)>,
    Option<ModuleDiagnostic>,
) {
    loads.stack.borrow_mut().push(path.to_owned());
    let result = run_inner(path, source, limits, ctx, loads, true);
    loads.stack.borrow_mut().pop();
    result
}

fn run_inner(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: DeclarationContext,
    loads: &Loads<'_>,
    enable_load: bool,
) -> (
    Vec<(KindSchema, Option<KindSite>)>,
    Option<ModuleDiagnostic>,
) {
    let result = Module::with_temp_heap(|module| {
        evaluate(path, source, limits, &ctx, loads, enable_load, &module)
    });
    let duplicate = ctx.duplicate.get();
    let sites = ctx.sites.into_inner();
    let kinds = ctx
        .kinds
        .into_inner()
        .into_iter()
        .map(|kind| {
            let site = sites.iter().find(|s| s.kind == kind.name).cloned();
            (kind, site)
        })
        .collect();
    let error = result.err().map(|e| {
        let message = e.without_diagnostic().to_string();
        let kind = if duplicate {
            ModuleErrorKind::DuplicateKind
        } else if message.contains("cannot load `") || message.contains("escapes the workspace") {
            ModuleErrorKind::LoadNotFound
        } else {
            ModuleErrorKind::Invalid
        };
        to_diagnostic(path, &e, kind)
    });
    (kinds, error)
}

fn evaluate_in<'v>(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: &DeclarationContext,
    loads: &Loads<'_>,
    module: &Module<'v>,
) -> starlark::Result<()> {
    evaluate(path, source, limits, ctx, loads, true, module)
}

fn evaluate<'v>(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: &DeclarationContext,
    loads: &Loads<'_>,
    enable_load: bool,
    module: &Module<'v>,
) -> starlark::Result<()> {
    let ast = AstModule::parse(path, source.to_owned(), &dialect(enable_load))?;
    if let Some((span, message)) = crate::guards::check_literal_repetitions(&ast, limits.max_bytes)
    {
        let at = ast.file_span(span);
        let mut error = starlark::Error::new_other(anyhow::anyhow!(message));
        error.set_span(at.span, &at.file);
        return Err(error);
    }
    // The statement about to run. Resource-limit errors carry no span of their own; they
    // are reported at the statement that was executing when the limit tripped.
    // The statement about to run (resource-limit errors carry no span of their own), and
    // the last statement of this module itself: errors raised inside a loaded module's
    // function are placed there, with the inner location in the message.
    let is_root = loads.stack.borrow().first().is_none_or(|root| root == path);
    let hook = StatementHook {
        path: path.to_owned(),
        max_bytes: limits.max_bytes.max(1),
        deadline: loads.deadline,
        progress: loads.progress.clone().filter(|_| is_root),
        last: Rc::default(),
        last_own: Rc::default(),
    };
    ctx.max_range_len.set(limits.max_steps.max(1));
    ctx.max_render_bytes.set(limits.max_bytes.max(1));
    let last_statement = hook.last.clone();
    let last_own = hook.last_own.clone();
    let loader = LoaderFor {
        loads,
        importer: path.to_owned(),
    };
    let result: starlark::Result<()> = (|| {
        let mut eval = Evaluator::new(module);
        // The collector traces values recursively; a value nested a million levels deep
        // would overflow any stack. Garbage counts against the heap limit instead.
        eval.disable_gc();
        eval.extra = Some(ctx);
        if enable_load {
            eval.set_loader(&loader);
        }
        eval.set_max_tick_count(limits.max_steps.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_heap_size(limits.max_bytes.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_callstack_size(limits.max_call_depth.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.before_stmt_for_dap(BeforeStmtFunc::Dyn(Box::new(hook)));
        eval.eval_module(ast, globals())?;
        Ok(())
    })();
    result.map_err(|mut error| {
        if error.span().is_none()
            && let Some(span) = last_statement.borrow_mut().take()
        {
            error.set_span(span.span, &span.file);
        }
        let elsewhere = error
            .span()
            .filter(|span| span.filename() != path)
            .map(|span| span.resolve_span());
        if let Some(inner) = elsewhere
            && let Some(own) = last_own.borrow_mut().take()
        {
            let file = error
                .span()
                .map(|s| s.filename().to_owned())
                .unwrap_or_default();
            let message = friendlier(error.without_diagnostic().to_string().trim());
            let mut wrapped = starlark::Error::new_other(anyhow::anyhow!(
                "in {file}:{}:{}: {message}",
                inner.begin.line + 1,
                inner.begin.column + 1
            ));
            wrapped.set_span(own.span, &own.file);
            return wrapped;
        }
        error
    })
}

/// Runs before every statement: records where evaluation is, and checks the heap limit
/// and the deadline. Starlark itself checks limits only every thousand steps, which lets
/// a short loop of string or list doubling allocate gigabytes first; checking per
/// statement bounds the overshoot to what one statement allocates.
struct StatementHook {
    path: String,
    max_bytes: usize,
    deadline: Option<Instant>,
    /// Set for the module the evaluation started with, not for the modules it loads.
    progress: Option<EvaluationProgress>,
    last: Rc<RefCell<Option<FileSpan>>>,
    last_own: Rc<RefCell<Option<FileSpan>>>,
}

impl<'e> BeforeStmtFuncDyn<'e> for StatementHook {
    fn call<'v>(
        &mut self,
        span: FileSpanRef,
        _continued: bool,
        eval: &mut Evaluator<'v, '_, 'e>,
    ) -> starlark::Result<()> {
        let span = span.to_file_span();
        if span.filename() == self.path {
            if let Some(progress) = &self.progress {
                let resolved = span.resolve_span();
                progress.set(StatementLocation {
                    line: one_based(resolved.begin.line),
                    column: one_based(resolved.begin.column),
                    end_line: one_based(resolved.end.line),
                    end_column: one_based(resolved.end.column),
                });
            }
            *self.last_own.borrow_mut() = Some(span.clone());
        }
        *self.last.borrow_mut() = Some(span);
        let used = eval.heap().peak_allocated_bytes() + eval.frozen_heap().allocated_bytes();
        if used > self.max_bytes {
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "heap memory limit of {} bytes exceeded (checked before each statement)",
                self.max_bytes
            )));
        }
        if self
            .deadline
            .is_some_and(|deadline| Instant::now() > deadline)
        {
            return Err(starlark::Error::new_other(anyhow::anyhow!(
                "module evaluation did not finish within the time limit (checked before each \
                 statement)"
            )));
        }
        Ok(())
    }
}

fn to_diagnostic(path: &str, error: &starlark::Error, kind: ModuleErrorKind) -> ModuleDiagnostic {
    let message = error.without_diagnostic().to_string();
    let message = friendlier(message.trim());
    match error.span() {
        Some(span) => {
            let resolved = span.resolve_span();
            ModuleDiagnostic {
                kind,
                message,
                path: path.to_owned(),
                line: one_based(resolved.begin.line),
                column: one_based(resolved.begin.column),
                end_line: one_based(resolved.end.line),
                end_column: one_based(resolved.end.column),
            }
        }
        None => ModuleDiagnostic {
            kind,
            message,
            path: path.to_owned(),
            line: 1,
            column: 1,
            end_line: 1,
            end_column: 1,
        },
    }
}

/// `attr` is the only namespace in the globals: say "unknown attribute type" instead of
/// starlark's generic "Object of type `namespace` has no attribute …".
fn friendlier(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("Object of type `namespace` has no attribute `")
        && let Some((name, tail)) = rest.split_once('`')
    {
        let hint = tail
            .strip_prefix(", did you mean `")
            .and_then(|t| t.split_once('`'))
            .map(|(suggestion, _)| format!("; did you mean `attr.{suggestion}`?"))
            .unwrap_or_default();
        return format!(
            "unknown attribute type `attr.{name}`{hint} (available: attr.string, attr.bool, \
             attr.int, attr.float, attr.label, attr.path, attr.string_list, attr.label_list, \
             attr.path_list, attr.string_dict, attr.of)"
        );
    }
    message.to_owned()
}

fn one_based(zero_based: usize) -> u32 {
    u32::try_from(zero_based).unwrap_or(u32::MAX - 1) + 1
}

/// Evaluates `source` as module `path` and freezes it, so that its functions can be called
/// later. `loads` enables `load()`; `None` evaluates without it (the prelude).
pub(crate) fn freeze(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: &DeclarationContext,
    loads: Option<&Loads<'_>>,
) -> Result<FrozenModule, ModuleDiagnostic> {
    let no_modules = crate::NoModules;
    let own_loads;
    let (loads, enable_load) = match loads {
        Some(loads) => (loads, true),
        None => {
            own_loads = Loads::new(&no_modules, limits, None);
            (&own_loads, false)
        }
    };
    loads.stack.borrow_mut().push(path.to_owned());
    let result = Module::with_temp_heap(|module| {
        evaluate(path, source, limits, ctx, loads, enable_load, &module)?;
        module.freeze().map_err(starlark::Error::from)
    });
    loads.stack.borrow_mut().pop();
    result.map_err(|error| located_diagnostic(path, &error))
}

/// Calls `function` (from a frozen module) with the one argument `argument` builds, under
/// `limits` and with `ctx` as the helpers' context. The function returns `None` or a list
/// of paths (its default outputs). A failure is one diagnostic at the line that raised it.
pub(crate) fn call_function(
    path: &str,
    function: &starlark::values::OwnedFrozenValue,
    limits: &EvalLimits,
    ctx: &DeclarationContext,
    progress: Option<&EvaluationProgress>,
    argument: impl for<'v> FnOnce(starlark::values::Heap<'v>) -> starlark::values::Value<'v>,
) -> Result<Vec<String>, ModuleDiagnostic> {
    let hook = StatementHook {
        path: path.to_owned(),
        max_bytes: limits.max_bytes.max(1),
        deadline: Instant::now().checked_add(limits.deadline),
        progress: progress.cloned(),
        last: Rc::default(),
        last_own: Rc::default(),
    };
    ctx.max_range_len.set(limits.max_steps.max(1));
    ctx.max_render_bytes.set(limits.max_bytes.max(1));
    let last_statement = hook.last.clone();
    let result: starlark::Result<Vec<String>> = Module::with_temp_heap(|module| {
        let function = module.heap().access_owned_frozen_value(function);
        let argument = argument(module.heap());
        let mut eval = Evaluator::new(&module);
        eval.disable_gc();
        eval.extra = Some(ctx);
        eval.set_max_tick_count(limits.max_steps.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_heap_size(limits.max_bytes.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_callstack_size(limits.max_call_depth.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.before_stmt_for_dap(BeforeStmtFunc::Dyn(Box::new(hook)));
        let returned = eval.eval_function(function, &[argument], &[])?;
        crate::plan::default_outputs(returned).map_err(|error| {
            let mut error = starlark::Error::new_other(error);
            if let Some(span) = last_statement.borrow().clone() {
                error.set_span(span.span, &span.file);
            }
            error
        })
    });
    result.map_err(|mut error| {
        if error.span().is_none()
            && let Some(span) = last_statement.borrow_mut().take()
        {
            error.set_span(span.span, &span.file);
        }
        located_diagnostic(path, &error)
    })
}

/// A diagnostic in the file the error's span names (a loaded module's, for an error
/// raised there), else in `path`.
fn located_diagnostic(path: &str, error: &starlark::Error) -> ModuleDiagnostic {
    let file = error
        .span()
        .map(|span| span.filename().to_owned())
        .unwrap_or_else(|| path.to_owned());
    to_diagnostic(&file, error, ModuleErrorKind::Invalid)
}
