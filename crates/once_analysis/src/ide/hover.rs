//! Hover: the kind, attribute, dependency role or target under the cursor, the files a
//! `srcs` entry selects or leaves out, or a key of the manifest vocabulary, as markdown.

use once_db::{GlobEntry, RootDatabase, Workspace};
use once_graph::{
    SourcePattern, SourceSelection, TargetDecl, kind_catalog, package_by_path, parse_manifest,
    target_summaries,
};
use once_model::{KindSchema, LineCol, ManifestTable, TargetLabel, TextRange, resolve_reference};

use super::HoverInfo;
use super::context::{Ctx, contains, dep_entries};
use super::cursor::key_at;

pub(super) fn kind_markdown(kind: &KindSchema) -> String {
    let mut out = format!("**kind** `{}`\n\n{}", kind.name, kind.docs.trim());
    if !kind.capabilities.is_empty() {
        let caps: Vec<String> = kind
            .capabilities
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        out.push_str(&format!("\n\nCapabilities: {}", caps.join(", ")));
    }
    if !kind.providers.is_empty() {
        out.push_str(&format!("\n\nProvides: {}", backticked(&kind.providers)));
    }
    let required: Vec<String> = kind
        .attrs
        .iter()
        .filter(|a| a.required)
        .map(|a| a.name.clone())
        .collect();
    if !required.is_empty() {
        out.push_str(&format!(
            "\n\nRequired attributes: {}",
            backticked(&required)
        ));
    }
    out
}

pub(super) fn backticked(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn attr_markdown(kind: &KindSchema, attr: &once_model::AttrSpec) -> String {
    let mut out = format!(
        "**attribute** `{}`: `{}`{}\n\n{}",
        attr.name,
        attr.ty,
        if attr.required { " (required)" } else { "" },
        attr.docs.trim()
    );
    if let Some(default) = &attr.default {
        out.push_str(&format!("\n\nDefault: `{default}`"));
    }
    if !attr.allowed_values.is_empty() {
        out.push_str(&format!(
            "\n\nAllowed: {}",
            backticked(&attr.allowed_values)
        ));
    }
    if let Some((minimum, maximum)) = attr.range {
        out.push_str(&format!("\n\nFrom {minimum} to {maximum}"));
    }
    out.push_str(&format!("\n\nOf kind `{}`.", kind.name));
    out
}

/// The summary of a resolved label, as markdown, or `None` when it names nothing.
fn target_markdown(db: &RootDatabase, ws: Workspace, label: &TargetLabel) -> Option<String> {
    let package = package_by_path(db, ws).get(&label.package)?;
    let summaries = target_summaries(db, package);
    let summary = summaries.iter().find(|s| s.name == label.name)?;
    let mut out = format!("**target** `{}`", label.id());
    match &summary.kind {
        Some(kind) => {
            out.push_str(&format!("\n\nKind: `{kind}`"));
            if let Some(schema) = kind_catalog(db, ws).get(kind) {
                let caps: Vec<String> =
                    schema.capabilities.iter().map(|c| c.name.clone()).collect();
                if !caps.is_empty() {
                    out.push_str(&format!("\n\nCapabilities: {}", backticked(&caps)));
                }
            }
        }
        None => out.push_str("\n\nKind: unknown"),
    }
    if !summary.providers.is_empty() {
        out.push_str(&format!("\n\nProvides: {}", backticked(&summary.providers)));
    }
    out.push_str(&format!(
        "\n\nDeclared in `{}`",
        package.manifest(db).path(db)
    ));
    Some(out)
}

pub(crate) fn hover(ctx: &Ctx<'_>, position: LineCol) -> Option<HoverInfo> {
    let offset = ctx.offset(position);
    let (markdown, range) =
        target_hover(ctx, offset).or_else(|| manifest_key_hover(ctx, offset))?;
    Some(HoverInfo {
        markdown,
        range: ctx.range(range),
    })
}

/// On a part of a target that its kind describes, or on a dependency entry.
fn target_hover(ctx: &Ctx<'_>, offset: u32) -> Option<(String, TextRange)> {
    let decl = ctx.target_at(offset)?;
    let schema = decl
        .kind
        .as_ref()
        .and_then(|k| kind_catalog(ctx.db, ctx.ws).get(&k.value));
    kind_hover(decl, schema, offset)
        .or_else(|| attr_hover(decl, schema?, offset))
        .or_else(|| role_hover(decl, schema?, offset))
        .or_else(|| entry_hover(ctx, decl, offset))
        .or_else(|| srcs_hover(ctx, decl, offset))
}

/// On a key of the manifest vocabulary (in a pair or a header): its shape and docs.
fn manifest_key_hover(ctx: &Ctx<'_>, offset: u32) -> Option<(String, TextRange)> {
    let root = parse_manifest(ctx.db, ctx.file).syntax();
    let at = key_at(&root, offset)?;
    let table: Vec<&str> = at.table.iter().map(String::as_str).collect();
    let key = ManifestTable::at(&table)?.key(&at.name)?;
    let required = if key.required { ", required" } else { "" };
    let markdown = format!(
        "**key** `{}`: {}{required}\n\n{}",
        key.path().join("."),
        key.shape.describe(),
        key.docs
    );
    let range = TextRange {
        start: at.start,
        end: at.end,
    };
    Some((markdown, range))
}

/// On the kind: its contract, or that it is unknown.
fn kind_hover(
    decl: &TargetDecl,
    schema: Option<&KindSchema>,
    offset: u32,
) -> Option<(String, TextRange)> {
    let kind = decl.kind.as_ref().filter(|k| contains(k.range, offset))?;
    let markdown = match schema {
        Some(schema) => kind_markdown(schema),
        None => format!("target kind `{}` is not known", kind.value),
    };
    Some((markdown, kind.range))
}

/// On an attribute's name: its type and docs.
fn attr_hover(decl: &TargetDecl, schema: &KindSchema, offset: u32) -> Option<(String, TextRange)> {
    let (key, _) = decl.attrs.iter().find(|(k, _)| contains(k.range, offset))?;
    let spec = schema.attr(&key.value)?;
    Some((attr_markdown(schema, spec), key.range))
}

/// On a dependency role's name: its docs and the providers it accepts.
fn role_hover(decl: &TargetDecl, schema: &KindSchema, offset: u32) -> Option<(String, TextRange)> {
    let (role, _) = decl
        .dependencies
        .iter()
        .find(|(r, _)| contains(r.range, offset))?;
    let spec = schema.dependency_role(&role.value)?;
    let mut markdown = format!(
        "**dependency role** `{}`\n\n{}",
        spec.name,
        spec.docs.trim()
    );
    if !spec.providers.is_empty() {
        markdown.push_str(&format!(
            "\n\nAccepts targets providing: {}",
            backticked(&spec.providers)
        ));
    }
    Some((markdown, role.range))
}

/// On a dependency entry: the target it names, or why it names none.
fn entry_hover(ctx: &Ctx<'_>, decl: &TargetDecl, offset: u32) -> Option<(String, TextRange)> {
    let (_, entry) = dep_entries(decl)
        .into_iter()
        .find(|(_, e)| contains(e.range, offset))?;
    let markdown = match resolve_reference(ctx.package_path(), &entry.value) {
        Ok(label) => target_markdown(ctx.db, ctx.ws, &label)
            .unwrap_or_else(|| format!("no target `{}` in the workspace", label.id())),
        Err(err) => format!("`{}` {err}", entry.value),
    };
    Some((markdown, entry.range))
}

/// How many files a hover on a `srcs` entry names before it only counts them.
const FILES_NAMED: usize = 10;

/// On a `srcs` entry: the package files a pattern matches and how many of them `srcs`
/// selects in the end, or the files an exclusion (`!pattern`) leaves out of what the
/// entries before it select.
fn srcs_hover(ctx: &Ctx<'_>, decl: &TargetDecl, offset: u32) -> Option<(String, TextRange)> {
    let index = decl.srcs.iter().position(|e| contains(e.range, offset))?;
    let written = &decl.srcs[index];
    let entry = GlobEntry::parse(&written.value);
    let what = if entry.is_exclusion() {
        "exclusion"
    } else {
        "source pattern"
    };
    let title = format!("**{what}** `{}`", written.value);
    let matcher = match SourcePattern::cached(entry.pattern) {
        Ok(matcher) => matcher,
        Err(why) => return Some((format!("{title}\n\nInvalid: {why}"), written.range)),
    };
    let files = ctx.package.files(ctx.db);
    let texts = || decl.srcs.iter().map(|e| e.value.as_str());
    let markdown = if entry.is_exclusion() {
        let before = SourceSelection::new(texts().take(index));
        let left_out: Vec<&str> = files
            .iter()
            .filter(|file| matcher.matches(file) && before.selects(file))
            .map(String::as_str)
            .collect();
        format!(
            "{title}\n\nLeaves out {} that the entries before it select{}",
            count(left_out.len()),
            named(&left_out)
        )
    } else {
        let all = SourceSelection::new(texts());
        let matched: Vec<&str> = files
            .iter()
            .filter(|file| matcher.matches(file))
            .map(String::as_str)
            .collect();
        let selected: Vec<&str> = matched
            .iter()
            .copied()
            .filter(|file| all.selects(file))
            .collect();
        let mut out = format!(
            "{title}\n\nMatches {} of the package{}",
            count(matched.len()),
            named(&matched)
        );
        if selected.len() < matched.len() {
            out.push_str(&format!(
                "\n\nExclusions after it leave out {}: `srcs` selects {} of them",
                matched.len() - selected.len(),
                selected.len()
            ));
        }
        out
    };
    Some((
        format!("{markdown}\n\nEntries apply in order; the last one matching a file decides."),
        written.range,
    ))
}

fn count(files: usize) -> String {
    match files {
        1 => "1 file".to_owned(),
        n => format!("{n} files"),
    }
}

/// `: `a`, `b`, …` naming the first [`FILES_NAMED`] files, or nothing for none.
fn named(files: &[&str]) -> String {
    if files.is_empty() {
        return String::new();
    }
    let mut names: Vec<String> = files
        .iter()
        .take(FILES_NAMED)
        .map(|f| format!("`{f}`"))
        .collect();
    if files.len() > FILES_NAMED {
        names.push("…".to_owned());
    }
    format!(": {}", names.join(", "))
}
