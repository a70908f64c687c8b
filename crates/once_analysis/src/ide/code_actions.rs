//! Code actions: mechanical fixes for the diagnostics overlapping a range.

use once_graph::{kind_catalog, workspace_diagnostics};
use once_model::{
    AttrType, DiagnosticCode, LabelError, LineColRange, TextRange, resolve_reference,
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
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let mut out = Vec::new();
    for diagnostic in workspace_diagnostics(ctx.db, ctx.ws).iter() {
        let (Some(file), Some(drange)) = (&diagnostic.file, diagnostic.range) else {
            continue;
        };
        if *file != path || drange.end < start || drange.start > end {
            continue;
        }
        let diagnostic_range = ctx.range(drange);
        let code = diagnostic.code.as_str().to_owned();
        let action = |title: String, edits: Vec<TextEdit>, preferred: bool| CodeAction {
            title,
            code: code.clone(),
            diagnostic_range,
            file: path.clone(),
            edits,
            preferred,
        };
        let written = ctx
            .text
            .get(drange.start as usize..drange.end as usize)
            .unwrap_or("");
        let unquoted = written.trim_matches('"');
        match diagnostic.code {
            DiagnosticCode::UnknownTargetKind => {
                for (i, name) in once_graph::text::closest(unquoted, catalog.names(), 3)
                    .into_iter()
                    .enumerate()
                {
                    out.push(action(
                        format!("Use kind `{name}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: format!("\"{name}\""),
                        }],
                        i == 0,
                    ));
                }
            }
            DiagnosticCode::UnknownAttr => {
                let schema = ctx
                    .target_at(drange.start)
                    .and_then(|d| d.kind.as_ref())
                    .and_then(|k| catalog.get(&k.value));
                if let Some(schema) = schema
                    && let Some(best) = once_graph::text::closest(
                        written,
                        schema.attrs.iter().map(|a| a.name.as_str()),
                        1,
                    )
                    .into_iter()
                    .next()
                {
                    out.push(action(
                        format!("Rename `{written}` to `{best}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: best,
                        }],
                        true,
                    ));
                }
            }
            DiagnosticCode::InvalidLabel | DiagnosticCode::InvalidVisibility => {
                if let Err(LabelError::BazelSyntax { suggestion }) =
                    resolve_reference(ctx.package_path(), unquoted)
                    && !suggestion.is_empty()
                {
                    out.push(action(
                        format!("Rewrite `{unquoted}` as `{suggestion}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: format!("\"{suggestion}\""),
                        }],
                        true,
                    ));
                }
            }
            DiagnosticCode::MissingRequiredAttr => {
                if let Some(edit) = add_required_attr(ctx, drange, diagnostic.attribute.as_deref())
                {
                    out.push(action(edit.0, vec![edit.1], true));
                }
            }
            _ => {}
        }
    }
    out
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
