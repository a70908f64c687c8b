//! Planning: calling kind implementations with a target's context, the `actions.*`
//! primitives and their rules, and the prelude's implementations.

use std::fmt::Write as _;

use expect_test::{Expect, expect};
use once_model::AttrValue;
use once_model::action::{ActionStep, build_dir};

use crate::{EvalLimits, NoModules, PlanDep, PlanOutcome, PlanRequest, plan_module, plan_prelude};

/// A compact rendering of a plan outcome for snapshots.
pub(crate) fn render(outcome: &PlanOutcome) -> String {
    let mut out = String::new();
    match outcome {
        PlanOutcome::NoImplementation => out.push_str("no implementation\n"),
        PlanOutcome::Failed(d) => {
            let _ = writeln!(
                out,
                "error {}:{}:{}-{}:{}: {}",
                d.path, d.line, d.column, d.end_line, d.end_column, d.message
            );
        }
        PlanOutcome::Planned(plan) => {
            for action in &plan.actions {
                let step = match &action.step {
                    ActionStep::Run(command) => {
                        let mut line = format!("run {:?}", command.argv);
                        if !command.cwd.is_empty() {
                            let _ = write!(line, " cwd={}", command.cwd);
                        }
                        for (k, v) in &command.env {
                            let _ = write!(line, " {k}={v:?}");
                        }
                        if command.success_exit_codes != [0] {
                            let _ = write!(line, " exit={:?}", command.success_exit_codes);
                        }
                        line
                    }
                    ActionStep::WriteFile {
                        path,
                        content,
                        executable,
                    } => format!("write {path} {content:?} executable={executable}"),
                    ActionStep::Copy { from, to } => format!("copy {from} -> {to}"),
                    ActionStep::MaterializeHostFile { source, to } => {
                        format!("materialize host file {source} -> {to}")
                    }
                    ActionStep::Symlink { to, link } => format!("symlink {link} -> {to}"),
                    ActionStep::MakeDir { path } => format!("mkdir {path}"),
                };
                let _ = writeln!(out, "{} [{}]: {step}", action.id, action.capability);
                if !action.inputs.is_empty() {
                    let _ = writeln!(out, "  in:  {}", action.inputs.join(" "));
                }
                if !action.outputs.is_empty() {
                    let _ = writeln!(out, "  out: {}", action.outputs.join(" "));
                }
                if !action.cacheable {
                    out.push_str("  not cacheable\n");
                }
            }
            let _ = writeln!(out, "default: {}", plan.default_outputs.join(" "));
        }
    }
    out
}

fn request(kind: &str, capability: &str) -> PlanRequest {
    PlanRequest {
        target: "app/Gen".to_owned(),
        package: "app".to_owned(),
        name: "Gen".to_owned(),
        kind: kind.to_owned(),
        capability: capability.to_owned(),
        attrs: Vec::new(),
        srcs: vec!["app/gen.sh".to_owned(), "app/data.txt".to_owned()],
        build_dir: build_dir("app", "Gen"),
        deps: vec![PlanDep {
            target: "tools/Tool".to_owned(),
            kind: "sh_binary".to_owned(),
            role: "deps".to_owned(),
            providers: vec!["executable".to_owned()],
            outputs: vec![".once/out/tools/Tool/tool.sh".to_owned()],
        }],
        tools: vec!["sh".to_owned()],
        workspace_inputs: Vec::new(),
        toolchains: Vec::new(),
    }
}

/// Plans `capability` of kind `gen` declared with `implementation` in a project module.
fn check_module(implementation: &str, capability: &str, expect: Expect) {
    let source = format!(
        "{implementation}\n\ntarget_kind(\n    name = \"gen\",\n    capabilities = [capability(\"build\"), capability(\"run\")],\n    implementations = {{\"build\": _build}},\n)\n"
    );
    let outcome = plan_module(
        "modules/gen.star",
        &source,
        &EvalLimits::default(),
        &NoModules,
        &request("gen", capability),
    );
    expect.assert_eq(&render(&outcome));
}

#[test]
fn every_primitive_and_the_context() {
    check_module(
        r#"
def _build(ctx):
    out = ctx.build_dir
    actions.mkdir(out + "/dir")
    actions.write(out + "/info.txt", ctx.target + " " + ctx.kind + " " + ctx.capability + " " + ctx.package + " " + ctx.name, executable = True, id = "info")
    copied = actions.copy(ctx.srcs[1], out + "/data.txt")
    actions.symlink(out + "/link", "data.txt")
    actions.run(
        [ctx.tools["sh"], ctx.srcs[0]] + [d.target + ":" + d.role + ":" + ",".join(d.providers) for d in ctx.deps],
        inputs = ctx.srcs + ctx.deps[0].outputs,
        outputs = [out + "/gen.out"],
        env = {"B": "2", "A": "1"},
        cwd = ctx.package,
        cacheable = False,
        success_exit_codes = [1, 0, 1],
        id = "gen",
    )
    return [copied, out + "/gen.out"]
"#,
        "build",
        expect![[r#"
            app/Gen#build/0 [build]: mkdir .once/out/app/Gen/dir
              out: .once/out/app/Gen/dir
            app/Gen#build/info [build]: write .once/out/app/Gen/info.txt "app/Gen gen build app Gen" executable=true
              out: .once/out/app/Gen/info.txt
            app/Gen#build/2 [build]: copy app/data.txt -> .once/out/app/Gen/data.txt
              in:  app/data.txt
              out: .once/out/app/Gen/data.txt
            app/Gen#build/3 [build]: symlink .once/out/app/Gen/link -> data.txt
              out: .once/out/app/Gen/link
            app/Gen#build/gen [build]: run ["sh", "app/gen.sh", "tools/Tool:deps:executable"] cwd=app A="1" B="2" exit=[0, 1]
              in:  app/gen.sh app/data.txt .once/out/tools/Tool/tool.sh
              out: .once/out/app/Gen/gen.out
              not cacheable
            default: .once/out/app/Gen/data.txt .once/out/app/Gen/gen.out
        "#]],
    );
}

#[test]
fn a_capability_without_implementation_plans_nothing() {
    check_module(
        "def _build(ctx):\n    return None",
        "run",
        expect![[r#"
            no implementation
        "#]],
    );
}

#[test]
fn broken_rules_are_diagnostics_at_the_call() {
    check_module(
        "def _build(ctx):\n    actions.write(\"elsewhere/x.txt\", \"\")",
        "build",
        expect![[r#"
            error modules/gen.star:2:5-2:41: output `elsewhere/x.txt` lies outside the target's build directory `.once/out/app/Gen`; declare outputs under `ctx.build_dir`
        "#]],
    );
    check_module(
        "def _build(ctx):\n    actions.run([\"true\"], inputs = [\"../x\"])",
        "build",
        expect![[r#"
            error modules/gen.star:2:5-2:45: input `../x` must be a workspace-relative `/`-separated path without empty, `.` or `..` segments
        "#]],
    );
    check_module(
        "def _build(ctx):\n    actions.mkdir(ctx.build_dir + \"/a\")\n    actions.write(ctx.build_dir + \"/a\", \"\")",
        "build",
        expect![[r#"
            error modules/gen.star:3:5-3:44: output `.once/out/app/Gen/a` is already declared by action `app/Gen#build/0`; every output has one producer
        "#]],
    );
    check_module(
        "def _build(ctx):\n    actions.run([\"true\"], outputs = [ctx.build_dir + \"/a\", ctx.build_dir + \"/a\"])",
        "build",
        expect![[r#"
            error modules/gen.star:2:5-2:82: output `.once/out/app/Gen/a` is declared twice by this action
        "#]],
    );
    check_module(
        "def _build(ctx):\n    actions.run([], success_exit_codes = [])",
        "build",
        expect![[r#"
            error modules/gen.star:2:5-2:45: `argv` needs a program: a non-empty first element
        "#]],
    );
    check_module(
        "def _build(ctx):\n    return 3",
        "build",
        expect![[r#"
            error modules/gen.star:2:5-2:13: an implementation returns `None` or a list of its default output paths, got int
        "#]],
    );
    check_module(
        "def _build(ctx):\n    return ctx.attrs.missing",
        "build",
        expect![[r#"
            error modules/gen.star:2:12-2:29: Object of type `struct` has no attribute `missing`
        "#]],
    );
}

#[test]
fn endless_implementations_stop_at_the_limits() {
    let limits = EvalLimits {
        max_steps: 10_000,
        ..EvalLimits::default()
    };
    let source = "def _build(ctx):\n    for i in range(100000000):\n        pass\n\ntarget_kind(name = \"gen\", capabilities = [capability(\"build\")], implementations = {\"build\": _build})\n";
    let outcome = plan_module(
        "modules/gen.star",
        source,
        &limits,
        &NoModules,
        &request("gen", "build"),
    );
    expect![[r#"
        error modules/gen.star:2:14-2:30: range of 100000000 elements: longer than the step limit of 10000, so it could never be iterated; use a smaller range
    "#]]
    .assert_eq(&render(&outcome));
}

#[test]
fn actions_exist_only_inside_implementations() {
    let evaluation = crate::evaluate_module(
        "modules/gen.star",
        "actions.write(\"x\", \"y\")\n",
        &EvalLimits::default(),
    );
    let d = &evaluation.diagnostics[0];
    expect![[r#"
        1:1: `actions.write` declares an action of the target being planned: call it inside a kind's implementation, not while the module is loaded
    "#]]
    .assert_eq(&format!("{}:{}: {}\n", d.line, d.column, d.message));
}

#[test]
fn implementations_must_name_declared_capabilities() {
    let evaluation = crate::evaluate_module(
        "modules/gen.star",
        "def _t(ctx):\n    pass\n\ntarget_kind(name = \"gen\", capabilities = [capability(\"build\")], implementations = {\"test\": _t})\ntarget_kind(name = \"gen2\", capabilities = [capability(\"build\")], implementations = {\"build\": 3})\n",
        &EvalLimits::default(),
    );
    let d = &evaluation.diagnostics[0];
    expect![[r#"
        4:1: kind `gen`: `implementations` names capability `test`, which the kind does not declare
    "#]]
    .assert_eq(&format!("{}:{}: {}\n", d.line, d.column, d.message));
}

fn check_prelude(
    file: &str,
    mut request: PlanRequest,
    attrs: &[(&str, AttrValue)],
    expect: Expect,
) {
    request.attrs = attrs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    expect.assert_eq(&render(&plan_prelude(file, &request)));
}

fn strings(items: &[&str]) -> AttrValue {
    AttrValue::List(
        items
            .iter()
            .map(|s| AttrValue::String((*s).to_owned()))
            .collect(),
    )
}

fn text(s: &str) -> AttrValue {
    AttrValue::String(s.to_owned())
}

#[test]
fn generic_and_shell_kinds() {
    check_prelude(
        "generic.star",
        request("filegroup", "build"),
        &[],
        expect![[r#"
            default: app/gen.sh app/data.txt .once/out/tools/Tool/tool.sh
        "#]],
    );
    let mut command = request("command", "build");
    command.deps[0].role = "tools".to_owned();
    check_prelude(
        "generic.star",
        command,
        &[
            ("cmd", text("tool.sh < data.txt > $OUT/a.txt")),
            ("outputs", strings(&["a.txt"])),
            ("inputs", strings(&["extra.txt"])),
            (
                "env",
                AttrValue::Dict(vec![("MODE".to_owned(), text("fast"))]),
            ),
        ],
        expect![[r#"
            error prelude/generic.star:47:19-47:36: Object of type `struct` has no attribute `network`
        "#]],
    );
    check_prelude(
        "generic.star",
        request("script", "run"),
        &[
            ("script_path", text("gen.sh")),
            ("script_runtime", text("bash")),
            ("args", strings(&["--all"])),
            ("env", AttrValue::Dict(Vec::new())),
        ],
        expect![[r#"
            app/Gen#run/run [run]: run ["sh", "-c", "export ONCE_RUNFILES_DIR=\"$PWD/\"'../.once/out/app/Gen'; exec \"$@\"", "sh", "bash", "../.once/out/app/Gen/gen.sh", "--all"] cwd=app
              in:  .once/out/app/Gen/gen.sh .once/out/app/Gen/tool.sh
              not cacheable
            default: 
        "#]],
    );
    let sh = &[
        ("main", text("gen.sh")),
        ("args", strings(&["x"])),
        ("env", AttrValue::Dict(Vec::new())),
    ];
    check_prelude(
        "sh.star",
        request("sh_binary", "build"),
        sh,
        expect![[r#"
        app/Gen#build/check [build]: run ["bash", "-c", "for f in \"$@\"; do bash -n \"$f\" || exit 1; done", "bash", "app/gen.sh", "app/data.txt"]
          in:  app/gen.sh app/data.txt
        app/Gen#build/1 [build]: copy app/gen.sh -> .once/out/app/Gen/gen.sh
          in:  app/gen.sh
          out: .once/out/app/Gen/gen.sh
        app/Gen#build/2 [build]: copy app/data.txt -> .once/out/app/Gen/data.txt
          in:  app/data.txt
          out: .once/out/app/Gen/data.txt
        app/Gen#build/3 [build]: copy .once/out/tools/Tool/tool.sh -> .once/out/app/Gen/tool.sh
          in:  .once/out/tools/Tool/tool.sh
          out: .once/out/app/Gen/tool.sh
        default: .once/out/app/Gen/gen.sh .once/out/app/Gen/data.txt .once/out/app/Gen/tool.sh
    "#]],
    );
    check_prelude(
        "sh.star",
        request("sh_binary", "run"),
        sh,
        expect![[r#"
            app/Gen#run/run [run]: run ["sh", "-c", "export ONCE_RUNFILES_DIR=\"$PWD/\"'../.once/out/app/Gen'; exec \"$@\"", "sh", "bash", "../.once/out/app/Gen/gen.sh", "x"] cwd=app
              in:  .once/out/app/Gen/gen.sh .once/out/app/Gen/data.txt .once/out/app/Gen/tool.sh
              not cacheable
            default: 
        "#]],
    );
    check_prelude(
        "sh.star",
        request("sh_binary", "build"),
        &[("args", strings(&[])), ("env", AttrValue::Dict(Vec::new()))],
        expect![[r#"
            error prelude/sh.star:35:5-35:107: fail: `main` is not set and `srcs` matches 2 files; set `main` to the script to run
        "#]],
    );
    check_prelude(
        "sh.star",
        request("sh_library", "build"),
        &[],
        expect![[r#"
        app/Gen#build/check [build]: run ["bash", "-c", "for f in \"$@\"; do bash -n \"$f\" || exit 1; done", "bash", "app/gen.sh", "app/data.txt"]
          in:  app/gen.sh app/data.txt
        default: app/gen.sh app/data.txt .once/out/tools/Tool/tool.sh
    "#]],
    );
}

#[test]
fn the_documented_context_fields_are_the_fields() {
    let outcome = plan_module(
        "modules/gen.star",
        "def _build(ctx):\n    actions.write(ctx.build_dir + \"/f\", \" \".join(dir(ctx)))\n\ntarget_kind(\"gen\", capabilities = [capability(\"build\")], implementations = {\"build\": _build})\n",
        &EvalLimits::default(),
        &NoModules,
        &request("gen", "build"),
    );
    let PlanOutcome::Planned(plan) = outcome else {
        panic!("{outcome:?}");
    };
    let ActionStep::WriteFile { content, .. } = &plan.actions[0].step else {
        panic!("{plan:?}");
    };
    let mut fields: Vec<&str> = content.split(' ').collect();
    fields.sort_unstable();
    let mut documented: Vec<&str> = crate::CONTEXT_FIELDS
        .iter()
        .map(|(name, _)| name.trim_start_matches("ctx."))
        .collect();
    documented.sort_unstable();
    assert_eq!(fields, documented);
}

/// The `test` commands `kind` (of `file`) plans for `count` test files named by `name`,
/// with `attrs`: each command's id and how many of the files it runs (a file the
/// capability writes for its runner, pytest's plugin, is no command).
fn test_batches(
    file: &str,
    kind: &str,
    count: usize,
    name: fn(usize) -> String,
    attrs: &[(&str, AttrValue)],
) -> Vec<(String, usize)> {
    let mut request = request(kind, "test");
    request.srcs = (0..count).map(|n| format!("app/{}", name(n))).collect();
    request.deps.clear();
    request.attrs = attrs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let PlanOutcome::Planned(plan) = plan_prelude(file, &request) else {
        panic!("{}", render(&plan_prelude(file, &request)));
    };
    plan.actions
        .iter()
        .filter(|action| action.capability == "test")
        .filter_map(|action| {
            let ActionStep::Run(command) = &action.step else {
                return None;
            };
            let files = (0..count)
                .filter(|n| command.argv.iter().any(|a| a.ends_with(&name(*n))))
                .count();
            Some((action.id.clone(), files))
        })
        .collect()
}

#[test]
fn test_targets_split_by_their_number_of_files_unless_batches_says() {
    let pytest = |count: usize, batches: Option<i64>| {
        let mut attrs = vec![
            ("args", strings(&[])),
            ("env", AttrValue::Dict(Vec::new())),
            ("markers", strings(&[])),
            ("timeout_seconds", AttrValue::Int(300)),
        ];
        if let Some(batches) = batches {
            attrs.push(("batches", AttrValue::Int(batches)));
        }
        test_batches(
            "python.star",
            "pytest_test",
            count,
            |n| format!("tests/test_{n:03}.py"),
            &attrs,
        )
    };
    let ids = |batches: &[(String, usize)]| -> String {
        batches
            .iter()
            .map(|(id, files)| format!("{id}: {files}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    // Fewer than 16 files: one action.
    expect!["app/Gen#test/test: 15"].assert_eq(&ids(&pytest(15, None)));
    // One batch per full 8 files.
    expect![[r#"
        app/Gen#test/test-0: 9
        app/Gen#test/test-1: 8"#]]
    .assert_eq(&ids(&pytest(17, None)));
    // At most 8 batches however many files.
    let many = pytest(200, None);
    assert_eq!(many.len(), 8, "{many:?}");
    assert_eq!(many.iter().map(|(_, n)| n).sum::<usize>(), 200);
    // `batches` wins: 1 forces one action, more splits a small target.
    expect!["app/Gen#test/test: 40"].assert_eq(&ids(&pytest(40, Some(1))));
    expect![[r#"
        app/Gen#test/test-0: 2
        app/Gen#test/test-1: 2
        app/Gen#test/test-2: 1"#]]
    .assert_eq(&ids(&pytest(5, Some(3))));
    // The same rule for node.
    let node = test_batches(
        "js.star",
        "node_test",
        16,
        |n| format!("t{n:02}.test.mjs"),
        &[
            ("args", strings(&[])),
            ("env", AttrValue::Dict(Vec::new())),
            ("timeout_seconds", AttrValue::Int(300)),
        ],
    );
    expect![[r#"
        app/Gen#test/test-0: 8
        app/Gen#test/test-1: 8"#]]
    .assert_eq(&ids(&node));
}

/// The adapter options and runner arguments of the `test` actions `kind` plans with
/// `srcs` and `attrs`, one line per action.
fn case_batches(file: &str, kind: &str, srcs: Vec<String>, attrs: &[(&str, AttrValue)]) -> String {
    let mut request = request(kind, "test");
    request.srcs = srcs;
    request.deps.clear();
    request.attrs = attrs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), v.clone()))
        .collect();
    let PlanOutcome::Planned(plan) = plan_prelude(file, &request) else {
        panic!("{}", render(&plan_prelude(file, &request)));
    };
    let mut out = String::new();
    for action in plan.actions.iter().filter(|a| a.capability == "test") {
        let ActionStep::Run(command) = &action.step else {
            continue;
        };
        let options: Vec<&str> = command
            .argv
            .iter()
            .map(String::as_str)
            .filter(|a| {
                a.starts_with("--shard") || a.starts_with("--list-arg") || a.contains("/batches/")
            })
            .collect();
        let shard = command.argv.iter().position(|a| a == "--shard");
        let tail = command
            .argv
            .iter()
            .rev()
            .take(2)
            .rev()
            .map(String::as_str)
            .collect::<Vec<_>>();
        let _ = writeln!(
            out,
            "{} {:?} shard={:?} tail={:?}",
            action.id,
            options.len(),
            shard.and_then(|at| command.argv.get(at + 1)),
            tail
        );
        for option in options.iter().filter(|o| o.starts_with("--list-arg")) {
            let _ = writeln!(out, "  {option}");
        }
    }
    out
}

#[test]
fn go_and_rust_tests_batch_by_listed_case() {
    let go_files = |count: usize| -> Vec<String> {
        (0..count)
            .map(|n| format!("app/f{n:02}_test.go"))
            .chain(["app/lib.go".to_owned()])
            .collect()
    };
    let go = |count: usize, batches: Option<i64>| {
        let mut attrs = vec![
            ("args", strings(&["-test.count=1"])),
            ("env", AttrValue::Dict(Vec::new())),
            ("timeout_seconds", AttrValue::Int(300)),
        ];
        if let Some(batches) = batches {
            attrs.push(("batches", AttrValue::Int(batches)));
        }
        case_batches("go.star", "go_test", go_files(count), &attrs)
    };
    // Fewer than 16 `_test.go` files: one action, no shard.
    expect![[r#"
        app/Gen#test/test 0 shard=None tail=["-test.v", "-test.count=1"]
    "#]]
    .assert_eq(&go(15, None));
    // 16: two batches, each running its half of what the binary lists.
    expect![[r#"
        app/Gen#test/test-0 3 shard=Some("0/2") tail=["-test.v", "-test.count=1"]
        app/Gen#test/test-1 3 shard=Some("1/2") tail=["-test.v", "-test.count=1"]
    "#]]
    .assert_eq(&go(16, None));
    expect![[r#"
        app/Gen#test/test 0 shard=None tail=["-test.v", "-test.count=1"]
    "#]]
    .assert_eq(&go(40, Some(1)));
    // `args` selecting tests: no automatic split, and an explicit one is an error.
    let selecting = |batches: Option<i64>| {
        let mut attrs = vec![
            ("args", strings(&["-test.run=^TestA$"])),
            ("env", AttrValue::Dict(Vec::new())),
            ("timeout_seconds", AttrValue::Int(300)),
        ];
        if let Some(batches) = batches {
            attrs.push(("batches", AttrValue::Int(batches)));
        }
        let mut request = request("go_test", "test");
        request.srcs = go_files(20);
        request.attrs = attrs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect();
        render(&plan_prelude("go.star", &request))
    };
    assert!(
        selecting(None).contains("app/Gen#test/test ["),
        "{}",
        selecting(None)
    );
    expect![[r#"
        error prelude/go.star:236:13-236:121: fail: `batches` cannot split the tests when `args` selects them (`-test.run=^TestA$`); drop one of the two
    "#]]
    .assert_eq(&selecting(Some(2)));
    let rust = |batches: Option<i64>| {
        let mut attrs = vec![
            ("args", strings(&["--test-threads=1"])),
            ("env", AttrValue::Dict(Vec::new())),
            ("timeout_seconds", AttrValue::Int(300)),
            ("test_filter", text("parse")),
            // The documentation tests (which would need the Cargo attributes) are not
            // what this is about.
            ("doctests", AttrValue::Bool(false)),
        ];
        if let Some(batches) = batches {
            attrs.push(("batches", AttrValue::Int(batches)));
        }
        case_batches(
            "rust.star",
            "rust_test",
            vec!["app/src/lib.rs".to_owned()],
            &attrs,
        )
    };
    // Unset: one action, with the filter; batched: the filter only lists the cases.
    expect![[r#"
        app/Gen#test/test 0 shard=None tail=["--test-threads=1", "parse"]
    "#]]
    .assert_eq(&rust(None));
    expect![[r#"
        app/Gen#test/test-0 4 shard=Some("0/2") tail=["../.once/out/app/Gen/tests", "--test-threads=1"]
          --list-arg=parse
        app/Gen#test/test-1 4 shard=Some("1/2") tail=["../.once/out/app/Gen/tests", "--test-threads=1"]
          --list-arg=parse
    "#]]
    .assert_eq(&rust(Some(2)));
}

#[test]
fn unittest_tests_run_discovery_on_their_staged_sources_through_the_runner() {
    let attrs: Vec<(String, AttrValue)> = [
        ("start_directory", text("tests")),
        ("top_level_directory", text(".")),
        ("pattern", text("test*.py")),
        ("args", strings(&["-b"])),
        ("env", AttrValue::Dict(Vec::new())),
        ("allow_no_tests", AttrValue::Bool(false)),
        ("timeout_seconds", AttrValue::Int(300)),
    ]
    .into_iter()
    .map(|(name, value)| (name.to_owned(), value))
    .collect();
    let planned = |capability: &str| {
        let mut unittest = request("unittest_test", capability);
        unittest.srcs = vec![
            "app/tests/__init__.py".to_owned(),
            "app/tests/test_calc.py".to_owned(),
        ];
        unittest.deps.clear();
        unittest.attrs.clone_from(&attrs);
        render(&plan_prelude("python.star", &unittest))
    };
    expect![[r#"
                app/Gen#build/compile [build]: run ["python3", "-c", "import py_compile, sys\nargs = sys.argv[1:]\nfor src, dst in zip(args[0::2], args[1::2]):\n    py_compile.compile(src, cfile = dst, doraise = True)\n", "app/tests/__init__.py", ".once/out/app/Gen/pyc/tests/__init__.pyc", "app/tests/test_calc.py", ".once/out/app/Gen/pyc/tests/test_calc.pyc"]
                  in:  app/tests/__init__.py app/tests/test_calc.py
                  out: .once/out/app/Gen/pyc/tests/__init__.pyc .once/out/app/Gen/pyc/tests/test_calc.pyc
                app/Gen#build/1 [build]: copy app/tests/__init__.py -> .once/out/app/Gen/discover/tests/__init__.py
                  in:  app/tests/__init__.py
                  out: .once/out/app/Gen/discover/tests/__init__.py
                app/Gen#build/2 [build]: copy app/tests/test_calc.py -> .once/out/app/Gen/discover/tests/test_calc.py
                  in:  app/tests/test_calc.py
                  out: .once/out/app/Gen/discover/tests/test_calc.py
                default: .once/out/app/Gen/pyc/tests/__init__.pyc .once/out/app/Gen/pyc/tests/test_calc.pyc .once/out/app/Gen/discover/tests/__init__.py .once/out/app/Gen/discover/tests/test_calc.py
            "#]]
    .assert_eq(&planned("build"));
    // The runner's source is the action's content (shown as `…`).
    let test = planned("test");
    let runner = test.find(" \"\\\"\\\"\\\"once's unittest runner").unwrap();
    let end = test[runner..].find(" executable=false").unwrap();
    let test = format!("{} \"…\"{}", &test[..runner], &test[runner + end..]);
    expect![[r#"
                app/Gen#test/runner [test]: write .once/out/app/Gen/unittest/once_unittest.py "…" executable=false
                  out: .once/out/app/Gen/unittest/once_unittest.py
                app/Gen#test/test [test]: run ["once", "__test-adapter", "--results-format", "unittest_json", "--target", "app/Gen", "--runner", "unittest", "--results", "../.once/out/app/Gen/test/test_results.json", "--log", "../.once/out/app/Gen/test/log.txt", "--cwd", "app", "--native", "../.once/out/app/Gen/test/unittest.jsonl", "--staged", "../.once/out/app/Gen/discover", "--", "python3", "../.once/out/app/Gen/unittest/once_unittest.py", "--once-report", "../.once/out/app/Gen/test/unittest.jsonl", "discover", "-v", "-s", "../.once/out/app/Gen/discover/tests", "-p", "test*.py", "-t", "../.once/out/app/Gen/discover", "-b"] cwd=app PYTHONDONTWRITEBYTECODE="1" PYTHONPATH="" PYTHONSAFEPATH="1"
                  in:  .once/out/app/Gen/pyc/tests/__init__.pyc .once/out/app/Gen/pyc/tests/test_calc.pyc .once/out/app/Gen/discover/tests/__init__.py .once/out/app/Gen/discover/tests/test_calc.py .once/out/app/Gen/unittest/once_unittest.py
                  out: .once/out/app/Gen/test/test_results.json .once/out/app/Gen/test/log.txt .once/out/app/Gen/test/unittest.jsonl
                default: 
            "#]]
    .assert_eq(&test);
}

#[test]
fn python_targets_run_the_interpreter_their_setting_names() {
    // Each case: the target's `python` attribute, `[workspace] python`, the package.
    let cases: &[(Option<&str>, Option<&str>, &str)] = &[
        (None, None, "app"),
        (Some(".venv"), None, "app"),
        (None, Some(".venv"), "app/sub"),
        (Some("/usr/bin/python3.12"), Some(".venv"), "app"),
        (Some("./envs/../tools/py/"), None, "app"),
        (Some("python3"), None, ""),
        (Some("/opt/venvs/app"), None, ""),
    ];
    let mut out = String::new();
    for (attribute, workspace, package) in cases {
        let mut pytest = request("pytest_test", "build");
        pytest.package = (*package).to_owned();
        pytest.target = once_model::TargetLabel::new((*package).to_owned(), "Gen".to_owned()).id();
        pytest.build_dir = build_dir(package, "Gen");
        pytest.srcs = vec![format!(
            "{}test_a.py",
            if package.is_empty() {
                String::new()
            } else {
                format!("{package}/")
            }
        )];
        pytest.deps.clear();
        pytest.attrs = [
            ("args", strings(&[])),
            ("env", AttrValue::Dict(Vec::new())),
            ("markers", strings(&[])),
            ("allow_no_tests", AttrValue::Bool(false)),
            ("timeout_seconds", AttrValue::Int(300)),
        ]
        .into_iter()
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        if let Some(python) = attribute {
            pytest.attrs.push(("python".to_owned(), text(python)));
        }
        pytest.toolchains = workspace
            .iter()
            .map(|python| ("python".to_owned(), (*python).to_owned()))
            .collect();
        let _ = writeln!(
            out,
            "python={attribute:?} [workspace] python={workspace:?} package={package:?}"
        );
        for capability in ["build", "test"] {
            pytest.capability = capability.to_owned();
            let PlanOutcome::Planned(plan) = plan_prelude("python.star", &pytest) else {
                panic!("not planned: {:?}", plan_prelude("python.star", &pytest));
            };
            for action in &plan.actions {
                let ActionStep::Run(command) = &action.step else {
                    continue;
                };
                let program = match command.argv.iter().position(|word| word == "--") {
                    Some(at) => &command.argv[at + 1],
                    None => &command.argv[0],
                };
                let probes: Vec<&str> = command.probes.iter().map(|p| p[0].as_str()).collect();
                let _ = writeln!(
                    out,
                    "  {}: runs {program} from {:?}; probes {probes:?}",
                    action.id, command.cwd
                );
            }
        }
    }
    expect![[r#"
        python=None [workspace] python=None package="app"
          app/Gen#build/compile: runs python3 from ""; probes ["python3"]
          app/Gen#test/test: runs python3 from "app"; probes ["python3"]
        python=Some(".venv") [workspace] python=None package="app"
          app/Gen#build/compile: runs .venv/bin/python3 from ""; probes [".venv/bin/python3"]
          app/Gen#test/test: runs ../.venv/bin/python3 from "app"; probes ["../.venv/bin/python3"]
        python=None [workspace] python=Some(".venv") package="app/sub"
          app/sub/Gen#build/compile: runs .venv/bin/python3 from ""; probes [".venv/bin/python3"]
          app/sub/Gen#test/test: runs ../../.venv/bin/python3 from "app/sub"; probes ["../../.venv/bin/python3"]
        python=Some("/usr/bin/python3.12") [workspace] python=Some(".venv") package="app"
          app/Gen#build/compile: runs /usr/bin/python3.12 from ""; probes ["/usr/bin/python3.12"]
          app/Gen#test/test: runs /usr/bin/python3.12 from "app"; probes ["/usr/bin/python3.12"]
        python=Some("./envs/../tools/py/") [workspace] python=None package="app"
          app/Gen#build/compile: runs tools/py/bin/python3 from ""; probes ["tools/py/bin/python3"]
          app/Gen#test/test: runs ../tools/py/bin/python3 from "app"; probes ["../tools/py/bin/python3"]
        python=Some("python3") [workspace] python=None package=""
          Gen#build/compile: runs ./python3 from ""; probes ["./python3"]
          Gen#test/test: runs ./python3 from ""; probes ["./python3"]
        python=Some("/opt/venvs/app") [workspace] python=None package=""
          Gen#build/compile: runs /opt/venvs/app/bin/python3 from ""; probes ["/opt/venvs/app/bin/python3"]
          Gen#test/test: runs /opt/venvs/app/bin/python3 from ""; probes ["/opt/venvs/app/bin/python3"]
    "#]].assert_eq(&out);
}
