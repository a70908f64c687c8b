//! Planning a starter's file tree under a workspace-relative destination.
//!
//! Under a non-empty destination the starter's manifests are relocated: references to
//! targets the starter itself defines (`deps`, `dependencies`, `visibility` package forms)
//! gain the destination prefix, and the starter's root-only `[workspace]`/`[modules]`
//! tables are dropped (the workspace already has a root). Only those strings and tables
//! change; every other byte is shipped as written.

use once_db::writes::{FileWrite, normalize_relative};
use once_db::{Db, PackageFilter, RootDatabase, Workspace};
use once_graph::workspace_settings;
use once_model::{AttrValue, Example};
use once_syntax::value::{Value, ValueKind};

use super::cst::{Layout, splice};

/// What materialising a starter would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MaterializePlan {
    pub kind: String,
    pub slug: String,
    /// Normalised workspace-relative destination; `""` is the root.
    pub destination: String,
    /// Files to create (workspace-relative), sorted.
    pub created: Vec<String>,
    /// Files that already exist with identical bytes.
    pub unchanged: Vec<String>,
    /// `(path, reason)`: when any exist, nothing is written.
    pub conflicts: Vec<(String, String)>,
    /// The writes, empty when there are conflicts.
    pub writes: Vec<FileWrite>,
    /// Packages (workspace-relative) the starter's manifests define.
    pub packages: Vec<String>,
    /// What the caller should know, such as packages `[workspace] include/exclude` leave
    /// out (their files are written, but their targets are not part of the workspace).
    pub warnings: Vec<String>,
}

fn join(destination: &str, path: &str) -> String {
    match (destination.is_empty(), path.is_empty()) {
        (true, _) => path.to_owned(),
        (_, true) => destination.to_owned(),
        _ => format!("{destination}/{path}"),
    }
}

fn package_of(manifest_path: &str) -> String {
    manifest_path
        .strip_suffix("once.toml")
        .unwrap_or("")
        .trim_end_matches('/')
        .to_owned()
}

/// Plans the starter `example` of `kind` under `destination`. `Err` is a refused request
/// (a destination or starter path outside the workspace).
pub fn plan_materialize(
    db: &RootDatabase,
    workspace: Workspace,
    kind: &str,
    example: &Example,
    destination: &str,
) -> Result<MaterializePlan, String> {
    let destination =
        normalize_relative(destination).map_err(|e| format!("invalid `destination`: {e}"))?;
    let root = workspace.root(db).clone();
    let system = db.system();
    let example_packages: Vec<String> = example
        .files
        .iter()
        .filter(|f| f.path == "once.toml" || f.path.ends_with("/once.toml"))
        .map(|f| package_of(&f.path))
        .collect();
    let mut plan = MaterializePlan {
        kind: kind.to_owned(),
        slug: example.slug.clone(),
        destination: destination.clone(),
        created: Vec::new(),
        unchanged: Vec::new(),
        conflicts: Vec::new(),
        writes: Vec::new(),
        packages: Vec::new(),
        warnings: Vec::new(),
    };
    for file in &example.files {
        let relative = normalize_relative(&file.path)
            .ok()
            .filter(|r| *r == file.path)
            .ok_or_else(|| {
                format!(
                    "the starter file path `{}` is not a plain relative path",
                    file.path
                )
            })?;
        let mut contents = file.contents.to_vec();
        let is_manifest = relative == "once.toml" || relative.ends_with("/once.toml");
        if is_manifest && !destination.is_empty() {
            let Ok(text) = String::from_utf8(contents.clone()) else {
                return Err(format!("the starter manifest `{relative}` is not UTF-8"));
            };
            match relocate(&text, &destination, &example_packages) {
                Some(text) => contents = text.into_bytes(),
                None => continue,
            }
        }
        let target = join(&destination, &relative);
        if is_manifest {
            plan.packages.push(package_of(&target));
        }
        match system.read_confined(&root, &target) {
            Err(reason) => plan.conflicts.push((target, reason.to_string())),
            Ok(None) => {
                plan.created.push(target.clone());
                plan.writes.push(FileWrite {
                    path: target,
                    contents,
                });
            }
            Ok(Some(existing)) if existing == contents => plan.unchanged.push(target),
            Ok(Some(_)) => plan
                .conflicts
                .push((target, "an existing file has different contents".to_owned())),
        }
    }
    if !plan.conflicts.is_empty() {
        plan.writes.clear();
        plan.created.clear();
    }
    plan.packages.sort();
    plan.warnings = packages_left_out(db, workspace, &plan.packages);
    Ok(plan)
}

/// A warning for each package that `[workspace] include/exclude` leave out, naming the
/// globs.
fn packages_left_out(db: &RootDatabase, workspace: Workspace, packages: &[String]) -> Vec<String> {
    let settings = workspace_settings(db, workspace);
    let globs = |globs: &[String]| {
        globs
            .iter()
            .map(|g| format!("`{g}`"))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let (included, ..) = PackageFilter::new(&settings.include, &[]);
    let (filter, ..) = PackageFilter::new(&settings.include, &settings.exclude);
    packages
        .iter()
        .filter(|package| !filter.includes(package))
        .map(|package| {
            let reason = if included.includes(package) {
                format!(
                    "matches `[workspace] exclude` ({})",
                    globs(&settings.exclude)
                )
            } else {
                format!(
                    "is outside `[workspace] include` ({})",
                    globs(&settings.include)
                )
            };
            format!(
                "the package `{package}` {reason}, so its files are written but its targets are not part of the workspace; change `[workspace]` in the root `once.toml` to add it"
            )
        })
        .collect()
}

/// Rewrites a starter manifest for a destination; `None` when nothing but root-only
/// tables remain (the file is then not written).
fn relocate(text: &str, destination: &str, packages: &[String]) -> Option<String> {
    let layout = Layout::new(text);
    let mut edits = Vec::new();
    // Root-only tables go: the workspace already has its root manifest.
    for section in &layout.sections {
        if matches!(
            section.key.first().map(String::as_str),
            Some("workspace" | "modules")
        ) {
            edits.push((layout.section_span(section, section), String::new()));
        }
    }
    let document = once_syntax::value::document(&once_syntax::parse(text));
    if let Some(targets) = document.root.get("target")
        && let ValueKind::Array(targets) = &targets.value.kind
    {
        for target in targets {
            let ValueKind::Table(table) = &target.kind else {
                continue;
            };
            for entry in &table.entries {
                match entry.key.as_str() {
                    "deps" | "dependencies" => {
                        strings(&entry.value, &mut |value, s| {
                            if let Some(new) = relocate_reference(s, destination, packages) {
                                edits.push((value.range, AttrValue::String(new).to_string()));
                            }
                        });
                    }
                    "visibility" => strings(&entry.value, &mut |value, s| {
                        let new = ["subtree:", "package:"]
                            .iter()
                            .find_map(|prefix| {
                                let package = s.strip_prefix(prefix)?;
                                Some(format!("{prefix}{}", join(destination, package)))
                            })
                            .or_else(|| {
                                (s != "public" && s != "private")
                                    .then(|| relocate_reference(s, destination, packages))
                                    .flatten()
                            });
                        if let Some(new) = new {
                            edits.push((value.range, AttrValue::String(new).to_string()));
                        }
                    }),
                    _ => {}
                }
            }
        }
    }
    let out = splice(text, edits);
    let remaining = Layout::new(&out);
    if remaining.groups.is_empty()
        && out
            .lines()
            .all(|l| l.trim().is_empty() || l.trim_start().starts_with('#'))
    {
        return None;
    }
    Some(out.trim_start_matches('\n').to_owned())
}

/// `s` with the destination prefix when it names a target of the starter by a
/// root-relative reference.
fn relocate_reference(s: &str, destination: &str, packages: &[String]) -> Option<String> {
    if s.starts_with("./") || s.starts_with("../") || s.contains(':') {
        return None;
    }
    let package = s.rsplit_once('/').map_or("", |(p, _)| p);
    packages
        .iter()
        .any(|p| p == package)
        .then(|| join(destination, s))
}

fn strings(value: &Value, visit: &mut dyn FnMut(&Value, &str)) {
    match &value.kind {
        ValueKind::String(s) => visit(value, s),
        ValueKind::Array(items) => items.iter().for_each(|v| strings(v, visit)),
        ValueKind::Table(table) => table.entries.iter().for_each(|e| strings(&e.value, visit)),
        _ => {}
    }
}
