//! Parser goldens: every `test_data/syntax/ok/*.toml` parses without errors
//! (and reads to the same values as the `toml` crate), every
//! `test_data/syntax/err/*.toml` has at least one error. Each file's tree and
//! errors are snapshotted beside it as `.rast`; `UPDATE_EXPECT=1` rewrites them.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test reads and updates its golden files on the disk"
)]

mod common;

use std::path::{Path, PathBuf};

use once_syntax::value;

fn golden_dir(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../test_data/syntax")
        .join(name)
}

fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|error| panic!("cannot read {}: {error}", dir.display()))
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| {
            path.extension()
                .is_some_and(|extension| extension == "toml")
        })
        .collect();
    files.sort();
    files
}

/// The snapshot text: the tree, then the errors with the text they cover.
fn render(text: &str) -> String {
    let parse = once_syntax::parse(text);
    let document = value::document(&parse);
    let mut out = parse.debug_tree();
    if !document.errors.is_empty() {
        out.push_str("errors:\n");
        for error in &document.errors {
            let covered = text
                .get(std::ops::Range::<usize>::from(error.range))
                .unwrap_or_default();
            out.push_str(&format!(
                "  {:?}: {} {covered:?}\n",
                error.range, error.message
            ));
        }
    }
    out
}

fn walk(dir_name: &str, expect_errors: bool) {
    let dir = golden_dir(dir_name);
    let files = toml_files(&dir);
    assert!(!files.is_empty(), "no goldens in {}", dir.display());
    let mut failures = Vec::new();
    for path in &files {
        let text = std::fs::read_to_string(path)
            .unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        let name = path
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let parse = once_syntax::parse(&text);
        assert_eq!(
            parse.syntax().to_string(),
            text,
            "{name}: tree is not lossless"
        );
        let document = value::document(&parse);
        match (expect_errors, document.errors.is_empty()) {
            (false, false) => {
                failures.push(format!("{name}: unexpected errors {:?}", document.errors))
            }
            (true, true) => failures.push(format!("{name}: expected errors, found none")),
            _ => {}
        }
        if !expect_errors {
            match toml::from_str::<toml::Table>(&text) {
                Ok(oracle) => {
                    let mut differences = Vec::new();
                    common::compare(
                        &common::toml_table_to_json(&oracle),
                        &common::table_to_json(&document.root),
                        "$",
                        &mut differences,
                    );
                    if !differences.is_empty() {
                        failures.push(format!(
                            "{name}: differs from the toml crate: {}",
                            differences.join("; ")
                        ));
                    }
                }
                Err(error) => failures.push(format!("{name}: the toml crate rejects it: {error}")),
            }
        }
        expect_test::expect_file![path.with_extension("rast")].assert_eq(&render(&text));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn ok_goldens() {
    walk("ok", false);
}

#[test]
fn err_goldens() {
    walk("err", true);
}
