//! Test targets, the files each target reads, which targets own a path, and which tests a
//! change affects.

use std::collections::BTreeMap;

use once_db::{Db, Package, Workspace};
use rustc_hash::FxHashSet;

use crate::graph::{dependency_graph, reverse_deps};
use crate::kinds::{KindCatalog, kind_catalog};
use crate::resolve::{ResolvedTarget, SourcePattern, SourceSelection, resolved_targets};
use crate::settings::{
    package_by_path, package_directories, workspace_packages, workspace_settings,
};

/// A target with a `test` capability.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TestTarget {
    pub id: String,
    pub kind: String,
    /// Ids of every dependency, all roles, in declaration order.
    pub deps: Vec<String>,
    pub runner: Option<String>,
    pub labels: Vec<String>,
    /// Where the normalised results land, workspace-relative.
    pub results_path: String,
}

/// Every test target, sorted by id.
#[salsa::tracked(returns(ref))]
pub fn test_targets(db: &dyn Db, workspace: Workspace) -> Vec<TestTarget> {
    let mut tests: Vec<TestTarget> = workspace_packages(db, workspace)
        .iter()
        .flat_map(|&package| package_tests(db, workspace, package).iter().cloned())
        .collect();
    tests.sort_by(|a, b| a.id.cmp(&b.id));
    tests
}

/// The test targets of one package. Its own query, so that an edit re-derives only the
/// edited package's tests (and nothing when they stay the same).
#[salsa::tracked(returns(ref))]
fn package_tests(db: &dyn Db, workspace: Workspace, package: Package) -> Vec<TestTarget> {
    let catalog = kind_catalog(db, workspace);
    let mut tests = Vec::new();
    for target in &resolved_targets(db, package).targets {
        let Some(test) = catalog.get(&target.kind).and_then(|k| k.capability("test")) else {
            continue;
        };
        let id = target.label.id();
        tests.push(TestTarget {
            results_path: format!(".once/out/{id}/test/test_results.json"),
            id,
            kind: target.kind.clone(),
            deps: target.deps.iter().map(|d| d.label.id()).collect(),
            runner: test.runner.clone(),
            labels: target.labels.clone(),
        });
    }
    tests
}

/// A set of changed workspace-relative paths, as a query key.
#[salsa::interned(debug)]
pub struct ChangedPaths<'db> {
    #[returns(ref)]
    pub paths: Vec<String>,
}

/// Why a target owns a path.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Ownership {
    /// The path matches one of the target's `srcs`.
    Source,
    /// The path is the target's manifest.
    Manifest,
    /// The path is a project module; every target depends on the kind catalog.
    Module,
}

/// A target that owns a changed file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Owner {
    /// The owning target's id.
    pub target: String,
    pub ownership: Ownership,
    /// The owned file, workspace-relative (a file below the path asked about, when that
    /// path is a directory).
    pub path: String,
}

/// The targets that own `path`, with why. A directory stands for every file below it.
pub fn owners(db: &dyn Db, workspace: Workspace, path: &str) -> Vec<Owner> {
    let Some(path) = normalize_changed_path(workspace.root(db), path) else {
        return Vec::new();
    };
    let mut found = file_owners(db, workspace, &path);
    if found.is_empty() {
        for file in files_below(db, workspace, &path) {
            found.extend(file_owners(db, workspace, &file));
        }
    }
    // A file symbolic links lead to is read through them as well (the links' readers are
    // keyed by it).
    for link in links_leading_to(db, workspace, &path) {
        found.extend(file_owners(db, workspace, &link));
    }
    found
}

/// The workspace's symbolic links that lead to `path` or to a file below it (links are
/// few: each package lists its own).
fn links_leading_to(db: &dyn Db, workspace: Workspace, path: &str) -> Vec<String> {
    let mut links = Vec::new();
    for package in workspace.packages(db) {
        for link in package.links(db) {
            let full = Package::join(package.path(db), link);
            let target = once_db::link_target(db, db.file_for_path(&full));
            if target
                .followed()
                .is_some_and(|target| once_model::paths::is_under(target, path))
            {
                links.push(full);
            }
        }
    }
    links
}

/// The package-relative paths a target names in `path`-typed attributes (`hdrs`, `main`,
/// `inputs`, …): files it reads besides its `srcs`.
fn path_attrs<'a>(
    kind: Option<&'a once_model::KindSchema>,
    attrs: &'a [(String, once_model::AttrValue)],
) -> impl Iterator<Item = &'a str> {
    use once_model::{AttrType, AttrValue};
    attrs.iter().flat_map(move |(name, value)| {
        let ty = kind.and_then(|k| k.attr(name)).map(|a| &a.ty);
        let strings: Vec<&str> = match (ty, value) {
            (Some(AttrType::Path), AttrValue::String(s)) => vec![s.as_str()],
            (Some(AttrType::List(inner)), AttrValue::List(items)) if **inner == AttrType::Path => {
                items.iter().filter_map(AttrValue::as_str).collect()
            }
            _ => Vec::new(),
        };
        strings
    })
}

/// Every workspace file below directory `dir` (empty when `dir` is a file or unknown).
fn files_below(db: &dyn Db, workspace: Workspace, dir: &str) -> Vec<String> {
    let prefix = if dir.is_empty() {
        String::new()
    } else {
        format!("{dir}/")
    };
    let mut files = Vec::new();
    for package in workspace.packages(db) {
        let package_path = package.path(db);
        for file in package.files(db) {
            let full = Package::join(package_path, file);
            if full.starts_with(&prefix) {
                files.push(full);
            }
        }
    }
    files
}

fn file_owners(db: &dyn Db, workspace: Workspace, path: &str) -> Vec<Owner> {
    let owner = |target: String, ownership: Ownership| Owner {
        target,
        ownership,
        path: path.to_owned(),
    };
    if is_module_path(db, workspace, path) {
        return dependency_graph(db, workspace)
            .nodes
            .iter()
            .map(|n| owner(n.id.clone(), Ownership::Module))
            .collect();
    }
    // The deepest package directory containing the path owns it.
    // Through the two indexes, not the package inputs: reading every package's path here
    // made each call depend on a thousand inputs per changed path.
    let Some(package) = package_directories(db, workspace).owner_of(path) else {
        return Vec::new();
    };
    if package_by_path(db, workspace).get(package.path(db)) != Some(package) {
        return Vec::new();
    }
    let package_path = package.path(db);
    let relative = if package_path.is_empty() {
        path
    } else {
        &path[package_path.len() + 1..]
    };
    let resolved = resolved_targets(db, package);
    if relative == once_db::discovery::MANIFEST_NAME {
        return resolved
            .targets
            .iter()
            .map(|t| owner(t.label.id(), Ownership::Manifest))
            .collect();
    }
    let catalog = kind_catalog(db, workspace);
    resolved
        .targets
        .iter()
        .filter(|t| reads_file(catalog, t, relative))
        .map(|t| owner(t.label.id(), Ownership::Source))
        .collect()
}

/// Whether a target reads a package-relative file: its `srcs` select it (after their
/// exclusions), or one of its path-typed attributes names it.
fn reads_file(catalog: &KindCatalog, target: &ResolvedTarget, relative: &str) -> bool {
    SourceSelection::new(target.srcs.iter().map(String::as_str)).selects(relative)
        || path_attrs(catalog.get(&target.kind), &target.attrs)
            .any(|path| SourcePattern::cached(path).is_ok_and(|p| p.matches(relative)))
}

/// The workspace-relative files a target reads, sorted: its manifest and every file of its
/// package that its `srcs` or path-typed attributes match (the files that own it as
/// [`Ownership::Manifest`] or [`Ownership::Source`]).
pub fn target_inputs(
    db: &dyn Db,
    workspace: Workspace,
    package: Package,
    target: &ResolvedTarget,
) -> Vec<String> {
    let catalog = kind_catalog(db, workspace);
    inputs_of(db, package, std::slice::from_ref(target), catalog)
        .pop()
        .unwrap_or_default()
}

/// What [`target_inputs`] answers for every target of a package, in the order of
/// [`resolved_targets`], in one pass over the package's files: each target's patterns are
/// compiled (looked up) once, and each matched file's workspace path is built once.
pub fn package_inputs(db: &dyn Db, workspace: Workspace, package: Package) -> Vec<Vec<String>> {
    let catalog = kind_catalog(db, workspace);
    inputs_of(db, package, &resolved_targets(db, package).targets, catalog)
}

fn inputs_of(
    db: &dyn Db,
    package: Package,
    targets: &[ResolvedTarget],
    catalog: &KindCatalog,
) -> Vec<Vec<String>> {
    let package_path = package.path(db);
    let manifest = Package::join(package_path, once_db::discovery::MANIFEST_NAME);
    // A pattern that does not compile matches nothing (its diagnostic is reported by the
    // resolution), as in `reads_file`.
    let patterns: Vec<(SourceSelection, Vec<std::sync::Arc<SourcePattern>>)> = targets
        .iter()
        .map(|target| {
            let srcs = SourceSelection::new(target.srcs.iter().map(String::as_str));
            let paths = path_attrs(catalog.get(&target.kind), &target.attrs)
                .filter_map(|pattern| SourcePattern::cached(pattern).ok())
                .collect();
            (srcs, paths)
        })
        .collect();
    let mut inputs: Vec<Vec<String>> = targets.iter().map(|_| vec![manifest.clone()]).collect();
    for file in package.files(db) {
        let mut joined: Option<String> = None;
        for ((srcs, paths), inputs) in patterns.iter().zip(&mut inputs) {
            if srcs.selects(file) || paths.iter().any(|p| p.matches(file)) {
                let path = joined.get_or_insert_with(|| Package::join(package_path, file));
                inputs.push(path.clone());
            }
        }
    }
    for inputs in &mut inputs {
        inputs.sort_unstable();
        inputs.dedup();
    }
    inputs
}

/// Whether a workspace-relative path is a registered project module: `[modules] paths`
/// select it (after their exclusions), whether or not the file exists.
fn is_module_path(db: &dyn Db, workspace: Workspace, path: &str) -> bool {
    SourceSelection::new(
        workspace_settings(db, workspace)
            .module_paths
            .iter()
            .map(String::as_str),
    )
    .selects(path)
}

/// Whether a normalised workspace-relative path can reach a target at all: it lies in a
/// package the workspace includes, is a directory holding one, or is a project module.
pub fn in_some_package(db: &dyn Db, workspace: Workspace, path: &str) -> bool {
    let included = package_by_path(db, workspace);
    package_directories(db, workspace)
        .owner_of(path)
        .is_some_and(|package| included.get(package.path(db)) == Some(package))
        || included.has_at_or_below(path)
        || is_module_path(db, workspace, path)
}

/// A changed path as a workspace-relative `/`-separated path, lexically: `\` is a
/// separator, empty and `.` segments are dropped, `..` removes the segment before it, and
/// an absolute path must lie under `root` (which it loses). `None` when the path leaves
/// the workspace. The file system is not consulted; a deleted file normalises like any other.
pub fn normalize_changed_path(root: &std::path::Path, path: &str) -> Option<String> {
    let path = path.replace('\\', "/");
    let absolute = path.starts_with('/');
    let segments = lexical_segments(&path, absolute)?;
    if !absolute {
        return Some(segments.join("/"));
    }
    let root = root.to_string_lossy().replace('\\', "/");
    let root_segments = lexical_segments(&root, true)?;
    Some(segments.strip_prefix(root_segments.as_slice())?.join("/"))
}

/// The segments of a `/`-separated path without empty, `.` and `..` segments. `None` when
/// a relative path climbs above its start; an absolute one stays at `/`.
fn lexical_segments(path: &str, absolute: bool) -> Option<Vec<&str>> {
    let mut segments = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                if segments.pop().is_none() && !absolute {
                    return None;
                }
            }
            segment => segments.push(segment),
        }
    }
    Some(segments)
}

/// A test selected by a change, with the reasons.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AffectedTest {
    pub id: String,
    pub kind: String,
    pub reasons: Vec<String>,
}

/// The tests affected by changed paths: the owners of each path and everything that
/// depends on them, transitively, narrowed to test targets. No paths selects every test.
#[salsa::tracked(returns(ref))]
pub fn affected_tests<'db>(
    db: &'db dyn Db,
    workspace: Workspace,
    changed: ChangedPaths<'db>,
) -> Vec<AffectedTest> {
    let tests = test_targets(db, workspace);
    if changed.paths(db).is_empty() {
        return tests
            .iter()
            .map(|t| AffectedTest {
                id: t.id.clone(),
                kind: t.kind.clone(),
                reasons: vec!["no changed paths given: every test target is selected".into()],
            })
            .collect();
    }
    let graph = dependency_graph(db, workspace);
    let reverse = reverse_deps(db, workspace);
    let test_ids: FxHashSet<&str> = tests.iter().map(|t| t.id.as_str()).collect();
    let is_test: Vec<bool> = graph
        .nodes
        .iter()
        .map(|node| test_ids.contains(node.id.as_str()))
        .collect();
    // Every (changed path, owner) pair, and for each test the pairs that reach it, in the
    // order they do: `true` when the test owns the path itself. Reasons are only written
    // out for tests at the end; the walks themselves allocate nothing per node.
    let mut sources: Vec<Owner> = Vec::new();
    let mut reached: BTreeMap<usize, Vec<(usize, bool)>> = BTreeMap::new();
    // The source whose walk last visited each node (a visited set without clearing).
    let mut visited_by = vec![usize::MAX; graph.nodes.len()];
    let mut queue = Vec::new();
    for path in changed.paths(db) {
        for owner in owners(db, workspace, path) {
            let Some(start) = graph.index_of(&owner.target) else {
                continue;
            };
            let source = sources.len();
            sources.push(owner);
            if is_test[start] {
                reached.entry(start).or_default().push((source, true));
            }
            if sources[source].ownership == Ownership::Module {
                // Every target owns a changed module directly; walking dependents would
                // only find the same reason again.
                continue;
            }
            visited_by[start] = source;
            queue.clear();
            queue.push(start);
            while let Some(node) = queue.pop() {
                for &dependent in &reverse[node] {
                    if visited_by[dependent] != source {
                        visited_by[dependent] = source;
                        if is_test[dependent] {
                            reached.entry(dependent).or_default().push((source, false));
                        }
                        queue.push(dependent);
                    }
                }
            }
        }
    }
    reached
        .into_iter()
        .map(|(node, hits)| {
            // Direct reasons ("changed …") first, then inherited ones ("depends on …"),
            // each once, in the order the walks found them.
            let mut seen = FxHashSet::default();
            let (mut reasons, mut inherited) = (Vec::new(), Vec::new());
            for (source, direct) in hits {
                let reason = reason(&sources[source], direct);
                if seen.insert(reason.clone()) {
                    if direct { &mut reasons } else { &mut inherited }.push(reason);
                }
            }
            reasons.append(&mut inherited);
            AffectedTest {
                id: graph.nodes[node].id.clone(),
                kind: graph.nodes[node].kind.clone(),
                reasons,
            }
        })
        .collect()
}

/// Why a change reaches a test: the test owns the path (`direct`), or depends on its owner.
fn reason(source: &Owner, direct: bool) -> String {
    let Owner {
        target: owner,
        ownership,
        path,
    } = source;
    match (ownership, direct) {
        (Ownership::Source, true) => format!("changed test input `{path}`"),
        (Ownership::Manifest, true) => format!("changed manifest `{path}`"),
        (Ownership::Module, _) => format!("changed module `{path}`"),
        (Ownership::Source, false) => {
            format!("depends on `{owner}`, whose input `{path}` changed")
        }
        (Ownership::Manifest, false) => {
            format!("depends on `{owner}`, whose manifest `{path}` changed")
        }
    }
}
