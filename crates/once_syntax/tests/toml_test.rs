//! toml-test compliance: every valid document of the TOML 1.1 file list parses
//! without errors into the expected values (and into the same values as the
//! `toml` crate), and every invalid document yields at least one error.
//!
//! The corpus lives outside the repository: `$ONCE_TOML_TEST_DIR`, or
//! `../shared/toml-test/tests` beside the project root. Without it the tests
//! fail, naming where they looked.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the test reads its fixture files from the disk"
)]
#![allow(clippy::print_stdout, clippy::print_stderr)]

mod common;

use std::path::{Path, PathBuf};

use once_syntax::value;

fn corpus_dir() -> PathBuf {
    match std::env::var_os("ONCE_TOML_TEST_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => PathBuf::from(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../../../shared/toml-test/tests"
        )),
    }
}

/// The `.toml` files of the TOML 1.1 list under `prefix` (`valid/`, `invalid/`). A
/// missing corpus fails the test: a compliance test that passes without its corpus would
/// pass on any parser.
fn corpus_files(prefix: &str) -> (PathBuf, Vec<String>) {
    let dir = corpus_dir();
    let list = std::fs::read_to_string(dir.join("files-toml-1.1.0")).unwrap_or_else(|error| {
        panic!(
            "the toml-test corpus is not at {} ({error}): it comes with the project's \
             shared/ directory beside the repository; set ONCE_TOML_TEST_DIR to its `tests` \
             directory elsewhere",
            dir.display()
        )
    });
    let files = list
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with(prefix) && line.ends_with(".toml"))
        .map(str::to_string)
        .collect();
    (dir, files)
}

fn report(kind: &str, total: usize, failures: &[String]) {
    println!(
        "toml-test {kind}: {} of {total} passed",
        total - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {total} {kind} documents failed:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

fn read_text(path: &Path) -> Result<String, String> {
    let bytes = std::fs::read(path).map_err(|error| format!("cannot read: {error}"))?;
    String::from_utf8(bytes).map_err(|_| "not UTF-8".to_string())
}

#[test]
fn valid_documents_match_expected_json() {
    let (dir, files) = corpus_files("valid/");
    assert!(!files.is_empty(), "no valid documents listed");
    let mut failures = Vec::new();
    for file in &files {
        let result = (|| -> Result<(), String> {
            let text = read_text(&dir.join(file))?;
            let expected_path = dir.join(file.replace(".toml", ".json"));
            let expected: serde_json::Value = serde_json::from_str(&read_text(&expected_path)?)
                .map_err(|error| error.to_string())?;
            let parse = once_syntax::parse(&text);
            if parse.to_string_lossless() != text {
                return Err("tree is not lossless".to_string());
            }
            let document = value::document(&parse);
            if !document.errors.is_empty() {
                let errors: Vec<String> = document.errors.iter().map(ToString::to_string).collect();
                return Err(format!("unexpected errors: {}", errors.join("; ")));
            }
            let mut differences = Vec::new();
            common::compare(
                &expected,
                &common::table_to_json(&document.root),
                "$",
                &mut differences,
            );
            if differences.is_empty() {
                Ok(())
            } else {
                Err(differences.join("; "))
            }
        })();
        if let Err(message) = result {
            failures.push(format!("{file}: {message}"));
        }
    }
    report("valid", files.len(), &failures);
}

#[test]
fn valid_documents_agree_with_toml_crate() {
    let (dir, files) = corpus_files("valid/");
    let mut failures = Vec::new();
    for file in &files {
        let Ok(text) = read_text(&dir.join(file)) else {
            continue;
        };
        let oracle = match toml::from_str::<toml::Table>(&text) {
            Ok(table) => table,
            Err(error) => {
                failures.push(format!("{file}: the toml crate rejects it: {error}"));
                continue;
            }
        };
        let document = value::document(&once_syntax::parse(&text));
        let mut differences = Vec::new();
        common::compare(
            &common::toml_table_to_json(&oracle),
            &common::table_to_json(&document.root),
            "$",
            &mut differences,
        );
        if !differences.is_empty() {
            failures.push(format!("{file}: {}", differences.join("; ")));
        }
    }
    report("valid (toml crate oracle)", files.len(), &failures);
}

#[test]
fn invalid_documents_are_rejected() {
    let (dir, files) = corpus_files("invalid/");
    assert!(!files.is_empty(), "no invalid documents listed");
    let mut failures = Vec::new();
    for file in &files {
        // `parse` takes `&str`: text that is not UTF-8 is rejected before it.
        let Ok(text) = read_text(&dir.join(file)) else {
            continue;
        };
        let parse = once_syntax::parse(&text);
        if parse.to_string_lossless() != text {
            failures.push(format!("{file}: tree is not lossless"));
            continue;
        }
        if value::document(&parse).errors.is_empty() {
            failures.push(format!("{file}: accepted"));
        }
    }
    report("invalid", files.len(), &failures);
}

trait Lossless {
    fn to_string_lossless(&self) -> String;
}

impl Lossless for once_syntax::Parse {
    fn to_string_lossless(&self) -> String {
        self.syntax().to_string()
    }
}
