//! What a plan is refused with: the target's own errors, an implementation's failure
//! located in its module, a cycle. These are the problems `once build` and the MCP
//! tools report, so each must point at the text to change.

use super::check_plans;

#[test]
fn an_implementation_error_is_located_in_its_module() {
    check_plans(
        r#"
//- /once.toml
[workspace]

[modules]
paths = ["modules/stamp.star"]
//- /modules/stamp.star
def _build(ctx):
    actions.write("elsewhere.txt", "")
#   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[implementation_error]: planning `build` of `data/Stamp` failed: output `elsewhere.txt` lies outside the target's build directory `.once/out/data/Stamp`; declare outputs under `ctx.build_dir`

target_kind(
    "stamp",
    "Writes a stamp.",
    providers = ["files"],
    capabilities = [capability("build")],
    implementations = {"build": _build},
)
//- /data/once.toml
[[target]]
name = "Stamp"
kind = "stamp"
"#,
        "build",
        &["data/Stamp"],
    );
}

#[test]
fn a_target_of_a_broken_manifest_carries_the_manifest_errors() {
    check_plans(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"] garbage
#                 ^^^^^^^ error[syntax_error]: expected a line end, found `garbage`

[[target]]
name = "Other"
kind = "sh_binary"
srcs = ["run.sh"]
lable = []
^^^^^ # error[unknown_key]: unknown key `lable` in a `[[target]]` table
//- /app/run.sh
"#,
        "build",
        &["app/Other"],
    );
}

#[test]
fn a_target_on_a_cycle_plans_nothing() {
    check_plans(
        r#"
//- /once.toml
[workspace]
//- /a/once.toml
[[target]]
name = "A"
#      ^^^ error[dependency_cycle]: `build` of `a/A` is not planned: the target is on a dependency cycle, so the outputs of its dependencies are undefined
kind = "rust_library"
srcs = ["lib.rs"]
deps = ["b/B"]
visibility = ["public"]
//- /a/lib.rs
//- /b/once.toml
[[target]]
name = "B"
#      ^^^ error[dependency_cycle]: `build` of `b/B` is not planned: the target is on a dependency cycle, so the outputs of its dependencies are undefined
kind = "rust_library"
srcs = ["lib.rs"]
deps = ["a/A"]
visibility = ["public"]
//- /b/lib.rs

"#,
        "build",
        &["a/A"],
    );
}
