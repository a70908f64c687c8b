//! A target's name, kind and attributes against its kind's schema.

use super::check;

#[test]
fn a_target_without_a_name_or_a_kind() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
^^^^^^^^^^ # error[target_name_required]: this `[[target]]` has no `name`
kind = "sh_binary"
srcs = ["run.sh"]

[[target]]
name = "App"
#      ^^^^^ error[target_kind_required]: this target has no `kind`
srcs = ["run.sh"]
//- /app/run.sh
"#,
    );
}

#[test]
fn invalid_and_duplicate_target_names() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "my app"
#      ^^^^^^^^ error[invalid_target_name]: target name `my app` must be a single path segment
kind = "filegroup"

[[target]]
name = "Data"
kind = "filegroup"

[[target]]
name = "Data"
#      ^^^^^^ error[duplicate_target]: target `app/Data` is declared more than once
kind = "filegroup"
"#,
    );
}

#[test]
fn an_unknown_kind_suggests_the_closest() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "rust_binery"
#      ^^^^^^^^^^^^^ error[unknown_target_kind]: target kind `rust_binery` is not known
srcs = ["main.rs"]
//- /app/main.rs
"#,
    );
}

#[test]
fn a_missing_required_attribute() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Run"
#      ^^^^^ error[missing_required_attr]: target kind `script` requires attribute `script_path`
#      ^^^^^ error[missing_required_attr]: target kind `script` requires attribute `script_runtime`
kind = "script"
srcs = ["main.sh"]
//- /app/main.sh
"#,
    );
}

#[test]
fn an_unknown_attribute() {
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
edtion = "2021"
^^^^^^ # error[unknown_attr]: target kind `rust_library` has no attribute `edtion`
//- /lib/lib.rs
"#,
    );
}

#[test]
fn attribute_values_of_the_wrong_type_or_not_allowed() {
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
edition = "2020"
#         ^^^^^^ error[attr_value_not_allowed]: attribute `edition` must be one of: 2015, 2018, 2021, 2024; got `2020`

[[target]]
name = "Other"
kind = "rust_library"
srcs = ["lib.rs"]

[target.attrs]
edition = 2021
#         ^^^^ error[attr_type_mismatch]: attribute `edition` expects type `string`: expected a string, got int
//- /lib/lib.rs
"#,
    );
}
