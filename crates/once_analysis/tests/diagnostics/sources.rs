//! `srcs` globs (with their `!` exclusions) and the files path attributes name.

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
fn an_exclusion_leaving_out_test_files_is_silent() {
    check(
        r#"
//- /once.toml
[workspace]
//- /greeting/once.toml
[[target]]
name = "Greeting"
kind = "filegroup"
srcs = ["*.go", "!*_test.go", "internal/**", "!internal/gen", "internal/gen/keep.go"]
//- /greeting/greeting.go
//- /greeting/greeting_test.go
//- /greeting/internal/a.go
//- /greeting/internal/gen/b.go
//- /greeting/internal/gen/keep.go
"#,
    );
}

#[test]
fn exclusions_that_exclude_nothing() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ["!*.md", "*.go", "!*_test.go", "!*.txt", "!gone.go"]
#       ^^^^^^^ warning[unused_exclusion]: exclusion `!*.md` excludes nothing: no entry before it selects a file, and entries apply in order
#                                      ^^^^^^^^ warning[unused_exclusion]: exclusion `!*.txt` excludes no file that the entries before it select in package `app`
#                                                ^^^^^^^^^^ warning[unused_exclusion]: exclusion `!gone.go` excludes no file that the entries before it select in package `app`
//- /app/a.go
//- /app/a_test.go
//- /app/notes.txt
//- /app/README.md
"#,
    );
}

#[test]
fn an_exclusion_after_one_that_took_everything() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ["*.go", "!*.go", "!a.go"]
#                        ^^^^^^^ warning[unused_exclusion]: exclusion `!a.go` excludes no file that the entries before it select in package `app`
//- /app/a.go
"#,
    );
}

#[test]
fn a_list_made_only_of_exclusions_selects_nothing() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ["!*_test.go", "!*.md"]
#       ^^^^^^^^^^^^ warning[unused_exclusion]: exclusion `!*_test.go` excludes nothing: `srcs` holds only exclusions, so it selects no file
#                     ^^^^^^^ warning[unused_exclusion]: exclusion `!*.md` excludes nothing: `srcs` holds only exclusions, so it selects no file
//- /app/a_test.go
//- /app/README.md
"#,
    );
}

#[test]
fn invalid_exclusions() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ["*.txt", "!", "![", "!/etc/passwd", "!../x.txt", "!*.md"]
#                ^^^ error[invalid_glob]: exclusion `!` is invalid: the pattern is empty
#                     ^^^^ error[invalid_glob]: exclusion `![` is invalid: unclosed character class; missing ']'
#                           ^^^^^^^^^^^^^^ error[invalid_glob]: exclusion `!/etc/passwd` is invalid: must be relative to the package
#                                           ^^^^^^^^^^^ error[invalid_glob]: exclusion `!../x.txt` is invalid: must not leave the package with `..`
#                                                        ^^^^^^^ warning[unused_exclusion]: exclusion `!*.md` excludes no file that the entries before it select in package `app`
//- /app/a.txt
"#,
    );
}

#[test]
fn an_escaped_bang_selects_a_file_named_with_it() {
    check(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "App"
kind = "filegroup"
srcs = ['\!important.txt', "!!odd.txt", "\\!gone.txt"]
#                          ^^^^^^^^^^^ warning[unused_exclusion]: exclusion `!!odd.txt` excludes no file that the entries before it select in package `app`
#                                       ^^^^^^^^^^^^^ warning[missing_source]: source pattern `\!gone.txt` matches no file in package `app`
//- /app/!important.txt
//- /app/!odd.txt
"#,
    );
}

#[test]
fn a_link_the_exclusions_leave_out_is_not_a_source() {
    super::check_with_links(
        r#"
//- /once.toml
[workspace]
//- /app/once.toml
[[target]]
name = "Data"
kind = "filegroup"
srcs = ["*.txt", "!passwd.txt"]
#       ^^^^^^^ error[invalid_source_link]: the source `app/ghost.txt` is a symbolic link to `missing.txt`, which does not exist; once follows links to files of the workspace only
//- /app/data.txt
"#,
        &[
            ("/app/ghost.txt", "missing.txt"),
            ("/app/passwd.txt", "/outside.txt"),
        ],
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
