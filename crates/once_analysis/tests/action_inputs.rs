//! The property every cache key stands on: whatever a target's build reads reaches the
//! key of one of its cacheable actions, or is handed on to its dependents. For every
//! target of every starter example and of the demo workspace, the source files of the
//! target and of every target it depends on, directly or not, must be inputs of the
//! target's own build actions, or among its `default` outputs (what dependents consume),
//! or inputs of the actions producing any of those (transitively). A file outside that
//! closure could change without changing any key: a wrong cache hit (a Rust library that
//! handed nothing to the binaries compiling it was one). All violations are reported
//! together.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use once_analysis::{ActionPlan, Analysis, AnalysisHost, MemorySystem, OsSystem};
use once_fixture::Fixture;

const ROOT: &str = once_fixture::ROOT;

/// Every path that reaches the keys of `target`'s own cacheable build actions or its
/// default outputs.
fn reached(plan: &ActionPlan, target: &str) -> BTreeSet<String> {
    let actions: Vec<&once_analysis::PlannedAction> =
        plan.steps.iter().flat_map(|step| &step.actions).collect();
    let mut producers: BTreeMap<&str, Vec<usize>> = BTreeMap::new();
    for (index, planned) in actions.iter().enumerate() {
        for output in &planned.action.outputs {
            producers.entry(output.as_str()).or_default().push(index);
        }
    }
    let producers_of = |path: &str| -> Vec<usize> {
        producers
            .iter()
            .filter(|(output, _)| {
                *output == &path
                    || path.starts_with(&format!("{output}/"))
                    || output.starts_with(&format!("{path}/"))
            })
            .flat_map(|(_, indexes)| indexes.iter().copied())
            .collect()
    };
    let mut seen_actions = BTreeSet::new();
    let mut stack: Vec<usize> = actions
        .iter()
        .enumerate()
        .filter(|(_, planned)| planned.action.target == target && planned.action.cacheable)
        .map(|(index, _)| index)
        .collect();
    let mut paths = BTreeSet::new();
    for step in plan.steps.iter().filter(|step| step.target == target) {
        for output in &step.default_outputs {
            paths.insert(output.clone());
            stack.extend(producers_of(output));
        }
    }
    while let Some(index) = stack.pop() {
        if !seen_actions.insert(index) {
            continue;
        }
        for input in &actions[index].action.inputs {
            paths.insert(input.clone());
            stack.extend(producers_of(input));
        }
    }
    paths
}

/// The source files of `id` (its inputs without manifests).
fn sources(analysis: &Analysis, id: &str) -> Vec<String> {
    analysis
        .target_inputs(id)
        .expect("not cancelled")
        .map(|inputs| {
            inputs
                .inputs
                .into_iter()
                .map(|input| input.path)
                .filter(|path| path != "once.toml" && !path.ends_with("/once.toml"))
                .collect()
        })
        .unwrap_or_default()
}

/// `id` and every target it depends on, directly or not.
fn closure(analysis: &Analysis, id: &str) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let mut stack = vec![id.to_owned()];
    while let Some(id) = stack.pop() {
        if !seen.insert(id.clone()) {
            continue;
        }
        if let Ok(details) = analysis.lookup_target(&id).expect("not cancelled") {
            stack.extend(details.deps);
        }
    }
    seen
}

/// Every source that can change a target's build without reaching one of its keys, as
/// `target: file (of dependency)` lines.
fn check(analysis: &Analysis) -> Vec<String> {
    let mut problems = Vec::new();
    for target in analysis.targets(None).expect("not cancelled") {
        let id = target.id.clone();
        let Some(plan) = analysis.action_plan(&id, "build").expect("not cancelled") else {
            continue;
        };
        let builds_something = plan.steps.iter().any(|step| {
            step.target == id
                && (!step.default_outputs.is_empty()
                    || step.actions.iter().any(|planned| planned.action.cacheable))
        });
        if !builds_something {
            continue;
        }
        let reached = reached(&plan, &id);
        for dependency in closure(analysis, &id) {
            for source in sources(analysis, &dependency) {
                if !reached.contains(&source) {
                    problems.push(format!("{id}: {source} (of {dependency}) reaches no key"));
                }
            }
        }
    }
    problems
}

#[test]
fn every_source_a_build_reads_reaches_its_keys() {
    let empty = Fixture::parse("//- /once.toml\n[workspace]\n").system();
    let kinds = AnalysisHost::load(Arc::new(empty), PathBuf::from(ROOT))
        .analysis()
        .kinds()
        .expect("not cancelled");
    let mut problems = Vec::new();
    let mut examples = BTreeSet::new();
    for kind in &kinds {
        for example in &kind.examples {
            if !examples.insert(example.slug.clone()) {
                continue;
            }
            let system = MemorySystem::default();
            for file in &example.files {
                if let Ok(text) = std::str::from_utf8(&file.contents) {
                    system.write(format!("{ROOT}/{}", file.path), text);
                }
            }
            let analysis = AnalysisHost::load(Arc::new(system), PathBuf::from(ROOT)).analysis();
            problems.extend(
                check(&analysis)
                    .into_iter()
                    .map(|problem| format!("{}: {problem}", example.slug)),
            );
        }
    }
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/demo");
    let analysis = AnalysisHost::load(Arc::new(OsSystem), demo).analysis();
    problems.extend(
        check(&analysis)
            .into_iter()
            .map(|problem| format!("demo: {problem}")),
    );
    assert!(examples.len() > 20, "{examples:?}");
    assert!(
        problems.is_empty(),
        "sources outside every key:\n{}",
        problems.join("\n")
    );
}
