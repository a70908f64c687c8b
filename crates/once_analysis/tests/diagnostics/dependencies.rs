//! Labels, dependency roles and providers, visibility and cycles.

use super::check;

#[test]
fn a_missing_dependency_and_an_invalid_label() {
    check(
        r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["public"]
//- /lib/lib.rs
//- /app/once.toml
[[target]]
name = "Tool"
kind = "rust_binary"
srcs = ["main.rs"]
deps = ["lib/Lbi", "//lib:Lib"]
#       ^^^^^^^^^ error[missing_dependency]: target `app/Tool` depends on missing target `lib/Lbi`
#                  ^^^^^^^^^^^ error[invalid_label]: dependency `//lib:Lib` uses Bazel label syntax; use `lib/Lib`
//- /app/main.rs
"#,
    );
}

#[test]
fn an_unknown_dependency_role() {
    check(
        r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["src/lib.rs"]

[[target]]
name = "LibTest"
kind = "rust_test"
srcs = ["src/lib.rs"]
dependencies = { crate_under_tests = ["./Lib"] }
#                ^^^^^^^^^^^^^^^^^ error[unknown_dependency_role]: target kind `rust_test` has no dependency role `crate_under_tests`
//- /lib/src/lib.rs
"#,
    );
}

#[test]
fn too_many_dependencies_in_a_role() {
    check(
        r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["src/lib.rs"]

[[target]]
name = "Extra"
kind = "rust_library"
srcs = ["src/lib.rs"]

[[target]]
name = "LibTest"
kind = "rust_test"
srcs = ["src/lib.rs"]
dependencies = { crate_under_test = ["./Lib", "./Extra"] }
#                                   ^^^^^^^^^^^^^^^^^^^^ error[dependency_count_mismatch]: dependency role `crate_under_test` must contain at most 1 dependency; got 2
//- /lib/src/lib.rs
"#,
    );
}

#[test]
fn a_dependency_without_the_provider_the_kind_needs() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "rust_binary"
srcs = ["src/main.rs"]
deps = ["data/Assets"]
#       ^^^^^^^^^^^^^ error[incompatible_dependency_provider]: dependency `data/Assets` (kind `filegroup`) provides [files], but `deps` of `app/App` accepts [rust_crate]
//- /app/src/main.rs
//- /data/once.toml
[[target]]
name = "Assets"
kind = "filegroup"
srcs = ["*.txt"]
//- /data/hello.txt
"#,
    );
}

#[test]
fn visibility_invalid_and_not_granted() {
    check(
        r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["everyone"]
#             ^^^^^^^^^^ error[invalid_visibility]: visibility entry `everyone` names target `everyone`, which does not exist

[[target]]
name = "Private"
kind = "rust_library"
srcs = ["lib.rs"]
visibility = ["private"]
//- /lib/lib.rs
//- /app/once.toml
[[target]]
name = "App"
kind = "rust_binary"
srcs = ["main.rs"]
deps = ["lib/Private"]
#       ^^^^^^^^^^^^^ error[dependency_not_visible]: target `app/App` cannot depend on `lib/Private`: it is not visible to `app/App`
//- /app/main.rs
"#,
    );
}

#[test]
fn a_dependency_cycle_across_packages() {
    check(
        r#"
//- /once.toml
[workspace]
//- /a/once.toml
[[target]]
name = "A"
kind = "rust_library"
srcs = ["lib.rs"]
deps = ["b/B"]
#       ^^^^^ error[dependency_cycle]: dependency cycle: a/A -> b/B -> a/A
visibility = ["public"]
//- /a/lib.rs
//- /b/once.toml
[[target]]
name = "B"
kind = "rust_library"
srcs = ["lib.rs"]
deps = ["a/A"]
visibility = ["public"]
//- /b/lib.rs
"#,
    );
}
