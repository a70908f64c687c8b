//! Code actions: the fixes the diagnostics overlapping a range carry.
//!
//! The producers of diagnostics attach their fixes ([`once_model::Fix`]); this only picks
//! the diagnostics of the range and hands their located fixes over, so the editor offers
//! exactly what `once query validate-workspace --fix` and MCP clients apply.

use once_model::LineColRange;

use super::CodeAction;
use super::context::Ctx;

pub(crate) fn code_actions(ctx: &Ctx<'_>, range: LineColRange) -> Vec<CodeAction> {
    let path = ctx.file.path(ctx.db).clone();
    let start = ctx.offset(range.start);
    let end = ctx.offset(range.end);
    let mut out = Vec::new();
    for located in crate::located_diagnostics_of_file(ctx.db, ctx.file).iter() {
        let (Some(at), Some(diagnostic_range)) = (located.diagnostic.range, located.range) else {
            continue;
        };
        if at.end < start || at.start > end {
            continue;
        }
        out.extend(located.fixes.iter().map(|fix| CodeAction {
            title: fix.title.clone(),
            code: located.diagnostic.code.as_str().to_owned(),
            diagnostic_range,
            file: path.clone(),
            edits: fix.edits.clone(),
            preferred: fix.preferred,
        }));
    }
    out
}
