//! Code actions: mechanical fixes for the diagnostics overlapping a range.

use once_graph::{kind_catalog, workspace_diagnostics};
use once_model::{
    AttrType, Diagnostic, DiagnosticCode, LabelError, LineColRange, TextRange, resolve_reference,
};

use super::context::{Ctx, trim_end};
use super::{CodeAction, TextEdit};

/// A TOML literal that type-checks as a placeholder for `ty`.
fn placeholder(spec: &once_model::AttrSpec) -> String {
    if let Some(first) = spec.allowed_values.first() {
        return format!("\"{first}\"");
    }
    match &spec.ty {
        AttrType::Bool => "false".into(),
        AttrType::Int => "0".into(),
        AttrType::Float => "0.0".into(),
        AttrType::List(_) => "[]".into(),
        AttrType::Dict(_) => "{}".into(),
        _ => "\"\"".into(),
    }
}

pub(crate) fn code_actions(ctx: &Ctx<'_>, range: LineColRange) -> Vec<CodeAction> {
    let path = ctx.file.path(ctx.db).clone();
    let start = ctx.offset(range.start);
    let end = ctx.offset(range.end);
    let mut out = Vec::new();
    for diagnostic in workspace_diagnostics(ctx.db, ctx.ws).iter() {
        let (Some(file), Some(at)) = (&diagnostic.file, diagnostic.range) else {
            continue;
        };
        if *file != path || at.end < start || at.start > end {
            continue;
        }
        let diagnostic_range = ctx.range(at);
        out.extend(
            fixes(ctx, diagnostic, at)
                .into_iter()
                .map(|fix| CodeAction {
                    title: fix.title,
                    code: diagnostic.code.as_str().to_owned(),
                    diagnostic_range,
                    file: path.clone(),
                    edits: vec![fix.edit],
                    preferred: fix.preferred,
                }),
        );
    }
    out
}

/// One mechanical fix: a single edit.
struct Fix {
    title: String,
    edit: TextEdit,
    preferred: bool,
}

/// The fixes of a diagnostic at `at` of the manifest.
fn fixes(ctx: &Ctx<'_>, diagnostic: &Diagnostic, at: TextRange) -> Vec<Fix> {
    let written = ctx
        .text
        .get(at.start as usize..at.end as usize)
        .unwrap_or("");
    let replace = |title: String, new_text: String, preferred: bool| Fix {
        title,
        edit: TextEdit {
            range: ctx.range(at),
            new_text,
        },
        preferred,
    };
    match diagnostic.code {
        DiagnosticCode::UnknownTargetKind => {
            let unquoted = written.trim_matches('"');
            let catalog = kind_catalog(ctx.db, ctx.ws);
            once_graph::text::closest(unquoted, catalog.names(), 3)
                .into_iter()
                .enumerate()
                .map(|(i, name)| {
                    replace(format!("Use kind `{name}`"), format!("\"{name}\""), i == 0)
                })
                .collect()
        }
        DiagnosticCode::UnknownAttr => closest_attr(ctx, at, written)
            .map(|best| replace(format!("Rename `{written}` to `{best}`"), best, true))
            .into_iter()
            .collect(),
        DiagnosticCode::InvalidLabel | DiagnosticCode::InvalidVisibility => {
            let unquoted = written.trim_matches('"');
            bazel_rewrite(ctx, unquoted)
                .map(|s| {
                    replace(
                        format!("Rewrite `{unquoted}` as `{s}`"),
                        format!("\"{s}\""),
                        true,
                    )
                })
                .into_iter()
                .collect()
        }
        DiagnosticCode::MissingRequiredAttr => {
            add_required_attr(ctx, at, diagnostic.attribute.as_deref())
                .map(|(title, edit)| Fix {
                    title,
                    edit,
                    preferred: true,
                })
                .into_iter()
                .collect()
        }
        _ => Vec::new(),
    }
}

/// The attribute of the kind of the target at `at` closest to the `written` one.
fn closest_attr(ctx: &Ctx<'_>, at: TextRange, written: &str) -> Option<String> {
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let schema = catalog.get(&ctx.target_at(at.start)?.kind.as_ref()?.value)?;
    once_graph::text::closest(written, schema.attrs.iter().map(|a| a.name.as_str()), 1)
        .into_iter()
        .next()
}

/// The `once` form of a Bazel-style label (`//a:b` → `a/b`).
fn bazel_rewrite(ctx: &Ctx<'_>, written: &str) -> Option<String> {
    match resolve_reference(ctx.package_path(), written) {
        Err(LabelError::BazelSyntax { suggestion }) if !suggestion.is_empty() => Some(suggestion),
        _ => None,
    }
}

/// The edit adding the missing required attribute of the target at `at`.
fn add_required_attr(
    ctx: &Ctx<'_>,
    at: TextRange,
    attribute: Option<&str>,
) -> Option<(String, TextEdit)> {
    let name = attribute?.strip_prefix("attrs.")?;
    let decl = ctx.target_at(at.start)?;
    let schema = kind_catalog(ctx.db, ctx.ws).get(&decl.kind.as_ref()?.value)?;
    let spec = schema.attr(name)?;
    let line = format!("{name} = {}", placeholder(spec));
    let targets = ctx.targets();
    let position = targets.iter().position(|t| std::ptr::eq(t, decl))?;
    let section_end = targets
        .get(position + 1)
        .map_or(ctx.text.len() as u32, |next| next.header_range.start);
    let text = &ctx.text;
    // After the last attribute written as a `key = value` line of `[target.attrs]`, else a
    // new `[target.attrs]` table at the end of the target's section.
    if let Some((key, value)) = decl.attrs.last() {
        let key_line_start = text[..key.range.start as usize]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        if !text[key_line_start..key.range.start as usize]
            .trim()
            .is_empty()
        {
            return None;
        }
        let end = text[value.range.end as usize..]
            .find('\n')
            .map_or(text.len(), |i| value.range.end as usize + i) as u32;
        let insert = ctx.range(TextRange { start: end, end });
        return Some((
            format!("Add required attribute `{name}`"),
            TextEdit {
                range: insert,
                new_text: format!("\n{line}"),
            },
        ));
    }
    let end = trim_end(text, decl.header_range.start, section_end);
    let insert = ctx.range(TextRange { start: end, end });
    Some((
        format!("Add required attribute `{name}`"),
        TextEdit {
            range: insert,
            new_text: format!("\n\n[target.attrs]\n{line}"),
        },
    ))
}
