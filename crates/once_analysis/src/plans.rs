//! Plans: the actions a target's capability declares, with those of its dependency
//! closure and each action's static key, as plain data (`once query actions`).

use once_db::{RootDatabase, Workspace};
use once_graph::{action_static_keys, dependency_graph, target_actions};
use once_model::action::Action;

use crate::LocatedDiagnostic;
use crate::answers::{TargetOutline, target_outline};

/// The plan of one target's capability: its dependencies' `build` plans first
/// (dependencies before dependents), then the target's own `build` when another
/// capability was asked for, then the capability itself.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ActionPlan {
    pub target: String,
    pub capability: String,
    pub steps: Vec<PlannedCapability>,
    /// The target's outline for the capability (its kind, the kind's declaration of the
    /// capability, its attributes: what [`crate::Analysis::target`] says of it), made by
    /// the planning thread (a plan of 10,000 targets asked it of each, one after the
    /// other, after planning).
    pub outline: Option<TargetOutline>,
}

/// What one capability of one target plans.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedCapability {
    pub target: String,
    pub kind: String,
    pub capability: String,
    /// Whether the kind implements the capability.
    pub implemented: bool,
    pub actions: Vec<PlannedAction>,
    pub default_outputs: Vec<String>,
    /// Why the capability is not planned: the target's errors (located in its
    /// manifest) or its implementation's failure (located in the module's text).
    pub diagnostics: Vec<LocatedDiagnostic>,
}

/// One action with its static key (the executor joins tool identities and the digests of
/// dependency outputs at execution time).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlannedAction {
    pub action: Action,
    pub static_key: once_db::Sha256Digest,
}

/// The plan, or `None` when no target has the id.
pub(crate) fn action_plan(
    db: &RootDatabase,
    workspace: Workspace,
    id: &str,
    capability: &str,
) -> Option<ActionPlan> {
    let mut walk = Walk::new(dependency_graph(db, workspace));
    action_plan_after(db, workspace, id, capability, &mut walk)
}

/// The plans of `ids` in order, each as [`action_plan`] answers it except that a step an
/// earlier plan of the list holds already (the same target and capability) is left out,
/// unless it is the plan's own (its target's requested capability). Targets sharing
/// dependencies (a chain of ten plans 55 steps where 10 are distinct) plan each shared
/// step once; a caller merging the plans in order (keeping the first of each action)
/// gets the same result as from the full plans.
///
/// `before_each` runs before each id is planned (a planning thread passes on a
/// cancellation there).
pub(crate) fn action_plans(
    db: &RootDatabase,
    workspace: Workspace,
    ids: &[String],
    capability: &str,
    before_each: &dyn Fn(),
) -> Vec<Option<ActionPlan>> {
    let mut walk = Walk::new(dependency_graph(db, workspace));
    ids.iter()
        .map(|id| {
            before_each();
            action_plan_after(db, workspace, id, capability, &mut walk)
        })
        .collect()
}

/// The state of planning a list of targets over the dependency graph, by node index:
/// which nodes the current target's walk met, and which nodes' `build` an earlier plan
/// of the list holds (kept between targets, so a list of 10,000 targets neither
/// allocates a mark per node per target nor walks a shared dependency again).
struct Walk<'db> {
    graph: &'db once_graph::DependencyGraph,
    /// The round in which the node was last met (a round per target).
    met: Vec<u32>,
    round: u32,
    /// Whether a plan of the list holds the node's `build` step already.
    built: Vec<bool>,
}

impl<'db> Walk<'db> {
    fn new(graph: &'db once_graph::DependencyGraph) -> Walk<'db> {
        Walk {
            graph,
            met: vec![0; graph.nodes.len()],
            round: 0,
            built: vec![false; graph.nodes.len()],
        }
    }
}

/// [`action_plan`] without the `build` steps `walk` marks as planned other than its own;
/// marks its `build` steps.
fn action_plan_after(
    db: &RootDatabase,
    workspace: Workspace,
    id: &str,
    capability: &str,
    walk: &mut Walk<'_>,
) -> Option<ActionPlan> {
    let graph = walk.graph;
    let root = graph.index_of(id)?;
    walk.round += 1;
    let round = walk.round;
    // Post-order over the dependency edges: each dependency before its dependents. A
    // dependency whose `build` was planned before is not entered: its own dependencies
    // were planned before it.
    let mut order = Vec::new();
    let mut stack = vec![(root, 0usize)];
    walk.met[root] = round;
    while let Some((node, next)) = stack.pop() {
        let edges = &graph.nodes[node].edges;
        if let Some((dep, _)) = edges.get(next) {
            stack.push((node, next + 1));
            if walk.met[*dep] != round && !walk.built[*dep] {
                walk.met[*dep] = round;
                stack.push((*dep, 0));
            }
        } else {
            order.push(node);
        }
    }
    let mut steps = Vec::new();
    for index in order {
        let node = &graph.nodes[index];
        if (index != root || capability != "build") && !walk.built[index] {
            walk.built[index] = true;
            steps.push(planned(db, workspace, &node.id, &node.kind, "build"));
        }
        if index == root {
            if capability == "build" {
                walk.built[index] = true;
            }
            steps.push(planned(db, workspace, &node.id, &node.kind, capability));
        }
    }
    // A kind without `build` plans nothing for it; keep only what the kind declares.
    let catalog = once_graph::kind_catalog(db, workspace);
    steps.retain(|step| {
        catalog
            .get(&step.kind)
            .is_some_and(|kind| kind.capability(&step.capability).is_some())
            || step.target == id && step.capability == capability
    });
    Some(ActionPlan {
        target: id.to_owned(),
        capability: capability.to_owned(),
        steps,
        outline: target_outline(db, workspace, id, capability),
    })
}

fn planned(
    db: &RootDatabase,
    workspace: Workspace,
    id: &str,
    kind: &str,
    capability: &str,
) -> PlannedCapability {
    let plan = target_actions(db, workspace, id, capability);
    let keys = action_static_keys(db, workspace, id, capability);
    PlannedCapability {
        target: id.to_owned(),
        kind: kind.to_owned(),
        capability: capability.to_owned(),
        implemented: plan.implemented,
        actions: plan
            .actions
            .actions
            .iter()
            .zip(keys)
            .map(|(action, key)| PlannedAction {
                action: action.clone(),
                static_key: *key,
            })
            .collect(),
        default_outputs: plan.actions.default_outputs.clone(),
        diagnostics: plan
            .diagnostics
            .iter()
            .map(|d| locate_in_module(db, d))
            .collect(),
    }
}

/// Locates a diagnostic in a workspace file, or in the embedded prelude's text.
fn locate_in_module(db: &RootDatabase, diagnostic: &once_model::Diagnostic) -> LocatedDiagnostic {
    let prelude = diagnostic
        .file
        .as_deref()
        .and_then(|f| f.strip_prefix("prelude/"))
        .and_then(once_starlark::prelude_file);
    match prelude {
        Some(bytes) => {
            let index = once_db::LineIndex::new(String::from_utf8_lossy(bytes).into());
            LocatedDiagnostic::new(diagnostic.clone(), Some(&index))
        }
        None => crate::locate(db, diagnostic),
    }
}
