//! `select` on configurable attributes against the workspace's configuration.

use super::check;

#[test]
fn a_select_on_an_attribute_that_is_not_configurable() {
    check(
        r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
srcs = ["lib.rs"]

[target.attrs]
edition = { select = { linux = "2021", default = "2024" } }
#         ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[select_on_non_configurable_attr]: attribute `edition` is not configurable; `select` is not allowed
//- /lib/lib.rs
"#,
    );
}

#[test]
fn a_select_with_keys_beside_it() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"]

[target.attrs]
args = { select = { default = ["-v"] }, linux = ["-q"] }
#      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[invalid_select]: a `select` table must have `select` as its only key
//- /app/run.sh
"#,
    );
}

#[test]
fn a_select_without_a_matching_branch() {
    check(
        r#"
//- /once.toml
[workspace.configuration]
os = "linux"
arch = "x86_64"
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"]

[target.attrs]
args = { select = { macos = ["-m"] } }
#      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ error[select_no_matching_branch]: `attrs.args` select has no branch for configuration linux-x86_64 [linux-x86_64, linux, x86_64, default] and no `default`
//- /app/run.sh
"#,
    );
}
