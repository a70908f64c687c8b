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
            ActionStep::Run(command) => {
                let mut line = format!("run {:?}", command.argv);
                if !command.cwd.is_empty() {
                    line.push_str(&format!(" cwd={}", command.cwd));
                }
                for (name, value) in &command.env {
                    line.push_str(&format!(" {name}={value:?}"));
                }
                line
            }
            ActionStep::WriteFile { path, content, .. } => format!("write {path} {content:?}"),
            ActionStep::Copy { from, to } => format!("copy {from} -> {to}"),
            ActionStep::Symlink { to, link } => format!("symlink {link} -> {to}"),
            ActionStep::MakeDir { path } => format!("mkdir {path}"),
            ActionStep::MaterializeHostFile { source, to } => {
                format!("materialize host file {source} -> {to}")
            }
        };
        out.push_str(&format!(
            "  {} {}: {step}\n",
            action.id,
            &key.to_hex()[..12]
        ));
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
              tools/Gen#build/check 3c2b6f1dd95a: run ["bash", "-c", "for f in \"$@\"; do bash -n \"$f\" || exit 1; done", "bash", "tools/gen.sh"]
                in:  tools/gen.sh
              tools/Gen#build/1 7e58a41e6661: copy tools/gen.sh -> .once/out/tools/Gen/gen.sh
                in:  tools/gen.sh
              default: .once/out/tools/Gen/gen.sh
            data/Files build implemented=true
              default: data/a.txt data/b.txt
            data/Out build implemented=true
              data/Out#build/cmd fb6bc55166eb: run ["sh", "-c", "mkdir -p \"$OUT\" || exit 1\nPATH=\"$PWD/../.once/out/tools/Gen:$PATH\"\nexport PATH\ngen.sh > $OUT/out.txt"] cwd=data OUT="../.once/out/data/Out/out"
                in:  data/a.txt data/b.txt .once/out/tools/Gen/gen.sh
              default: .once/out/data/Out/out/out.txt
            data/Stamp build implemented=true
              data/Stamp#build/0 fb099d333ece: write .once/out/data/Stamp/stamp.txt "stamp\ndata/b.txt\n.once/out/data/Out/out/out.txt"
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

fn plan_all(db: &RootDatabase, workspace: Workspace) -> Vec<Vec<once_db::Sha256Digest>> {
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

/// The build and run plans of each language's built-in kinds, with defaults filled in.
#[test]
fn language_kinds_plan_their_toolchains() {
    let system = Fixture::parse(
        r#"
        //- /once.toml
        [workspace]
        //- /c/once.toml
        [[target]]
        name = "Lib"
        kind = "c_library"
        srcs = ["lib.c", "include/lib/lib.h"]
        attrs = { hdrs = ["include/lib/lib.h"], includes = ["include"], defines = ["X=1"] }

        [[target]]
        name = "App"
        kind = "c_binary"
        srcs = ["main.cpp"]
        deps = ["./Lib"]
        attrs = { linkopts = ["-lm"], args = ["--fast"] }
        //- /c/lib.c
        //- /c/include/lib/lib.h
        //- /c/main.cpp
        //- /py/once.toml
        [[target]]
        name = "Lib"
        kind = "python_library"
        srcs = ["src/lib/*.py"]
        attrs = { imports = ["src"] }

        [[target]]
        name = "App"
        kind = "python_binary"
        srcs = ["app.py"]
        deps = ["./Lib"]
        attrs = { interpreter_args = ["-X", "dev"] }
        //- /py/src/lib/__init__.py
        //- /py/app.py
        //- /js/once.toml
        [[target]]
        name = "Lib"
        kind = "js_library"
        srcs = ["package.json", "index.js"]

        [[target]]
        name = "App"
        kind = "node_binary"
        srcs = ["main.mjs"]
        deps = ["./Lib"]
        //- /js/package.json
        //- /js/index.js
        //- /js/main.mjs
        //- /go/once.toml
        [[target]]
        name = "Lib"
        kind = "go_library"
        srcs = ["lib/*.go"]
        //- /go/lib/lib.go
        //- /go/cmd/once.toml
        [[target]]
        name = "App"
        kind = "go_binary"
        srcs = ["main.go"]
        deps = ["go/Lib"]
        attrs = { ldflags = ["-s", "-w"], tags = ["netgo"] }
        //- /go/cmd/main.go
        //- /rs/once.toml
        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["src/lib.rs"]

        [[target]]
        name = "App"
        kind = "rust_binary"
        srcs = ["Cargo.toml", "src/main.rs"]
        deps = ["./Lib"]
        attrs = { crate_name = "app", profile = "release", features = ["a", "b"], rustflags = ["-Copt-level=2"] }
        //- /rs/Cargo.toml
        //- /rs/src/lib.rs
        //- /rs/src/main.rs
        "#,
    )
    .system();
    let (db, workspace, _) = load(&system);
    let mut out = String::new();
    for package in ["c", "py", "js", "go", "rs"] {
        out.push_str(&render(&db, workspace, &format!("{package}/Lib"), "build"));
    }
    for package in ["c", "py", "js", "go/cmd", "rs"] {
        for capability in ["build", "run"] {
            out.push_str(&render(
                &db,
                workspace,
                &format!("{package}/App"),
                capability,
            ));
        }
    }
    expect![[r#"
        c/Lib build implemented=true
          c/Lib#build/0 ea3c9921089d: run ["cc", "-c", "c/lib.c", "-o", ".once/out/c/Lib/obj/lib.c.o", "-MD", "-MF", ".once/out/c/Lib/obj/lib.c.d", "-I.", "-Ic/include", "-DX=1"]
            in:  c/lib.c c/include/lib/lib.h
          c/Lib#build/archive fc55a35e3843: run ["ar", "rcs", ".once/out/c/Lib/libLib.a", ".once/out/c/Lib/obj/lib.c.o"]
            in:  .once/out/c/Lib/obj/lib.c.o
          c/Lib#build/compile_flags 781714753269: write .once/out/c/Lib/c_linkable/compile.rsp "-Ic/include\n-DX=1\n"
          c/Lib#build/link_flags 5f2090f59a69: write .once/out/c/Lib/c_linkable/link.rsp ""
          default: .once/out/c/Lib/libLib.a c/include/lib/lib.h .once/out/c/Lib/c_linkable/compile.rsp .once/out/c/Lib/c_linkable/link.rsp
        py/Lib build implemented=true
          py/Lib#build/compile ca1ef12a46f6: run ["python3", "-c", "import py_compile, sys\nargs = sys.argv[1:]\nfor src, dst in zip(args[0::2], args[1::2]):\n    py_compile.compile(src, cfile = dst, doraise = True)\n", "py/src/lib/__init__.py", ".once/out/py/Lib/pyc/src/lib/__init__.pyc"]
            in:  py/src/lib/__init__.py
          py/Lib#build/1 241d63ab7919: copy py/src/lib/__init__.py -> .once/out/py/Lib/site/lib/__init__.py
            in:  py/src/lib/__init__.py
          default: .once/out/py/Lib/site/lib/__init__.py
        js/Lib build implemented=true
          js/Lib#build/name 0320a0e9bea9: run ["node", "-e", "const fs = require(\"fs\");\nconst [manifest, out] = process.argv.slice(1);\nconst name = JSON.parse(fs.readFileSync(manifest, \"utf8\")).name;\nif (typeof name !== \"string\" || name === \"\") {\n  console.error(`${manifest} has no \\`name\\`; set the target's \\`package_name\\``);\n  process.exit(1);\n}\nfs.writeFileSync(out, name);\n", "js/package.json", ".once/out/js/Lib/package_name"]
            in:  js/package.json
          js/Lib#build/check 7a9609a50814: run ["node", "-e", "const { execFileSync } = require(\"child_process\");\nfor (const file of process.argv.slice(1)) {\n  execFileSync(process.execPath, [\"--check\", file], { stdio: \"inherit\" });\n}\n", "js/index.js"]
            in:  js/index.js
          js/Lib#build/stage-0 bc708d4bbea6: copy js/index.js -> .once/out/js/Lib/node_modules/.once-package/index.js
            in:  js/index.js
          js/Lib#build/stage-1 acf8c5a5efae: copy js/package.json -> .once/out/js/Lib/node_modules/.once-package/package.json
            in:  js/package.json
          default: .once/out/js/Lib/package_name .once/out/js/Lib/node_modules/.once-package/index.js .once/out/js/Lib/node_modules/.once-package/package.json
        go/Lib build implemented=true
          go/Lib#build/compile 619d01c4523d: run ["go", "build", "."] cwd=go GOCACHE="$WORKSPACE/.once/go/cache" GOENV="off" GOPATH="$WORKSPACE/.once/go/path" GOPROXY="off" GOTOOLCHAIN="local"
            in:  go/lib/lib.go
          default: go/lib/lib.go
        rs/Lib build implemented=true
          rs/Lib#build/fetch 9cd11e3744f7: run ["sh", "-c", "ONCE_CARGO_LOCK=\nONCE_CARGO_TARGET='rs/Lib'\nonce_manifest=\nonce_prev=\nfor once_arg in \"$@\"; do\n  [ \"$once_prev\" = --manifest-path ] && once_manifest=$once_arg\n  once_prev=$once_arg\ndone\nonce_here=$(pwd -P)\nonce_shadow=\nonce_dir=${once_manifest%/*}\n[ \"$once_dir\" = \"$once_manifest\" ] && once_dir=.\nonce_locked=\nwhile :; do\n  if [ -e \"$once_dir/Cargo.lock\" ]; then once_locked=1; break; fi\n  [ \"$once_dir\" = . ] && break\n  case $once_dir in */*) once_dir=${once_dir%/*} ;; *) once_dir=. ;; esac\ndone\nif [ -z \"$once_locked\" ]; then\n  once_root=$(cargo locate-project --workspace --manifest-path \"$once_manifest\" --message-format plain) || exit 1\n  once_root=${once_root%/Cargo.toml}\n  once_rel=${once_root#\"$once_here\"}\n  once_shadow=\"$once_here/.once/cargo/shadow/$ONCE_CARGO_TARGET$once_rel\"\n  mkdir -p \"$once_shadow\" || exit 1\n  for once_entry in \"$once_root\"/* \"$once_root\"/.[!.]*; do\n    once_name=${once_entry##*/}\n    case $once_name in '*'|'.[!.]*'|Cargo.lock|target|.once|.git) continue ;; esac\n    if [ ! -L \"$once_shadow/$once_name\" ]; then\n      ln -s \"$once_entry\" \"$once_shadow/$once_name\" || exit 1\n    fi\n  done\n  if [ -n \"$ONCE_CARGO_LOCK\" ] && [ -e \"$ONCE_CARGO_LOCK\" ]; then\n    cp \"$ONCE_CARGO_LOCK\" \"$once_shadow/Cargo.lock\" || exit 1\n  fi\n  once_count=$#\n  once_prev=\n  for once_arg in \"$@\"; do\n    if [ \"$once_prev\" = --manifest-path ]; then\n      case $once_arg in /*) once_arg=$once_arg ;; *) once_arg=\"$once_here/$once_arg\" ;; esac\n      once_arg=\"$once_shadow${once_arg#\"$once_root\"}\"\n    fi\n    set -- \"$@\" \"$once_arg\"\n    once_prev=$once_arg\n  done\n  shift \"$once_count\"\nfi\nif [ -n \"$once_shadow\" ]; then\n  cargo generate-lockfile --manifest-path \"$once_shadow/Cargo.toml\" || exit 1\n  cp \"$once_shadow/Cargo.lock\" '.once/out/rs/Lib/Cargo.lock' || exit 1\nelse\n  cp \"$once_dir/Cargo.lock\" '.once/out/rs/Lib/Cargo.lock' || exit 1\nfi\ncargo \"$@\" && echo fetched > '.once/out/rs/Lib/cargo-fetch'", "sh", "fetch", "--manifest-path", "rs/Cargo.toml"] CARGO_HOME="$CARGO_HOME"
            in:  rs/Cargo.toml rs/Cargo.lock rs/.cargo/config.toml rs/.cargo/config Cargo.lock .cargo/config.toml .cargo/config
          rs/Lib#build/cargo a7de2476518b: run ["sh", "-c", "ONCE_CARGO_LOCK='.once/out/rs/Lib/Cargo.lock'\nONCE_CARGO_TARGET='rs/Lib'\nonce_manifest=\nonce_prev=\nfor once_arg in \"$@\"; do\n  [ \"$once_prev\" = --manifest-path ] && once_manifest=$once_arg\n  once_prev=$once_arg\ndone\nonce_here=$(pwd -P)\nonce_shadow=\nonce_dir=${once_manifest%/*}\n[ \"$once_dir\" = \"$once_manifest\" ] && once_dir=.\nonce_locked=\nwhile :; do\n  if [ -e \"$once_dir/Cargo.lock\" ]; then once_locked=1; break; fi\n  [ \"$once_dir\" = . ] && break\n  case $once_dir in */*) once_dir=${once_dir%/*} ;; *) once_dir=. ;; esac\ndone\nif [ -z \"$once_locked\" ]; then\n  once_root=$(cargo locate-project --workspace --manifest-path \"$once_manifest\" --message-format plain) || exit 1\n  once_root=${once_root%/Cargo.toml}\n  once_rel=${once_root#\"$once_here\"}\n  once_shadow=\"$once_here/.once/cargo/shadow/$ONCE_CARGO_TARGET$once_rel\"\n  mkdir -p \"$once_shadow\" || exit 1\n  for once_entry in \"$once_root\"/* \"$once_root\"/.[!.]*; do\n    once_name=${once_entry##*/}\n    case $once_name in '*'|'.[!.]*'|Cargo.lock|target|.once|.git) continue ;; esac\n    if [ ! -L \"$once_shadow/$once_name\" ]; then\n      ln -s \"$once_entry\" \"$once_shadow/$once_name\" || exit 1\n    fi\n  done\n  if [ -n \"$ONCE_CARGO_LOCK\" ] && [ -e \"$ONCE_CARGO_LOCK\" ]; then\n    cp \"$ONCE_CARGO_LOCK\" \"$once_shadow/Cargo.lock\" || exit 1\n  fi\n  once_count=$#\n  once_prev=\n  for once_arg in \"$@\"; do\n    if [ \"$once_prev\" = --manifest-path ]; then\n      case $once_arg in /*) once_arg=$once_arg ;; *) once_arg=\"$once_here/$once_arg\" ;; esac\n      once_arg=\"$once_shadow${once_arg#\"$once_root\"}\"\n    fi\n    set -- \"$@\" \"$once_arg\"\n    once_prev=$once_arg\n  done\n  shift \"$once_count\"\nfi\ncargo \"$@\"", "sh", "build", "--manifest-path", "rs/Cargo.toml", "--target-dir", ".once/cargo", "--profile", "dev", "--lib"]
            in:  rs/src/lib.rs rs/Cargo.toml rs/Cargo.lock rs/.cargo/config.toml rs/.cargo/config Cargo.lock .cargo/config.toml .cargo/config .once/out/rs/Lib/cargo-fetch .once/out/rs/Lib/Cargo.lock
          default: rs/src/lib.rs rs/Cargo.toml
        c/App build implemented=true
          c/App#build/0 f3d092d5e4f5: run ["c++", "-c", "c/main.cpp", "-o", ".once/out/c/App/obj/main.cpp.o", "-MD", "-MF", ".once/out/c/App/obj/main.cpp.d", "-I.", "@.once/out/c/Lib/c_linkable/compile.rsp"]
            in:  c/main.cpp c/include/lib/lib.h .once/out/c/Lib/c_linkable/compile.rsp
          c/App#build/link 4530d8c122f4: run ["c++", "-o", ".once/out/c/App/App", ".once/out/c/App/obj/main.cpp.o", ".once/out/c/Lib/libLib.a", "@.once/out/c/Lib/c_linkable/link.rsp", "-lm"]
            in:  .once/out/c/App/obj/main.cpp.o .once/out/c/Lib/libLib.a .once/out/c/Lib/c_linkable/link.rsp
          default: .once/out/c/App/App
        c/App run implemented=true
          c/App#run/run f626654200a9: run ["../.once/out/c/App/App", "--fast"] cwd=c
            in:  .once/out/c/App/App
          default: 
        py/App build implemented=true
          py/App#build/compile cee308b0b9a8: run ["python3", "-c", "import py_compile, sys\nargs = sys.argv[1:]\nfor src, dst in zip(args[0::2], args[1::2]):\n    py_compile.compile(src, cfile = dst, doraise = True)\n", "py/app.py", ".once/out/py/App/pyc/app.pyc"]
            in:  py/app.py
          py/App#build/1 aa9265cc7ffd: copy py/app.py -> .once/out/py/App/site/app.py
            in:  py/app.py
          default: .once/out/py/App/site/app.py .once/out/py/Lib/site/lib/__init__.py
        py/App run implemented=true
          py/App#run/run 32c8ace86c59: run ["python3", "-X", "dev", "app.py"] cwd=py PYTHONPATH="../.once/out/py/App/site:../.once/out/py/Lib/site"
            in:  py/app.py .once/out/py/App/site/app.py .once/out/py/Lib/site/lib/__init__.py
          default: 
        js/App build implemented=true
          js/App#build/check 4aed0b3bebcf: run ["node", "-e", "const { execFileSync } = require(\"child_process\");\nfor (const file of process.argv.slice(1)) {\n  execFileSync(process.execPath, [\"--check\", file], { stdio: \"inherit\" });\n}\n", "js/main.mjs"]
            in:  js/main.mjs
          js/App#build/stage-0 26a1b8086556: copy js/main.mjs -> .once/out/js/App/node_modules/.once-package/main.mjs
            in:  js/main.mjs
          js/App#build/stage-own-0 0691c0b78f7a: copy .once/out/js/Lib/node_modules/.once-package/index.js -> .once/out/js/App/node_modules/.once-package/index.js
            in:  .once/out/js/Lib/node_modules/.once-package/index.js
          js/App#build/stage-own-1 75caa9c8d410: copy .once/out/js/Lib/node_modules/.once-package/package.json -> .once/out/js/App/node_modules/.once-package/package.json
            in:  .once/out/js/Lib/node_modules/.once-package/package.json
          default: .once/out/js/App/node_modules/.once-package/main.mjs .once/out/js/App/node_modules/.once-package/index.js .once/out/js/App/node_modules/.once-package/package.json .once/out/js/Lib/package_name .once/out/js/Lib/node_modules/.once-package/index.js .once/out/js/Lib/node_modules/.once-package/package.json
        js/App run implemented=true
          js/App#run/run c96c218a0c29: run ["node", "../.once/out/js/App/node_modules/.once-package/main.mjs"] cwd=js
            in:  .once/out/js/App/node_modules/.once-package/main.mjs .once/out/js/App/node_modules/.once-package/index.js .once/out/js/App/node_modules/.once-package/package.json .once/out/js/Lib/package_name .once/out/js/Lib/node_modules/.once-package/index.js .once/out/js/Lib/node_modules/.once-package/package.json
          default: 
        go/cmd/App build implemented=true
          go/cmd/App#build/link 1f7a7bdde3af: run ["go", "build", "-o", "../../.once/out/go/cmd/App/App", "-tags=netgo", "-ldflags=-s -w", "."] cwd=go/cmd GOCACHE="$WORKSPACE/.once/go/cache" GOENV="off" GOPATH="$WORKSPACE/.once/go/path" GOPROXY="off" GOTOOLCHAIN="local"
            in:  go/cmd/main.go go/lib/lib.go
          default: .once/out/go/cmd/App/App
        go/cmd/App run implemented=true
          go/cmd/App#run/run 8686f191d6b4: run ["../../.once/out/go/cmd/App/App"] cwd=go/cmd
            in:  .once/out/go/cmd/App/App
          default: 
        rs/App build implemented=true
          rs/App#build/fetch e5e704be883f: run ["sh", "-c", "ONCE_CARGO_LOCK=\nONCE_CARGO_TARGET='rs/App'\nonce_manifest=\nonce_prev=\nfor once_arg in \"$@\"; do\n  [ \"$once_prev\" = --manifest-path ] && once_manifest=$once_arg\n  once_prev=$once_arg\ndone\nonce_here=$(pwd -P)\nonce_shadow=\nonce_dir=${once_manifest%/*}\n[ \"$once_dir\" = \"$once_manifest\" ] && once_dir=.\nonce_locked=\nwhile :; do\n  if [ -e \"$once_dir/Cargo.lock\" ]; then once_locked=1; break; fi\n  [ \"$once_dir\" = . ] && break\n  case $once_dir in */*) once_dir=${once_dir%/*} ;; *) once_dir=. ;; esac\ndone\nif [ -z \"$once_locked\" ]; then\n  once_root=$(cargo locate-project --workspace --manifest-path \"$once_manifest\" --message-format plain) || exit 1\n  once_root=${once_root%/Cargo.toml}\n  once_rel=${once_root#\"$once_here\"}\n  once_shadow=\"$once_here/.once/cargo/shadow/$ONCE_CARGO_TARGET$once_rel\"\n  mkdir -p \"$once_shadow\" || exit 1\n  for once_entry in \"$once_root\"/* \"$once_root\"/.[!.]*; do\n    once_name=${once_entry##*/}\n    case $once_name in '*'|'.[!.]*'|Cargo.lock|target|.once|.git) continue ;; esac\n    if [ ! -L \"$once_shadow/$once_name\" ]; then\n      ln -s \"$once_entry\" \"$once_shadow/$once_name\" || exit 1\n    fi\n  done\n  if [ -n \"$ONCE_CARGO_LOCK\" ] && [ -e \"$ONCE_CARGO_LOCK\" ]; then\n    cp \"$ONCE_CARGO_LOCK\" \"$once_shadow/Cargo.lock\" || exit 1\n  fi\n  once_count=$#\n  once_prev=\n  for once_arg in \"$@\"; do\n    if [ \"$once_prev\" = --manifest-path ]; then\n      case $once_arg in /*) once_arg=$once_arg ;; *) once_arg=\"$once_here/$once_arg\" ;; esac\n      once_arg=\"$once_shadow${once_arg#\"$once_root\"}\"\n    fi\n    set -- \"$@\" \"$once_arg\"\n    once_prev=$once_arg\n  done\n  shift \"$once_count\"\nfi\nif [ -n \"$once_shadow\" ]; then\n  cargo generate-lockfile --manifest-path \"$once_shadow/Cargo.toml\" || exit 1\n  cp \"$once_shadow/Cargo.lock\" '.once/out/rs/App/Cargo.lock' || exit 1\nelse\n  cp \"$once_dir/Cargo.lock\" '.once/out/rs/App/Cargo.lock' || exit 1\nfi\ncargo \"$@\" && echo fetched > '.once/out/rs/App/cargo-fetch'", "sh", "fetch", "--manifest-path", "rs/Cargo.toml"] CARGO_HOME="$CARGO_HOME"
            in:  rs/Cargo.toml rs/Cargo.lock rs/.cargo/config.toml rs/.cargo/config Cargo.lock .cargo/config.toml .cargo/config
          rs/App#build/cargo 832812c91d38: run ["sh", "-c", "ONCE_CARGO_LOCK='.once/out/rs/App/Cargo.lock'\nONCE_CARGO_TARGET='rs/App'\nonce_manifest=\nonce_prev=\nfor once_arg in \"$@\"; do\n  [ \"$once_prev\" = --manifest-path ] && once_manifest=$once_arg\n  once_prev=$once_arg\ndone\nonce_here=$(pwd -P)\nonce_shadow=\nonce_dir=${once_manifest%/*}\n[ \"$once_dir\" = \"$once_manifest\" ] && once_dir=.\nonce_locked=\nwhile :; do\n  if [ -e \"$once_dir/Cargo.lock\" ]; then once_locked=1; break; fi\n  [ \"$once_dir\" = . ] && break\n  case $once_dir in */*) once_dir=${once_dir%/*} ;; *) once_dir=. ;; esac\ndone\nif [ -z \"$once_locked\" ]; then\n  once_root=$(cargo locate-project --workspace --manifest-path \"$once_manifest\" --message-format plain) || exit 1\n  once_root=${once_root%/Cargo.toml}\n  once_rel=${once_root#\"$once_here\"}\n  once_shadow=\"$once_here/.once/cargo/shadow/$ONCE_CARGO_TARGET$once_rel\"\n  mkdir -p \"$once_shadow\" || exit 1\n  for once_entry in \"$once_root\"/* \"$once_root\"/.[!.]*; do\n    once_name=${once_entry##*/}\n    case $once_name in '*'|'.[!.]*'|Cargo.lock|target|.once|.git) continue ;; esac\n    if [ ! -L \"$once_shadow/$once_name\" ]; then\n      ln -s \"$once_entry\" \"$once_shadow/$once_name\" || exit 1\n    fi\n  done\n  if [ -n \"$ONCE_CARGO_LOCK\" ] && [ -e \"$ONCE_CARGO_LOCK\" ]; then\n    cp \"$ONCE_CARGO_LOCK\" \"$once_shadow/Cargo.lock\" || exit 1\n  fi\n  once_count=$#\n  once_prev=\n  for once_arg in \"$@\"; do\n    if [ \"$once_prev\" = --manifest-path ]; then\n      case $once_arg in /*) once_arg=$once_arg ;; *) once_arg=\"$once_here/$once_arg\" ;; esac\n      once_arg=\"$once_shadow${once_arg#\"$once_root\"}\"\n    fi\n    set -- \"$@\" \"$once_arg\"\n    once_prev=$once_arg\n  done\n  shift \"$once_count\"\nfi\ncargo \"$@\" && cp '.once/cargo/release/app' '.once/out/rs/App/app'", "sh", "build", "--manifest-path", "rs/Cargo.toml", "--target-dir", ".once/cargo", "--profile", "release", "--features", "a,b", "--bin", "app"] CARGO_ENCODED_RUSTFLAGS="-Copt-level=2"
            in:  rs/Cargo.toml rs/src/main.rs rs/src/lib.rs rs/Cargo.lock rs/.cargo/config.toml rs/.cargo/config Cargo.lock .cargo/config.toml .cargo/config .once/out/rs/App/cargo-fetch .once/out/rs/App/Cargo.lock
          default: .once/out/rs/App/app
        rs/App run implemented=true
          rs/App#run/run 40e1acdfa355: run ["../.once/out/rs/App/app"] cwd=rs
            in:  .once/out/rs/App/app
          default: 
    "#]]
    .assert_eq(&out);
}

/// A dependency cycle (reported by `dependency_cycles`) does not stop planning: the
/// targets on it plan without the outputs of the dependency that closes the cycle.
#[test]
fn dependency_cycles_plan_without_panicking() {
    let system = Fixture::parse(
        r#"
        //- /once.toml
        [workspace]
        //- /a/once.toml
        [[target]]
        name = "A"
        kind = "filegroup"
        srcs = ["a.txt"]
        deps = ["b/B"]
        //- /a/a.txt
        //- /b/once.toml
        [[target]]
        name = "B"
        kind = "filegroup"
        srcs = ["b.txt"]
        deps = ["a/A"]
        //- /b/b.txt
        "#,
    )
    .system();
    let (db, workspace, _) = load(&system);
    let out = render(&db, workspace, "a/A", "build") + &render(&db, workspace, "b/B", "build");
    expect![[r#"
        a/A build implemented=false
          default: 
          dependency_cycle a/once.toml Some(TextRange { start: 18, end: 21 }): `build` of `a/A` is not planned: the target is on a dependency cycle, so the outputs of its dependencies are undefined
        b/B build implemented=false
          default: 
          dependency_cycle b/once.toml Some(TextRange { start: 18, end: 21 }): `build` of `b/B` is not planned: the target is on a dependency cycle, so the outputs of its dependencies are undefined
    "#]]
    .assert_eq(&out);
}

/// A [`once_db::PlanMemo`] in memory that counts its hits.
#[derive(Default)]
struct MemoryMemo {
    entries: std::sync::Mutex<std::collections::HashMap<once_db::Sha256Digest, Arc<[u8]>>>,
    hits: std::sync::atomic::AtomicUsize,
}

impl once_db::PlanMemo for MemoryMemo {
    fn lookup(&self, key: &once_db::Sha256Digest) -> Option<Arc<[u8]>> {
        let found = self.entries.lock().unwrap().get(key).cloned();
        if found.is_some() {
            self.hits.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }
        found
    }

    fn record(&self, key: once_db::Sha256Digest, value: Vec<u8>) {
        self.entries.lock().unwrap().insert(key, value.into());
    }
}

impl MemoryMemo {
    fn take_hits(&self) -> usize {
        self.hits.swap(0, std::sync::atomic::Ordering::Relaxed)
    }

    fn len(&self) -> usize {
        self.entries.lock().unwrap().len()
    }
}

/// Every plan of the fixture (successes and failures), rendered, by a new database
/// lent `memo`.
fn render_with_memo(system: &MemorySystem, memo: &Arc<MemoryMemo>) -> String {
    let (mut db, workspace, _) = load(system);
    db.set_plan_memo(memo.clone());
    let mut out = String::new();
    for id in PLANNED {
        out.push_str(&render(&db, workspace, id, "build"));
    }
    out.push_str(&render(&db, workspace, "data/Stamp", "run"));
    out
}

/// A new database answers from the memo an earlier one filled, with the plans the
/// implementations give; failures are planned again; an edit to a module or to a
/// target's inputs misses exactly for the plans it can change.
#[test]
fn a_memo_replays_plans_and_misses_on_what_changed() {
    let system = system();
    let (db, workspace, _) = load(&system);
    let mut expected = String::new();
    for id in PLANNED {
        expected.push_str(&render(&db, workspace, id, "build"));
    }
    expected.push_str(&render(&db, workspace, "data/Stamp", "run"));

    let memo = Arc::new(MemoryMemo::default());
    assert_eq!(render_with_memo(&system, &memo), expected);
    assert_eq!(memo.take_hits(), 0);
    assert_eq!(
        memo.len(),
        4,
        "the four successful build plans are recorded"
    );
    assert_eq!(render_with_memo(&system, &memo), expected);
    assert_eq!(memo.take_hits(), 4, "every successful plan is replayed");
    assert_eq!(memo.len(), 4, "the failing `run` plan is never recorded");

    // A new source file matched by the filegroup changes its `srcs`, and the
    // command's dependency outputs: both miss; the stamp's request (its dependency's
    // default outputs) and the tool's are unchanged.
    system.write(format!("{ROOT}/data/c.txt"), "c\n");
    let edited = render_with_memo(&system, &memo);
    assert_ne!(edited, expected);
    assert!(
        edited.contains("data/a.txt data/b.txt data/c.txt"),
        "{edited}"
    );
    assert_eq!(memo.take_hits(), 2, "tools/Gen and data/Stamp hit");
    assert_eq!(memo.len(), 6);

    // Any module text is part of every module kind's key; prelude kinds still hit.
    system.write(
        format!("{ROOT}/modules/helper.star"),
        "GREETING = \"hello\"\n",
    );
    let _ = render_with_memo(&system, &memo);
    assert_eq!(
        memo.take_hits(),
        3,
        "every prelude plan hits; the stamp misses"
    );

    // A module naming `debug` is never memoised.
    system.write(format!("{ROOT}/modules/helper.star"), "f = debug\n");
    let before = memo.len();
    let _ = render_with_memo(&system, &memo);
    assert_eq!(memo.take_hits(), 3, "only the prelude plans hit");
    assert_eq!(memo.len(), before, "nothing of the module kind is recorded");
}

/// A `rust_binary` with `example` builds it with `cargo build --example` and copies the
/// executable Cargo leaves in `examples/` into `examples/` of its build directory, which
/// `run` starts; `example` with `crate_name` is an error of the implementation.
#[test]
fn a_rust_example_is_built_with_cargo_build_example() {
    let system = Fixture::parse(
        r#"
        //- /once.toml
        [workspace]
        //- /rs/once.toml
        [[target]]
        name = "ShowExample"
        kind = "rust_binary"
        srcs = ["src/lib.rs", "examples/show.rs"]
        attrs = { example = "show", features = ["loud"] }

        [[target]]
        name = "Both"
        kind = "rust_binary"
        srcs = ["src/lib.rs"]
        attrs = { example = "show", crate_name = "rs" }
        //- /rs/Cargo.toml
        //- /rs/src/lib.rs
        //- /rs/examples/show.rs
        "#,
    )
    .system();
    let (db, workspace, _) = load(&system);
    let plan = target_actions(&db, workspace, "rs/ShowExample", "build");
    assert!(plan.diagnostics.is_empty(), "{:?}", plan.diagnostics);
    let exe = ".once/out/rs/ShowExample/examples/show";
    assert_eq!(plan.actions.default_outputs, vec![exe.to_owned()]);
    let cargo = plan
        .actions
        .actions
        .iter()
        .find(|a| a.outputs.iter().any(|o| o == exe))
        .expect("an action makes the executable");
    let ActionStep::Run(command) = &cargo.step else {
        panic!("{:?}", cargo.step);
    };
    let argv = command.argv.join(" ");
    for needle in [
        "build --manifest-path rs/Cargo.toml",
        "--features loud",
        "--example show",
        "cp '.once/cargo/debug/examples/show' '.once/out/rs/ShowExample/examples/show'",
    ] {
        assert!(argv.contains(needle), "{needle}: {argv}");
    }
    assert!(!argv.contains("--bin"), "{argv}");
    let run = target_actions(&db, workspace, "rs/ShowExample", "run");
    let ActionStep::Run(command) = &run.actions.actions[0].step else {
        panic!("{:?}", run.actions.actions[0].step);
    };
    assert_eq!(command.argv, ["../.once/out/rs/ShowExample/examples/show"]);

    let both = target_actions(&db, workspace, "rs/Both", "build");
    let messages: Vec<&str> = both
        .diagnostics
        .iter()
        .map(|d| d.message.as_str())
        .collect();
    assert!(
        messages
            .iter()
            .any(|m| m.contains("`example` and `crate_name` are both set")),
        "{messages:?}"
    );
}
