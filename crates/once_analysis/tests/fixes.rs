//! The machine-applicable fixes each diagnostic producer attaches, on one in-memory
//! workspace holding one mistake of every kind that has a fix: titles, preference and
//! edits located in the file, and the text after applying the preferred ones.

use std::sync::Arc;

use expect_test::expect;
use once_analysis::{AnalysisHost, LocatedDiagnostic};
use once_fixture::Fixture;

const MISTAKES: &str = r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["public"]
lable = ["x"]

[target.attrs]
edtion = "2021"

[[target]]
name = "Other"
kind = "rust_library"
srcs = ["lib.rs"]

[target.attrs]
edition = "2020"
//- /lib/lib.rs
//- /app/once.toml
[[target]]
name = "App"
kind = "rust_binery"
srcs = ["main.rs"]

[[target]]
name = "Tool"
kind = "rust_binary"
srcs = ["main.rs"]
deps = ["lib/Lbi", "//lib:Lib"]

[[target]]
name = "Run"
kind = "script"
srcs = ["main.rs"]
//- /app/main.rs
"#;

fn render(diagnostics: &[LocatedDiagnostic]) -> String {
    let mut out = String::new();
    for located in diagnostics {
        let d = &located.diagnostic;
        for fix in &located.fixes {
            let mark = if fix.preferred { "*" } else { " " };
            out.push_str(&format!(
                "{mark} {} {}: {}\n",
                d.file.as_deref().unwrap_or("-"),
                d.code,
                fix.title
            ));
            for edit in &fix.edits {
                out.push_str(&format!(
                    "    {}:{}-{}:{} {:?}\n",
                    edit.range.start.line,
                    edit.range.start.column,
                    edit.range.end.line,
                    edit.range.end.column,
                    edit.new_text
                ));
            }
        }
    }
    out
}

#[test]
fn every_producer_attaches_its_fixes() {
    let system = Fixture::parse(MISTAKES).system();
    let mut host = AnalysisHost::load(Arc::new(system), once_fixture::path(""));
    let validation = host.analysis().validate_workspace().unwrap();
    expect![[r#"
        * app/once.toml unknown_target_kind: Use kind `rust_binary`
            3:8-3:21 "\"rust_binary\""
        * app/once.toml missing_dependency: Depend on `lib/Lib`
            10:9-10:18 "\"lib/Lib\""
        * app/once.toml invalid_label: Replace `//lib:Lib` with `lib/Lib`
            10:20-10:31 "\"lib/Lib\""
        * app/once.toml missing_required_attr: Add required attribute `script_path`
            15:19-15:19 "\n\n[target.attrs]\nscript_path = \"\""
        * app/once.toml missing_required_attr: Add required attribute `script_runtime`
            15:19-15:19 "\n\n[target.attrs]\nscript_runtime = \"\""
        * lib/once.toml unknown_key: Rename `lable` to `labels`
            6:1-6:6 "labels"
        * lib/once.toml unknown_attr: Rename `edtion` to `edition`
            9:1-9:7 "edition"
        * lib/once.toml attr_value_not_allowed: Replace `2020` with `2021`
            17:11-17:17 "\"2021\""
    "#]]
    .assert_eq(&render(&validation.diagnostics));

    let fixed = host.apply_preferred_fixes().unwrap();
    let titles: Vec<String> = fixed
        .iter()
        .map(|f| format!("{} {}", f.file, f.title))
        .collect();
    expect![[r#"
        [
            "app/once.toml Use kind `rust_binary`",
            "app/once.toml Depend on `lib/Lib`",
            "app/once.toml Replace `//lib:Lib` with `lib/Lib`",
            "app/once.toml Add required attribute `script_path`",
            "lib/once.toml Rename `lable` to `labels`",
            "lib/once.toml Rename `edtion` to `edition`",
            "lib/once.toml Replace `2020` with `2021`",
            "app/once.toml Add required attribute `script_runtime`",
        ]
    "#]]
    .assert_debug_eq(&titles);
    let after = host.analysis();
    let text = |path: &str| after.file_text(path).unwrap().unwrap_or_default();
    expect![[r#"
        [[target]]
        name = "Lib"
        kind = "rust_library"
        srcs = ["lib.rs"]
        visibility = ["public"]
        labels = ["x"]

        [target.attrs]
        edition = "2021"

        [[target]]
        name = "Other"
        kind = "rust_library"
        srcs = ["lib.rs"]

        [target.attrs]
        edition = "2021"
        [[target]]
        name = "App"
        kind = "rust_binary"
        srcs = ["main.rs"]

        [[target]]
        name = "Tool"
        kind = "rust_binary"
        srcs = ["main.rs"]
        deps = ["lib/Lib", "lib/Lib"]

        [[target]]
        name = "Run"
        kind = "script"
        srcs = ["main.rs"]

        [target.attrs]
        script_path = ""
        script_runtime = ""
    "#]]
    .assert_eq(&format!(
        "{}{}",
        text("lib/once.toml"),
        text("app/once.toml")
    ));
    // Two insertions at one place wait for each other: the second came in round two.
    let remaining = after.validate_workspace().unwrap();
    assert!(remaining.valid, "{:?}", remaining.diagnostics);
    assert_eq!(render(&remaining.diagnostics), "");
}

/// The repairs and fixes of every diagnostic of a small workspace.
fn repairs_and_fixes(fixture: &str) -> String {
    let system = Fixture::parse(fixture).system();
    let host = AnalysisHost::load(Arc::new(system), once_fixture::path(""));
    let validation = host.analysis().validate_workspace().unwrap();
    let mut out = String::new();
    for located in &validation.diagnostics {
        let d = &located.diagnostic;
        out.push_str(&format!("{}: {}\n", d.code, d.message));
        for repair in &d.repairs {
            out.push_str(&format!("  repair: {repair}\n"));
        }
    }
    out + &render(&validation.diagnostics)
}

/// A kind named by the word it starts with (`pytest` for `pytest_test`) is the first
/// suggestion, before kinds only a few edits away (`c_test`).
#[test]
fn an_unknown_kind_suggests_the_kind_it_begins_first() {
    expect![[r#"
        unknown_target_kind: target kind `pytest` is not known
          repair: Use kind `pytest_test`
          repair: Use kind `c_test`
          repair: List every kind with `once query target-kinds` (MCP `once_list_target_kinds`)
        * app/once.toml unknown_target_kind: Use kind `pytest_test`
            3:8-3:16 "\"pytest_test\""
          app/once.toml unknown_target_kind: Use kind `c_test`
            3:8-3:16 "\"c_test\""
    "#]]
    .assert_eq(&repairs_and_fixes(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Tests"
kind = "pytest"
srcs = ["test_app.py"]
//- /app/test_app.py
"#,
    ));
}

/// `deps = ["A"]` in a package names the root package's `A`; when only the package's own
/// `A` exists, the diagnostic suggests `./A` first and its preferred fix writes it.
#[test]
fn a_missing_root_target_named_like_one_of_the_package_suggests_the_local_reference() {
    expect![[r#"
        missing_dependency: target `app/Tool` depends on missing target `Lib`
          repair: Did you mean `./Lib`, the target `app/Lib` of this package? A reference without `./` starts at the workspace root
          repair: Declare target `Lib` or remove it from `deps`
        missing_dependency: target `app/Tool` depends on missing target `sub/Lib`
          repair: Did you mean `./sub/Lib`, the target `app/sub/Lib` of this package? A reference without `./` starts at the workspace root
          repair: Declare target `sub/Lib` or remove it from `deps`
        * app/once.toml missing_dependency: Depend on `./Lib`
            10:9-10:14 "\"./Lib\""
        * app/once.toml missing_dependency: Depend on `./sub/Lib`
            10:16-10:25 "\"./sub/Lib\""
    "#]]
    .assert_eq(&repairs_and_fixes(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]

[[target]]
name = "Tool"
kind = "rust_binary"
srcs = ["main.rs"]
deps = ["Lib", "sub/Lib"]
//- /app/lib.rs
//- /app/main.rs
//- /app/sub/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["public"]
//- /app/sub/lib.rs
"#,
    ));
}

/// The root package's target keeps its plain suggestions, and a near miss in the root
/// package still ranks after the package's own exact name.
#[test]
fn a_near_miss_in_the_root_package_comes_after_the_local_target() {
    expect![[r#"
        missing_dependency: target `app/Tool` depends on missing target `Lib`
          repair: Did you mean `./Lib`, the target `app/Lib` of this package? A reference without `./` starts at the workspace root
          repair: Did you mean `Lob`?
          repair: Declare target `Lib` or remove it from `deps`
        * app/once.toml missing_dependency: Depend on `./Lib`
            10:9-10:14 "\"./Lib\""
          app/once.toml missing_dependency: Depend on `Lob`
            10:9-10:14 "\"Lob\""
    "#]]
    .assert_eq(&repairs_and_fixes(
        r#"
//- /once.toml
[workspace]

[[target]]
name = "Lob"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["public"]
//- /lib.rs
//- /app/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]

[[target]]
name = "Tool"
kind = "rust_binary"
srcs = ["main.rs"]
deps = ["Lib"]
//- /app/lib.rs
//- /app/main.rs
"#,
    ));
}
