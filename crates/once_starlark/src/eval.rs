//! Running one `.star` source: the dialect, the globals, resource limits, and turning
//! starlark errors into [`ModuleDiagnostic`]s.

use std::cell::RefCell;
use std::sync::OnceLock;

use once_model::KindSchema;
use starlark::codemap::{FileSpan, FileSpanRef};
use starlark::environment::{Globals, GlobalsBuilder, LibraryExtension, Module};
use starlark::eval::{BeforeStmtFunc, Evaluator};
use starlark::syntax::{AstModule, Dialect, DialectTypes};

use crate::helpers::{attr_namespace, declaration_globals};
use crate::values::DeclarationContext;
use crate::{EvalLimits, ModuleDiagnostic};

/// Starlark as modules are written: top-level `if`/`for`, f-strings, type annotations and
/// keyword-only arguments are allowed; `load()` is not (yet).
pub(crate) fn dialect() -> Dialect {
    Dialect {
        enable_types: DialectTypes::Enable,
        enable_keyword_only_arguments: true,
        enable_f_strings: true,
        enable_top_level_stmt: true,
        enable_load: false,
        ..Dialect::Standard
    }
}

/// The standard library (no `print`: stdout belongs to protocols) plus the helpers.
pub(crate) fn globals() -> &'static Globals {
    static GLOBALS: OnceLock<Globals> = OnceLock::new();
    GLOBALS.get_or_init(|| {
        let mut builder = GlobalsBuilder::extended_by(&[
            LibraryExtension::StructType,
            LibraryExtension::Json,
            LibraryExtension::Map,
            LibraryExtension::Filter,
            LibraryExtension::Partial,
            LibraryExtension::Debug,
            LibraryExtension::Typing,
        ]);
        declaration_globals(&mut builder);
        builder.namespace("attr", attr_namespace);
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
    let result = evaluate(path, source, limits, &ctx);
    let kinds = ctx.kinds.into_inner();
    (kinds, result.err().map(|e| to_diagnostic(path, &e)))
}

fn evaluate(
    path: &str,
    source: &str,
    limits: &EvalLimits,
    ctx: &DeclarationContext,
) -> starlark::Result<()> {
    let ast = AstModule::parse(path, source.to_owned(), &dialect())?;
    // The statement about to run. Resource-limit errors carry no span of their own; they
    // are reported at the statement that was executing when the limit tripped.
    let last_statement: RefCell<Option<FileSpan>> = RefCell::new(None);
    let record = |span: FileSpanRef, _continued: bool, _: &mut Evaluator<'_, '_, '_>| {
        *last_statement.borrow_mut() = Some(span.to_file_span());
    };
    let result: starlark::Result<()> = Module::with_temp_heap(|module| {
        let mut eval = Evaluator::new(&module);
        eval.extra = Some(ctx);
        eval.set_max_tick_count(limits.max_steps.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_heap_size(limits.max_bytes.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.set_max_callstack_size(limits.max_call_depth.max(1))
            .map_err(starlark::Error::new_other)?;
        eval.before_stmt_for_dap(BeforeStmtFunc::Fn(&record));
        eval.eval_module(ast, globals())?;
        Ok(())
    });
    result.map_err(|mut error| {
        if error.span().is_none()
            && let Some(span) = last_statement.borrow_mut().take()
        {
            error.set_span(span.span, &span.file);
        }
        error
    })
}

fn to_diagnostic(path: &str, error: &starlark::Error) -> ModuleDiagnostic {
    let message = error.without_diagnostic().to_string();
    let message = friendlier(message.trim());
    match error.span() {
        Some(span) => {
            let resolved = span.resolve_span();
            ModuleDiagnostic {
                message,
                path: path.to_owned(),
                line: one_based(resolved.begin.line),
                column: one_based(resolved.begin.column),
                end_line: one_based(resolved.end.line),
                end_column: one_based(resolved.end.column),
            }
        }
        None => ModuleDiagnostic {
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
