//! `go test -json`: the `test2json` event stream (`run`, `output`, `pass`, `fail`,
//! `skip` per test and subtest, and the package's own events).
//!
//! A test with subtests is their suite; it is a case of its own only when it failed
//! while none of its subtests did (a failure in the parent's body). A package that
//! failed without a failing test (it did not compile, `TestMain` exited) becomes one
//! failed case carrying the package's output.

use std::collections::{HashMap, HashSet};

use serde::Deserialize;

use crate::Parsed;
use crate::record::{AttemptStatus, Case, bounded};

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "Action", default)]
    action: String,
    #[serde(rename = "Package", default)]
    package: String,
    #[serde(rename = "Test", default)]
    test: Option<String>,
    #[serde(rename = "Elapsed", default)]
    elapsed: Option<f64>,
    #[serde(rename = "Output", default)]
    output: Option<String>,
}

#[derive(Default)]
struct Test {
    package: String,
    name: String,
    output: String,
    status: Option<AttemptStatus>,
    duration_ms: Option<u64>,
}

pub fn parse(text: &str) -> Parsed {
    let mut parsed = Parsed::default();
    let mut tests: Vec<Test> = Vec::new();
    let mut index_of: HashMap<(String, String), usize> = HashMap::new();
    let mut packages: Vec<(String, String, Option<AttemptStatus>)> = Vec::new();
    // Lines that are not events: the compiler's errors when the package did not build.
    let mut other_lines: Vec<&str> = Vec::new();
    for line in text.lines().filter(|line| !line.trim().is_empty()) {
        let Ok(event) = serde_json::from_str::<Event>(line) else {
            other_lines.push(line);
            continue;
        };
        let status = match event.action.as_str() {
            "pass" => Some(AttemptStatus::Passed),
            "fail" => Some(AttemptStatus::Failed),
            "skip" => Some(AttemptStatus::Skipped),
            _ => None,
        };
        match event.test {
            Some(name) => {
                let key = (event.package.clone(), name);
                let index = match index_of.get(&key) {
                    Some(&index) => index,
                    None => {
                        tests.push(Test {
                            package: key.0.clone(),
                            name: key.1.clone(),
                            ..Test::default()
                        });
                        index_of.insert(key, tests.len() - 1);
                        tests.len() - 1
                    }
                };
                let test = &mut tests[index];
                if let Some(output) = event.output {
                    test.output.push_str(&output);
                }
                if status.is_some() {
                    test.status = status;
                    test.duration_ms = event
                        .elapsed
                        .filter(|e| e.is_finite() && *e >= 0.0)
                        .map(|e| (e * 1000.0).round() as u64);
                }
            }
            None => {
                let index = match packages.iter().position(|p| p.0 == event.package) {
                    Some(index) => index,
                    None => {
                        packages.push((event.package.clone(), String::new(), None));
                        packages.len() - 1
                    }
                };
                if let Some(output) = event.output {
                    packages[index].1.push_str(&output);
                }
                if status.is_some() {
                    packages[index].2 = status;
                }
            }
        }
    }
    if !other_lines.is_empty() {
        const SHOWN: usize = 40;
        let mut problem = String::from("output that is not a `go test -json` event:");
        for line in other_lines.iter().take(SHOWN) {
            problem.push_str("\n  ");
            problem.push_str(line);
        }
        if other_lines.len() > SHOWN {
            problem.push_str(&format!("\n  … {} more line(s)", other_lines.len() - SHOWN));
        }
        parsed.problem(problem);
    }
    // Every test that has subtests, and those of them with a failing subtest.
    let mut parents: HashSet<(&str, &str)> = HashSet::new();
    let mut failed_parents: HashSet<(&str, &str)> = HashSet::new();
    for test in &tests {
        let mut name = test.name.as_str();
        while let Some((parent, _)) = name.rsplit_once('/') {
            parents.insert((&test.package, parent));
            if test.status == Some(AttemptStatus::Failed) {
                failed_parents.insert((&test.package, parent));
            }
            name = parent;
        }
    }
    let mut failed_packages: HashSet<&str> = HashSet::new();
    for test in &tests {
        let key = (test.package.as_str(), test.name.as_str());
        if test.status == Some(AttemptStatus::Failed) {
            failed_packages.insert(&test.package);
        }
        let own_failure =
            test.status == Some(AttemptStatus::Failed) && !failed_parents.contains(&key);
        if parents.contains(&key) && !own_failure {
            continue;
        }
        let status = test.status.unwrap_or(AttemptStatus::Failed);
        let message = match status {
            AttemptStatus::Passed => None,
            _ if test.status.is_none() => Some(format!(
                "the test never reported a result (the test binary ended while it ran)\n{}",
                own_output(&test.output)
            )),
            _ => Some(own_output(&test.output)).filter(|m| !m.is_empty()),
        };
        let (suite, name) = match test.name.rsplit_once('/') {
            Some((parent, name)) => (format!("{}/{parent}", test.package), name.to_owned()),
            None => (test.package.clone(), test.name.clone()),
        };
        let mut case = Case::single(
            format!("{}::{}", test.package, test.name),
            name,
            suite,
            status,
            test.duration_ms,
            message.map(bounded),
        );
        if let Some((file, line)) = location(&test.output) {
            case.file = Some(file);
            case.line = Some(line);
        }
        parsed.push(case);
    }
    for (package, output, status) in packages {
        if status == Some(AttemptStatus::Failed) && !failed_packages.contains(package.as_str()) {
            parsed.push(Case::single(
                format!("{package}::(package)"),
                "(package)".to_owned(),
                package,
                AttemptStatus::Failed,
                None,
                Some(bounded(output.trim().to_owned())),
            ));
        }
    }
    parsed
}

/// A test's output without the runner's own framing lines.
fn own_output(output: &str) -> String {
    output
        .lines()
        .filter(|line| {
            let line = line.trim_start();
            !(line.starts_with("=== RUN")
                || line.starts_with("=== PAUSE")
                || line.starts_with("=== CONT")
                || line.starts_with("=== NAME")
                || line.starts_with("--- PASS")
                || line.starts_with("--- FAIL")
                || line.starts_with("--- SKIP"))
        })
        .collect::<Vec<_>>()
        .join("\n")
        .trim()
        .to_owned()
}

/// The first `file.go:12: message` line of a test's output.
fn location(output: &str) -> Option<(String, u32)> {
    output.lines().find_map(|line| {
        let line = line.trim_start();
        let (file, rest) = line.split_once(".go:")?;
        if file.contains(' ') {
            return None;
        }
        let (number, _) = rest.split_once(':')?;
        Some((format!("{file}.go"), number.parse().ok()?))
    })
}
