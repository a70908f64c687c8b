//! Document symbols: the targets of a manifest.

use once_model::TextRange;

use super::TargetSymbol;
use super::context::Ctx;

pub(crate) fn symbols(ctx: &Ctx<'_>) -> Vec<TargetSymbol> {
    let targets = ctx.targets();
    let len = ctx.text.len() as u32;
    targets
        .iter()
        .enumerate()
        .map(|(i, decl)| {
            let end = targets
                .get(i + 1)
                .map_or(len, |next| next.header_range.start);
            let end = once_graph::fixes::content_end(&ctx.text, decl.header_range.start, end)
                .unwrap_or(end);
            TargetSymbol {
                name: decl
                    .name
                    .as_ref()
                    .map_or_else(|| "(unnamed target)".to_owned(), |n| n.value.clone()),
                detail: decl.kind.as_ref().map(|k| k.value.clone()),
                range: ctx.range(TextRange {
                    start: decl.header_range.start,
                    end,
                }),
                selection_range: ctx.range(decl.anchor()),
            }
        })
        .collect()
}
