//! Measures a full hit in a fresh process, like the original's cache-comparison
//! benchmark: 15 actions in three layers, each waiting 40 ms and writing 1 to 16 MiB
//! (84 MiB in all).
//!
//! ```sh
//! cargo run --release -p once_exec --example full_hit -- prepare /tmp/ws   # build once
//! hyperfine 'target/release/examples/full_hit hit /tmp/ws'                  # all hits
//! ```

#![allow(clippy::print_stdout, reason = "the example reports its measurement")]

use std::path::Path;
use std::process::ExitCode;
use std::time::Instant;

use once_exec::{CacheState, ExecOptions, Executor, PlannedAction, Store};
use once_model::Sha256Digest;
use once_model::action::{Action, ActionStep, Command};

const MIB: [u32; 15] = [1, 2, 4, 8, 16, 1, 2, 4, 8, 16, 1, 2, 4, 8, 7];

fn plan() -> Vec<PlannedAction> {
    (0..15usize)
        .map(|index| {
            let name = format!("n{index:02}");
            let inputs = if index < 5 {
                Vec::new()
            } else {
                vec![
                    format!(".once/out/bench/n{:02}", index - 5),
                    format!(".once/out/bench/n{:02}", (index + 1) % 5 + (index / 5 - 1) * 5),
                ]
            };
            let script = format!(
                "sleep 0.04; mkdir -p .once/out/bench; head -c {}M /dev/zero | tr '\\0' 'x' > .once/out/bench/{name}",
                MIB[index]
            );
            PlannedAction {
                action: Action {
                    id: format!("bench#build/{name}"),
                    target: "bench".to_owned(),
                    capability: "build".to_owned(),
                    step: ActionStep::Run(Command::new(vec![
                        "sh".to_owned(),
                        "-c".to_owned(),
                        script,
                    ])),
                    inputs,
                    outputs: vec![format!(".once/out/bench/{name}")],
                    cacheable: true,
                },
                static_key: Sha256Digest::of(name.as_bytes()),
            }
        })
        .collect()
}

fn main() -> ExitCode {
    let arguments: Vec<String> = std::env::args().skip(1).collect();
    let [mode, root] = arguments.as_slice() else {
        println!("usage: full_hit prepare|hit WORKSPACE");
        return ExitCode::from(2);
    };
    let root = Path::new(root);
    if mode == "prepare" && std::fs::create_dir_all(root).is_err() {
        println!("cannot create {}", root.display());
        return ExitCode::from(2);
    }
    let started = Instant::now();
    let result = Store::open(&Store::default_path(root))
        .map_err(|e| e.to_string())
        .and_then(|store| {
            Executor::new(root, &store)
                .with_options(ExecOptions::default())
                .run(&plan())
                .map_err(|e| e.to_string())
        });
    let elapsed = started.elapsed();
    match result {
        Ok(report) => {
            let hits = report
                .results
                .iter()
                .filter(|r| r.cache == Some(CacheState::Hit))
                .count();
            println!(
                "{mode}: {hits}/15 hits, succeeded: {}, {elapsed:?}",
                report.succeeded()
            );
            if mode == "hit" && hits != 15 {
                return ExitCode::from(1);
            }
            ExitCode::SUCCESS
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::from(2)
        }
    }
}
