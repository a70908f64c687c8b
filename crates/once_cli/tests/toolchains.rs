//! The C and Rust kinds and the demo workspace built and run through the real binary
//! with the real toolchains (`cc`, `c++`, `ar`, `cargo`): every starter example of the
//! `c_*` and `rust_*` kinds with a `build` implementation builds and every runnable one
//! runs; a C library's `defines`, `includes` and `linkopts` reach its dependents
//! transitively and archives link in dependency order (into a C program and, through
//! Cargo's build-script override, into a Rust one); the demo workspace builds completely,
//! its runnable targets run and a second build is all hits.

#[path = "support/binary.rs"]
mod binary;
use binary::{copy_tree, once, text, write};

use std::path::Path;

use expect_test::{Expect, expect};
use serde_json::Value;

/// `once build …` (JSON), which must succeed; each target with its cache state, as
/// `target (kind): state` lines.
fn build(root: &Path, targets: &[&str]) -> Vec<String> {
    let mut args = vec!["build", "--format", "json"];
    args.extend_from_slice(targets);
    let output = once(root, &args);
    let record: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    assert_eq!(
        (output.status.code(), record["success"].as_bool()),
        (Some(0), Some(true)),
        "the build failed: {record:#}"
    );
    record["targets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            format!(
                "{} ({}): {}",
                t["target"].as_str().unwrap(),
                t["kind"].as_str().unwrap(),
                t["cache"].as_str().unwrap_or("nothing to run")
            )
        })
        .collect()
}

/// The targets of the workspace whose kind implements `run`.
fn runnable(root: &Path, built: &[String]) -> Vec<String> {
    built
        .iter()
        .map(|line| line.split(' ').next().unwrap().to_owned())
        .filter(|target| {
            let output = once(root, &["query", "capabilities", target, "--format", "json"]);
            let value: Value = serde_json::from_slice(&output.stdout).unwrap();
            value["capabilities"]
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["name"] == "run")
        })
        .collect()
}

/// `once run TARGET -- ARGS`, which must succeed: `$ once run …` and its stdout.
fn run(root: &Path, target: &str, args: &[&str]) -> String {
    let mut argv = vec!["run", target];
    if !args.is_empty() {
        argv.push("--");
        argv.extend_from_slice(args);
    }
    let output = once(root, &argv);
    assert_eq!(
        output.status.code(),
        Some(0),
        "`once run {target}` failed:\n{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    format!("$ once {}\n{}", argv.join(" "), text(&output.stdout))
}

fn check(actual: &str, expected: Expect) {
    expected.assert_eq(actual);
}

#[test]
fn every_c_and_rust_starter_builds_and_runs() {
    let empty = tempfile::tempdir().unwrap();
    write(empty.path(), "once.toml", "[workspace]\n");
    let mut report = String::new();
    for kind in [
        "c_library",
        "c_binary",
        "c_test",
        "rust_library",
        "rust_binary",
    ] {
        let schema = once(empty.path(), &["query", "schema", kind, "--format", "json"]);
        let schema: Value = serde_json::from_slice(&schema.stdout).unwrap();
        for example in schema["examples"].as_array().unwrap() {
            let slug = example["slug"].as_str().unwrap();
            let dir = tempfile::tempdir().unwrap();
            let root = dir.path();
            let written = once(root, &["edit", "materialize-example", kind, slug]);
            assert!(written.status.success(), "{}", text(&written.stderr));
            let built = build(root, &["..."]);
            report += &format!("{kind} {slug}\n");
            for line in &built {
                report += &format!("  {line}\n");
            }
            for target in runnable(root, &built) {
                report += &run(root, &target, &[]);
            }
            let again = build(root, &["..."]);
            assert!(
                again.iter().all(|line| line.ends_with(": hit")),
                "{again:#?}"
            );
        }
    }
    check(
        &report,
        expect![[r#"
            c_library c-library-minimal
              greeting/Greeting (c_library): miss
            c_library c-library-with-dependency
              libs/greeting/Greeting (c_library): miss
              libs/text/Text (c_library): miss
            c_binary c-binary-minimal
              hello/Hello (c_binary): miss
            $ once run hello/Hello
            hello, world
            c_binary c-binary-with-library
              app/App (c_binary): miss
              lib/greeting/Greeting (c_library): miss
            $ once run app/App
            hello, world
            c_test c-test-minimal
              calc/Calc (c_library): miss
              calc/CalcTest (c_test): miss
            rust_library rust-library-minimal
              crates/greeting/Greeting (rust_library): miss
            rust_library rust-library-with-features
              libs/report/Report (rust_library): miss
              libs/units/Units (rust_library): miss
            rust_binary rust-binary-minimal
              Hello (rust_binary): miss
            $ once run Hello
            hello, world
            rust_binary rust-binary-with-library
              app/App (rust_binary): miss
              lib/greeting/Greeting (rust_library): miss
            $ once run app/App
            hello, world
            rust_binary rust-binary-with-c-library
              app/App (rust_binary): miss
              native/clamp/Clamp (c_library): miss
            $ once run app/App
            100%
        "#]],
    );
}

/// `base/Base` (C: public include directory, a define, `-lm`) ← `left/Left` (C) and
/// `right/Right` (C++, `-lstdc++`) ← `top/Top` (C) ← `app/App` (a C program depending on
/// Top and Right) and `rs/Rs` (a Rust program with Top in `c_deps`).
fn diamond() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let library = |package: &str, name: &str, srcs: &str, deps: &str, attrs: &str| {
        write(
            root,
            &format!("{package}/once.toml"),
            &format!(
                "[[target]]\nname = \"{name}\"\nkind = \"c_library\"\nsrcs = [\"{srcs}\"]\n\
                 deps = [{deps}]\nvisibility = [\"public\"]\n\n[target.attrs]\n{attrs}"
            ),
        );
    };
    write(
        root,
        "once.toml",
        "[workspace]\ninclude = [\"base\", \"left\", \"right\", \"top\", \"app\", \"rs\"]\n",
    );
    library(
        "base",
        "Base",
        "base.c",
        "",
        "hdrs = [\"include/base/base.h\"]\nincludes = [\"include\"]\n\
         defines = [\"BASE_SCALE=3\"]\nlinkopts = [\"-lm\"]\n",
    );
    write(
        root,
        "base/include/base/base.h",
        "#ifndef BASE_SCALE\n#error \"BASE_SCALE reaches every dependent\"\n#endif\n\
         #ifdef __cplusplus\nextern \"C\" {\n#endif\n\
         double base_root(double x);\n\
         #ifdef __cplusplus\n}\n#endif\n",
    );
    write(
        root,
        "base/base.c",
        "#include \"base/base.h\"\n#include <math.h>\n\
         double base_root(double x) { return cbrt(x); }\n",
    );
    library(
        "left",
        "Left",
        "left.c",
        "\"base/Base\"",
        "hdrs = [\"left.h\"]\n",
    );
    write(root, "left/left.h", "int left_value(void);\n");
    write(
        root,
        "left/left.c",
        "#include \"left/left.h\"\n#include \"base/base.h\"\n\
         int left_value(void) { return (int)base_root(27.0) * BASE_SCALE; }\n",
    );
    library(
        "right",
        "Right",
        "right.cc",
        "\"base/Base\"",
        "hdrs = [\"right.h\"]\nlinkopts = [\"-lstdc++\"]\n",
    );
    write(
        root,
        "right/right.h",
        "#ifdef __cplusplus\nextern \"C\"\n#endif\nint right_value(void);\n",
    );
    write(
        root,
        "right/right.cc",
        "#include \"right/right.h\"\n#include \"base/base.h\"\n#include <string>\n\
         int right_value(void) {\n\
         \x20   std::string scale(BASE_SCALE, 'x');\n\
         \x20   return (int)scale.size() + (int)base_root(8.0);\n}\n",
    );
    library(
        "top",
        "Top",
        "top.c",
        "\"left/Left\", \"right/Right\"",
        "hdrs = [\"top.h\"]\n",
    );
    write(root, "top/top.h", "int top_value(void);\n");
    write(
        root,
        "top/top.c",
        "#include \"top/top.h\"\n#include \"left/left.h\"\n#include \"right/right.h\"\n\
         int top_value(void) { return left_value() * 10 + right_value(); }\n",
    );
    write(
        root,
        "app/once.toml",
        "[[target]]\nname = \"App\"\nkind = \"c_binary\"\nsrcs = [\"main.c\"]\n\
         deps = [\"top/Top\", \"right/Right\"]\n",
    );
    write(
        root,
        "app/main.c",
        "#include <stdio.h>\n#include \"top/top.h\"\n#include \"base/base.h\"\n\
         int main(void) { printf(\"%d %d\\n\", top_value(), BASE_SCALE); return 0; }\n",
    );
    write(
        root,
        "rs/once.toml",
        "[[target]]\nname = \"Rs\"\nkind = \"rust_binary\"\n\
         srcs = [\"Cargo.toml\", \"build.rs\", \"src/*.rs\"]\n\
         dependencies = { c_deps = [\"top/Top\"] }\n\n\
         [target.attrs]\ncrate_name = \"rs\"\nlinks = \"top\"\n",
    );
    write(
        root,
        "rs/Cargo.toml",
        "[package]\nname = \"rs\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\
         links = \"top\"\nbuild = \"build.rs\"\n\n[workspace]\n",
    );
    // The lockfile a sandboxed Cargo needs (it may not write one into the source tree).
    write(
        root,
        "rs/Cargo.lock",
        "# This file is automatically @generated by Cargo.\n\
         # It is not intended for manual editing.\n\
         version = 4\n\n[[package]]\nname = \"rs\"\nversion = \"0.1.0\"\n",
    );
    write(
        root,
        "rs/build.rs",
        "fn main() { panic!(\"once overrides this build script\"); }\n",
    );
    write(
        root,
        "rs/src/main.rs",
        "extern \"C\" {\n    fn top_value() -> i32;\n}\n\n\
         fn main() {\n    println!(\"{}\", unsafe { top_value() });\n}\n",
    );
    dir
}

/// The command of `target`'s action `id` in `once query actions`.
fn command_of(root: &Path, target: &str, id: &str) -> String {
    let output = once(root, &["query", "actions", target]);
    let listing = text(&output.stdout);
    let header = format!("  {target}#build/{id} ");
    let mut lines = listing
        .lines()
        .skip_while(|line| !line.starts_with(&header));
    lines.next();
    lines.next().unwrap_or_default().trim().to_owned()
}

#[test]
fn c_libraries_hand_their_flags_to_dependents_and_link_in_dependency_order() {
    let dir = diamond();
    let root = dir.path();
    let mut report = build(root, &["..."]).join("\n") + "\n";
    report += &command_of(root, "app/App", "0");
    report += "\n";
    report += &command_of(root, "app/App", "link");
    report += "\n";
    report += &run(root, "app/App", &[]);
    report += &run(root, "rs/Rs", &[]);
    let base = root.join("base/once.toml");
    let manifest = std::fs::read_to_string(&base).unwrap();
    std::fs::write(&base, manifest.replace("BASE_SCALE=3", "BASE_SCALE=4")).unwrap();
    report += &build(root, &["..."]).join("\n");
    report += "\n";
    report += &run(root, "app/App", &[]);
    report += &run(root, "rs/Rs", &[]);
    check(
        &report,
        expect![[r#"
            app/App (c_binary): miss
            base/Base (c_library): miss
            left/Left (c_library): miss
            right/Right (c_library): miss
            rs/Rs (rust_binary): miss
            top/Top (c_library): miss
            run cc -c app/main.c -o .once/out/app/App/obj/main.c.o -MD -MF .once/out/app/App/obj/main.c.d -I. @.once/out/top/Top/c_linkable/compile.rsp @.once/out/left/Left/c_linkable/compile.rsp @.once/out/right/Right/c_linkable/compile.rsp @.once/out/base/Base/c_linkable/compile.rsp (keyed by `cc --version`)
            run c++ -o .once/out/app/App/App .once/out/app/App/obj/main.c.o .once/out/top/Top/libTop.a .once/out/left/Left/libLeft.a .once/out/right/Right/libRight.a .once/out/base/Base/libBase.a @.once/out/top/Top/c_linkable/link.rsp @.once/out/left/Left/c_linkable/link.rsp @.once/out/right/Right/c_linkable/link.c++.rsp @.once/out/base/Base/c_linkable/link.rsp
            $ once run app/App
            95 3
            $ once run rs/Rs
            95
            app/App (c_binary): miss
            base/Base (c_library): miss
            left/Left (c_library): miss
            right/Right (c_library): miss
            rs/Rs (rust_binary): miss
            top/Top (c_library): miss
            $ once run app/App
            126 4
            $ once run rs/Rs
            126
        "#]],
    );
}

#[test]
fn the_demo_builds_completely_and_its_programs_run() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    copy_tree(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/demo"),
        root,
    );
    let built = build(root, &["..."]);
    let mut report = String::new();
    for target in runnable(root, &built) {
        report += &run(root, &target, &[]);
    }
    report += &run(root, "apps/greeter/Greeter", &["--shout", "ann"]);
    // The greeter's `links = "shout"` build script never ran: Cargo took the override.
    for profile in ["debug", "release"] {
        let scripts = root.join(".once/cargo").join(profile).join("build");
        let ran: Vec<_> = std::fs::read_dir(&scripts)
            .map(|entries| {
                entries
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .filter(|name| name.starts_with("greeter-"))
                    .collect()
            })
            .unwrap_or_default();
        assert_eq!(ran, Vec::<String>::new(), "{profile}");
    }
    let again = build(root, &["..."]);
    assert!(
        again
            .iter()
            .all(|line| line.ends_with(": hit") || line.ends_with(": nothing to run")),
        "{again:#?}"
    );
    // An edit to a library the greeter compiles in reaches the greeter's key: its build is
    // a miss and the program says the new text (it was a wrong hit once).
    let library = root.join("libs/greeting/src/lib.rs");
    let source = std::fs::read_to_string(&library).unwrap();
    std::fs::write(&library, source.replacen("Hello", "Howdy", 1)).unwrap();
    let rebuilt = build(root, &["apps/greeter/Greeter"]);
    assert!(
        rebuilt
            .iter()
            .any(|line| line == "apps/greeter/Greeter (rust_binary): miss"),
        "{rebuilt:#?}"
    );
    report += &run(root, "apps/greeter/Greeter", &[]);
    check(
        &report,
        expect![[r#"
            $ once run apps/greeter/Greeter
            Hello, World!
            $ once run tools/Release
            greeter 0.1.0 - built with once
            dry run: nothing published
            $ once run apps/greeter/Greeter -- --shout ann
            HELLO, ANN!
            $ once run apps/greeter/Greeter
            Howdy, World!
        "#]],
    );
}
