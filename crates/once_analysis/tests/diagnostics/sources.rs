//! `srcs` globs and the files path attributes name.

use super::check;

#[test]
fn an_invalid_glob_and_a_glob_matching_nothing() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ["[*.txt", "*.md"]
#       ^^^^^^^^ error[invalid_glob]: source pattern `[*.txt` is invalid: unclosed character class; missing ']'
#                 ^^^^^^ warning[missing_source]: source pattern `*.md` matches no file in package `app`
//- /app/a.txt
"#,
    );
}

#[test]
fn a_missing_source() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "sh_binary"
srcs = ["run.sh", "gone.sh"]
#                 ^^^^^^^^^ warning[missing_source]: source pattern `gone.sh` matches no file in package `app`
//- /app/run.sh
"#,
    );
}

#[test]
fn a_path_attribute_naming_a_missing_file() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Run"
kind = "script"
srcs = ["main.sh"]

[target.attrs]
script_path = "missing.sh"
#             ^^^^^^^^^^^^ error[missing_file]: attribute `script_path` names `missing.sh`, but package `app` has no such file
script_runtime = "bash"
//- /app/main.sh
"#,
    );
}

#[test]
fn source_links_that_once_does_not_follow() {
    super::check_with_links(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Data"
kind = "filegroup"
srcs = ["data.txt", "ghost.txt", "passwd.txt", "up.txt"]
#                   ^^^^^^^^^^^ error[invalid_source_link]: the source `app/ghost.txt` is a symbolic link to `missing.txt`, which does not exist; once follows links to files of the workspace only
#                                ^^^^^^^^^^^^ error[invalid_source_link]: the source `app/passwd.txt` is a symbolic link to `/outside.txt`, outside the workspace; once follows links to files of the workspace only
#                                              ^^^^^^^^ error[invalid_source_link]: the source `app/up.txt` is a symbolic link to `/outside.txt`, outside the workspace; once follows links to files of the workspace only
//- /app/data.txt

"#,
        &[
            ("/app/ghost.txt", "missing.txt"),
            ("/app/passwd.txt", "/outside.txt"),
            ("/app/up.txt", "../../outside.txt"),
        ],
    );
}
