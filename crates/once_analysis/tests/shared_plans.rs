//! `Analysis::action_plans` plans a step shared by several targets once: merged in order
//! (the first of each action, problem and kind kept, as `once build` does), its plans
//! must give exactly what the full plan of each target gives, and every target keeps its
//! own step whole.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

use once_analysis::{ActionPlan, Analysis, AnalysisHost, MemorySystem, OsSystem};

/// Actions (id and static key), problems and kinds, each first seen, in order.
type Merged = (Vec<(String, String)>, Vec<String>, Vec<(String, String)>);

fn merge(plans: &[ActionPlan]) -> Merged {
    let (mut actions, mut problems, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
    let (mut seen_actions, mut seen_problems, mut seen_kinds) =
        (HashSet::new(), HashSet::new(), HashSet::new());
    for plan in plans {
        for step in &plan.steps {
            if seen_kinds.insert(step.target.clone()) {
                kinds.push((step.target.clone(), step.kind.clone()));
            }
            for diagnostic in &step.diagnostics {
                let problem = format!("{} {} {diagnostic:?}", step.target, step.capability);
                if seen_problems.insert(problem.clone()) {
                    problems.push(problem);
                }
            }
            for planned in &step.actions {
                if seen_actions.insert(planned.action.id.clone()) {
                    actions.push((planned.action.id.clone(), planned.static_key.to_hex()));
                }
            }
        }
    }
    (actions, problems, kinds)
}

/// Checks [`Analysis::action_plans`] against the full plan of each target, for both
/// orders of every target.
fn check(analysis: &Analysis) {
    let mut ids: Vec<String> = analysis
        .targets(None)
        .expect("not cancelled")
        .into_iter()
        .map(|target| target.id)
        .collect();
    // Dependents first and last: both orders share steps.
    ids.sort();
    let reversed: Vec<String> = ids.iter().rev().cloned().collect();
    for capability in ["build", "test", "run"] {
        for ids in [&ids, &reversed] {
            let full: Vec<ActionPlan> = ids
                .iter()
                .map(|id| analysis.action_plan(id, capability).unwrap().unwrap())
                .collect();
            let shared: Vec<ActionPlan> = analysis
                .action_plans(ids, capability)
                .unwrap()
                .into_iter()
                .map(Option::unwrap)
                .collect();
            assert_eq!(merge(&shared), merge(&full), "{capability}");
            for (shared, full) in shared.iter().zip(&full) {
                let own = |plan: &ActionPlan| {
                    plan.steps
                        .iter()
                        .filter(|step| step.target == plan.target && step.capability == capability)
                        .cloned()
                        .collect::<Vec<_>>()
                };
                assert_eq!(own(shared), own(full), "{} {capability}", full.target);
            }
            let steps = |plans: &[ActionPlan]| plans.iter().map(|p| p.steps.len()).sum::<usize>();
            assert!(
                steps(&shared) < steps(&full),
                "{capability}: {} steps, not fewer than {}",
                steps(&shared),
                steps(&full)
            );
        }
    }
}

#[test]
fn shared_steps_are_planned_once_and_merge_to_the_same_plan() {
    let demo = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/demo");
    let analysis = AnalysisHost::load(Arc::new(OsSystem), demo).analysis();
    check(&analysis);
    assert!(
        analysis
            .action_plans(&["//nowhere:Nothing".to_owned()], "build")
            .unwrap()[0]
            .is_none()
    );
}

/// 80 packages of a chain of ten `command` targets each (as the execution benchmark
/// generates them): enough ids to plan on several threads.
fn chains() -> Analysis {
    let system = MemorySystem::default();
    let root = once_fixture::ROOT;
    system.write(format!("{root}/once.toml"), "[workspace]\n");
    for p in 0..80 {
        let mut manifest = String::new();
        for t in 0..10 {
            system.write(
                format!("{root}/pkgs/p{p}/t{t}/in.txt"),
                format!("{p} {t}\n"),
            );
            let deps = if t == 0 {
                String::new()
            } else {
                format!("\"./T{}\"", t - 1)
            };
            manifest.push_str(&format!(
                "[[target]]\nname = \"T{t}\"\nkind = \"command\"\nsrcs = [\"t{t}/in.txt\"]\n\
                 deps = [{deps}]\n\n[target.attrs]\ncmd = \"cp t{t}/in.txt $OUT/out.txt\"\n\
                 outputs = [\"out.txt\"]\n\n"
            ));
        }
        system.write(format!("{root}/pkgs/p{p}/once.toml"), manifest);
    }
    AnalysisHost::load(Arc::new(system), std::path::PathBuf::from(root)).analysis()
}

#[test]
fn many_targets_planned_on_several_threads_merge_to_the_same_plan() {
    let analysis = chains();
    assert_eq!(analysis.targets(None).unwrap().len(), 800);
    check(&analysis);
}

#[test]
fn cancelling_the_snapshot_cancels_every_planning_thread() {
    let analysis = chains();
    let ids: Vec<String> = analysis
        .targets(None)
        .unwrap()
        .into_iter()
        .map(|target| target.id)
        .collect();
    analysis.cancel_handle().cancel();
    assert!(analysis.action_plans(&ids, "build").is_err());
}
