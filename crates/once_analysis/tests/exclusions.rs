//! Glob lists with `!` exclusions through the queries: the files a target reads
//! (`target_inputs`), the `srcs` its plan receives and the static keys of its actions,
//! which tests a change affects, and which project modules exist, all see exactly the
//! files the list selects, before and after files appear, change or go (the events a
//! watcher reports).

use std::sync::Arc;

use expect_test::{Expect, expect};
use once_analysis::{AnalysisHost, ChangeEvent, MemorySystem};
use once_fixture::Fixture;
use once_model::action::ActionStep;

/// A shell library whose `srcs` leave its tests out, its own test, a test elsewhere that
/// depends on it, a project kind whose `workspace_inputs` leave the tests out too, and
/// `[modules] paths` leaving a draft module out.
const WORKSPACE: &str = r#"
//- /once.toml
[workspace]

[modules]
paths = ["kinds/*.star", "!kinds/draft.star"]
//- /kinds/real.star
def _build(ctx):
    out = ctx.build_dir + "/inputs.txt"
    actions.write(out, " ".join(ctx.workspace_inputs))
    return [out]

target_kind(
    "listing",
    "Lists the shell files of its package but the tests.",
    workspace_inputs = ["$PACKAGE/*.sh", "!$PACKAGE/*_test.sh"],
    capabilities = [capability("build")],
    implementations = {"build": _build},
)
//- /kinds/draft.star
this is not Starlark
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "sh_library"
srcs = ["*.sh", "!*_test.sh"]

[[target]]
name = "LibTest"
kind = "sh_test"
srcs = ["*_test.sh"]
deps = ["./Lib"]

[[target]]
name = "Listing"
kind = "listing"
//- /lib/greet.sh
greet() { echo hello; }
//- /lib/greet_test.sh
echo test
//- /app/once.toml
[[target]]
name = "AppTest"
kind = "sh_test"
srcs = ["app_test.sh"]
deps = ["lib/Lib"]
//- /app/app_test.sh
echo app
"#;

/// The paths whose change the answer lists the affected tests of.
const CHANGED: &[&str] = &[
    "lib/greet.sh",
    "lib/greet_test.sh",
    "lib/extra.sh",
    "lib/extra_test.sh",
    "kinds/real.star",
    "kinds/draft.star",
];

fn load() -> (MemorySystem, AnalysisHost) {
    let system = Fixture::parse(WORKSPACE).system();
    let host = AnalysisHost::load(Arc::new(system.clone()), once_fixture::path(""));
    (system, host)
}

/// The targets whose `build` plan the answer shows.
const PLANNED: &[&str] = &["lib/Lib", "lib/Listing"];

/// What the queries answer: the workspace's diagnostics, each target's inputs, the
/// builds of [`PLANNED`] (default outputs, each action's static key and inputs, and what
/// a written file holds), and the tests each of [`CHANGED`] affects.
fn render(host: &AnalysisHost) -> String {
    let analysis = host.analysis();
    let validation = analysis.validate_workspace().expect("not cancelled");
    let mut out = format!("diagnostics: {}\n", validation.diagnostics.len());
    for target in analysis.targets(None).expect("not cancelled") {
        let inputs = analysis
            .target_inputs(&target.id)
            .expect("not cancelled")
            .expect("a listed target exists");
        let paths: Vec<&str> = inputs.inputs.iter().map(|i| i.path.as_str()).collect();
        out.push_str(&format!("inputs of {}: {}\n", target.id, paths.join(" ")));
    }
    for id in PLANNED {
        let plan = analysis
            .action_plan(id, "build")
            .expect("not cancelled")
            .expect("a planned target exists");
        for step in plan.steps.iter().filter(|s| s.target == *id) {
            out.push_str(&format!("{id} build: {}\n", step.default_outputs.join(" ")));
            for planned in &step.actions {
                out.push_str(&format!(
                    "  {} {}\n",
                    planned.action.id,
                    &planned.static_key.to_hex()[..12],
                ));
                if !planned.action.inputs.is_empty() {
                    out.push_str(&format!("    reads {}\n", planned.action.inputs.join(" ")));
                }
                if let ActionStep::WriteFile { content, .. } = &planned.action.step {
                    out.push_str(&format!("    writes {content:?}\n"));
                }
            }
        }
    }
    for path in CHANGED {
        let affected = analysis
            .affected_tests(&[path.to_string()])
            .expect("not cancelled");
        out.push_str(&format!("{path} affects:"));
        for test in &affected.tests {
            out.push_str(&format!(" {} ({})", test.id, test.reasons.join("; ")));
        }
        out.push('\n');
    }
    out
}

/// Writes `files` (workspace-relative, with contents) and reports them to the host as
/// `event`s.
fn write(
    system: &MemorySystem,
    host: &mut AnalysisHost,
    files: &[(&str, &str)],
    event: fn(std::path::PathBuf) -> ChangeEvent,
) {
    let mut changes = Vec::new();
    for (path, contents) in files {
        let path = once_fixture::path(path);
        system.write(&path, *contents);
        changes.push(event(path));
    }
    host.apply_changes(&changes);
}

fn check(host: &AnalysisHost, expect: Expect) {
    expect.assert_eq(&render(host));
}

#[test]
fn queries_see_exactly_what_the_lists_select() {
    let (system, mut host) = load();
    check(
        &host,
        expect![[r#"
            diagnostics: 0
            inputs of app/AppTest: app/app_test.sh app/once.toml
            inputs of lib/Lib: lib/greet.sh lib/once.toml
            inputs of lib/LibTest: lib/greet_test.sh lib/once.toml
            inputs of lib/Listing: lib/once.toml
            lib/Lib build: lib/greet.sh
              lib/Lib#build/check ee9d4bf4d1d9
                reads lib/greet.sh
            lib/Listing build: .once/out/lib/Listing/inputs.txt
              lib/Listing#build/0 fbcdbd04ab12
                writes "lib/greet.sh"
            lib/greet.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed)
            lib/greet_test.sh affects: lib/LibTest (changed test input `lib/greet_test.sh`)
            lib/extra.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed)
            lib/extra_test.sh affects: lib/LibTest (changed test input `lib/extra_test.sh`)
            kinds/real.star affects: app/AppTest (changed module `kinds/real.star`) lib/LibTest (changed module `kinds/real.star`)
            kinds/draft.star affects:
        "#]],
    );

    // New files: one the positive pattern selects, one the exclusion leaves out.
    write(
        &system,
        &mut host,
        &[
            ("lib/extra.sh", "extra() { :; }\n"),
            ("lib/extra_test.sh", "echo extra\n"),
        ],
        ChangeEvent::Created,
    );
    check(
        &host,
        expect![[r#"
            diagnostics: 0
            inputs of app/AppTest: app/app_test.sh app/once.toml
            inputs of lib/Lib: lib/extra.sh lib/greet.sh lib/once.toml
            inputs of lib/LibTest: lib/extra_test.sh lib/greet_test.sh lib/once.toml
            inputs of lib/Listing: lib/once.toml
            lib/Lib build: lib/extra.sh lib/greet.sh
              lib/Lib#build/check 11f325ff0cd8
                reads lib/extra.sh lib/greet.sh
            lib/Listing build: .once/out/lib/Listing/inputs.txt
              lib/Listing#build/0 2e031996ef8f
                writes "lib/extra.sh lib/greet.sh"
            lib/greet.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed)
            lib/greet_test.sh affects: lib/LibTest (changed test input `lib/greet_test.sh`)
            lib/extra.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed)
            lib/extra_test.sh affects: lib/LibTest (changed test input `lib/extra_test.sh`)
            kinds/real.star affects: app/AppTest (changed module `kinds/real.star`) lib/LibTest (changed module `kinds/real.star`)
            kinds/draft.star affects:
        "#]],
    );

    // Editing the excluded file changes no key of the library.
    write(
        &system,
        &mut host,
        &[("lib/extra_test.sh", "echo edited\n")],
        ChangeEvent::Changed,
    );
    check(
        &host,
        expect![[r#"
            diagnostics: 0
            inputs of app/AppTest: app/app_test.sh app/once.toml
            inputs of lib/Lib: lib/extra.sh lib/greet.sh lib/once.toml
            inputs of lib/LibTest: lib/extra_test.sh lib/greet_test.sh lib/once.toml
            inputs of lib/Listing: lib/once.toml
            lib/Lib build: lib/extra.sh lib/greet.sh
              lib/Lib#build/check 11f325ff0cd8
                reads lib/extra.sh lib/greet.sh
            lib/Listing build: .once/out/lib/Listing/inputs.txt
              lib/Listing#build/0 2e031996ef8f
                writes "lib/extra.sh lib/greet.sh"
            lib/greet.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/greet.sh` changed)
            lib/greet_test.sh affects: lib/LibTest (changed test input `lib/greet_test.sh`)
            lib/extra.sh affects: app/AppTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed) lib/LibTest (depends on `lib/Lib`, whose input `lib/extra.sh` changed)
            lib/extra_test.sh affects: lib/LibTest (changed test input `lib/extra_test.sh`)
            kinds/real.star affects: app/AppTest (changed module `kinds/real.star`) lib/LibTest (changed module `kinds/real.star`)
            kinds/draft.star affects:
        "#]],
    );
}
