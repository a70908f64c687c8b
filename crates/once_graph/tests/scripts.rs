//! The header grammar of annotated scripts, over a directory of real scripts
//! (`test_data/scripts/`: valid headers in four comment styles, every misspelling and bad
//! path the grammar names, prose that only looks like a directive, an empty file, CRLF
//! line ends). Each script's parse — contract, directives, diagnostics with line:column,
//! repairs and fixes applied — is a snapshot beside it (`<script>.snap`).

#![allow(
    clippy::disallowed_methods,
    reason = "the test reads its fixture scripts and updates their snapshots on the disk"
)]

use std::path::Path;

use expect_test::expect_file;
use once_graph::script::parse_script;
use once_model::Diagnostic;

/// 1-based line:column of a byte offset.
fn position(text: &str, offset: u32) -> String {
    let before = &text[..(offset as usize).min(text.len())];
    let line = before.matches('\n').count() + 1;
    let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
    format!("{line}:{column}")
}

fn render_diagnostic(text: &str, d: &Diagnostic) -> String {
    let place = d.range.map_or_else(String::new, |r| {
        format!("{}-{}", position(text, r.start), position(text, r.end))
    });
    let mut out = format!("{}[{}] {place}: {}\n", d.severity, d.code, d.message);
    for repair in &d.repairs {
        out.push_str(&format!("  repair: {repair}\n"));
    }
    for fix in &d.fixes {
        let mut fixed = text.to_owned();
        for edit in fix.edits.iter().rev() {
            fixed.replace_range(
                edit.range.start as usize..edit.range.end as usize,
                &edit.new_text,
            );
        }
        let line = position(text, fix.edits[0].range.start);
        let line: usize = line.split(':').next().unwrap().parse().unwrap();
        let changed: Vec<&str> = fixed.lines().skip(line - 1).take(2).collect();
        out.push_str(&format!(
            "  fix{}: {} → {:?}\n",
            if fix.preferred { " (preferred)" } else { "" },
            fix.title,
            changed
        ));
    }
    out
}

fn check(name: &str) {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/scripts");
    let text = std::fs::read_to_string(dir.join(name)).unwrap();
    let parse = parse_script(&format!("tools/{name}"), &text);
    let contract = &parse.contract;
    let mut out = format!(
        "valid: {}\nhas_directives: {}\nruntime: {:?} {:?}\ninputs: {:?}\noutputs: {:?}\nneeds: {:?}\nfingerprints: {:?}\nenv: {:?}\ncwd: {:?}\noutput_symlinks: {}\n",
        parse.is_valid(),
        parse.has_directives,
        contract.runtime,
        contract.runtime_args,
        contract.inputs,
        contract.outputs,
        contract.needs,
        contract.fingerprints,
        contract.env,
        contract.cwd,
        contract.output_symlinks.as_str(),
    );
    out.push_str("--- directives\n");
    for directive in &parse.directives {
        out.push_str(&format!(
            "{} {} = {:?}{}\n",
            position(&text, directive.keyword_range.start),
            directive.keyword,
            directive.value,
            directive
                .value_range
                .map_or_else(String::new, |r| format!(" at {}", position(&text, r.start)))
        ));
    }
    out.push_str("--- diagnostics\n");
    for diagnostic in &parse.diagnostics {
        out.push_str(&render_diagnostic(&text, diagnostic));
    }
    expect_file![dir.join(format!("{name}.snap"))].assert_eq(&out);
}

#[test]
fn every_script_of_the_fixture_directory() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../test_data/scripts");
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| !name.ends_with(".snap"))
        .collect();
    names.sort();
    assert!(names.len() >= 14, "{names:?}");
    for name in names {
        check(&name);
    }
}

#[test]
fn hostile_headers_stay_linear() {
    let mut text = String::from("#!/bin/sh\n");
    for i in 0..50_000 {
        text.push_str(&format!("# once input \"file{i}.txt\"\n"));
    }
    text.push_str(&format!("# once output \"{}\"\n", "x".repeat(1 << 20)));
    text.push_str(&format!("#{}\n", " ".repeat(1 << 20)));
    text.push_str(&"\"".repeat(1 << 16));
    let started = std::time::Instant::now();
    let parse = parse_script("big.sh", &text);
    assert!(started.elapsed().as_secs() < 10, "{:?}", started.elapsed());
    assert_eq!(parse.contract.inputs.len(), 50_000);
}
