//! Every starter example of the kind catalog materializes into a workspace that validates
//! with zero diagnostics and declares a target of the kind it illustrates; every kind has
//! at least one example. All failures are reported together, as one table.
//!
//! The workspaces checked are the catalog's examples, written file by file as the catalog
//! gives them; only the empty workspace the catalog is read from is a fixture.

use std::path::PathBuf;
use std::sync::Arc;

use once_analysis::{AnalysisHost, LocatedDiagnostic, MemorySystem};
use once_fixture::Fixture;
use once_model::{Example, KindSchema};

const ROOT: &str = once_fixture::ROOT;

/// The kinds of the catalog (the prelude; no project modules), read from an empty workspace.
fn catalog() -> Vec<KindSchema> {
    let system = Fixture::parse("//- /once.toml\n[workspace]\n").system();
    let host = AnalysisHost::load(Arc::new(system), PathBuf::from(ROOT));
    host.analysis().kinds().expect("not cancelled")
}

fn render(d: &LocatedDiagnostic) -> String {
    let d2 = &d.diagnostic;
    let place = match (&d2.file, d.range) {
        (Some(file), Some(range)) => {
            format!("{file}:{}:{}", range.start.line, range.start.column)
        }
        (Some(file), None) => file.clone(),
        _ => "<workspace>".to_owned(),
    };
    format!("{}[{}] {place}: {}", d2.severity, d2.code, d2.message)
}

/// Writes the example's files into a fresh workspace, loads it and checks it. Returns the
/// problems found, one line each.
fn check(kind: &str, example: &Example) -> Vec<String> {
    let system = MemorySystem::default();
    for file in &example.files {
        match std::str::from_utf8(&file.contents) {
            Ok(text) => system.write(format!("{ROOT}/{}", file.path), text),
            Err(_) => return vec![format!("{} is not UTF-8", file.path)],
        }
    }
    let analysis = AnalysisHost::load(Arc::new(system), PathBuf::from(ROOT)).analysis();
    let validation = analysis.validate_workspace().expect("not cancelled");
    let mut problems: Vec<String> = validation.diagnostics.iter().map(render).collect();
    if !validation.valid && problems.is_empty() {
        problems.push("workspace is not valid".to_owned());
    }
    let targets = analysis.targets(Some(kind)).expect("not cancelled");
    if targets.is_empty() {
        problems.push(format!("no target of kind `{kind}`"));
    }
    problems
}

#[test]
fn every_starter_materializes_into_a_valid_workspace() {
    let kinds = catalog();
    assert!(!kinds.is_empty(), "the catalog has no kinds");
    let mut failures: Vec<(String, String, String)> = Vec::new();
    let mut checked = 0;
    for kind in &kinds {
        if kind.examples.is_empty() {
            failures.push((kind.name.clone(), "-".to_owned(), "no example".to_owned()));
        }
        for example in &kind.examples {
            checked += 1;
            for problem in check(&kind.name, example) {
                failures.push((kind.name.clone(), example.slug.clone(), problem));
            }
        }
    }
    if failures.is_empty() {
        return;
    }
    let kind_width = failures.iter().map(|f| f.0.len()).max().unwrap_or(0).max(4);
    let slug_width = failures.iter().map(|f| f.1.len()).max().unwrap_or(0).max(7);
    let mut table = format!(
        "{} problem(s) in {checked} starter(s) of {} kind(s):\n{:kind_width$}  {:slug_width$}  problem\n",
        failures.len(),
        kinds.len(),
        "kind",
        "example",
    );
    for (kind, slug, problem) in &failures {
        table.push_str(&format!(
            "{kind:kind_width$}  {slug:slug_width$}  {problem}\n"
        ));
    }
    panic!("{table}");
}
