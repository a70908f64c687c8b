//! Planning through the database: `target_actions` builds each target's context from the
//! graph (attributes with defaults, expanded `srcs`, dependency outputs), implementation
//! failures are diagnostics, and `action_static_keys` covers the digests of source inputs.
//! Incrementality is proven with salsa's execution log.

use std::path::PathBuf;
use std::sync::Arc;

use expect_test::{Expect, expect};
use once_db::{ChangeEvent, ExecutionLog, MemorySystem, RootDatabase, Workspace, apply_changes};
use once_fixture::Fixture;
use once_graph::{action_static_keys, target_actions};
use once_model::action::ActionStep;

const ROOT: &str = once_fixture::ROOT;

fn system() -> MemorySystem {
    Fixture::parse(
        r#"
        //- /once.toml
        [workspace]

        [modules]
        paths = ["modules/*.star"]
        //- /modules/stamp.star
        def _build(ctx):
            out = ctx.build_dir + "/stamp.txt"
            lines = [ctx.attrs.prefix] + ctx.srcs + [o for d in ctx.deps for o in d.outputs]
            actions.write(out, "\n".join(lines))
            return [out]

        def _broken(ctx):
            actions.write("elsewhere.txt", "")

        target_kind(
            "stamp",
            "Writes a stamp.",
            attrs = {"prefix": attr.string("First line.", default = "stamp")},
            deps = [dep(providers = ["files"])],
            providers = ["files"],
            capabilities = [capability("build"), capability("run")],
            implementations = {"build": _build, "run": _broken},
        )
        //- /tools/once.toml
        [[target]]
        name = "Gen"
        kind = "sh_binary"
        srcs = ["gen.sh"]
        //- /tools/gen.sh
        echo generated
        //- /data/once.toml
        [[target]]
        name = "Files"
        kind = "filegroup"
        srcs = ["*.txt"]

        [[target]]
        name = "Out"
        kind = "command"
        srcs = ["a.txt"]
        deps = ["./Files"]
        dependencies = { tools = ["tools/Gen"] }
        attrs = { cmd = "gen.sh > $OUT/out.txt", outputs = ["out.txt"] }

        [[target]]
        name = "Stamp"
        kind = "stamp"
        srcs = ["b.txt"]
        deps = ["./Out"]
        //- /data/a.txt
        a
        //- /data/b.txt
        b
        "#,
    )
    .system()
}

fn load(system: &MemorySystem) -> (RootDatabase, Workspace, ExecutionLog) {
    let (mut db, log) = RootDatabase::with_execution_log(Arc::new(system.clone()));
    let workspace = db.load(PathBuf::from(ROOT));
    (db, workspace, log)
}

/// The plan of `capability` of `id`, one line per action with a short static key.
fn render(db: &RootDatabase, workspace: Workspace, id: &str, capability: &str) -> String {
    let plan = target_actions(db, workspace, id, capability);
    let keys = action_static_keys(db, workspace, id, capability);
    let mut out = format!("{id} {capability} implemented={}\n", plan.implemented);
    for (action, key) in plan.actions.actions.iter().zip(keys) {
        let step = match &action.step {
            ActionStep::Run(command) => format!("run {:?}", command.argv),
            ActionStep::WriteFile { path, content, .. } => format!("write {path} {content:?}"),
            ActionStep::Copy { from, to } => format!("copy {from} -> {to}"),
            ActionStep::Symlink { to, link } => format!("symlink {link} -> {to}"),
            ActionStep::MakeDir { path } => format!("mkdir {path}"),
        };
        out.push_str(&format!("  {} {}: {step}\n", action.id, &key[..12]));
        if !action.inputs.is_empty() {
            out.push_str(&format!("    in:  {}\n", action.inputs.join(" ")));
        }
    }
    out.push_str(&format!(
        "  default: {}\n",
        plan.actions.default_outputs.join(" ")
    ));
    for d in &plan.diagnostics {
        out.push_str(&format!(
            "  {} {} {:?}: {}\n",
            d.code.as_str(),
            d.file.as_deref().unwrap_or(""),
            d.range,
            d.message
        ));
    }
    out
}

fn check(targets: &[(&str, &str)], expect: Expect) {
    let (db, workspace, _) = load(&system());
    let out: String = targets
        .iter()
        .map(|(id, capability)| render(&db, workspace, id, capability))
        .collect();
    expect.assert_eq(&out);
}

#[test]
fn plans_follow_the_graph() {
    check(
        &[
            ("tools/Gen", "build"),
            ("data/Files", "build"),
            ("data/Out", "build"),
            ("data/Stamp", "build"),
            ("data/Stamp", "run"),
            ("data/Stamp", "test"),
            ("data/Missing", "build"),
        ],
        expect![[r#"
            tools/Gen build implemented=true
              tools/Gen#build/check b70adf0e857d: run ["bash", "-c", "for f in \"$@\"; do bash -n \"$f\" || exit 1; done", "bash", "tools/gen.sh"]
                in:  tools/gen.sh
              tools/Gen#build/1 6dac810e66b8: copy tools/gen.sh -> .once/out/tools/Gen/gen.sh
                in:  tools/gen.sh
              default: .once/out/tools/Gen/gen.sh
            data/Files build implemented=true
              default: data/a.txt data/b.txt
            data/Out build implemented=true
              data/Out#build/cmd 5706bf7b5b48: run ["sh", "-c", "mkdir -p \"$OUT\" || exit 1\nPATH=\"$PWD/../.once/out/tools/Gen:$PATH\"\nexport PATH\ngen.sh > $OUT/out.txt"]
                in:  data/a.txt data/b.txt .once/out/tools/Gen/gen.sh
              default: .once/out/data/Out/out/out.txt
            data/Stamp build implemented=true
              data/Stamp#build/0 525aeb566cb1: write .once/out/data/Stamp/stamp.txt "stamp\ndata/b.txt\n.once/out/data/Out/out/out.txt"
              default: .once/out/data/Stamp/stamp.txt
            data/Stamp run implemented=true
              default: 
              implementation_error modules/stamp.star Some(TextRange { start: 222, end: 256 }): planning `run` of `data/Stamp` failed: output `elsewhere.txt` lies outside the target's build directory `.once/out/data/Stamp`; declare outputs under `ctx.build_dir`
            data/Stamp test implemented=false
              default: 
            data/Missing build implemented=false
              default: 
        "#]],
    );
}

/// How many times each planning query ran.
fn runs(log: &ExecutionLog) -> (usize, usize) {
    let executed = log.take();
    let plans = executed
        .iter()
        .filter(|e| e.starts_with("plan_of("))
        .count();
    let keys = executed
        .iter()
        .filter(|e| e.starts_with("static_keys_of("))
        .count();
    (plans, keys)
}

const PLANNED: [&str; 4] = ["tools/Gen", "data/Files", "data/Out", "data/Stamp"];

fn plan_all(db: &RootDatabase, workspace: Workspace) -> Vec<Vec<String>> {
    PLANNED
        .iter()
        .map(|id| action_static_keys(db, workspace, id, "build").to_vec())
        .collect()
}

#[test]
fn editing_a_source_rekeys_only_the_actions_reading_it() {
    let system = system();
    let (mut db, workspace, log) = load(&system);
    let cold = plan_all(&db, workspace);
    assert_eq!(runs(&log), (4, 4));

    // `data/a.txt` is read by the command (and matched by the filegroup, which plans no
    // action): only the command's keys are recomputed, and nothing is re-planned.
    let path = format!("{ROOT}/data/a.txt");
    system.write(&path, "a, edited\n");
    apply_changes(&mut db, &[ChangeEvent::Changed(PathBuf::from(&path))]);
    let warm = plan_all(&db, workspace);
    assert_eq!(runs(&log), (0, 1), "only data/Out's keys are recomputed");
    let changed: Vec<&str> = PLANNED
        .iter()
        .zip(cold.iter().zip(&warm))
        .filter(|(_, (before, after))| before != after)
        .map(|(id, _)| *id)
        .collect();
    assert_eq!(changed, ["data/Out"]);

    // A new file the filegroup's glob matches re-plans that package's targets; the
    // command reads the filegroup's outputs, so its plan (and key) change; the stamp
    // reads only the command's outputs, which did not change, so it backdates.
    let path = format!("{ROOT}/data/c.txt");
    system.write(&path, "c\n");
    apply_changes(&mut db, &[ChangeEvent::Created(PathBuf::from(&path))]);
    let _ = plan_all(&db, workspace);
    let (plans, _) = runs(&log);
    assert_eq!(
        plans, 3,
        "data/Files, data/Out and data/Stamp re-plan; tools/Gen does not"
    );
}
