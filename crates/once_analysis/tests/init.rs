//! `once init`'s planner on in-memory facts: each case is an inline workspace (its
//! existing manifests) and the ecosystem facts the execution layer would have gathered,
//! and snapshots what the plan does to every manifest. The one `check` helper also
//! applies the plan, validates the workspace it leaves (every diagnostic is in the
//! snapshot) and plans again, which must change nothing. The core crate does no I/O, so
//! the facts are plain structs here, and the walk's files are written empty.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use expect_test::{Expect, expect};
use once_analysis::AnalysisHost;
use once_analysis::init::{
    CargoPackage, CargoTarget, EcosystemFacts, GoPackage, NodePackage, PythonProject, PythonRunner,
    ShellTests,
};
use once_fixture::Fixture;

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

/// Facts whose walk is `files`.
fn walk(files: &[&str]) -> EcosystemFacts {
    let mut files = strings(files);
    files.sort();
    EcosystemFacts {
        files,
        ..EcosystemFacts::default()
    }
}

/// Plans `once init` on `fixture` (the existing manifests; the walk's other files are
/// added empty), applies it, validates and plans again; snapshots the plan and the
/// validation.
fn check(fixture: &str, facts: EcosystemFacts, expect: Expect) {
    let mut workspace = Fixture::parse(fixture);
    let declared: BTreeSet<String> = fixture
        .lines()
        .filter_map(|l| l.trim().strip_prefix("//- /"))
        .map(str::to_owned)
        .collect();
    for file in &facts.files {
        if !declared.contains(file) {
            workspace.add(file, "");
        }
    }
    let system = workspace.system();
    let mut host = AnalysisHost::load(Arc::new(system), PathBuf::from(once_fixture::ROOT));
    let plan = host
        .analysis()
        .plan_init(&facts)
        .expect("not cancelled")
        .expect("planned");
    let mut out = String::new();
    for manifest in &plan.manifests {
        let status = if manifest.rejected() {
            "rejected"
        } else if !manifest.changed() {
            "unchanged"
        } else if manifest.before.is_none() {
            "created"
        } else {
            "updated"
        };
        out.push_str(&format!("== {status} {}\n", manifest.path));
        for note in &manifest.left_alone {
            out.push_str(&format!("left alone: {note}\n"));
        }
        if manifest.changed() && manifest.before.is_some() {
            // A blank context line is one space, which a snapshot cannot keep.
            for line in manifest.diff().lines() {
                out.push_str(line.trim_end());
                out.push('\n');
            }
        } else if manifest.changed() {
            out.push_str(&manifest.after);
        }
    }
    for warning in &plan.warnings {
        out.push_str(&format!("warning: {warning}\n"));
    }
    if let Some(root) = &plan.root_manifest {
        out.push_str(&format!("root manifest created from:\n{root}"));
    }

    let applied = host.apply_init(&facts).expect("applied");
    assert_eq!(applied, plan, "applying plans what planning did");
    let validation = host.analysis().validate_workspace().expect("not cancelled");
    out.push_str(&format!(
        "-- validation: {} targets, {} diagnostics\n",
        validation.target_count,
        validation.diagnostics.len()
    ));
    for d in &validation.diagnostics {
        out.push_str(&format!(
            "{:?} {:?}: {}\n",
            d.diagnostic.severity, d.diagnostic.code, d.diagnostic.message
        ));
    }
    let again = host
        .analysis()
        .plan_init(&facts)
        .expect("not cancelled")
        .expect("planned");
    assert!(
        again.in_step() && again.writes().is_empty(),
        "a second plan changes something:\n{}",
        again.manifests.iter().map(|m| m.diff()).collect::<String>()
    );
    expect.assert_eq(&out);
}

fn cargo_target(name: &str, path: &str, features: &[&str]) -> CargoTarget {
    CargoTarget {
        name: name.to_owned(),
        path: path.to_owned(),
        required_features: strings(features),
    }
}

#[test]
fn a_cargo_workspace_gets_libraries_binaries_examples_and_tests() {
    let mut facts = walk(&[
        "Cargo.toml",
        "crates/shapes/Cargo.toml",
        "crates/shapes/build.rs",
        "crates/shapes/src/lib.rs",
        "crates/shapes/examples/area.rs",
        "crates/shapes/examples/tour/main.rs",
        "crates/shapes/examples/tour/steps.rs",
        "crates/shapes/benches/speed.rs",
        "crates/shapes/tests/api.rs",
        "crates/cli/Cargo.toml",
        "crates/cli/src/main.rs",
        "crates/cli/src/bin/extra.rs",
        "crates/cli/build/main.rs",
        "crates/cli/build/generate.rs",
    ]);
    facts.cargo = vec![
        CargoPackage {
            dir: "crates/cli".into(),
            name: "shapes-cli".into(),
            edition: "2021".into(),
            bins: vec![
                cargo_target("shapes-cli", "src/main.rs", &[]),
                cargo_target("extra", "src/bin/extra.rs", &["fancy", "color"]),
            ],
            path_deps: strings(&["crates/shapes"]),
            build_script: Some("build/main.rs".into()),
            ..CargoPackage::default()
        },
        CargoPackage {
            dir: "crates/shapes".into(),
            name: "shapes".into(),
            edition: "2024".into(),
            lib: Some("shapes".into()),
            examples: vec![
                cargo_target("area", "examples/area.rs", &[]),
                cargo_target("tour", "examples/tour/main.rs", &["std"]),
            ],
            benches: strings(&["speed"]),
            has_tests: true,
            build_script: Some("build.rs".into()),
            links: Some("shapes_native".into()),
            ..CargoPackage::default()
        },
    ];
    check(
        "",
        facts,
        expect![[r#"
            == created once.toml
            # The workspace root: `once` finds the workspace by this table.
            [workspace]
            == created crates/cli/once.toml
            # generated by once init from crates/cli/Cargo.toml
            [[target]]
            name = "ShapesCli"
            kind = "rust_binary"
            deps = ["crates/shapes/Shapes"]
            srcs = ["src/**/*.rs", "build/**/*.rs"]

            [target.attrs]
            crate_name = "shapes-cli"
            edition = "2021"

            # generated by once init from crates/cli/Cargo.toml
            [[target]]
            name = "Extra"
            kind = "rust_binary"
            deps = ["crates/shapes/Shapes"]
            srcs = ["src/**/*.rs", "build/**/*.rs"]

            [target.attrs]
            crate_name = "extra"
            edition = "2021"
            features = ["fancy", "color"]
            == created crates/shapes/once.toml
            # generated by once init from crates/shapes/Cargo.toml
            [[target]]
            name = "Shapes"
            kind = "rust_library"
            srcs = ["src/**/*.rs", "build.rs"]

            [target.attrs]
            crate_name = "shapes"
            edition = "2024"
            links = "shapes_native"

            # generated by once init from crates/shapes/Cargo.toml
            [[target]]
            name = "AreaExample"
            kind = "rust_binary"
            srcs = ["src/**/*.rs", "build.rs", "examples/area.rs"]

            [target.attrs]
            example = "area"
            edition = "2024"
            links = "shapes_native"

            # generated by once init from crates/shapes/Cargo.toml
            [[target]]
            name = "TourExample"
            kind = "rust_binary"
            srcs = ["src/**/*.rs", "build.rs", "examples/tour/**/*.rs"]

            [target.attrs]
            example = "tour"
            edition = "2024"
            links = "shapes_native"
            features = ["std"]

            # generated by once init from crates/shapes/Cargo.toml
            [[target]]
            name = "ShapesTest"
            kind = "rust_test"
            srcs = ["src/**/*.rs", "tests/**/*.rs", "examples/**/*.rs", "benches/**/*.rs", "build.rs"]

            [target.attrs]
            edition = "2024"
            links = "shapes_native"
            warning: crates/shapes/Cargo.toml: the benchmarks (`speed`) get no target: no kind runs `cargo bench` (the package's `rust_test` compiles them as tests only when they set `test = true`)
            root manifest created from:
            # The workspace root: `once` finds the workspace by this table.
            [workspace]
            -- validation: 6 targets, 0 diagnostics
        "#]],
    );
}

fn python_project(dir: &str, name: &str) -> PythonProject {
    PythonProject {
        dir: dir.to_owned(),
        config_file: if dir.is_empty() {
            "pyproject.toml".to_owned()
        } else {
            format!("{dir}/pyproject.toml")
        },
        name: name.to_owned(),
        import_root: ".".to_owned(),
        packages: Vec::new(),
        modules: Vec::new(),
        tests: None,
        runner: PythonRunner::Pytest,
        tests_package: false,
        pytest_files: Vec::new(),
        path_deps: Vec::new(),
    }
}

#[test]
fn python_projects_get_a_library_and_the_test_runner_they_use() {
    let mut facts = walk(&[
        "geometry/pyproject.toml",
        "geometry/conftest.py",
        "geometry/src/geometry/__init__.py",
        "geometry/src/geometry/area.py",
        "geometry/tests/test_area.py",
        "units/setup.py",
        "units/units.py",
        "units/tests/__init__.py",
        "units/tests/test_units.py",
    ]);
    facts.python = vec![
        PythonProject {
            import_root: "src".into(),
            packages: strings(&["src/geometry"]),
            tests: Some("tests".into()),
            pytest_files: strings(&["conftest.py"]),
            path_deps: strings(&["units"]),
            ..python_project("geometry", "geometry")
        },
        PythonProject {
            config_file: "units/setup.py".into(),
            modules: strings(&["units.py"]),
            tests: Some("tests".into()),
            runner: PythonRunner::Unittest,
            tests_package: true,
            ..python_project("units", "py-units")
        },
    ];
    check(
        "",
        facts,
        expect![[r#"
        == created once.toml
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        == created geometry/once.toml
        # generated by once init from geometry/pyproject.toml
        [[target]]
        name = "Geometry"
        kind = "python_library"
        deps = ["units/PyUnits"]
        srcs = ["src/geometry/**/*.py"]

        [target.attrs]
        imports = ["src"]

        # generated by once init from geometry/pyproject.toml
        [[target]]
        name = "GeometryTest"
        kind = "pytest_test"
        deps = ["./Geometry", "units/PyUnits"]
        srcs = ["tests/**/*.py", "conftest.py"]
        == created units/once.toml
        # generated by once init from units/setup.py
        [[target]]
        name = "PyUnits"
        kind = "python_library"
        srcs = ["units.py"]

        # generated by once init from units/setup.py
        [[target]]
        name = "PyUnitsTest"
        kind = "unittest_test"
        deps = ["./PyUnits"]
        srcs = ["tests/**/*.py"]

        [target.attrs]
        start_directory = "tests"
        top_level_directory = "."
        root manifest created from:
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        -- validation: 4 targets, 0 diagnostics
    "#]],
    );
}

#[test]
fn node_packages_get_libraries_tests_and_a_binary_per_command() {
    let mut facts = walk(&[
        "package.json",
        "packages/greet/package.json",
        "packages/greet/index.js",
        "packages/greet/test/greet.test.js",
        "packages/cli/package.json",
        "packages/cli/lib.js",
        "packages/cli/bin/cli.js",
        "packages/cli/bin/admin",
    ]);
    facts.node = vec![
        NodePackage {
            dir: "".into(),
            name: "monorepo".into(),
            ..NodePackage::default()
        },
        NodePackage {
            dir: "packages/cli".into(),
            name: "@acme/cli".into(),
            dependencies: strings(&["@acme/greet", "left-pad"]),
            bins: vec![
                ("acme".into(), "bin/cli.js".into()),
                ("acme-admin".into(), "bin/admin".into()),
                ("gone".into(), "bin/gone.js".into()),
            ],
            ..NodePackage::default()
        },
        NodePackage {
            dir: "packages/greet".into(),
            name: "@acme/greet".into(),
            node_test: true,
            test_script: Some("node --test".into()),
            ..NodePackage::default()
        },
    ];
    check(
        "",
        facts,
        expect![[r#"
        == created once.toml
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        == created packages/cli/once.toml
        # generated by once init from packages/cli/package.json
        [[target]]
        name = "Cli"
        kind = "js_library"
        deps = ["packages/greet/Greet"]
        srcs = ["package.json", "**/*.js"]

        # generated by once init from packages/cli/package.json
        [[target]]
        name = "Acme"
        kind = "node_binary"
        deps = ["packages/greet/Greet"]
        srcs = ["package.json", "**/*.js"]

        [target.attrs]
        main = "bin/cli.js"

        # generated by once init from packages/cli/package.json
        [[target]]
        name = "AcmeAdmin"
        kind = "node_binary"
        deps = ["packages/greet/Greet"]
        srcs = ["package.json", "**/*.js", "bin/admin"]

        [target.attrs]
        main = "bin/admin"
        == created packages/greet/once.toml
        # generated by once init from packages/greet/package.json
        [[target]]
        name = "Greet"
        kind = "js_library"
        srcs = ["package.json", "**/*.js", "!test/**/*.js"]

        # generated by once init from packages/greet/package.json
        [[target]]
        name = "GreetTest"
        kind = "node_test"
        deps = ["./Greet"]
        srcs = ["test/**/*.js", "**/*.test.js"]
        warning: packages/cli/package.json: the `bin` entry `gone` names `bin/gone.js`, which does not exist: no target describes it
        root manifest created from:
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        -- validation: 5 targets, 0 diagnostics
    "#]],
    );
}

#[test]
fn a_go_module_gets_a_target_per_package_and_tests_of_libraries() {
    let mut facts = walk(&[
        "go.mod",
        "cmd/tool/main.go",
        "cmd/tool/main_test.go",
        "shapes/shapes.go",
        "shapes/shapes_test.go",
        "units/units.go",
    ]);
    let package =
        |dir: &str, name: &str, go: &[&str], tests: &[&str], imports: &[&str]| GoPackage {
            dir: dir.to_owned(),
            go_mod: "go.mod".to_owned(),
            import_path: format!("example.com/demo/{dir}"),
            name: name.to_owned(),
            go_files: strings(go),
            test_files: strings(tests),
            imports: strings(imports),
            test_imports: strings(&["testing"]),
        };
    facts.go = vec![
        package(
            "cmd/tool",
            "main",
            &["main.go"],
            &["main_test.go"],
            &["example.com/demo/shapes", "fmt"],
        ),
        package(
            "shapes",
            "shapes",
            &["shapes.go"],
            &["shapes_test.go"],
            &["example.com/demo/units"],
        ),
        package("units", "units", &["units.go"], &[], &[]),
    ];
    check(
        "",
        facts,
        expect![[r#"
        == created once.toml
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        == created cmd/tool/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Tool"
        kind = "go_binary"
        deps = ["shapes/Shapes"]
        srcs = ["*.go"]
        == created shapes/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Shapes"
        kind = "go_library"
        deps = ["units/Units"]
        srcs = ["*.go"]

        # generated by once init from go.mod
        [[target]]
        name = "ShapesTest"
        kind = "go_test"
        srcs = ["*_test.go"]
        dependencies = { package_under_test = ["./Shapes"] }
        == created units/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Units"
        kind = "go_library"
        srcs = ["*.go"]
        warning: cmd/tool/*_test.go: the tests of `example.com/demo/cmd/tool` (package main) are not described: a go_test needs a go_library under test
        root manifest created from:
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        -- validation: 4 targets, 0 diagnostics
    "#]],
    );
}

#[test]
fn a_tests_directory_of_shell_scripts_gets_a_test_per_script() {
    let mut facts = walk(&["tools/tests/smoke.sh", "tools/tests/install_test.sh"]);
    facts.shell = vec![ShellTests {
        dir: "tools".into(),
        scripts: strings(&["tests/install_test.sh", "tests/smoke.sh"]),
    }];
    check(
        "",
        facts,
        expect![[r#"
        == created once.toml
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        == created tools/once.toml
        # generated by once init from tools/tests/install_test.sh
        [[target]]
        name = "InstallTest"
        kind = "sh_test"
        srcs = ["tests/install_test.sh"]

        # generated by once init from tools/tests/smoke.sh
        [[target]]
        name = "SmokeTest"
        kind = "sh_test"
        srcs = ["tests/smoke.sh"]
        root manifest created from:
        # The workspace root: `once` finds the workspace by this table.
        [workspace]
        -- validation: 2 targets, 0 diagnostics
    "#]],
    );
}

/// A Go library in `lib/` as `go list` reports the `.go` files of the walk.
fn go_lib_facts(files: &[&str]) -> EcosystemFacts {
    let mut facts = walk(files);
    let in_lib = |test: bool| -> Vec<String> {
        files
            .iter()
            .filter_map(|f| f.strip_prefix("lib/"))
            .filter(|f| f.ends_with(".go") && f.ends_with("_test.go") == test)
            .map(str::to_owned)
            .collect()
    };
    facts.go = vec![GoPackage {
        dir: "lib".into(),
        go_mod: "go.mod".into(),
        import_path: "example.com/lib".into(),
        name: "lib".into(),
        go_files: in_lib(false),
        test_files: in_lib(true),
        imports: Vec::new(),
        test_imports: strings(&["testing"]),
    }];
    facts
}

#[test]
fn a_second_run_changes_nothing() {
    check(
        r#"
        //- /once.toml
        [workspace]
        //- /lib/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Lib"
        kind = "go_library"
        srcs = ["*.go"]

        # generated by once init from go.mod
        [[target]]
        name = "LibTest"
        kind = "go_test"
        srcs = ["*_test.go"]

        [target.dependencies]
        package_under_test = ["./Lib"]
        "#,
        go_lib_facts(&["go.mod", "lib/lib.go", "lib/lib_test.go"]),
        expect![[r#"
            == unchanged lib/once.toml
            -- validation: 2 targets, 0 diagnostics
        "#]],
    );
}

#[test]
fn a_hand_edit_of_a_generated_target_is_kept_and_generated_keys_are_updated() {
    check(
        r#"
        //- /once.toml
        [workspace]
        //- /lib/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Lib"
        kind = "go_library"
        srcs = ["lib.go"]
        # Added by hand: who may use it.
        visibility = ["public"]

        # generated by once init from go.mod
        [[target]]
        name = "LibTest"
        kind = "go_test"
        srcs = ["*_test.go"]

        [target.attrs]
        env = { MODE = "strict" } # hand-added

        [target.dependencies]
        package_under_test = ["./Lib"]
        "#,
        go_lib_facts(&["go.mod", "lib/lib.go", "lib/more.go", "lib/lib_test.go"]),
        expect![[r#"
            == updated lib/once.toml
            --- a/lib/once.toml
            +++ b/lib/once.toml
            @@ -2,7 +2,7 @@
             [[target]]
             name = "Lib"
             kind = "go_library"
            -srcs = ["lib.go"]
            +srcs = ["*.go"]
             # Added by hand: who may use it.
             visibility = ["public"]
 
            -- validation: 2 targets, 0 diagnostics
        "#]],
    );
}

#[test]
fn once_keep_protects_a_target_and_a_key() {
    check(
        r#"
        //- /once.toml
        [workspace]
        //- /lib/once.toml
        # generated by once init from go.mod
        # once:keep
        [[target]]
        name = "Lib"
        kind = "go_library"
        srcs = ["lib.go"]

        # generated by once init from go.mod
        [[target]]
        name = "LibTest"
        kind = "go_test"
        srcs = ["lib_test.go"] # once:keep

        [target.dependencies]
        package_under_test = ["./Lib"]
        "#,
        go_lib_facts(&["go.mod", "lib/lib.go", "lib/more.go", "lib/lib_test.go"]),
        expect![[r#"
            == unchanged lib/once.toml
            left alone: `Lib`: kept (`# once:keep`)
            -- validation: 2 targets, 0 diagnostics
        "#]],
    );
}

#[test]
fn a_generated_target_whose_source_is_gone_is_deleted_and_a_hand_written_one_stays() {
    check(
        r#"
        //- /once.toml
        [workspace]
        //- /lib/once.toml
        # generated by once init from go.mod
        [[target]]
        name = "Lib"
        kind = "go_library"
        srcs = ["*.go"]

        # generated by once init from go.mod
        [[target]]
        name = "LibTest"
        kind = "go_test"
        srcs = ["*_test.go"]

        [target.dependencies]
        package_under_test = ["./Lib"]

        # Written by hand.
        [[target]]
        name = "Docs"
        kind = "filegroup"
        srcs = ["*.md"]
        "#,
        go_lib_facts(&["go.mod", "lib/lib.go", "lib/README.md"]),
        expect![[r#"
            == updated lib/once.toml
            --- a/lib/once.toml
            +++ b/lib/once.toml
            @@ -4,15 +4,6 @@
             kind = "go_library"
             srcs = ["*.go"]
 
            -# generated by once init from go.mod
            -[[target]]
            -name = "LibTest"
            -kind = "go_test"
            -srcs = ["*_test.go"]
            -
            -[target.dependencies]
            -package_under_test = ["./Lib"]
            -
             # Written by hand.
             [[target]]
             name = "Docs"
            -- validation: 2 targets, 0 diagnostics
        "#]],
    );
}

#[test]
fn nested_workspaces_are_excluded_from_a_new_root_and_flagged_in_an_existing_one() {
    let mut facts = go_lib_facts(&["go.mod", "lib/lib.go", "lib/lib_test.go"]);
    // A directory name globs would read specially is excluded by an escaped pattern.
    facts.nested_workspaces = strings(&["fuzz[1]", "vendor/tool"]);
    check(
        "",
        facts.clone(),
        expect![[r#"
            == created once.toml
            # The workspace root: `once` finds the workspace by this table.
            [workspace]
            # Workspaces of their own inside this one (once init found them): not loaded here.
            exclude = [
                "fuzz\\[1\\]",
                "fuzz\\[1\\]/**",
                "vendor/tool",
                "vendor/tool/**",
            ]
            == created lib/once.toml
            # generated by once init from go.mod
            [[target]]
            name = "Lib"
            kind = "go_library"
            srcs = ["*.go"]

            # generated by once init from go.mod
            [[target]]
            name = "LibTest"
            kind = "go_test"
            srcs = ["*_test.go"]
            dependencies = { package_under_test = ["./Lib"] }
            root manifest created from:
            # The workspace root: `once` finds the workspace by this table.
            [workspace]
            # Workspaces of their own inside this one (once init found them): not loaded here.
            exclude = [
                "fuzz\\[1\\]",
                "fuzz\\[1\\]/**",
                "vendor/tool",
                "vendor/tool/**",
            ]
            -- validation: 2 targets, 0 diagnostics
        "#]],
    );
    check(
        r#"
        //- /once.toml
        [workspace]
        exclude = ['fuzz\[1\]', 'fuzz\[1\]/**']
        //- /vendor/tool/once.toml
        [workspace]
        "#,
        facts,
        expect![[r#"
            == created lib/once.toml
            # generated by once init from go.mod
            [[target]]
            name = "Lib"
            kind = "go_library"
            srcs = ["*.go"]

            # generated by once init from go.mod
            [[target]]
            name = "LibTest"
            kind = "go_test"
            srcs = ["*_test.go"]
            dependencies = { package_under_test = ["./Lib"] }
            warning: `vendor/tool` is a workspace of its own, but the root `once.toml` does not exclude it, so its packages are loaded as this workspace's: add `"vendor/tool", "vendor/tool/**"` to `[workspace] exclude`
            -- validation: 2 targets, 1 diagnostics
            Error MisplacedTable: `[workspace]` is only read from the root `once.toml`; here it has no effect
        "#]],
    );
}

#[test]
fn a_package_the_root_leaves_out_is_described_with_a_warning() {
    check(
        r#"
        //- /once.toml
        [workspace]
        exclude = ["lib"]
        "#,
        go_lib_facts(&["go.mod", "lib/lib.go", "lib/lib_test.go"]),
        expect![[r#"
            == created lib/once.toml
            # generated by once init from go.mod
            [[target]]
            name = "Lib"
            kind = "go_library"
            srcs = ["*.go"]

            # generated by once init from go.mod
            [[target]]
            name = "LibTest"
            kind = "go_test"
            srcs = ["*_test.go"]
            dependencies = { package_under_test = ["./Lib"] }
            warning: the package `lib` matches `[workspace] exclude` of the root `once.toml`: once init describes it, but the workspace does not load its targets; change `[workspace]` to add it
            -- validation: 0 targets, 0 diagnostics
        "#]],
    );
}
