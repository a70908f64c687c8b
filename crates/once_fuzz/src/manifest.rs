//! The `manifest` target: TOML text through `once_syntax`, then as a package's
//! `once.toml` through a whole in-memory workspace, validation and planning.
//!
//! Properties:
//! - the lossless tree prints back the text byte for byte, and every error range of the
//!   parse and of the value reader lies inside the text on character boundaries, sorted;
//! - the value reader's value ranges lie inside the text too;
//! - the formatter gives text with the same errors that reads the same values, and
//!   formatting it again changes nothing;
//! - the `toml` crate (the oracle of `crates/once_syntax/tests/oracle.rs`) accepts every
//!   document we read without errors, with the same keys and scalar values;
//! - loading the workspace, validating it and listing its targets never panics, and every
//!   diagnostic's range lies inside its manifest;
//! - **a manifest with any error is never planned**: when validation reports an error in
//!   the package's manifest, planning any capability of any of its targets through
//!   `once_build::plan` (what `once build`, `run` and `test` and the MCP tools call)
//!   refuses it: planning problems, and no action of the package.

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{AnalysisHost, MemorySystem};
use once_syntax::value::{Table, Value, ValueKind};

use crate::{check_diagnostic, check_range};

/// The package whose manifest is the input.
const PACKAGE: &str = "app";
const MANIFEST: &str = "app/once.toml";

/// The rest of the workspace: a root manifest, a library package the input may depend
/// on, and the sources both name.
const FIXED_FILES: &[(&str, &str)] = &[
    ("once.toml", "[workspace]\n"),
    (
        "lib/once.toml",
        "[[target]]\nname = \"Lib\"\nkind = \"rust_library\"\nsrcs = [\"src/lib.rs\"]\n\n\
         [[target]]\nname = \"Tool\"\nkind = \"sh_binary\"\nsrcs = [\"tool.sh\"]\nvisibility = [\"//...\"]\n",
    ),
    ("lib/src/lib.rs", "pub fn lib() {}\n"),
    ("lib/tool.sh", "#!/bin/sh\necho tool\n"),
    ("app/src/main.rs", "fn main() {}\n"),
    ("app/run.sh", "#!/bin/sh\necho run\n"),
    ("app/check.sh", "#!/bin/sh\nexit 0\n"),
    ("app/data.txt", "data\n"),
];

pub fn manifest(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    let has_syntax_errors = check_syntax(&text);
    check_workspace(&text, has_syntax_errors);
}

/// The parser and value reader's properties; whether the text has any error.
fn check_syntax(text: &str) -> bool {
    let parse = once_syntax::parse(text);
    assert_eq!(
        parse.syntax().to_string(),
        text,
        "the lossless tree does not print back the text"
    );
    let document = once_syntax::value::document(&parse);
    for (what, errors) in [("parse", parse.errors()), ("document", &document.errors)] {
        for error in errors {
            check_range(
                text,
                usize::from(error.range.start()),
                usize::from(error.range.end()),
                &format_args!("{what} error {error}"),
            );
            assert!(!error.message.is_empty(), "{what} error without a message");
        }
        assert!(
            errors.is_sorted_by_key(|e| e.range.start()),
            "{what} errors are not sorted"
        );
    }
    check_table_ranges(text, &document.root);
    compare_with_oracle(text, &document);
    check_formatting(text, &document);
    !document.errors.is_empty()
}

/// The formatter (`once edit`'s and the editor's, which leaves text with syntax errors
/// alone): what it gives has the same errors and reads the same values, and formatting
/// it again changes nothing.
fn check_formatting(text: &str, document: &once_syntax::value::Document) {
    let Some(formatted) = once_analysis::format_manifest(text) else {
        return;
    };
    let reformatted = once_syntax::value::document(&once_syntax::parse(&formatted));
    let messages = |d: &once_syntax::value::Document| -> Vec<String> {
        d.errors.iter().map(|e| e.message.clone()).collect()
    };
    assert_eq!(
        messages(&reformatted),
        messages(document),
        "formatting {text:?} gave {formatted:?}, which has other errors"
    );
    if document.errors.is_empty() {
        assert_eq!(
            table_shape(&reformatted.root),
            table_shape(&document.root),
            "formatting {text:?} gave {formatted:?}, which reads other values"
        );
    }
    assert_eq!(
        once_analysis::format_manifest(&formatted).as_deref(),
        Some(formatted.as_str()),
        "formatting {text:?} twice differs from formatting it once"
    );
}

/// A table's keys and values without their ranges.
fn table_shape(table: &Table) -> String {
    let entries: Vec<String> = table
        .entries
        .iter()
        .map(|entry| format!("{:?}={}", entry.key, value_shape(&entry.value.kind)))
        .collect();
    format!("{{{}}}", entries.join(","))
}

fn value_shape(value: &ValueKind) -> String {
    match value {
        ValueKind::Array(items) => {
            let items: Vec<String> = items.iter().map(|v| value_shape(&v.kind)).collect();
            format!("[{}]", items.join(","))
        }
        ValueKind::Table(table) => table_shape(table),
        scalar => format!("{scalar:?}"),
    }
}

fn check_table_ranges(text: &str, table: &Table) {
    if let Some(range) = table.header_range {
        check_range(
            text,
            range.start().into(),
            range.end().into(),
            &"a table header",
        );
    }
    for entry in &table.entries {
        check_range(
            text,
            entry.key_range.start().into(),
            entry.key_range.end().into(),
            &format_args!("the key `{}`", entry.key),
        );
        check_value_ranges(text, &entry.value);
    }
}

fn check_value_ranges(text: &str, value: &Value) {
    check_range(
        text,
        value.range.start().into(),
        value.range.end().into(),
        &format_args!("a {} value", value.kind.type_name()),
    );
    match &value.kind {
        ValueKind::Array(items) => items.iter().for_each(|v| check_value_ranges(text, v)),
        ValueKind::Table(table) => check_table_ranges(text, table),
        _ => {}
    }
}

/// The `toml` crate accepts what we read without errors, with the same values.
///
/// Only this direction: the `toml` crate accepts some documents TOML 1.1's grammar
/// forbids (fuzzing found a line break between a key and its `=` inside an inline table,
/// `fuzz/corpus/manifest/inline-table-newline-before-equals.toml`), which we rightly
/// refuse; a refusal is the safe side for `once` (a manifest with an error is not built).
fn compare_with_oracle(text: &str, document: &once_syntax::value::Document) {
    if !document.errors.is_empty() {
        return;
    }
    match toml::from_str::<toml::Table>(text) {
        Ok(oracle) => {
            if let Some(difference) = table_difference(&document.root, &oracle, "$") {
                panic!("{text:?}: we and the toml crate read different values: {difference}");
            }
        }
        Err(error) => panic!("we accept {text:?}; the toml crate reports {error}"),
    }
}

fn table_difference(ours: &Table, oracle: &toml::Table, at: &str) -> Option<String> {
    if ours.entries.len() != oracle.len() {
        let keys: Vec<&str> = ours.entries.iter().map(|e| e.key.as_str()).collect();
        let theirs: Vec<&str> = oracle.keys().map(String::as_str).collect();
        return Some(format!("{at}: keys {keys:?} against {theirs:?}"));
    }
    for entry in &ours.entries {
        let path = format!("{at}.{}", entry.key);
        let Some(theirs) = oracle.get(&entry.key) else {
            return Some(format!("{path}: missing from the toml crate's table"));
        };
        if let Some(difference) = value_difference(&entry.value.kind, theirs, &path) {
            return Some(difference);
        }
    }
    None
}

fn value_difference(ours: &ValueKind, oracle: &toml::Value, at: &str) -> Option<String> {
    let same = match (ours, oracle) {
        (ValueKind::String(a), toml::Value::String(b)) => a == b,
        (ValueKind::Integer(a), toml::Value::Integer(b)) => a == b,
        (ValueKind::Boolean(a), toml::Value::Boolean(b)) => a == b,
        (ValueKind::Float(a), toml::Value::Float(b)) => {
            a.0 == *b || (a.0.is_nan() && b.is_nan()) || a.0.to_bits() == b.to_bits()
        }
        // Date-times are compared by kind: both crates keep what was written, each
        // normalising differently.
        (ValueKind::Datetime(_), toml::Value::Datetime(_)) => true,
        (ValueKind::Array(a), toml::Value::Array(b)) => {
            if a.len() != b.len() {
                return Some(format!("{at}: {} items against {}", a.len(), b.len()));
            }
            for (index, (a, b)) in a.iter().zip(b).enumerate() {
                if let Some(difference) = value_difference(&a.kind, b, &format!("{at}[{index}]")) {
                    return Some(difference);
                }
            }
            true
        }
        (ValueKind::Table(a), toml::Value::Table(b)) => return table_difference(a, b, at),
        _ => false,
    };
    (!same).then(|| format!("{at}: {ours:?} against {oracle:?}"))
}

/// The workspace with `text` as `app/once.toml`: validation, then every target of the
/// package planned for each of its capabilities.
fn check_workspace(text: &str, has_syntax_errors: bool) {
    let system = MemorySystem::default();
    for (path, contents) in FIXED_FILES {
        system.write(PathBuf::from("/ws").join(path), *contents);
    }
    system.write("/ws/app/once.toml", text);
    let host = AnalysisHost::load(Arc::new(system), PathBuf::from("/ws"));
    let analysis = host.analysis();
    let validation = analysis
        .validate_workspace()
        .expect("no edit can cancel this snapshot");
    let mut manifest_errors = Vec::new();
    for located in &validation.diagnostics {
        let diagnostic = &located.diagnostic;
        if diagnostic.file.as_deref() == Some(MANIFEST) {
            check_diagnostic(text, diagnostic);
            if diagnostic.is_error() {
                manifest_errors.push(format!("{}: {}", diagnostic.code, diagnostic.message));
            }
        }
    }
    assert!(
        !has_syntax_errors || !manifest_errors.is_empty(),
        "the manifest has syntax errors but validation reports none"
    );
    let targets = analysis
        .targets(None)
        .expect("no edit can cancel this snapshot");
    for target in targets.iter().filter(|t| t.package == PACKAGE) {
        let _ = analysis.target(&target.id);
        for capability in &target.capabilities {
            let plan = once_build::plan(&analysis, std::slice::from_ref(&target.id), capability)
                .expect("no edit can cancel this snapshot");
            if manifest_errors.is_empty() {
                continue;
            }
            let Ok(plan) = plan else { continue };
            assert!(
                !plan.problems.is_empty(),
                "`{}` ({capability}) was planned without problems although its manifest has errors: {manifest_errors:?}; it plans {:?}",
                target.id,
                plan.actions
                    .iter()
                    .map(|a| &a.action.id)
                    .collect::<Vec<_>>()
            );
            let own: Vec<&String> = plan
                .actions
                .iter()
                .map(|a| &a.action.id)
                .filter(|id| id.starts_with(&format!("{PACKAGE}/")))
                .collect();
            assert!(
                own.is_empty(),
                "`{}` ({capability}) plans actions of its package although its manifest has errors: {own:?} ({manifest_errors:?})",
                target.id
            );
        }
    }
}
