//! Guarded replacements for the standard builtins that could otherwise do unbounded work
//! inside one call, where no statement or step check can interrupt them.
//!
//! - `range` refuses more elements than the step limit: a longer range could not be
//!   looped over anyway, and every materialisation of one (`list`, `sorted`, `tuple`,
//!   `enumerate`, …) is then bounded too.
//! - `str`, `repr` and `json.encode` first measure their argument without recursion: a
//!   value nested deeper than [`MAX_RENDER_DEPTH`], or whose text would exceed the heap
//!   limit (a small value that shares itself, `x = [x, x]` forty times, expands to 2^40
//!   elements), is refused before the recursive conversion starts.
//!
//! - A repetition of literals (`"x" * 2000000000`, `[0] * 2000000000`) whose result is
//!   larger than the heap limit is refused before evaluation starts
//!   ([`check_literal_repetitions`]): starlark folds constant operations while it compiles
//!   a statement, before any per-statement check could run.
//!
//! Other operators cannot be replaced (`s * n` with a computed `n`, `==` on a deeply
//! shared value); those are bounded by the evaluation thread's deadline and, in the
//! binary, by the isolated evaluator process (see `crate::runner`).

use std::collections::HashMap;
use std::num::NonZeroI32;
use std::sync::OnceLock;

use anyhow::bail;
use starlark::environment::{Globals, GlobalsBuilder, LibraryExtension};
use starlark::eval::Evaluator;
use starlark::starlark_module;
use starlark::values::dict::DictRef;
use starlark::values::list::ListRef;
use starlark::values::namespace::FrozenNamespace;
use starlark::values::range::Range;
use starlark::values::string::StarlarkStr;
use starlark::values::structs::StructRef;
use starlark::values::tuple::TupleRef;
use starlark::values::{FrozenValue, StringValue, Value, ValueIdentity, ValueLike};

use starlark::syntax::AstModule;
use starlark_syntax::lexer::TokenInt;
use starlark_syntax::syntax::ast::{AstExpr, AstLiteral, BinOp, Expr};

use crate::values::DeclarationContext;

/// How deep a value `str`, `repr` and `json.encode` convert may nest.
pub(crate) const MAX_RENDER_DEPTH: usize = 1000;

/// The per-evaluation bounds of the guarded builtins, from `Evaluator::extra`.
fn bounds(eval: &Evaluator<'_, '_, '_>) -> (u64, usize) {
    eval.extra
        .and_then(|extra| extra.downcast_ref::<DeclarationContext>())
        .map_or((u64::MAX, usize::MAX), |ctx| {
            (ctx.max_range_len.get(), ctx.max_render_bytes.get())
        })
}

/// The children of a container value (lists, tuples, dict keys and values, struct
/// fields); nothing for scalars.
fn children<'v>(value: Value<'v>) -> Vec<Value<'v>> {
    if let Some(list) = ListRef::from_value(value) {
        list.content().to_vec()
    } else if let Some(tuple) = TupleRef::from_value(value) {
        tuple.content().to_vec()
    } else if let Some(dict) = DictRef::from_value(value) {
        dict.iter().flat_map(|(k, v)| [k, v]).collect()
    } else if let Some(fields) = StructRef::from_value(value) {
        fields.iter().map(|(_, v)| v).collect()
    } else {
        Vec::new()
    }
}

/// Roughly how many bytes a scalar renders to.
fn leaf_bytes(value: Value<'_>) -> usize {
    match value.unpack_str() {
        Some(text) => text.len() + 2,
        None => 24,
    }
}

/// Refuses `value` when its rendering would nest deeper than [`MAX_RENDER_DEPTH`] or
/// exceed `max_bytes`. Shared sub-values are measured once (memoised by identity), so the
/// check is linear in the number of distinct values even when the expansion is not; a
/// cycle counts as the `[...]` the rendering prints for it. No recursion: the values
/// being measured are an explicit stack.
fn check_renderable<'v>(value: Value<'v>, what: &str, max_bytes: usize) -> anyhow::Result<()> {
    /// A container being measured: its children still to visit and its size so far.
    struct Open<'v> {
        value: Value<'v>,
        pending: Vec<Value<'v>>,
        size: usize,
    }
    let open = |value: Value<'v>| {
        let mut pending = children(value);
        pending.reverse();
        Open {
            value,
            pending,
            size: 2,
        }
    };
    // Per container: `None` while it is open (a cycle leads back to it), then its size.
    let mut sizes: HashMap<ValueIdentity<'v>, Option<usize>> = HashMap::new();
    if children(value).is_empty() {
        return Ok(());
    }
    sizes.insert(value.identity(), None);
    let mut stack = vec![open(value)];
    while let Some(top) = stack.last_mut() {
        let added = match top.pending.pop() {
            Some(child) => match sizes.get(&child.identity()) {
                Some(Some(size)) => *size,
                Some(None) => 5,
                None if children(child).is_empty() => leaf_bytes(child),
                None => {
                    if stack.len() >= MAX_RENDER_DEPTH {
                        bail!("{what}: the value nests more than {MAX_RENDER_DEPTH} levels deep");
                    }
                    sizes.insert(child.identity(), None);
                    stack.push(open(child));
                    continue;
                }
            },
            None => {
                let Some(done) = stack.pop() else { break };
                sizes.insert(done.value.identity(), Some(done.size));
                done.size
            }
        };
        if let Some(parent) = stack.last_mut() {
            parent.size = parent.size.saturating_add(added.saturating_add(2));
            if parent.size > max_bytes {
                bail!("{what}: the text would exceed the heap limit of {max_bytes} bytes");
            }
        }
    }
    Ok(())
}

/// `str`, `repr` and `range` with the guards of this module; they keep the standard
/// builtins' names, signatures and type meaning (`x: str` still names the string type).
#[starlark_module]
pub(crate) fn guarded_globals(builder: &mut GlobalsBuilder) {
    /// [range](https://github.com/bazelbuild/starlark/blob/master/spec.md#range): a range
    /// of integers, `range(stop)`, `range(start, stop)` or `range(start, stop, step)`; at
    /// most as long as the step limit.
    #[starlark(as_type = Range, speculative_exec_safe)]
    fn range(
        #[starlark(require = pos)] a1: i32,
        #[starlark(require = pos)] a2: Option<i32>,
        #[starlark(require = pos, default = 1)] step: i32,
        eval: &mut Evaluator<'_, '_, '_>,
    ) -> anyhow::Result<Range> {
        let (start, stop) = match a2 {
            None => (0, a1),
            Some(stop) => (a1, stop),
        };
        let Some(step) = NonZeroI32::new(step) else {
            bail!("Third argument of range (step) cannot be zero");
        };
        let span = i64::from(stop) - i64::from(start);
        let step_wide = i64::from(step.get());
        let len = if span == 0 || (span > 0) != (step_wide > 0) {
            0
        } else {
            (span.unsigned_abs() - 1) / step_wide.unsigned_abs() + 1
        };
        let (max_len, _) = bounds(eval);
        if len > max_len {
            bail!(
                "range of {len} elements: longer than the step limit of {max_len}, so it could \
                 never be iterated; use a smaller range"
            );
        }
        Ok(Range::new(start, stop, step))
    }

    /// [str](https://github.com/bazelbuild/starlark/blob/master/spec.md#str): formats its
    /// argument as a string; values too deep or too large to render are refused.
    #[starlark(as_type = StarlarkStr, speculative_exec_safe)]
    fn str<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<StringValue<'v>> {
        if let Some(a) = StringValue::new(a) {
            return Ok(a);
        }
        check_renderable(a, "str()", bounds(eval).1)?;
        Ok(eval.heap().alloc_str(&a.to_str()))
    }

    /// [repr](https://github.com/bazelbuild/starlark/blob/master/spec.md#repr): formats
    /// its argument as source text; values too deep or too large to render are refused.
    #[starlark(speculative_exec_safe)]
    fn repr<'v>(
        #[starlark(require = pos)] a: Value<'v>,
        eval: &mut Evaluator<'v, '_, '_>,
    ) -> anyhow::Result<StringValue<'v>> {
        check_renderable(a, "repr()", bounds(eval).1)?;
        Ok(eval.heap().alloc_str(&a.to_repr()))
    }
}

/// The `json` namespace: the standard one, with an `encode` that refuses values too deep
/// or too large to render.
pub(crate) fn json_namespace(builder: &mut GlobalsBuilder) {
    guarded_json_encode(builder);
    if let Some(decode) = standard_json_decode() {
        builder.set("decode", decode);
    }
}

/// The standard `json.decode` (its nesting is limited by the JSON parser). The globals it
/// lives in are kept for the life of the process, as the value points into them.
fn standard_json_decode() -> Option<FrozenValue> {
    static STANDARD: OnceLock<Globals> = OnceLock::new();
    let standard = STANDARD.get_or_init(|| Globals::extended_by(&[LibraryExtension::Json]));
    let (_, json) = standard.iter().find(|(name, _)| *name == "json")?;
    json.downcast_ref::<FrozenNamespace>()?.get("decode")
}

#[starlark_module]
fn guarded_json_encode(builder: &mut GlobalsBuilder) {
    /// The JSON text of a value (`None`, bools, numbers, strings, lists, tuples, dicts
    /// with string keys, structs).
    fn encode(
        #[starlark(require = pos)] x: Value,
        eval: &mut Evaluator<'_, '_, '_>,
    ) -> anyhow::Result<String> {
        check_renderable(x, "json.encode()", bounds(eval).1)?;
        x.to_json()
    }
}

/// How many bytes an expression built from literals, `+` and `*` evaluates to, at least
/// (`None` when it depends on anything else). List and tuple elements count 8 bytes.
fn literal_size(expr: &AstExpr) -> Option<u128> {
    match &expr.node {
        Expr::Literal(AstLiteral::String(text)) => Some(text.node.len() as u128),
        Expr::Literal(AstLiteral::Bytes(bytes)) => Some(bytes.node.len() as u128),
        Expr::List(items) | Expr::Tuple(items) => Some(8 * items.len() as u128),
        Expr::Op(left, BinOp::Add, right) => {
            Some(literal_size(left)?.saturating_add(literal_size(right)?))
        }
        Expr::Op(left, BinOp::Multiply, right) => match (literal_int(left), literal_int(right)) {
            (_, Some(count)) => Some(literal_size(left)?.saturating_mul(count)),
            (Some(count), _) => Some(literal_size(right)?.saturating_mul(count)),
            _ => None,
        },
        _ => None,
    }
}

/// The value of a non-negative integer literal (saturated), `None` for anything else.
fn literal_int(expr: &AstExpr) -> Option<u128> {
    match &expr.node {
        Expr::Literal(AstLiteral::Int(int)) => match &int.node {
            TokenInt::I32(n) => Some(u128::try_from(*n).unwrap_or(0)),
            TokenInt::BigInt(_) => Some(u128::MAX),
        },
        _ => None,
    }
}

/// The first repetition of literals in `ast` whose result exceeds `max_bytes`, with a
/// message.
pub(crate) fn check_literal_repetitions(
    ast: &AstModule,
    max_bytes: usize,
) -> Option<(starlark::codemap::Span, String)> {
    fn visit(
        expr: &AstExpr,
        max_bytes: u128,
        found: &mut Option<(starlark::codemap::Span, String)>,
    ) {
        if found.is_some() {
            return;
        }
        if let Expr::Op(_, BinOp::Multiply, _) = &expr.node
            && let Some(size) = literal_size(expr)
            && size > max_bytes
        {
            *found = Some((
                expr.span,
                format!(
                    "this repetition makes a value of at least {size} bytes, more than the heap \
                     limit of {max_bytes} bytes"
                ),
            ));
            return;
        }
        expr.visit_expr(|child| visit(child, max_bytes, found));
    }
    let mut found = None;
    ast.statement()
        .visit_expr(|expr| visit(expr, max_bytes as u128, &mut found));
    found
}
