//! Every starter example of every kind in the catalog, built and run with the real
//! toolchains through the real binary.
//!
//! The catalog comes from the binary (`once query kinds`), so a new kind or example is
//! covered without editing this test. Each example (an example listed by several kinds
//! once) is materialised into a workspace of its own (`once edit materialize-example`),
//! then: `once build ...` must succeed, `once run TARGET` must exit 0 for every target
//! with a `run` capability, `once test ...` must pass every test target with normalized
//! results, and a second `once build ...` must be all cache hits. Examples
//! run on two threads; every failure is collected and reported in one table at the end.
//! A missing compiler or interpreter is a failure like any other (install them with
//! `./.ci/toolchains`, which `./.ci/test` runs first): nothing is skipped.

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Output;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Examples built at the same time.
const THREADS: usize = 2;

/// One example of the catalog and the kinds that list it.
struct Example {
    slug: String,
    kinds: Vec<String>,
}

/// One step of one example that did not do what it should.
struct Failure {
    example: String,
    step: String,
    detail: String,
}

/// What happened to one example: its failures and, for the summary, how long it took and
/// which targets ran.
struct Outcome {
    failures: Vec<Failure>,
    duration: Duration,
    ran: Vec<String>,
}

/// The last `lines` lines of a command's output, on one line each, for the table.
fn tail(output: &Output, lines: usize) -> String {
    let all = format!("{}{}", text(&output.stdout), text(&output.stderr));
    let kept: Vec<&str> = all.lines().filter(|line| !line.trim().is_empty()).collect();
    kept[kept.len().saturating_sub(lines)..].join(" | ")
}

/// Every example of the catalog, each once with every kind that lists it, by slug.
fn catalog_examples() -> Vec<Example> {
    let directory = tempfile::tempdir().unwrap();
    let output = once(directory.path(), &["--format", "json", "query", "kinds"]);
    assert!(output.status.success(), "{}", tail(&output, 20));
    let kinds: Value = serde_json::from_slice(&output.stdout).unwrap();
    let mut examples: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for kind in kinds.as_array().unwrap() {
        let name = kind["kind"].as_str().unwrap();
        for example in kind["examples"].as_array().unwrap() {
            let slug = example["slug"].as_str().unwrap().to_owned();
            examples.entry(slug).or_default().push(name.to_owned());
        }
    }
    examples
        .into_iter()
        .map(|(slug, kinds)| Example { slug, kinds })
        .collect()
}

/// A `once build ... --format json` record, or the failure to read one.
fn build_all(root: &Path) -> Result<Value, String> {
    let output = once(root, &["--format", "json", "build", "..."]);
    let record: Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| format!("no JSON record ({e}): {}", tail(&output, 6)))?;
    if !output.status.success() || record["success"] != Value::Bool(true) {
        return Err(format!(
            "exit {:?}: {}",
            output.status.code(),
            failing_targets(&record, &output)
        ));
    }
    Ok(record)
}

/// The failing targets of a build record with their failure and problems.
fn failing_targets(record: &Value, output: &Output) -> String {
    let mut parts = Vec::new();
    for target in record["targets"].as_array().into_iter().flatten() {
        if target["status"] != "completed" {
            parts.push(format!(
                "{} ({}): {}",
                target["target"].as_str().unwrap_or("?"),
                target["status"].as_str().unwrap_or("?"),
                compact(&target["failure"]),
            ));
        }
    }
    if let Some(problems) = record["problems"].as_array().filter(|p| !p.is_empty()) {
        parts.push(format!(
            "problems: {}",
            compact(&Value::Array(problems.clone()))
        ));
    }
    if parts.is_empty() {
        parts.push(tail(output, 6));
    }
    parts.join("; ")
}

/// A JSON value on one line, shortened for the table.
fn compact(value: &Value) -> String {
    let line = value.to_string().replace("\\n", " | ");
    if line.len() > 600 {
        let cut = (0..=600)
            .rev()
            .find(|&i| line.is_char_boundary(i))
            .unwrap_or(0);
        format!("{}…", &line[..cut])
    } else {
        line
    }
}

/// Materialises, builds, runs and rebuilds one example.
fn check_example(example: &Example) -> Outcome {
    let started = Instant::now();
    let mut failures = Vec::new();
    let mut ran = Vec::new();
    let fail = |failures: &mut Vec<Failure>, step: &str, detail: String| {
        failures.push(Failure {
            example: format!("{} ({})", example.slug, example.kinds.join(", ")),
            step: step.to_owned(),
            detail,
        });
    };
    let directory = tempfile::tempdir().unwrap();
    let root = directory.path();
    let materialized = once(
        root,
        &[
            "edit",
            "materialize-example",
            &example.kinds[0],
            &example.slug,
        ],
    );
    if !materialized.status.success() {
        fail(&mut failures, "materialize", tail(&materialized, 6));
        return Outcome {
            failures,
            duration: started.elapsed(),
            ran,
        };
    }
    let listed = once(root, &["--format", "json", "query", "targets"]);
    let targets: Vec<Value> = match serde_json::from_slice::<Value>(&listed.stdout) {
        Ok(Value::Array(targets)) if listed.status.success() => targets,
        _ => {
            fail(&mut failures, "query targets", tail(&listed, 6));
            return Outcome {
                failures,
                duration: started.elapsed(),
                ran,
            };
        }
    };
    let with = |capability: &str| -> Vec<String> {
        targets
            .iter()
            .filter(|t| {
                t["capabilities"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|c| c == capability)
            })
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let buildable = with("build");
    let runnable = with("run");
    if buildable.is_empty() && runnable.is_empty() {
        fail(
            &mut failures,
            "targets",
            "no target can build or run".to_owned(),
        );
    }
    if !buildable.is_empty()
        && let Err(detail) = build_all(root)
    {
        fail(&mut failures, "build", detail);
        return Outcome {
            failures,
            duration: started.elapsed(),
            ran,
        };
    }
    for target in &runnable {
        let output = once(root, &["run", target]);
        if output.status.success() {
            ran.push(format!("{target}: {}", tail(&output, 1)));
        } else {
            fail(
                &mut failures,
                &format!("run {target}"),
                format!("exit {:?}: {}", output.status.code(), tail(&output, 8)),
            );
        }
    }
    if !with("test").is_empty() {
        let output = once(root, &["--format", "json", "test", "..."]);
        match serde_json::from_slice::<Value>(&output.stdout) {
            Ok(answer) if output.status.success() => {
                for run in answer["runs"].as_array().unwrap() {
                    let cases = run["results"]["summary"]["total"].as_u64().unwrap_or(0);
                    if run["status"] != "passed" || cases == 0 {
                        fail(
                            &mut failures,
                            &format!("test {}", run["target"]),
                            compact(run),
                        );
                    } else {
                        ran.push(format!("{}: {cases} cases passed", run["target"]));
                    }
                }
            }
            _ => fail(
                &mut failures,
                "test",
                format!("exit {:?}: {}", output.status.code(), tail(&output, 8)),
            ),
        }
    }
    if !buildable.is_empty() {
        match build_all(root) {
            Err(detail) => fail(&mut failures, "rebuild", detail),
            Ok(record) => {
                let missed: Vec<String> = record["targets"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .flat_map(|t| t["actions"].as_array().unwrap())
                    .filter(|a| a["cache"] != "hit")
                    .map(|a| format!("{} ({})", a["id"].as_str().unwrap(), a["cache"]))
                    .collect();
                if !missed.is_empty() {
                    fail(&mut failures, "rebuild all hits", missed.join(", "));
                }
            }
        }
    }
    Outcome {
        failures,
        duration: started.elapsed(),
        ran,
    }
}

#[test]
#[allow(
    clippy::print_stderr,
    reason = "the test reports each example's duration and what its programs printed"
)]
fn every_starter_example_builds_runs_and_rebuilds_from_the_cache() {
    let started = Instant::now();
    let examples = catalog_examples();
    assert!(
        examples.len() >= 20,
        "the catalog lists only {} examples",
        examples.len()
    );
    let next = AtomicUsize::new(0);
    let outcomes: Mutex<Vec<(usize, Outcome)>> = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..THREADS {
            scope.spawn(|| {
                loop {
                    let index = next.fetch_add(1, Ordering::SeqCst);
                    let Some(example) = examples.get(index) else {
                        break;
                    };
                    let outcome = check_example(example);
                    outcomes.lock().unwrap().push((index, outcome));
                }
            });
        }
    });
    let mut outcomes = outcomes.into_inner().unwrap();
    outcomes.sort_by_key(|(index, _)| *index);
    let mut summary = String::new();
    let mut failures = Vec::new();
    for (index, outcome) in outcomes {
        let example = &examples[index];
        summary.push_str(&format!(
            "{:>6.1}s {} ({}){}{}\n",
            outcome.duration.as_secs_f64(),
            example.slug,
            example.kinds.join(", "),
            if outcome.failures.is_empty() {
                ""
            } else {
                " FAILED"
            },
            outcome
                .ran
                .iter()
                .map(|run| format!("\n         ran {run}"))
                .collect::<String>(),
        ));
        failures.extend(outcome.failures);
    }
    eprintln!(
        "{summary}{} examples in {:.1}s",
        examples.len(),
        started.elapsed().as_secs_f64()
    );
    if !failures.is_empty() {
        let mut table = String::from("| example | step | detail |\n| --- | --- | --- |\n");
        for failure in &failures {
            table.push_str(&format!(
                "| {} | {} | {} |\n",
                failure.example, failure.step, failure.detail
            ));
        }
        panic!(
            "{} of {} examples failed ({} failures; a compiler or interpreter that is not \
             on PATH is installed by ./.ci/toolchains):\n{table}",
            failures
                .iter()
                .map(|f| f.example.as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .len(),
            examples.len(),
            failures.len(),
        );
    }
}
