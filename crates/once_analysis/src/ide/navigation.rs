//! Navigation: where a label or kind is declared, and every dependency entry naming a
//! target.

use once_db::{RootDatabase, Workspace, line_index, source_text};
use once_graph::{kind_catalog, manifest, package_by_path, workspace_packages};
use once_model::{KindOrigin, LineCol, LineColRange, TargetLabel, TextRange, resolve_reference};

use super::FileRange;
use super::context::{Ctx, contains, dep_entries};

/// Where the target a label names is declared.
fn declaration(db: &RootDatabase, ws: Workspace, label: &TargetLabel) -> Option<FileRange> {
    let package = package_by_path(db, ws).get(&label.package)?;
    let decl = manifest(db, package)
        .targets
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.value == label.name))?;
    let file = package.manifest(db);
    Some(FileRange {
        file: file.path(db).clone(),
        range: line_index(db, file).range(decl.anchor()),
    })
}

pub(crate) fn definition(ctx: &Ctx<'_>, position: LineCol) -> Vec<FileRange> {
    let offset = ctx.offset(position);
    let Some(decl) = ctx.target_at(offset) else {
        return Vec::new();
    };
    if let Some(kind) = &decl.kind
        && contains(kind.range, offset)
    {
        return kind_definition(ctx, &kind.value).into_iter().collect();
    }
    for (_, entry) in dep_entries(decl) {
        if contains(entry.range, offset) {
            return resolve_reference(ctx.package_path(), &entry.value)
                .ok()
                .and_then(|label| declaration(ctx.db, ctx.ws, &label))
                .into_iter()
                .collect();
        }
    }
    Vec::new()
}

/// Where a project kind is declared: its name in its module's `target_kind(name = …)`,
/// else the module's start. Built-in kinds have no file to go to.
fn kind_definition(ctx: &Ctx<'_>, kind: &str) -> Option<FileRange> {
    let schema = kind_catalog(ctx.db, ctx.ws).get(kind)?;
    let KindOrigin::Module(path) = &schema.origin else {
        return None;
    };
    let range = ctx.db.file(path).map(|file| {
        let text = &source_text(ctx.db, file).text;
        let quoted = [format!("\"{kind}\""), format!("'{kind}'")];
        let found = quoted.iter().find_map(|q| text.find(q.as_str()));
        let start = found.map_or(0, |i| i as u32 + 1);
        let end = start + found.map_or(0, |_| kind.len() as u32);
        line_index(ctx.db, file).range(TextRange { start, end })
    });
    let start = LineCol { line: 1, column: 1 };
    Some(FileRange {
        file: path.clone(),
        range: range.unwrap_or(LineColRange { start, end: start }),
    })
}

pub(crate) fn references(
    ctx: &Ctx<'_>,
    position: LineCol,
    include_declaration: bool,
) -> Vec<FileRange> {
    let offset = ctx.offset(position);
    let Some(decl) = ctx.target_at(offset) else {
        return Vec::new();
    };
    // On a dependency entry: the references of the target it names; else of this target.
    let label = dep_entries(decl)
        .into_iter()
        .find(|(_, entry)| contains(entry.range, offset))
        .and_then(|(_, entry)| resolve_reference(ctx.package_path(), &entry.value).ok())
        .or_else(|| {
            decl.name
                .as_ref()
                .map(|n| TargetLabel::new(ctx.package_path(), n.value.clone()))
        });
    let Some(label) = label else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if include_declaration && let Some(declared) = declaration(ctx.db, ctx.ws, &label) {
        out.push(declared);
    }
    for &package in workspace_packages(ctx.db, ctx.ws).iter() {
        let manifest = manifest(ctx.db, package);
        let file = package.manifest(ctx.db);
        let mut index = None;
        for target in &manifest.targets {
            for (_, entry) in dep_entries(target) {
                if resolve_reference(&manifest.package, &entry.value).is_ok_and(|l| l == label) {
                    let index = index.get_or_insert_with(|| line_index(ctx.db, file));
                    out.push(FileRange {
                        file: manifest.file.clone(),
                        range: index.range(entry.range),
                    });
                }
            }
        }
    }
    out
}
