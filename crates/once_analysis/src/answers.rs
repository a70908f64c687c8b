//! The plain-data answers [`crate::Analysis`] returns, and how they are computed from queries.

use std::collections::HashMap;
use std::path::PathBuf;

use once_db::{Db, RootDatabase, Workspace};
use once_graph::{
    file_diagnostics, kind_catalog, resolved_targets, workspace_diagnostics, workspace_packages,
    workspace_settings,
};
use once_model::{AttrValue, Capability, SeverityCounts, TargetLabel, ToolSpec};

use crate::{LocatedDiagnostic, locate};

/// The state of the workspace at a glance.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkspaceInfo {
    pub root: PathBuf,
    pub os: String,
    pub arch: String,
    pub tokens: Vec<String>,
    /// Whether `<root>/once.toml` exists.
    pub root_manifest: bool,
    /// Package paths after include/exclude, sorted (`""` is the root package).
    pub packages: Vec<String>,
    pub target_count: usize,
    pub module_paths: Vec<String>,
    pub error_count: usize,
    pub warning_count: usize,
}

pub(crate) fn workspace_info(db: &RootDatabase, workspace: Workspace) -> WorkspaceInfo {
    let settings = workspace_settings(db, workspace);
    let counts = SeverityCounts::of(
        workspace_diagnostics(db, workspace)
            .iter()
            .map(|d| d.severity),
    );
    WorkspaceInfo {
        root: workspace.root(db).clone(),
        os: settings.configuration.os.clone(),
        arch: settings.configuration.arch.clone(),
        tokens: settings.configuration.tokens.clone(),
        root_manifest: workspace.packages(db).iter().any(|p| p.path(db).is_empty()),
        packages: workspace_packages(db, workspace)
            .iter()
            .map(|p| p.path(db).clone())
            .collect(),
        target_count: *once_graph::target_count(db, workspace),
        module_paths: settings.module_paths.clone(),
        error_count: counts.errors,
        warning_count: counts.warnings,
    }
}

/// One target in a listing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetSummaryInfo {
    pub id: String,
    pub package: String,
    pub name: String,
    pub kind: String,
    /// The default role's dependency ids.
    pub deps: Vec<String>,
    /// Named roles → dependency ids, in declaration order.
    pub dependency_edges: Vec<(String, Vec<String>)>,
    pub visibility: Vec<String>,
    /// Capability names (`build`, `run`, `test`).
    pub capabilities: Vec<String>,
}

/// Every target, optionally only those of one kind, sorted by id. The full listing is a
/// query, so paging through it (an MCP client asking page after page) builds it once.
pub(crate) fn targets(
    db: &RootDatabase,
    workspace: Workspace,
    kind: Option<&str>,
) -> Vec<TargetSummaryInfo> {
    let listing = target_listing(db, workspace);
    match kind {
        None => listing.to_vec(),
        Some(kind) => listing.iter().filter(|t| t.kind == kind).cloned().collect(),
    }
}

/// Every target of the workspace, sorted by id.
#[salsa::tracked(returns(ref))]
pub(crate) fn target_listing(db: &dyn Db, workspace: Workspace) -> Box<[TargetSummaryInfo]> {
    let catalog = kind_catalog(db, workspace);
    let mut out = Vec::new();
    for &package in workspace_packages(db, workspace) {
        for target in &resolved_targets(db, package).targets {
            let (deps, dependency_edges) = split_roles(&target.deps);
            out.push(TargetSummaryInfo {
                id: target.label.id(),
                package: target.label.package.clone(),
                name: target.label.name.clone(),
                kind: target.kind.clone(),
                deps,
                dependency_edges,
                visibility: target.visibility_text.clone(),
                capabilities: catalog
                    .get(&target.kind)
                    .map(|k| k.capabilities.iter().map(|c| c.name.clone()).collect())
                    .unwrap_or_default(),
            });
        }
    }
    out.sort_by(|a, b| a.id.cmp(&b.id));
    out.into_boxed_slice()
}

fn split_roles(deps: &[once_graph::ResolvedDep]) -> (Vec<String>, Vec<(String, Vec<String>)>) {
    let mut default = Vec::new();
    let mut named: Vec<(String, Vec<String>)> = Vec::new();
    for dep in deps {
        if dep.role == "deps" {
            default.push(dep.label.id());
        } else if let Some((_, ids)) = named.iter_mut().find(|(role, _)| *role == dep.role) {
            ids.push(dep.label.id());
        } else {
            named.push((dep.role.clone(), vec![dep.label.id()]));
        }
    }
    (default, named)
}

/// The resolved view of one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetDetails {
    pub label: TargetLabel,
    pub kind: String,
    pub srcs: Vec<String>,
    pub deps: Vec<String>,
    pub dependency_edges: Vec<(String, Vec<String>)>,
    pub visibility: Vec<String>,
    pub labels: Vec<String>,
    /// Attribute values as set, `select`s resolved for the configuration.
    pub attrs: Vec<(String, AttrValue)>,
    pub capabilities: Vec<Capability>,
    pub providers: Vec<String>,
    pub tools: Vec<ToolSpec>,
    /// Diagnostics of this target.
    pub diagnostics: Vec<LocatedDiagnostic>,
}

/// A target by canonical id, with its package.
fn find_target<'db>(
    db: &'db RootDatabase,
    workspace: Workspace,
    id: &str,
) -> Option<(once_db::Package, &'db once_graph::ResolvedTarget)> {
    let label = TargetLabel::from_id(id);
    let package = once_graph::package_by_path(db, workspace).get(&label.package)?;
    let target = resolved_targets(db, package)
        .targets
        .iter()
        .find(|t| t.label.name == label.name)?;
    Some((package, target))
}

pub(crate) fn target(db: &RootDatabase, workspace: Workspace, id: &str) -> Option<TargetDetails> {
    let (package, target) = find_target(db, workspace, id)?;
    let kind = kind_catalog(db, workspace).get(&target.kind);
    let (deps, dependency_edges) = split_roles(&target.deps);
    let canonical = target.label.id();
    let mut diagnostics: Vec<LocatedDiagnostic> = file_diagnostics(db, package)
        .iter()
        .filter(|d| d.target.as_deref() == Some(canonical.as_str()))
        .map(|d| locate(db, d))
        .collect();
    diagnostics.extend(
        once_graph::dependency_cycles(db, workspace)
            .iter()
            .filter(|d| d.target.as_deref() == Some(canonical.as_str()))
            .map(|d| locate(db, d)),
    );
    Some(TargetDetails {
        label: target.label.clone(),
        kind: target.kind.clone(),
        srcs: target.srcs.clone(),
        deps,
        dependency_edges,
        visibility: target.visibility_text.clone(),
        labels: target.labels.clone(),
        attrs: target.attrs.clone(),
        capabilities: kind.map(|k| k.capabilities.clone()).unwrap_or_default(),
        providers: target.providers.clone(),
        tools: kind.map(|k| k.tools.clone()).unwrap_or_default(),
        diagnostics,
    })
}

/// What a plan reports of a target beside its actions: [`TargetDetails`]'s kind, one
/// capability's declaration and the attributes, without what the details also compute
/// (the package's diagnostics, the workspace's dependency cycles, the tools): a plan of
/// 10,000 targets asked the details of each.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetOutline {
    pub kind: String,
    /// The kind's declaration of the capability asked for, when it has one.
    pub capability: Option<Capability>,
    /// As [`TargetDetails::attrs`].
    pub attrs: Vec<(String, AttrValue)>,
}

pub(crate) fn target_outline(
    db: &RootDatabase,
    workspace: Workspace,
    id: &str,
    capability: &str,
) -> Option<TargetOutline> {
    let (_, target) = find_target(db, workspace, id)?;
    let declared = kind_catalog(db, workspace)
        .get(&target.kind)
        .and_then(|kind| kind.capabilities.iter().find(|c| c.name == capability))
        .cloned();
    Some(TargetOutline {
        kind: target.kind.clone(),
        capability: declared,
        attrs: target.attrs.clone(),
    })
}

/// The outcome of a validation.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Validation {
    /// `false` when any diagnostic is an error (warnings keep it valid).
    pub valid: bool,
    pub target_count: usize,
    pub diagnostics: Vec<LocatedDiagnostic>,
}

impl Validation {
    /// How many of the diagnostics are errors, warnings and infos.
    pub fn counts(&self) -> SeverityCounts {
        SeverityCounts::of(self.diagnostics.iter().map(|d| d.diagnostic.severity))
    }
}

/// A proposed `[[target]]` table, as a TOML value (the keys of a `[[target]]`).
pub type ProposedTarget = AttrValue;

pub(crate) fn validate_target(
    db: &RootDatabase,
    workspace: Workspace,
    target: &ProposedTarget,
) -> Validation {
    let AttrValue::Dict(entries) = target else {
        let diagnostic = once_model::Diagnostic::new(
            once_model::DiagnosticCode::InvalidFieldType,
            format!(
                "a target must be a table of `name`, `kind`, `srcs`, `deps`, `attrs`, …; got {}",
                target.type_name()
            ),
        );
        return Validation {
            valid: false,
            target_count: 0,
            diagnostics: vec![LocatedDiagnostic::unlocated(diagnostic)],
        };
    };
    let mut text = String::from("[[target]]\n");
    for (key, value) in entries {
        let mut line = String::new();
        let _ = once_model::value::write_toml_key(&mut line, key);
        text.push_str(&format!("{line} = {value}\n"));
    }
    let checked = crate::edit::check_manifest_text(db, workspace, "<proposed target>", "", &text);
    let diagnostics: Vec<LocatedDiagnostic> = once_graph::cap_diagnostics(checked)
        .into_iter()
        .map(|mut diagnostic| {
            diagnostic.file = None;
            LocatedDiagnostic::unlocated(diagnostic)
        })
        .collect();
    Validation {
        valid: !diagnostics.iter().any(|d| d.diagnostic.is_error()),
        target_count: 1,
        diagnostics,
    }
}

/// The tests a change affects, and why some changed paths could select none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AffectedTests {
    pub tests: Vec<once_graph::AffectedTest>,
    /// One sentence per changed path that lies outside the workspace or in no package of
    /// it, so that a job started in the wrong directory does not silently select nothing.
    pub warnings: Vec<String>,
}

pub(crate) fn affected_tests(
    db: &RootDatabase,
    workspace: Workspace,
    changed_paths: &[String],
) -> AffectedTests {
    let root = workspace.root(db);
    let mut paths = Vec::with_capacity(changed_paths.len());
    let mut warnings = Vec::new();
    for path in changed_paths {
        let shown = shown_path(path);
        let Some(normalized) = workspace_relative(db, root, path) else {
            warnings.push(format!(
                "`{shown}` is outside the workspace `{}`: it selects no test (changed paths are relative to the workspace root)",
                root.display()
            ));
            continue;
        };
        if !once_graph::in_some_package(db, workspace, &normalized) {
            warnings.push(format!(
                "`{shown}` is in no package of the workspace (no `once.toml` above it is included): it selects no test"
            ));
            continue;
        }
        paths.push(normalized);
    }
    let tests = if paths.is_empty() && !changed_paths.is_empty() {
        Vec::new()
    } else {
        let changed = once_graph::ChangedPaths::new(db, paths);
        once_graph::affected_tests(db, workspace, changed).clone()
    };
    AffectedTests { tests, warnings }
}

/// A path as quoted in a warning: control and invisible characters as `\u{XXXX}`.
fn shown_path(path: &str) -> String {
    path.chars()
        .map(|c| {
            if c.is_control() || once_model::is_invisible(c) {
                format!("\\u{{{:04X}}}", u32::from(c))
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// A changed path relative to the workspace root, normalised lexically. An absolute path
/// outside the root spelled through a symbolic link (the root is canonical) is tried once
/// more with its longest existing ancestor resolved.
fn workspace_relative(db: &RootDatabase, root: &std::path::Path, path: &str) -> Option<String> {
    if let Some(relative) = once_graph::normalize_changed_path(root, path) {
        return Some(relative);
    }
    let path = std::path::Path::new(path);
    if !path.is_absolute() {
        return None;
    }
    let system = once_db::Db::system(db);
    let mut ancestor = path;
    let mut rest = Vec::new();
    loop {
        if let Ok(canonical) = system.canonicalize(ancestor) {
            let resolved = rest
                .iter()
                .rev()
                .fold(canonical, |acc: PathBuf, part| acc.join(part));
            return once_graph::normalize_changed_path(root, &resolved.to_string_lossy());
        }
        rest.push(ancestor.file_name()?.to_owned());
        ancestor = ancestor.parent()?;
    }
}

/// A target's input files with their digests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetInputs {
    /// Sorted by path.
    pub inputs: Vec<InputDigest>,
    /// The SHA-256 (hex) of one line `PATH\0DIGEST\n` per input in path order, where a
    /// file without a digest contributes `!` and its error instead of the digest.
    pub input_digest: String,
}

/// One input file and its digest (hex) or why it has none.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputDigest {
    pub path: String,
    pub digest: Result<String, String>,
}

pub(crate) fn file_digest(
    db: &RootDatabase,
    workspace: Workspace,
    path: &str,
) -> Result<String, String> {
    let root = workspace.root(db);
    let relative = std::path::Path::new(path)
        .strip_prefix(root)
        .ok()
        .and_then(once_db::system::relative_to_slash)
        .unwrap_or_else(|| path.trim_start_matches("./").to_owned());
    if relative.is_empty() || relative.split('/').any(|s| s == "..") {
        return Err(format!("`{path}` is not a file inside the workspace"));
    }
    let file = once_db::Db::file_for_path(db, &relative);
    match once_db::file_digest(db, file) {
        Ok(digest) => Ok(digest.to_hex()),
        Err(err) => Err(err.to_string()),
    }
}

pub(crate) fn target_inputs(
    db: &RootDatabase,
    workspace: Workspace,
    id: &str,
) -> Option<TargetInputs> {
    let (package, target) = find_target(db, workspace, id)?;
    let paths = once_graph::target_inputs(db, workspace, package, target);
    Some(with_digests(db, paths, &mut HashMap::new()))
}

/// The inputs of every target of `package`, by id, in the package's declaration order:
/// what [`target_inputs`] answers for each, with the package's files matched in one pass
/// and each file's digest looked up once however many targets read it.
pub(crate) fn package_target_inputs(
    db: &RootDatabase,
    workspace: Workspace,
    package: once_db::Package,
) -> Vec<(String, TargetInputs)> {
    let targets = &resolved_targets(db, package).targets;
    let mut seen = HashMap::new();
    targets
        .iter()
        .zip(once_graph::package_inputs(db, workspace, package))
        .map(|(target, paths)| (target.label.id(), with_digests(db, paths, &mut seen)))
        .collect()
}

/// The digests of `paths` (sorted) and the one digest over them. `seen` holds the digests
/// already looked up for other targets of the same package (a package's targets share its
/// manifest), so each file's digest is looked up and written out once.
fn with_digests(
    db: &RootDatabase,
    paths: Vec<String>,
    seen: &mut HashMap<String, Result<String, String>>,
) -> TargetInputs {
    let inputs: Vec<InputDigest> = paths
        .into_iter()
        .map(|path| {
            let digest = match seen.get(&path) {
                Some(digest) => digest.clone(),
                None => {
                    let file = once_db::Db::file_for_path(db, &path);
                    let digest = match once_db::file_digest(db, file) {
                        Ok(digest) => Ok(digest.to_hex()),
                        Err(err) => Err(err.to_string()),
                    };
                    seen.insert(path.clone(), digest.clone());
                    digest
                }
            };
            InputDigest { path, digest }
        })
        .collect();
    let mut listing = String::with_capacity(
        inputs
            .iter()
            .map(|input| input.path.len() + 67)
            .sum::<usize>(),
    );
    for input in &inputs {
        listing.push_str(&input.path);
        listing.push('\0');
        match &input.digest {
            Ok(digest) => listing.push_str(digest),
            Err(err) => {
                listing.push('!');
                listing.push_str(err);
            }
        }
        listing.push('\n');
    }
    TargetInputs {
        inputs,
        input_digest: once_db::Sha256Digest::of(listing.as_bytes()).to_hex(),
    }
}
