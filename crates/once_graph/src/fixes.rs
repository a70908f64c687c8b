//! Machine-applicable fixes that need the manifest's text, not just the range a diagnostic
//! points at: inserting a missing required attribute where the target's attributes are.

use once_model::{AttrSpec, AttrType, Diagnostic, DiagnosticCode, Fix, TextRange};

use crate::kinds::KindCatalog;
use crate::manifests::Manifest;

/// A value of the attribute's type to start from: its first allowed value, else an empty
/// value of its type.
pub fn placeholder(spec: &AttrSpec) -> String {
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

/// Adds the text-dependent fixes to `diagnostics` of `manifest` (whose text is `text`).
pub(crate) fn add_text_fixes(
    text: &str,
    manifest: &Manifest,
    catalog: &KindCatalog,
    diagnostics: &mut [Diagnostic],
) {
    for diagnostic in diagnostics {
        if diagnostic.code != DiagnosticCode::MissingRequiredAttr
            || diagnostic.file.as_deref() != Some(manifest.file.as_str())
        {
            continue;
        }
        let (Some(at), Some(name)) = (
            diagnostic.range,
            diagnostic
                .attribute
                .as_deref()
                .and_then(|a| a.strip_prefix("attrs.")),
        ) else {
            continue;
        };
        if let Some(fix) = required_attr_fix(text, manifest, catalog, at, name) {
            diagnostic.fixes.push(fix);
        }
    }
}

/// The fix adding required attribute `name` to the target whose section holds `at`: a
/// `name = <placeholder>` line after its last attribute line, else a new `[target.attrs]`
/// table at the end of its section.
fn required_attr_fix(
    text: &str,
    manifest: &Manifest,
    catalog: &KindCatalog,
    at: TextRange,
    name: &str,
) -> Option<Fix> {
    let position = manifest
        .targets
        .iter()
        .rposition(|t| t.header_range.start <= at.start)?;
    let decl = &manifest.targets[position];
    let spec = catalog.get(&decl.kind.as_ref()?.value)?.attr(name)?;
    let line = format!("{name} = {}", placeholder(spec));
    let title = format!("Add required attribute `{name}`");
    if let Some((key, value)) = decl.attrs.last() {
        // Only after a `key = value` line of `[target.attrs]`, not an inline table.
        let key_start = key.range.start as usize;
        let line_start = text.get(..key_start)?.rfind('\n').map_or(0, |i| i + 1);
        if !text.get(line_start..key_start)?.trim().is_empty() {
            return None;
        }
        let value_end = value.range.end as usize;
        let end = text
            .get(value_end..)?
            .find('\n')
            .map_or(text.len(), |i| value_end + i) as u32;
        return Some(Fix::replace(
            title,
            true,
            TextRange::empty(end),
            format!("\n{line}"),
        ));
    }
    let section_end = manifest
        .targets
        .get(position + 1)
        .map_or(text.len() as u32, |next| next.header_range.start);
    let end = content_end(text, decl.header_range.start, section_end)?;
    Some(Fix::replace(
        title,
        true,
        TextRange::empty(end),
        format!("\n\n[target.attrs]\n{line}"),
    ))
}

/// The end of the last line of `text[start..end]` that is neither blank nor a comment.
pub fn content_end(text: &str, start: u32, end: u32) -> Option<u32> {
    let mut rest = text.get(start as usize..end as usize)?.trim_end();
    while let Some(nl) = rest.rfind('\n') {
        if !rest[nl + 1..].trim_start().starts_with('#') {
            break;
        }
        rest = rest[..nl].trim_end();
    }
    Some(start + rest.len() as u32)
}
