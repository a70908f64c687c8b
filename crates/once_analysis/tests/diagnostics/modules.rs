//! Project modules: `[modules] paths` (with `!` exclusions), evaluation errors and kinds
//! declared twice.

use super::check;

#[test]
fn a_module_path_that_is_invalid_or_matches_nothing() {
    check(
        r#"
//- /once.toml
[workspace]

[modules]
paths = ["../outside.star", "modules/missing.star"]
#        ^^^^^^^^^^^^^^^^^ error[invalid_module_path]: module pattern `../outside.star` leaves the workspace with `..`
#                           ^^^^^^^^^^^^^^^^^^^^^^ error[module_not_found]: module pattern `modules/missing.star` matches no `.star` file
"#,
    );
}

#[test]
fn module_exclusions_leave_modules_out_in_order() {
    check(
        r#"
//- /once.toml
[workspace]

[modules]
paths = ["!modules/a.star", "modules/*.star", "!modules/broken.star", "!modules/none.star", "!../x.star", "!["]
#        ^^^^^^^^^^^^^^^^^ warning[unused_exclusion]: module exclusion `!modules/a.star` excludes no `.star` file that the patterns before it select
#                                                                     ^^^^^^^^^^^^^^^^^^^^ warning[unused_exclusion]: module exclusion `!modules/none.star` excludes no `.star` file that the patterns before it select
#                                                                                           ^^^^^^^^^^^^ error[invalid_module_path]: module exclusion `!../x.star` leaves the workspace with `..`
#                                                                                                         ^^^^ error[invalid_glob]: module exclusion `![` is invalid: unclosed character class; missing ']'
//- /modules/a.star
target_kind("asset_bundle", "Bundles static assets.")
//- /modules/broken.star
undefined_name()
//- /app/once.toml
[[target]]
name = "Assets"
kind = "asset_bundle"
"#,
    );
}

#[test]
fn a_module_that_fails_to_evaluate() {
    check(
        r#"
//- /once.toml
[workspace]

[modules]
paths = ["modules/bad.star"]
//- /modules/bad.star
target_kind("broken", "A kind.")
undefined_name()
^^^^^^^^^^^^^^ # error[invalid_module]: Variable `undefined_name` not found
"#,
    );
}

#[test]
fn a_kind_declared_twice() {
    check(
        r#"
//- /once.toml
[workspace]

[modules]
paths = ["modules/*.star"]
//- /modules/a.star
target_kind("asset_bundle", "Bundles static assets.")
//- /modules/b.star
target_kind("image_set", "A set of images.")

target_kind("asset_bundle", "Another bundle of assets.")
^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ # error[duplicate_kind]: target kind `asset_bundle` is already declared by `modules/a.star`
"#,
    );
}
