//! What every editor feature starts from: the manifest a request is about ([`Ctx`]), and
//! small helpers over its declarations.

use once_db::{File, Package, RootDatabase, Workspace, line_index, source_text};
use once_graph::{Configurable, DepList, Spanned, TargetDecl, manifest, package_by_path};
use once_model::{LineCol, LineColRange, TextRange};

/// The manifest a request is about: its file, package and text, in one database snapshot.
pub(crate) struct Ctx<'a> {
    pub(super) db: &'a RootDatabase,
    pub(super) ws: Workspace,
    pub(super) file: File,
    pub(super) package: Package,
    pub(super) text: std::sync::Arc<str>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(db: &'a RootDatabase, ws: Workspace, path: &str) -> Option<Ctx<'a>> {
        let package_path = package_of_manifest(path)?;
        let package = package_by_path(db, ws).get(package_path)?;
        let file = package.manifest(db);
        if file.path(db) != path {
            return None;
        }
        let text = source_text(db, file).text.clone();
        Some(Ctx {
            db,
            ws,
            file,
            package,
            text,
        })
    }

    pub(super) fn offset(&self, position: LineCol) -> u32 {
        line_index(self.db, self.file).offset(position)
    }

    pub(super) fn range(&self, range: TextRange) -> LineColRange {
        line_index(self.db, self.file).range(range)
    }

    pub(super) fn package_path(&self) -> &str {
        self.package.path(self.db)
    }

    pub(super) fn targets(&self) -> &'a [TargetDecl] {
        &manifest(self.db, self.package).targets
    }

    /// The target whose table holds `offset`.
    pub(super) fn target_at(&self, offset: u32) -> Option<&'a TargetDecl> {
        self.targets()
            .iter()
            .rev()
            .find(|t| t.header_range.start <= offset)
    }
}

/// The package directory of a manifest path (`a/b/once.toml` → `a/b`).
fn package_of_manifest(path: &str) -> Option<&str> {
    if path == "once.toml" {
        return Some("");
    }
    path.strip_suffix("/once.toml")
}

pub(super) fn contains(range: TextRange, offset: u32) -> bool {
    range.start <= offset && offset <= range.end
}

/// Every dependency entry of a target: (role, entry).
pub(super) fn dep_entries(decl: &TargetDecl) -> Vec<(&str, &Spanned<String>)> {
    fn entries<'a>(
        role: &'a str,
        list: &'a DepList,
        out: &mut Vec<(&'a str, &'a Spanned<String>)>,
    ) {
        match list {
            Configurable::Value(items) => out.extend(items.iter().map(|e| (role, e))),
            Configurable::Select(branches) => {
                for branch in branches {
                    out.extend(branch.value.iter().map(|e| (role, e)));
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Some(deps) = &decl.deps {
        entries("deps", &deps.value, &mut out);
    }
    for (role, list) in &decl.dependencies {
        entries(&role.value, &list.value, &mut out);
    }
    out
}
