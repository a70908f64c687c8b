//! Manifests that produce floods of targets or diagnostics: the answers stay bounded, and
//! the checks cost linear time (a quadratic check here took tens of seconds).
//!
//! The floods are generated (thousands of lines or targets), so only the root manifest is
//! fixture text; the generated manifests are added to it as they are.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "the tests time real work"
)]

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use once_db::{RootDatabase, Workspace};
use once_fixture::Fixture;
use once_graph::{
    MAX_DIAGNOSTICS_PER_CODE, Spanned, kind_catalog, read_manifest_text, resolve_manifest,
    workspace_diagnostics, workspace_settings,
};
use once_model::{Diagnostic, DiagnosticCode, Severity};

const ROOT: &str = once_fixture::ROOT;

/// The hand-written root; each test adds the generated manifests it floods.
const WORKSPACE: &str = r#"
    //- /once.toml
    [workspace]
"#;

fn load(generated: &[(&str, String)]) -> (RootDatabase, Workspace) {
    let mut fixture = Fixture::parse(WORKSPACE);
    for (path, text) in generated {
        fixture.add(path, text.as_str());
    }
    let mut db = RootDatabase::new(Arc::new(fixture.system()));
    let workspace = db.load(PathBuf::from(ROOT));
    (db, workspace)
}

fn codes(diagnostics: &[Diagnostic]) -> Vec<(DiagnosticCode, Severity)> {
    diagnostics.iter().map(|d| (d.code, d.severity)).collect()
}

/// 5,000 broken lines: the first 100 syntax errors, then one `diagnostics_omitted` at the
/// 101st with the count, as severe as what it stands for.
#[test]
fn syntax_errors_are_capped_per_file() {
    let (db, workspace) = load(&[("app/once.toml", "=\n".repeat(5_000))]);
    let diagnostics = workspace_diagnostics(&db, workspace);
    assert_eq!(diagnostics.len(), MAX_DIAGNOSTICS_PER_CODE + 1);
    let omitted = &diagnostics[MAX_DIAGNOSTICS_PER_CODE];
    assert_eq!(
        codes(std::slice::from_ref(omitted)),
        [(DiagnosticCode::DiagnosticsOmitted, Severity::Error)]
    );
    assert_eq!(
        omitted.message,
        "4900 more `syntax_error` diagnostics in this file are not shown: only the first 100 of each code are reported"
    );
    // At the first line left out (line 101 starts at byte 200).
    assert_eq!(omitted.range.map(|r| r.start), Some(200));
    assert!(
        diagnostics[..MAX_DIAGNOSTICS_PER_CODE]
            .iter()
            .all(|d| d.code == DiagnosticCode::SyntaxError)
    );
}

/// Warnings are capped the same way, and the summary of warnings stays a warning (the
/// workspace stays valid).
#[test]
fn missing_sources_on_one_line_are_capped() {
    let srcs: Vec<String> = (0..3_000).map(|i| format!("\"missing{i}.sh\"")).collect();
    let manifest = format!(
        "[[target]]\nname = \"App\"\nkind = \"sh_binary\"\nsrcs = [{}]\n",
        srcs.join(", ")
    );
    let (db, workspace) = load(&[("app/once.toml", manifest)]);
    let diagnostics = workspace_diagnostics(&db, workspace);
    assert_eq!(diagnostics.len(), MAX_DIAGNOSTICS_PER_CODE + 1);
    assert!(diagnostics.iter().all(|d| d.severity == Severity::Warning));
    assert_eq!(
        diagnostics.last().map(|d| (d.code, d.message.as_str())),
        Some((
            DiagnosticCode::DiagnosticsOmitted,
            "2900 more `missing_source` diagnostics in this file are not shown: only the first 100 of each code are reported"
        ))
    );
}

/// 100,000 targets in one manifest, every name distinct but the last: the duplicate check
/// is a set lookup per target (a list search per target took minutes unoptimised).
#[test]
fn duplicate_names_among_many_targets_are_found_in_linear_time() {
    let (db, workspace) = load(&[]);
    let template = read_manifest_text(
        "app/once.toml",
        "app",
        "[[target]]\nname = \"T\"\nkind = \"sh_binary\"\n",
    );
    let mut manifest = template.clone();
    let declaration = &template.targets[0];
    let count = 100_000;
    manifest.targets = (0..count)
        .map(|i| {
            let mut target = declaration.clone();
            let name = declaration
                .name
                .as_ref()
                .map(|n| n.range)
                .unwrap_or_default();
            // The last one repeats the first name.
            let value = format!("T{}", if i + 1 == count { 0 } else { i });
            target.name = Some(Spanned { value, range: name });
            target
        })
        .collect();
    let started = Instant::now();
    let resolved = resolve_manifest(
        &manifest,
        kind_catalog(&db, workspace),
        &workspace_settings(&db, workspace).configuration,
        None,
    );
    let elapsed = started.elapsed();
    assert_eq!(resolved.targets.len(), count - 1);
    assert_eq!(
        codes(&resolved.diagnostics),
        [(DiagnosticCode::DuplicateTarget, Severity::Error)]
    );
    assert!(elapsed < Duration::from_secs(30), "took {elapsed:?}");
}
