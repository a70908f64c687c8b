//! A plan's graph: the edges its actions' inputs and outputs make (and the extra order
//! edges), checked before anything runs (`PlanError`), and each action's priority, the
//! length of the longest chain it starts.

use super::*;

/// A plan the executor refuses before running anything.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PlanError {
    DuplicateId(String),
    /// A path that is not a plain workspace-relative path.
    InvalidPath {
        action: String,
        path: String,
    },
    /// An output outside the target's build directory.
    OutputOutsideBuildDir {
        action: String,
        output: String,
        build_dir: String,
    },
    /// Two actions declare the same output.
    DuplicateOutput {
        output: String,
        first: String,
        second: String,
    },
    /// An output inside another declared output (of the same action or another one).
    NestedOutput {
        output: String,
        action: String,
        outer: String,
        outer_action: String,
    },
    /// A step writes a path its action does not declare as an output.
    UndeclaredStepOutput {
        action: String,
        path: String,
    },
    EmptyCommand {
        action: String,
    },
    /// The actions (some of them) depend on each other in a cycle.
    Cycle {
        actions: Vec<String>,
    },
    /// A workspace-scoped output inside `.once`, which holds once's own state.
    OutputInsideState {
        action: String,
        output: String,
    },
    /// A workspace-scoped output that is, contains or lies inside one of the action's own
    /// inputs (a run would clear what it reads).
    OutputOverlapsInput {
        action: String,
        output: String,
        input: String,
    },
    /// An ordering edge names an action the plan does not have.
    UnknownOrdering {
        action: String,
    },
}

/// Where a plan's actions may declare outputs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OutputScope {
    /// Under the target's build directory in `.once/out` (targets' actions).
    #[default]
    BuildDirectory,
    /// Anywhere in the workspace except `.once`, never overlapping the action's own
    /// inputs (annotated scripts: `# once output "dist/app.js"`).
    Workspace,
}

impl std::fmt::Display for PlanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PlanError::DuplicateId(id) => write!(f, "two actions have the id `{id}`"),
            PlanError::InvalidPath { action, path } => write!(
                f,
                "action `{action}` names `{path}`, which is not a relative path inside the workspace"
            ),
            PlanError::OutputOutsideBuildDir {
                action,
                output,
                build_dir,
            } => write!(
                f,
                "action `{action}` declares the output `{output}` outside its target's build directory `{build_dir}`"
            ),
            PlanError::DuplicateOutput {
                output,
                first,
                second,
            } if first == second => {
                write!(f, "action `{first}` declares the output `{output}` twice")
            }
            PlanError::DuplicateOutput {
                output,
                first,
                second,
            } => write!(
                f,
                "actions `{first}` and `{second}` both declare the output `{output}`"
            ),
            PlanError::NestedOutput {
                output,
                action,
                outer,
                outer_action,
            } => write!(
                f,
                "action `{action}` declares the output `{output}` inside `{outer}`, an output of `{outer_action}`"
            ),
            PlanError::UndeclaredStepOutput { action, path } => write!(
                f,
                "action `{action}` writes `{path}`, which it does not declare as an output"
            ),
            PlanError::EmptyCommand { action } => {
                write!(f, "action `{action}` runs an empty command line")
            }
            PlanError::Cycle { actions } => write!(
                f,
                "these actions depend on each other's outputs in a cycle: {}",
                actions.join(", ")
            ),
            PlanError::OutputInsideState { action, output } => write!(
                f,
                "action `{action}` declares the output `{output}` inside `.once`, which holds once's own state"
            ),
            PlanError::OutputOverlapsInput {
                action,
                output,
                input,
            } => write!(
                f,
                "action `{action}` declares the output `{output}`, which overlaps its own input `{input}` (a run clears its outputs first)"
            ),
            PlanError::UnknownOrdering { action } => write!(
                f,
                "an ordering edge names `{action}`, which is not an action of the plan"
            ),
        }
    }
}

impl std::error::Error for PlanError {}

/// The edges and priorities of a plan.
pub(super) struct Graph {
    /// Per action: (producer, the producer's output it consumes).
    pub(super) dependencies: Vec<Vec<(usize, String)>>,
    pub(super) dependents: Vec<Vec<usize>>,
    /// The number of actions on the longest chain from it to the end (itself included).
    pub(super) priority: Vec<u64>,
    /// Per action: how many distinct actions it waits for.
    pub(super) waiting_for: Vec<usize>,
}

pub(super) fn is_plain_relative(path: &str) -> bool {
    !path.is_empty()
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.contains('\0')
        && path
            .split('/')
            .all(|part| !part.is_empty() && part != "." && part != "..")
}

/// The edges of `plan`: from outputs consumed as inputs, plus `order` (`(before, after)`
/// action ids: `after` waits for `before` without consuming an output of it).
pub(super) fn plan_graph(
    plan: &[PlannedAction],
    scope: OutputScope,
    order: &[(String, String)],
) -> Result<Graph, PlanError> {
    // Fx-hashed: a no-op build of 10,000 targets looks up every input and each of its
    // parent directories here (SipHash took it 10 ms).
    let mut ids = FxHashMap::with_capacity_and_hasher(plan.len(), Default::default());
    let mut producers: FxHashMap<&str, usize> =
        FxHashMap::with_capacity_and_hasher(plan.len(), Default::default());
    for (index, planned) in plan.iter().enumerate() {
        let action = &planned.action;
        if ids.insert(action.id.as_str(), index).is_some() {
            return Err(PlanError::DuplicateId(action.id.clone()));
        }
        let label = TargetLabel::from_id(&action.target);
        let directory = build_dir(&label.package, &label.name);
        for path in action.inputs.iter().chain(&action.outputs) {
            if !is_plain_relative(path) {
                return Err(PlanError::InvalidPath {
                    action: action.id.clone(),
                    path: path.clone(),
                });
            }
        }
        for output in &action.outputs {
            match scope {
                OutputScope::BuildDirectory => {
                    if !is_under(output, &directory) || !is_under(output, OUT_DIR) {
                        return Err(PlanError::OutputOutsideBuildDir {
                            action: action.id.clone(),
                            output: output.clone(),
                            build_dir: directory.clone(),
                        });
                    }
                }
                OutputScope::Workspace => {
                    if is_under(output, ".once") {
                        return Err(PlanError::OutputInsideState {
                            action: action.id.clone(),
                            output: output.clone(),
                        });
                    }
                    if let Some(input) = action
                        .inputs
                        .iter()
                        .find(|input| is_under(input, output) || is_under(output, input))
                    {
                        return Err(PlanError::OutputOverlapsInput {
                            action: action.id.clone(),
                            output: output.clone(),
                            input: input.clone(),
                        });
                    }
                }
            }
            if let Some(first) = producers.insert(output, index) {
                return Err(PlanError::DuplicateOutput {
                    output: output.clone(),
                    first: plan[first].action.id.clone(),
                    second: action.id.clone(),
                });
            }
        }
        let written = match &action.step {
            ActionStep::Run(command) => {
                if command.argv.is_empty() {
                    return Err(PlanError::EmptyCommand {
                        action: action.id.clone(),
                    });
                }
                if !command.cwd.is_empty() && !is_plain_relative(&command.cwd) {
                    return Err(PlanError::InvalidPath {
                        action: action.id.clone(),
                        path: command.cwd.clone(),
                    });
                }
                None
            }
            ActionStep::WriteFile { path, .. } => Some(path),
            ActionStep::Copy { to, .. } => Some(to),
            ActionStep::Symlink { link, .. } => Some(link),
            ActionStep::MakeDir { path } => Some(path),
            ActionStep::MaterializeHostFile { to, .. } => Some(to),
        };
        if let Some(path) = written
            && !action.outputs.iter().any(|output| output == path)
        {
            return Err(PlanError::UndeclaredStepOutput {
                action: action.id.clone(),
                path: path.clone(),
            });
        }
        if let ActionStep::MaterializeHostFile { source, .. } = &action.step
            && (!source.starts_with('/')
                || source.split('/').any(|part| part == "." || part == ".."))
        {
            return Err(PlanError::InvalidPath {
                action: action.id.clone(),
                path: source.clone(),
            });
        }
        if let ActionStep::Copy { from, .. } = &action.step
            && !is_plain_relative(from)
        {
            return Err(PlanError::InvalidPath {
                action: action.id.clone(),
                path: from.clone(),
            });
        }
    }
    for (output, &index) in &producers {
        let mut ancestor = *output;
        while let Some((parent, _)) = ancestor.rsplit_once('/') {
            if let Some(&outer) = producers.get(parent) {
                return Err(PlanError::NestedOutput {
                    output: (*output).to_owned(),
                    action: plan[index].action.id.clone(),
                    outer: parent.to_owned(),
                    outer_action: plan[outer].action.id.clone(),
                });
            }
            ancestor = parent;
        }
    }
    let mut dependencies = vec![Vec::new(); plan.len()];
    let mut dependents = vec![Vec::new(); plan.len()];
    for (index, planned) in plan.iter().enumerate() {
        for input in &planned.action.inputs {
            let mut candidate = input.as_str();
            loop {
                if let Some(&producer) = producers.get(candidate) {
                    if producer != index
                        && !dependencies[index]
                            .iter()
                            .any(|(p, path): &(usize, String)| *p == producer && path == candidate)
                    {
                        dependencies[index].push((producer, candidate.to_owned()));
                        if !dependents[producer].contains(&index) {
                            dependents[producer].push(index);
                        }
                    }
                    break;
                }
                match candidate.rsplit_once('/') {
                    Some((parent, _)) => candidate = parent,
                    None => break,
                }
            }
        }
    }
    for (before, after) in order {
        let index_of = |id: &String| {
            ids.get(id.as_str())
                .copied()
                .ok_or_else(|| PlanError::UnknownOrdering { action: id.clone() })
        };
        let (producer, index) = (index_of(before)?, index_of(after)?);
        // An empty path: the dependent waits for it and consumes no output of it.
        dependencies[index].push((producer, String::new()));
        if !dependents[producer].contains(&index) {
            dependents[producer].push(index);
        }
    }
    // An action may consume several outputs of one producer: it waits for the producer once.
    let producers_of: Vec<Vec<usize>> = dependencies
        .iter()
        .map(|edges| {
            let mut producers: Vec<usize> = edges.iter().map(|(producer, _)| *producer).collect();
            producers.sort_unstable();
            producers.dedup();
            producers
        })
        .collect();
    // Kahn's algorithm from the sinks: priorities, and whatever is left is in a cycle.
    let mut remaining: Vec<usize> = dependents.iter().map(Vec::len).collect();
    let mut priority = vec![0u64; plan.len()];
    let mut queue: Vec<usize> = (0..plan.len()).filter(|&i| remaining[i] == 0).collect();
    let mut visited = 0;
    while let Some(index) = queue.pop() {
        visited += 1;
        priority[index] = 1 + dependents[index]
            .iter()
            .map(|&d| priority[d])
            .max()
            .unwrap_or(0);
        for &producer in &producers_of[index] {
            remaining[producer] -= 1;
            if remaining[producer] == 0 {
                queue.push(producer);
            }
        }
    }
    if visited != plan.len() {
        let actions = (0..plan.len())
            .filter(|&i| remaining[i] != 0)
            .map(|i| plan[i].action.id.clone())
            .collect();
        return Err(PlanError::Cycle { actions });
    }
    Ok(Graph {
        waiting_for: producers_of.iter().map(Vec::len).collect(),
        dependencies,
        dependents,
        priority,
    })
}
