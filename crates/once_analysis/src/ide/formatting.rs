//! Formatting: the whole-file edit `once fmt` would make.

use once_model::TextRange;

use super::TextEdit;
use super::context::Ctx;
use crate::format::format_manifest;

pub(crate) fn formatting(ctx: &Ctx<'_>) -> Option<TextEdit> {
    let formatted = format_manifest(&ctx.text)?;
    if *formatted == *ctx.text {
        return None;
    }
    Some(TextEdit {
        range: ctx.range(TextRange {
            start: 0,
            end: ctx.text.len() as u32,
        }),
        new_text: formatted,
    })
}
