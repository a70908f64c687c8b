//! Every fuzz target on stable: over its checked-in seed corpus (`fuzz/corpus/NAME/`,
//! which must exist and hold seeds: a missing corpus fails, it is never skipped), then
//! over seeded random mutations of the seeds, bounded by a count and a time per target.
//!
//! `ONCE_FUZZ_SEED` sets the seed (default: a fixed one, so CI is reproducible),
//! `ONCE_FUZZ_RUNS` the number of mutations per target (default 2,000 in an optimised
//! build, 300 in a debug one) and `ONCE_FUZZ_SECONDS` the time per target after which
//! the mutations stop (default 4). A failure names the target, the seed, the mutation
//! and the file holding the failing input (under `target/once-fuzz-failures/`), and says
//! how to replay it with `cargo fuzz`.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use once_fuzz::mutate::{Rng, mutate};

fn setting<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

fn repository() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The seeds of `name`, sorted by file name; fails when there are none.
fn seeds(name: &str) -> Vec<(String, Vec<u8>)> {
    let dir = repository().join("fuzz/corpus").join(name);
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| {
        panic!(
            "the seed corpus of `{name}` is missing ({}: {e}); every target needs one",
            dir.display()
        )
    });
    let mut seeds: Vec<(String, Vec<u8>)> = entries
        .flatten()
        .filter(|entry| entry.file_type().is_ok_and(|t| t.is_file()))
        .map(|entry| {
            let bytes = std::fs::read(entry.path()).expect("a seed is readable");
            (entry.file_name().to_string_lossy().into_owned(), bytes)
        })
        .collect();
    seeds.sort();
    assert!(
        !seeds.is_empty(),
        "the seed corpus of `{name}` ({}) is empty",
        dir.display()
    );
    seeds
}

/// Runs `target` on `input`; on a panic, keeps the input and fails saying how to replay.
fn run_one(name: &str, target: once_fuzz::Target, input: &[u8], what: &str) {
    let outcome = std::panic::catch_unwind(|| target(input));
    if let Err(panic) = outcome {
        let dir = repository().join("target/once-fuzz-failures");
        let _ = std::fs::create_dir_all(&dir);
        let file = dir.join(format!("{name}-{:016x}", fnv(input)));
        let _ = std::fs::write(&file, input);
        let message = panic
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| panic.downcast_ref::<&str>().copied())
            .unwrap_or("(no message)");
        panic!(
            "fuzz target `{name}` failed on {what}: {message}\n\
             the input ({} bytes) is in {}\n\
             replay: cargo +nightly fuzz run {name} {} (from the repository root), or\n\
             ONCE_FUZZ_SEED=… as printed above with `cargo test -p once_fuzz --test corpus {name}`",
            input.len(),
            file.display(),
            file.display(),
        );
    }
}

fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn check_target(name: &str) {
    let target = once_fuzz::TARGETS
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, t)| *t)
        .expect("a target of this name");
    let seeds = seeds(name);
    for (file, bytes) in &seeds {
        run_one(name, target, bytes, &format!("the seed `{file}`"));
    }
    let default_runs = if cfg!(debug_assertions) { 300 } else { 2_000 };
    let runs: usize = setting("ONCE_FUZZ_RUNS", default_runs);
    let seconds: f64 = setting("ONCE_FUZZ_SECONDS", 4.0);
    let seed: u64 = setting("ONCE_FUZZ_SEED", 0x0ACE_F022);
    // Each target its own stream, so one target's runs do not shift another's inputs.
    let mut rng = Rng::new(seed ^ fnv(name.as_bytes()));
    let inputs: Vec<Vec<u8>> = seeds.into_iter().map(|(_, bytes)| bytes).collect();
    let started = Instant::now();
    let mut done = 0;
    while done < runs && started.elapsed() < Duration::from_secs_f64(seconds) {
        let index = rng.below(inputs.len());
        let input = mutate(&inputs, index, &mut rng);
        run_one(
            name,
            target,
            &input,
            &format!("mutation {done} (ONCE_FUZZ_SEED={seed})"),
        );
        done += 1;
    }
    assert!(done > 0, "no mutation of `{name}` ran within {seconds} s");
}

/// Every target has a test below, and a seed corpus.
#[test]
fn every_target_is_tested_and_has_a_corpus() {
    let source = include_str!("corpus.rs");
    for (name, _) in once_fuzz::TARGETS {
        assert!(
            source.contains(&format!("fn {name}() {{")),
            "no test runs the target `{name}`"
        );
        assert!(
            repository()
                .join("fuzz/fuzz_targets")
                .join(format!("{name}.rs"))
                .is_file(),
            "the target `{name}` has no fuzz/fuzz_targets/{name}.rs"
        );
        seeds(name);
    }
}

#[test]
fn manifest() {
    check_target("manifest");
}

#[test]
fn mcp_framing() {
    check_target("mcp_framing");
}

#[test]
fn lsp_framing() {
    check_target("lsp_framing");
}

#[test]
fn script_header() {
    check_target("script_header");
}

#[test]
fn test_results() {
    check_target("test_results");
}

#[test]
fn store_formats() {
    check_target("store_formats");
}

#[test]
fn starlark_module() {
    check_target("starlark_module");
}
