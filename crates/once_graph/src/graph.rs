//! The dependency graph over every target of the workspace, its reverse, and cycles.

use once_db::{Db, Package, Workspace};
use once_model::{Diagnostic, DiagnosticCode, TargetLabel, TextRange};
use rustc_hash::{FxHashMap, FxHashSet};

use crate::resolve::resolved_targets;
use crate::settings::{package_by_path, workspace_packages};

/// One target in the graph.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GraphNode {
    pub id: String,
    pub kind: String,
    /// Workspace-relative manifest path.
    pub file: String,
    /// Edges to existing targets: (node index, role attribute such as `deps`).
    pub edges: Vec<(usize, String)>,
}

/// Every target, sorted by id, with edges by index.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct DependencyGraph {
    pub nodes: Vec<GraphNode>,
}

impl DependencyGraph {
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.nodes.binary_search_by(|n| n.id.as_str().cmp(id)).ok()
    }
}

/// One package's share of the graph: its targets and their edges by id, without text
/// ranges, so that edits which move text or change attributes backdate here and the
/// whole-workspace graph is not rebuilt.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PackageNode {
    pub id: String,
    pub kind: String,
    /// (dependency id, role attribute).
    pub edges: Vec<(String, String)>,
}

/// The graph nodes of one package.
#[salsa::tracked(returns(ref))]
pub fn package_nodes(db: &dyn Db, package: Package) -> Vec<PackageNode> {
    resolved_targets(db, package)
        .targets
        .iter()
        .map(|target| PackageNode {
            id: target.label.id(),
            kind: target.kind.clone(),
            edges: target
                .deps
                .iter()
                .map(|dep| (dep.label.id(), role_attribute(&dep.role)))
                .collect(),
        })
        .collect()
}

/// `deps`, or `dependencies.<role>`.
pub fn role_attribute(role: &str) -> String {
    if role == "deps" {
        "deps".to_owned()
    } else {
        format!("dependencies.{role}")
    }
}

/// The whole dependency graph.
#[salsa::tracked(returns(ref))]
pub fn dependency_graph(db: &dyn Db, workspace: Workspace) -> DependencyGraph {
    graph_of(db, workspace_packages(db, workspace))
}

/// The graph of the targets of `packages`, with the edges among them.
fn graph_of(db: &dyn Db, packages: &[Package]) -> DependencyGraph {
    let mut nodes = Vec::new();
    let mut pending_edges: Vec<(&str, &[(String, String)])> = Vec::new();
    for &package in packages {
        let file = package.manifest(db).path(db).clone();
        for node in package_nodes(db, package) {
            nodes.push(GraphNode {
                id: node.id.clone(),
                kind: node.kind.clone(),
                file: file.clone(),
                edges: Vec::new(),
            });
            pending_edges.push((node.id.as_str(), &node.edges));
        }
    }
    nodes.sort_by(|a, b| a.id.cmp(&b.id));
    nodes.dedup_by(|a, b| a.id == b.id);
    let index: FxHashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let mut edges_of: Vec<Option<Vec<(usize, String)>>> = vec![None; nodes.len()];
    for (id, edges) in pending_edges {
        let Some(&from) = index.get(id) else { continue };
        if edges_of[from].is_some() {
            continue;
        }
        edges_of[from] = Some(
            edges
                .iter()
                .filter_map(|(to, attribute)| {
                    index.get(to.as_str()).map(|&to| (to, attribute.clone()))
                })
                .collect(),
        );
    }
    drop(index);
    for (node, edges) in nodes.iter_mut().zip(edges_of) {
        node.edges = edges.unwrap_or_default();
    }
    DependencyGraph { nodes }
}

/// For each node index, the indices of the nodes that depend on it (sorted, unique).
#[salsa::tracked(returns(ref))]
pub fn reverse_deps(db: &dyn Db, workspace: Workspace) -> Vec<Vec<usize>> {
    let graph = dependency_graph(db, workspace);
    let mut reverse = vec![Vec::new(); graph.nodes.len()];
    for (from, node) in graph.nodes.iter().enumerate() {
        for &(to, ..) in &node.edges {
            reverse[to].push(from);
        }
    }
    for list in &mut reverse {
        list.sort_unstable();
        list.dedup();
    }
    reverse
}

/// How many targets the workspace has (the graph's node count), without building the
/// graph: a new target re-runs one sum, not the whole-workspace graph.
#[salsa::tracked]
pub fn target_count(db: &dyn Db, workspace: Workspace) -> usize {
    (0..package_chunks(db, workspace))
        .map(|chunk| chunk_target_count(db, workspace, chunk))
        .sum()
}

/// How many packages a chunk of a workspace-wide query holds: such a query depends on
/// one chunk query per this many packages, so that after an edit it checks a few hundred
/// dependencies instead of every package's, and re-runs one chunk.
pub const PACKAGE_CHUNK: usize = 64;

/// How many chunks of [`PACKAGE_CHUNK`] packages the workspace has.
pub fn package_chunks(db: &dyn Db, workspace: Workspace) -> u32 {
    u32::try_from(
        workspace_packages(db, workspace)
            .len()
            .div_ceil(PACKAGE_CHUNK),
    )
    .unwrap_or(u32::MAX)
}

/// The packages of chunk `chunk` (empty past the end).
pub fn chunk_of(db: &dyn Db, workspace: Workspace, chunk: u32) -> &[Package] {
    let packages = workspace_packages(db, workspace);
    let start = (chunk as usize)
        .saturating_mul(PACKAGE_CHUNK)
        .min(packages.len());
    let end = start.saturating_add(PACKAGE_CHUNK).min(packages.len());
    &packages[start..end]
}

/// The targets of one chunk of packages.
#[salsa::tracked]
pub fn chunk_target_count(db: &dyn Db, workspace: Workspace, chunk: u32) -> usize {
    chunk_of(db, workspace, chunk)
        .iter()
        .map(|&package| package_nodes(db, package).len())
        .sum()
}

/// The paths of the other packages a package's targets depend on, sorted and unique. It
/// backdates when a target is added, removed or renamed without changing which packages
/// the package depends on.
#[salsa::tracked(returns(ref))]
pub fn package_dependencies(db: &dyn Db, package: Package) -> Vec<String> {
    let own = package.path(db);
    let mut packages: Vec<String> = package_nodes(db, package)
        .iter()
        .flat_map(|node| node.edges.iter())
        .map(|(to, _)| TargetLabel::from_id(to).package)
        .filter(|path| path != own)
        .collect();
    packages.sort_unstable();
    packages.dedup();
    packages
}

/// Whether the targets of one package depend on each other in a cycle.
#[salsa::tracked]
pub fn package_has_internal_cycle(db: &dyn Db, package: Package) -> bool {
    let nodes = package_nodes(db, package);
    let index: FxHashMap<&str, usize> = nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let edges: Vec<Vec<usize>> = nodes
        .iter()
        .map(|node| {
            node.edges
                .iter()
                .filter_map(|(to, _)| index.get(to.as_str()).copied())
                .collect()
        })
        .collect();
    has_cycle(&edges)
}

/// Whether a graph has a strongly connected component of two or more nodes or a node
/// with an edge to itself.
fn has_cycle(edges: &[Vec<usize>]) -> bool {
    strongly_connected_components(edges)
        .iter()
        .any(|component| component.len() > 1 || edges[component[0]].contains(&component[0]))
}

/// The packages a dependency cycle can pass through: those in a strongly connected
/// component of the package graph with more than one package, and those whose own targets
/// form a cycle. Every target-level cycle lies inside these (a cycle across packages
/// makes its packages a cycle of packages).
/// Sorted by path; usually empty, and unchanged by edits that keep package dependencies.
#[salsa::tracked(returns(ref))]
pub fn cycle_candidate_packages(db: &dyn Db, workspace: Workspace) -> Vec<Package> {
    let packages = workspace_packages(db, workspace);
    let index: FxHashMap<&str, usize> = packages
        .iter()
        .enumerate()
        .map(|(i, p)| (p.path(db).as_str(), i))
        .collect();
    // One dependency per chunk of packages (see `PACKAGE_CHUNK`), in package order.
    let links: Vec<&(Vec<String>, bool)> = (0..package_chunks(db, workspace))
        .flat_map(|chunk| chunk_package_links(db, workspace, chunk).iter())
        .collect();
    let edges: Vec<Vec<usize>> = links
        .iter()
        .map(|(dependencies, _)| {
            dependencies
                .iter()
                .filter_map(|path| index.get(path.as_str()).copied())
                .collect()
        })
        .collect();
    let mut candidates: Vec<Package> = strongly_connected_components(&edges)
        .into_iter()
        .filter(|component| {
            component.len() > 1 || links.get(component[0]).is_some_and(|(_, cycle)| *cycle)
        })
        .flatten()
        .map(|node| packages[node])
        .collect();
    candidates.sort_by(|a, b| a.path(db).cmp(b.path(db)));
    candidates
}

/// For each package of a chunk (in order): the packages it depends on and whether its
/// own targets form a cycle.
#[salsa::tracked(returns(ref))]
pub fn chunk_package_links(
    db: &dyn Db,
    workspace: Workspace,
    chunk: u32,
) -> Vec<(Vec<String>, bool)> {
    chunk_of(db, workspace, chunk)
        .iter()
        .map(|&package| {
            (
                package_dependencies(db, package).clone(),
                *package_has_internal_cycle(db, package),
            )
        })
        .collect()
}

/// Tarjan's strongly connected components, iteratively.
fn strongly_connected_components(edges: &[Vec<usize>]) -> Vec<Vec<usize>> {
    const UNVISITED: usize = usize::MAX;
    let mut index_of = vec![UNVISITED; edges.len()];
    let mut low = vec![0; edges.len()];
    let mut on_stack = vec![false; edges.len()];
    let mut stack = Vec::new();
    let mut components = Vec::new();
    let mut next_index = 0;
    for start in 0..edges.len() {
        if index_of[start] != UNVISITED {
            continue;
        }
        let mut work: Vec<(usize, usize)> = vec![(start, 0)];
        index_of[start] = next_index;
        low[start] = next_index;
        next_index += 1;
        stack.push(start);
        on_stack[start] = true;
        while let Some(&mut (node, ref mut next)) = work.last_mut() {
            if let Some(&to) = edges[node].get(*next) {
                *next += 1;
                if index_of[to] == UNVISITED {
                    index_of[to] = next_index;
                    low[to] = next_index;
                    next_index += 1;
                    stack.push(to);
                    on_stack[to] = true;
                    work.push((to, 0));
                } else if on_stack[to] {
                    low[node] = low[node].min(index_of[to]);
                }
                continue;
            }
            work.pop();
            if let Some(&(parent, _)) = work.last() {
                low[parent] = low[parent].min(low[node]);
            }
            if low[node] == index_of[node] {
                let mut component = Vec::new();
                while let Some(member) = stack.pop() {
                    on_stack[member] = false;
                    component.push(member);
                    if member == node {
                        break;
                    }
                }
                components.push(component);
            }
        }
    }
    components
}

/// Every dependency cycle, each reported once, at the edge leaving the cycle's
/// smallest id, with the whole path in the message. Only the targets of the cycle
/// candidate packages are searched, so an edit that keeps every package's dependencies
/// (a new, removed or renamed target among them) does not re-run this.
#[salsa::tracked(returns(ref))]
pub fn dependency_cycles(db: &dyn Db, workspace: Workspace) -> Vec<Diagnostic> {
    // The part of the dependency graph a cycle can lie in.
    let graph = &graph_of(db, cycle_candidate_packages(db, workspace));
    let mut cycles: Vec<Vec<usize>> = Vec::new();
    let mut known_cycles: FxHashSet<Vec<usize>> = FxHashSet::default();
    #[derive(Clone, Copy, PartialEq)]
    enum State {
        New,
        OnStack,
        Done,
    }
    let mut state = vec![State::New; graph.nodes.len()];
    // Where each node on the stack sits in it, so closing a cycle does not search the stack.
    let mut stack_position = vec![0usize; graph.nodes.len()];
    for start in 0..graph.nodes.len() {
        if state[start] != State::New {
            continue;
        }
        // Iterative depth-first search: (node, next edge to visit).
        let mut stack: Vec<(usize, usize)> = vec![(start, 0)];
        state[start] = State::OnStack;
        stack_position[start] = 0;
        while let Some(&mut (node, ref mut next)) = stack.last_mut() {
            if let Some(&(to, ..)) = graph.nodes[node].edges.get(*next) {
                *next += 1;
                match state[to] {
                    State::New => {
                        state[to] = State::OnStack;
                        stack_position[to] = stack.len();
                        stack.push((to, 0));
                    }
                    State::OnStack => {
                        let position = stack_position[to];
                        let mut cycle: Vec<usize> =
                            stack[position..].iter().map(|&(n, _)| n).collect();
                        let smallest = cycle
                            .iter()
                            .enumerate()
                            .min_by_key(|(_, n)| **n)
                            .map_or(0, |(i, _)| i);
                        cycle.rotate_left(smallest);
                        if known_cycles.insert(cycle.clone()) {
                            cycles.push(cycle);
                        }
                    }
                    State::Done => {}
                }
            } else {
                state[node] = State::Done;
                stack.pop();
            }
        }
    }
    let mut targets_by_name = TargetsByName::default();
    cycles
        .into_iter()
        .map(|cycle| {
            let first = &graph.nodes[cycle[0]];
            let second = cycle.get(1).copied().unwrap_or(cycle[0]);
            let mut path: Vec<&str> = cycle.iter().map(|&n| graph.nodes[n].id.as_str()).collect();
            path.push(first.id.as_str());
            let attribute = targets_by_name
                .edge_attribute(graph, cycle[0], second)
                .to_owned();
            let range = targets_by_name.edge_range(
                db,
                workspace,
                &first.id,
                &graph.nodes[second].id,
                &attribute,
            );
            Diagnostic::new(
                DiagnosticCode::DependencyCycle,
                format!("dependency cycle: {}", path.join(" -> ")),
            )
            .at(first.file.clone(), range)
            .with_target(first.id.clone())
            .with_attribute(attribute)
            .with_repair(format!(
                "Remove one edge of the cycle, e.g. `{}` from the dependencies of `{}`",
                graph.nodes[second].id, first.id
            ))
        })
        .collect()
}

/// Each package's targets by name, and each target's references by (target id, attribute),
/// built for the targets a cycle passes through, so that placing many cycles in one
/// package or on one target does not search its targets or references once per cycle.
#[derive(Default)]
struct TargetsByName {
    packages: FxHashMap<Package, FxHashMap<String, usize>>,
    references: FxHashMap<(Package, usize), FxHashMap<(String, String), TextRange>>,
    /// Graph node → the attribute of its first edge to each dependency.
    edges: FxHashMap<usize, FxHashMap<usize, String>>,
}

impl TargetsByName {
    /// The attribute of the first edge from node `from` to node `to` (`deps` when none).
    fn edge_attribute(&mut self, graph: &DependencyGraph, from: usize, to: usize) -> &str {
        let edges = self.edges.entry(from).or_insert_with(|| {
            let mut edges = FxHashMap::default();
            for (dependency, attribute) in &graph.nodes[from].edges {
                edges
                    .entry(*dependency)
                    .or_insert_with(|| attribute.clone());
            }
            edges
        });
        edges.get(&to).map_or("deps", String::as_str)
    }

    /// The text range of the reference from `from` to `to` in `from`'s manifest.
    fn edge_range(
        &mut self,
        db: &dyn Db,
        workspace: Workspace,
        from: &str,
        to: &str,
        attribute: &str,
    ) -> TextRange {
        let label = TargetLabel::from_id(from);
        let Some(package) = package_by_path(db, workspace).get(&label.package) else {
            return TextRange::default();
        };
        let targets = &resolved_targets(db, package).targets;
        let by_name = self.packages.entry(package).or_insert_with(|| {
            targets
                .iter()
                .enumerate()
                .map(|(i, t)| (t.label.name.clone(), i))
                .collect()
        });
        let Some(&index) = by_name.get(&label.name) else {
            return TextRange::default();
        };
        let references = self.references.entry((package, index)).or_insert_with(|| {
            let mut references = FxHashMap::default();
            for dep in &targets[index].deps {
                let key = (dep.label.id(), role_attribute(&dep.role));
                references.entry(key).or_insert(dep.range);
            }
            references
        });
        references
            .get(&(to.to_owned(), attribute.to_owned()))
            .copied()
            .unwrap_or_default()
    }
}
