//! The manifest's text and shape: syntax errors, unknown keys, values of the wrong
//! type, tables where they have no effect.

use super::check;

#[test]
fn an_unterminated_array() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"
#      ^ error[syntax_error]: unclosed array: expected `]`

[[target]]
name = "Check"
kind = "sh_test"
srcs = ["check.sh"]
//- /app/run.sh
//- /app/check.sh
"#,
    );
}

#[test]
fn trailing_text_after_a_value() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"] garbage here
#                 ^^^^^^^^^^^^ error[syntax_error]: expected a line end, found `garbage`
//- /app/run.sh
"#,
    );
}

#[test]
fn an_unterminated_string() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App
#      ^^^^ error[syntax_error]: unterminated string
kind = "sh_binary"
//- /app/run.sh
"#,
    );
}

#[test]
fn an_inline_table_entry_without_a_key() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"]
env = { A = "1", = }
^^^ # error[unknown_key]: unknown key `env` in a `[[target]]` table
#                ^ error[syntax_error]: expected a key-value or `}`, found `=`
//- /app/run.sh
"#,
    );
}

#[test]
fn a_key_defined_twice() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
name = "Again"
^^^^ # error[syntax_error]: duplicate key `name`
kind = "sh_binary"
srcs = ["run.sh"]
//- /app/run.sh
"#,
    );
}

#[test]
fn an_unknown_key_of_a_target() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Docs"
kind = "filegroup"
srcs = ["README.md"]
label = ["docs"]
^^^^^ # error[unknown_key]: unknown key `label` in a `[[target]]` table
//- /app/README.md
"#,
    );
}

#[test]
fn an_unknown_top_level_key_and_workspace_key() {
    check(
        r#"
//- /once.toml
[workspace]
inclde = ["app"]
^^^^^^ # error[unknown_key]: unknown key `inclde` in `[workspace]`
//- /app/once.toml
version = 1
^^^^^^^ # error[unknown_key]: unknown key `version` in the top level of `once.toml`

[[target]]
name = "Docs"
kind = "filegroup"
srcs = ["README.md"]
//- /app/README.md
"#,
    );
}

#[test]
fn values_of_the_wrong_type() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = "run.sh"
#      ^^^^^^^^ error[invalid_field_type]: `srcs` must be a list of strings, not a string

[[target]]
^^^^^^^^^^ # error[target_name_required]: this `[[target]]` has no `name`
name = 7
#      ^ error[invalid_field_type]: `name` must be a string, not an integer
kind = "filegroup"
//- /app/run.sh
"#,
    );
}

#[test]
fn workspace_include_and_exclude_exclusions() {
    check(
        r#"
//- /once.toml
[workspace]
include = ["apps/*", "!apps/legacy", "!apps/gone", "!"]
#                                    ^^^^^^^^^^^^ warning[unused_exclusion]: `[workspace] include` exclusion `!apps/gone` takes back no package that the entries before it match
#                                                  ^^^ error[invalid_glob]: `[workspace] include` exclusion `!` is invalid: the pattern after `!` is empty
exclude = ["!apps/cli", "apps/**", "!apps/cli"]
#          ^^^^^^^^^^^ warning[unused_exclusion]: `[workspace] exclude` exclusion `!apps/cli` takes back no package that the entries before it match
//- /apps/cli/once.toml
[[target]]
name = "Cli"
kind = "filegroup"
//- /apps/legacy/once.toml
[[target]]
name = "Legacy"
kind = "broken_kind"
"#,
    );
}

#[test]
fn a_workspace_table_outside_the_root() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[workspace]
 ^^^^^^^^^ # error[misplaced_table]: `[workspace]` is only read from the root `once.toml`; here it has no effect
include = ["app"]

[modules]
 ^^^^^^^ # error[misplaced_table]: `[modules]` is only read from the root `once.toml`; here it has no effect
paths = ["x.star"]

[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"]
//- /app/run.sh
"#,
    );
}

#[test]
fn an_invalid_configuration_value() {
    check(
        r#"
//- /once.toml
[workspace.configuration]
os = ""
#    ^^ error[invalid_configuration]: `configuration.os` must not be empty
arch = "x86_64"
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh"]
//- /app/run.sh
"#,
    );
}
