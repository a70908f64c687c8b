//! Facts the front ends ask for again and again are queries: salsa's execution log shows
//! an edit re-locating only the diagnostics of the file it changed, and a repeated target
//! listing (an MCP client paging) being built once.

use std::sync::Arc;

use once_analysis::{AnalysisHost, ChangeEvent, ExecutionLog, MemorySystem};
use once_fixture::Fixture;

/// Two packages whose manifests each carry an unknown-kind error.
const TWO_BROKEN_PACKAGES: &str = r#"
//- /once.toml
[workspace]
//- /a/once.toml
[[target]]
name = "A"
kind = "rust_libary"
//- /b/once.toml
[[target]]
name = "B"
kind = "rust_binery"
"#;

fn load(fixture: &str) -> (MemorySystem, AnalysisHost, ExecutionLog) {
    let system = Fixture::parse(fixture).system();
    let (host, log) =
        AnalysisHost::load_with_execution_log(Arc::new(system.clone()), once_fixture::path(""));
    (system, host, log)
}

/// How many times `query` executed in `log` since the last take.
fn runs(log: &ExecutionLog, query: &str) -> usize {
    log.take()
        .iter()
        .filter(|e| e.starts_with(&format!("{query}(")))
        .count()
}

#[test]
fn editing_one_manifest_relocates_only_its_diagnostics() {
    let (system, mut host, log) = load(TWO_BROKEN_PACKAGES);
    let before = host.analysis().diagnostics_by_file().unwrap();
    assert_eq!(
        before.keys().collect::<Vec<_>>(),
        ["a/once.toml", "b/once.toml"]
    );
    assert_eq!(runs(&log, "located_diagnostics_of_file"), 2);

    // Nothing changed: the grouping and locating are memoised.
    let _ = host.analysis().diagnostics_by_file().unwrap();
    assert_eq!(runs(&log, "located_diagnostics_of_file"), 0);

    // The first change of a file lowers its durability (see `once_db`'s `file_input`), and
    // what read it cannot backdate then: a first change (a trailing blank line) before
    // the measured one.
    let path = once_fixture::path("a/once.toml");
    system.write(
        &path,
        "[[target]]\nname = \"A\"\nkind = \"rust_libary\"\n\n",
    );
    host.apply_changes(&[ChangeEvent::Changed(path.clone())]);
    let _ = host.analysis().diagnostics_by_file().unwrap();
    let _ = log.take();

    // A keystroke in a/once.toml (a blank line moves its diagnostic down a line).
    system.write(
        &path,
        "\n[[target]]\nname = \"A\"\nkind = \"rust_libary\"\n",
    );
    host.apply_changes(&[ChangeEvent::Changed(path)]);
    let after = host.analysis().diagnostics_by_file().unwrap();
    assert_eq!(
        runs(&log, "located_diagnostics_of_file"),
        1,
        "only a/once.toml's diagnostics are re-located"
    );
    assert_eq!(after["b/once.toml"], before["b/once.toml"]);
    let line = |d: &once_analysis::LocatedDiagnostic| d.range.map(|r| r.start.line);
    assert_eq!(
        after["a/once.toml"].iter().map(line).collect::<Vec<_>>(),
        before["a/once.toml"]
            .iter()
            .map(|d| line(d).map(|l| l + 1))
            .collect::<Vec<_>>()
    );
}

#[test]
fn paging_through_targets_builds_the_listing_once() {
    let (system, mut host, log) = load(TWO_BROKEN_PACKAGES);
    let analysis = host.analysis();
    let all = analysis.targets(None).unwrap();
    assert_eq!(
        all.iter().map(|t| t.id.as_str()).collect::<Vec<_>>(),
        ["a/A", "b/B"]
    );
    assert_eq!(runs(&log, "target_listing"), 1);
    // Page after page, and a filtered listing, reuse it.
    for _ in 0..5 {
        let _ = analysis.targets(None).unwrap();
    }
    assert_eq!(analysis.targets(Some("rust_binery")).unwrap().len(), 1);
    assert_eq!(runs(&log, "target_listing"), 0);
    drop(analysis);

    // A new target rebuilds it once.
    let path = once_fixture::path("b/once.toml");
    system.write(
        &path,
        "[[target]]\nname = \"B\"\nkind = \"rust_binery\"\n\n[[target]]\nname = \"C\"\nkind = \"x\"\n",
    );
    host.apply_changes(&[ChangeEvent::Changed(path)]);
    assert_eq!(host.analysis().targets(None).unwrap().len(), 3);
    assert_eq!(runs(&log, "target_listing"), 1);
}

#[test]
fn a_plans_target_outline_is_what_the_details_say_of_it() {
    let (_, host, _) = load(
        r#"
//- /once.toml
[workspace]
//- /a/once.toml
[[target]]
name = "Gen"
kind = "command"
attempts = 3
[target.attrs]
cmd = "echo hi > $OUT/o"
outputs = ["o"]
//- /b/once.toml
[[target]]
name = "Broken"
kind = "rust_libary"
"#,
    );
    let analysis = host.analysis();
    let mut compared = 0;
    for id in ["a/Gen", "b/Broken"] {
        let details = analysis.target(id).unwrap().unwrap();
        for capability in ["build", "run", "test", "no_such_capability"] {
            let plan = analysis.action_plan(id, capability).unwrap().unwrap();
            let outline = plan.outline.unwrap();
            assert_eq!(outline.kind, details.kind);
            assert_eq!(outline.attrs, details.attrs);
            assert_eq!(
                outline.capability.as_ref(),
                details.capabilities.iter().find(|c| c.name == capability),
                "{id} {capability}"
            );
            compared += usize::from(outline.capability.is_some());
        }
    }
    assert!(compared >= 1, "no capability was compared");
    assert!(!analysis.target("a/Gen").unwrap().unwrap().attrs.is_empty());
    assert_eq!(analysis.action_plan("a/Nope", "build").unwrap(), None);
}
