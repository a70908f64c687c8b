//! Diagnostics as annotated fixtures, in the style of rust-analyzer's: a workspace is
//! written as one fixture (`once_fixture`), and each diagnostic is an annotation line
//! under the line it points at:
//!
//! ```text
//! //- /lib/once.toml
//! [[target]]
//! name = "Lib"
//! lable = ["x"]
//! ^^^^^ # error[unknown_key]: unknown key `lable` …
//! kind = "rust_libary"
//! #      ^^^^^^^^^^^^^ error[unknown_target_kind]: …
//! ```
//!
//! An annotation line marks the columns the diagnostic's range covers in the nearest
//! line above it that is not an annotation, and names the diagnostic:
//! `severity[code]: message`. Carets stand under the range (`+` after them when it goes
//! on past the line), or a `|` under an empty range. The line starts with `#`, then
//! spaces up to the marks; a range starting in the first two columns, where no `# `
//! fits, has its marks first and the `#` after them (`^^^^^ # error[…]: …`). A
//! diagnostic without a range is `#! severity[code]: message`, first in its file.
//! Annotation lines are removed before the workspace is loaded, so they may stand
//! anywhere, even where TOML allows no comment.
//!
//! [`check`] loads the fixture in memory, validates the workspace, writes every
//! diagnostic back as an annotation and compares the result with the fixture: each
//! diagnostic must be annotated, with its exact range, severity, code and message, and
//! every annotation must be a diagnostic. A mismatch prints the fixture as it should
//! read.
//!
//! The cases are grouped by diagnostic family, a module each.

mod dependencies;
mod modules;
mod plans;
mod selects;
mod sources;
mod structure;
mod targets;

use std::collections::BTreeMap;
use std::sync::Arc;

use once_analysis::{Analysis, AnalysisHost};
use once_fixture::Fixture;
use once_model::Diagnostic;

/// Validates the workspace `fixture` describes and checks its annotations (see the
/// module doc).
#[track_caller]
fn check(fixture: &str) {
    check_diagnostics(fixture, &[], validation_diagnostics);
}

/// [`check`] with symbolic links: each `(link, target)` is made in the workspace before
/// it loads (the link's path as in the fixture's headers; the target as a link holds
/// it: relative to the link's directory, or absolute). `/outside.txt`, a file outside
/// the workspace (at `/ws`), exists.
#[track_caller]
fn check_with_links(fixture: &str, links: &[(&str, &str)]) {
    check_diagnostics(fixture, links, validation_diagnostics);
}

/// Checks the annotations against the diagnostics of the plans of `capability` of
/// `targets` (what execution is refused with), not against validation's.
#[track_caller]
fn check_plans(fixture: &str, capability: &str, targets: &[&str]) {
    check_diagnostics(fixture, &[], |analysis| {
        let plans = analysis
            .action_plans(
                &targets.iter().map(|t| t.to_string()).collect::<Vec<_>>(),
                capability,
            )
            .unwrap_or_else(|_| panic!("planning was cancelled"));
        plans
            .into_iter()
            .flatten()
            .flat_map(|plan| plan.steps)
            .flat_map(|step| step.diagnostics)
            .map(|located| located.diagnostic)
            .collect()
    });
}

fn validation_diagnostics(analysis: &Analysis) -> Vec<Diagnostic> {
    match analysis.validate_workspace() {
        Ok(validation) => validation
            .diagnostics
            .into_iter()
            .map(|located| located.diagnostic)
            .collect(),
        Err(_) => panic!("validation was cancelled"),
    }
}

#[track_caller]
fn check_diagnostics(
    fixture: &str,
    links: &[(&str, &str)],
    diagnostics_of: impl Fn(&Analysis) -> Vec<Diagnostic>,
) {
    let annotated = Fixture::parse(fixture);
    let mut clean = annotated.clone();
    for file in &mut clean.files {
        file.text = strip_annotations(&file.text);
    }
    let system = clean.system();
    if !links.is_empty() {
        system.write("/outside.txt", "outside the workspace");
    }
    for (link, target) in links {
        system.symlink(once_fixture::path(link.trim_start_matches('/')), target);
    }
    let host = AnalysisHost::load(Arc::new(system), once_fixture::path(""));
    let diagnostics = diagnostics_of(&host.analysis());
    let mut by_file: BTreeMap<&str, Vec<&Diagnostic>> = BTreeMap::new();
    for d in &diagnostics {
        let Some(file) = d.file.as_deref() else {
            panic!("a diagnostic names no file: {d:?}");
        };
        by_file.entry(file).or_default().push(d);
    }
    let mut expected = String::new();
    let mut actual = String::new();
    for (written, file) in annotated.files.iter().zip(&clean.files) {
        let path = file.path.trim_start_matches('/');
        let diagnostics = by_file.remove(path).unwrap_or_default();
        expected.push_str(&format!("//- /{path}\n{}", written.text));
        actual.push_str(&format!(
            "//- /{path}\n{}",
            annotate(&file.text, &diagnostics)
        ));
    }
    if let Some((path, diagnostics)) = by_file.first_key_value() {
        panic!("diagnostics of `{path}`, which the fixture does not hold: {diagnostics:?}");
    }
    if expected != actual {
        panic!(
            "the fixture's annotations are not the diagnostics.\n\
             expected (the fixture):\n{expected}\n\
             actual (the fixture as it should read):\n{actual}"
        );
    }
}

/// Whether `line` is an annotation (see the module doc for the forms).
fn is_annotation(line: &str) -> bool {
    let label = |rest: &str| {
        ["error[", "warning[", "info[", "hint["]
            .iter()
            .any(|severity| rest.starts_with(severity))
            && rest.contains("]: ")
    };
    let line = line.trim_start_matches(' ');
    if let Some(rest) = line.strip_prefix("#! ") {
        return label(rest);
    }
    if let Some(rest) = line.strip_prefix("# ") {
        let rest = rest.trim_start_matches(' ');
        return marks(rest)
            .and_then(|rest| rest.strip_prefix(' '))
            .is_some_and(label);
    }
    marks(line)
        .and_then(|rest| rest.strip_prefix(" # "))
        .is_some_and(label)
}

/// What follows the marks (carets with an optional `+`, or a `|`) at the start of
/// `rest`, if it starts with marks.
fn marks(rest: &str) -> Option<&str> {
    if let Some(rest) = rest.strip_prefix('|') {
        return Some(rest);
    }
    let after = rest.trim_start_matches('^');
    (after.len() < rest.len()).then(|| after.strip_prefix('+').unwrap_or(after))
}

/// `text` without its annotation lines.
fn strip_annotations(text: &str) -> String {
    text.split_inclusive('\n')
        .filter(|line| !is_annotation(line.trim_end_matches('\n')))
        .collect()
}

/// `text` with an annotation line for each diagnostic, under the line its range starts
/// on, in the order validation reports them.
fn annotate(text: &str, diagnostics: &[&Diagnostic]) -> String {
    let mut lines: Vec<(usize, &str)> = Vec::new();
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        lines.push((offset, line));
        offset += line.len();
    }
    let mut under: BTreeMap<usize, Vec<String>> = BTreeMap::new();
    for d in diagnostics {
        let label = format!(
            "{}[{}]: {}",
            d.severity.as_str(),
            d.code.as_str(),
            d.message
        );
        let Some(range) = d.range else {
            under.entry(0).or_default().push(format!("#! {label}"));
            continue;
        };
        let (start, end) = (range.start as usize, range.end as usize);
        let index = lines
            .iter()
            .rposition(|(line_start, _)| *line_start <= start)
            .unwrap_or(0);
        let (line_start, line) = lines.get(index).copied().unwrap_or((0, ""));
        let content = line.trim_end_matches('\n');
        let column = text[line_start..start].chars().count();
        let line_end = line_start + content.len();
        let mut marks = if start == end {
            "|".to_owned()
        } else {
            "^".repeat(text[start..end.min(line_end)].chars().count().max(1))
        };
        if end > line_end {
            marks.push('+');
        }
        let annotation = if column < 2 {
            format!("{}{marks} # {label}", " ".repeat(column))
        } else {
            format!("#{}{marks} {label}", " ".repeat(column - 1))
        };
        under.entry(index).or_default().push(annotation);
    }
    let mut out = String::new();
    for (index, (_, line)) in lines.iter().enumerate() {
        out.push_str(line);
        if let Some(annotations) = under.get(&index) {
            if !line.ends_with('\n') {
                out.push('\n');
            }
            for annotation in annotations {
                out.push_str(annotation);
                out.push('\n');
            }
        }
    }
    if lines.is_empty()
        && let Some(annotations) = under.get(&0)
    {
        for annotation in annotations {
            out.push_str(annotation);
            out.push('\n');
        }
    }
    out
}

/// The checker itself: annotations are stripped, placed and compared as documented.
mod checker {
    use super::{is_annotation, strip_annotations};

    #[test]
    fn annotation_lines_are_recognised_and_removed() {
        assert!(is_annotation("^^^^^ # error[unknown_key]: x"));
        assert!(is_annotation(" ^^^ # error[unknown_key]: x"));
        assert!(is_annotation("#      ^^^ warning[unknown_attr]: x"));
        assert!(is_annotation("#  ^^^+ error[syntax_error]: x"));
        assert!(is_annotation("#  | error[syntax_error]: x"));
        assert!(is_annotation("| # error[syntax_error]: x"));
        assert!(is_annotation("#! error[file_unreadable]: x"));
        assert!(!is_annotation("# a comment about error[x]: y"));
        assert!(!is_annotation("#^^ error[x]: y"));
        assert!(!is_annotation("name = \"^ # error[x]: y\""));
        assert_eq!(
            strip_annotations("a = 1\n^ # error[x]: y\nb = 2\n"),
            "a = 1\nb = 2\n"
        );
    }

    #[test]
    #[should_panic(expected = "the fixture's annotations are not the diagnostics")]
    fn a_missing_annotation_fails() {
        super::check(
            r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
lable = ["x"]
"#,
        );
    }

    #[test]
    #[should_panic(expected = "the fixture's annotations are not the diagnostics")]
    fn an_annotation_with_another_range_fails() {
        super::check(
            r#"
//- /once.toml
[workspace]
//- /lib/once.toml
[[target]]
name = "Lib"
kind = "rust_library"
lable = ["x"]
^^^^ # error[unknown_key]: unknown key `lable`
"#,
        );
    }
}
