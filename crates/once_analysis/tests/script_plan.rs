//! `Analysis::script_plan`: how an annotated script and its `needs` are lowered into plain
//! actions (argv, cwd, env, fingerprints, expanded inputs, outputs, ordering edges), what
//! changes the static keys, and the `dependency_cycle` diagnostic.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Arc;

use expect_test::expect;
use once_analysis::{AnalysisHost, ScriptPlan, ScriptPlanError, ScriptRequest};
use once_fixture::{Fixture, ROOT};
use once_model::action::ActionStep;

const FIXTURE: &str = r#"
//- /once.toml
[workspace]
//- /data/a.csv
a
//- /data/b.csv
b
//- /data/notes.md
n
//- /assets/logo.txt
logo
//- /scripts/gen.sh
#!/usr/bin/env bash
# once input "../data/*.csv"
# once output "../gen/table.txt"
# once fingerprint "bash --version"
# once output-symlinks "preserve"
cat ../data/*.csv > ../gen/table.txt
//- /scripts/lint.sh
#!/bin/sh -e
# once input "../assets"
echo ok
//- /scripts/build.py
#!/usr/bin/env python3
# once needs "gen.sh"
# once needs "lint.sh"
# once input "../gen/table.txt"
# once output "../dist"
# once env "MODE"
# once env "UNSET"
# once cwd ".."
print("hi")
"#;

fn plan(fixture: &Fixture, path: &str, args: &[&str]) -> Result<ScriptPlan, ScriptPlanError> {
    let host = AnalysisHost::load_walked(
        Arc::new(fixture.system()),
        PathBuf::from(ROOT),
        &Default::default(),
    );
    host.analysis()
        .script_plan(&ScriptRequest {
            path: path.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            environment: BTreeMap::from([("MODE".to_owned(), "fast".to_owned())]),
        })
        .expect("not cancelled")
}

fn render(plan: &ScriptPlan) -> String {
    let mut out = String::new();
    for planned in &plan.actions {
        let action = &planned.action;
        let ActionStep::Run(command) = &action.step else {
            panic!("a script runs a command");
        };
        writeln!(out, "{} ({})", action.id, action.capability).unwrap();
        writeln!(out, "  argv: {}", command.argv.join(" ")).unwrap();
        writeln!(out, "  cwd: {:?}", command.cwd).unwrap();
        writeln!(out, "  env: {:?}", command.env).unwrap();
        writeln!(out, "  probes: {:?}", command.probes).unwrap();
        writeln!(out, "  inputs: {}", action.inputs.join(" ")).unwrap();
        writeln!(out, "  outputs: {}", action.outputs.join(" ")).unwrap();
        writeln!(
            out,
            "  output symlinks: {}",
            command.output_symlinks.as_str()
        )
        .unwrap();
    }
    writeln!(out, "order: {:?}", plan.order).unwrap();
    out
}

#[test]
fn a_script_and_its_needs_become_actions_dependencies_first() {
    let fixture = Fixture::parse(FIXTURE);
    let plan = plan(&fixture, "scripts/build.py", &["--release"]).expect("plans");
    expect![[r#"
        scripts/gen.sh (exec)
          argv: bash ./gen.sh
          cwd: "scripts"
          env: {}
          probes: [["/bin/sh", "-c", "bash --version"]]
          inputs: data/a.csv data/b.csv scripts/gen.sh
          outputs: gen/table.txt
          output symlinks: preserve
        scripts/lint.sh (exec)
          argv: /bin/sh -e ./lint.sh
          cwd: "scripts"
          env: {}
          probes: []
          inputs: assets/logo.txt scripts/lint.sh
          outputs: 
          output symlinks: materialize-external
        scripts/build.py (exec)
          argv: python3 ./scripts/build.py --release
          cwd: ""
          env: {"MODE": "fast"}
          probes: []
          inputs: gen/table.txt scripts/build.py
          outputs: dist
          output symlinks: materialize-external
        order: [("scripts/lint.sh", "scripts/build.py")]
    "#]]
    .assert_eq(&render(&plan));
}

#[test]
fn static_keys_follow_inputs_but_not_the_outputs_of_needs() {
    let key_of = |fixture: &Fixture, id: &str| {
        plan(fixture, "scripts/build.py", &[])
            .expect("plans")
            .actions
            .iter()
            .find(|p| p.action.id == id)
            .map(|p| p.static_key)
            .expect("the action")
    };
    let base = Fixture::parse(FIXTURE);
    let mut csv = Fixture::parse(FIXTURE);
    csv.add("data/c.csv", "c\n");
    // A new file matching the glob re-keys the script reading it, not its dependent
    // (whose key gets gen's output digest at execution).
    assert_ne!(
        key_of(&base, "scripts/gen.sh"),
        key_of(&csv, "scripts/gen.sh")
    );
    assert_eq!(
        key_of(&base, "scripts/build.py"),
        key_of(&csv, "scripts/build.py")
    );
    // A need without outputs joins the dependent's key through its static key.
    let mut logo = Fixture::parse(FIXTURE);
    logo.add("assets/icon.txt", "icon\n");
    assert_ne!(
        key_of(&base, "scripts/build.py"),
        key_of(&logo, "scripts/build.py")
    );
    // Files nobody declares change nothing.
    let mut notes = Fixture::parse(FIXTURE);
    notes.add("data/other.md", "x\n");
    assert_eq!(
        key_of(&base, "scripts/gen.sh"),
        key_of(&notes, "scripts/gen.sh")
    );
}

#[test]
fn a_needs_cycle_is_located_at_the_directive_that_closes_it() {
    let fixture = Fixture::parse(
        r#"
//- /once.toml
[workspace]
//- /a.sh
#!/bin/sh
# once needs "b.sh"
//- /b.sh
#!/bin/sh
# once needs "c.sh"
//- /c.sh
#!/bin/sh
# once needs "a.sh"
"#,
    );
    let Err(ScriptPlanError::Invalid(diagnostics)) = plan(&fixture, "a.sh", &[]) else {
        panic!("a cycle is invalid");
    };
    let rendered: Vec<String> = diagnostics
        .iter()
        .map(|d| {
            let range = d.range.expect("located");
            format!(
                "{} {}:{}:{} {}",
                d.diagnostic.code.as_str(),
                d.diagnostic.file.as_deref().unwrap_or(""),
                range.start.line,
                range.start.column,
                d.diagnostic.message
            )
        })
        .collect();
    expect![[r#"
        [
            "dependency_cycle c.sh:2:15 script dependency cycle: a.sh -> b.sh -> c.sh -> a.sh",
        ]
    "#]]
    .assert_debug_eq(&rendered);
}
