//! `bench-scripts`: the cost of `once exec` on annotated scripts (issue 17's numbers).
//!
//! - a no-op script run directly (`/bin/sh noop.sh`) next to `once exec --script noop.sh`
//!   answered from the cache, each a fresh process, median of `--runs`;
//! - a graph of 15 scripts joined by `needs` (a binary tree: script `i` needs `2i+1` and
//!   `2i+2`), every one a hit, run from the root script.
//!
//! Every timed run is checked: the exec trailers must say `hit` and the streams must be
//! the script's.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// How many scripts the `needs` graph has.
const GRAPH_SIZE: usize = 15;

/// Measures with the binary `once` in a fresh workspace at `dir` (removed first).
pub fn run(once: &Path, runs: usize, dir: &Path) -> anyhow::Result<String> {
    if !once.is_file() {
        bail!(
            "no `once` binary at {} (build it with `cargo build --release -p once_cli`, or pass --once)",
            once.display()
        );
    }
    // The runs start in the workspace: a relative binary path must not depend on it.
    let once = &once.canonicalize()?;
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let root = dir.canonicalize()?;
    std::fs::write(root.join("once.toml"), "[workspace]\n")?;
    std::fs::write(
        root.join("noop.sh"),
        "#!/bin/sh\n# once env \"BENCH_NOTHING\"\necho noop\n",
    )?;
    for i in 0..GRAPH_SIZE {
        let mut text = String::from("#!/bin/sh\n");
        for child in [2 * i + 1, 2 * i + 2] {
            if child < GRAPH_SIZE {
                text.push_str(&format!("# once needs \"s{child}.sh\"\n"));
            }
        }
        text.push_str(&format!(
            "# once output \"out/s{i}.txt\"\nmkdir -p out\necho {i} > out/s{i}.txt\necho s{i}\n"
        ));
        std::fs::write(root.join(format!("s{i}.sh")), text)?;
    }
    let load_before = load_average();
    let direct = time(runs, || {
        let output = Command::new("/bin/sh")
            .arg("noop.sh")
            .current_dir(&root)
            .output()?;
        check(
            output.status.success() && output.stdout == b"noop\n",
            "noop.sh",
        )
    })?;
    let exec = |script: &str, expected: &'static [u8]| {
        let root = root.clone();
        let script = script.to_owned();
        move || -> anyhow::Result<()> {
            let output = Command::new(once)
                .args(["exec", "--script", &script])
                .current_dir(&root)
                .env_remove("ONCE_WORKSPACE")
                .output()?;
            let stderr = String::from_utf8_lossy(&output.stderr);
            check(
                output.status.success() && output.stdout == expected,
                &format!("once exec --script {script}: {stderr}"),
            )?;
            Ok(())
        }
    };
    // Warm the cache, then every run must be a hit.
    exec("noop.sh", b"noop\n")()?;
    exec("s0.sh", b"s0\n")()?;
    let hit_check = |script: &'static str, expected: &'static [u8]| {
        let run = exec(script, expected);
        let root = root.clone();
        move || -> anyhow::Result<()> {
            run()?;
            let output = Command::new(once)
                .args(["exec", "--format", "json", "--script", script])
                .current_dir(&root)
                .output()?;
            let trailer = String::from_utf8_lossy(&output.stderr);
            check(
                trailer.contains("\"cache\":\"hit\""),
                &format!("{script} is not a hit: {trailer}"),
            )
        }
    };
    hit_check("noop.sh", b"noop\n")()?;
    hit_check("s0.sh", b"s0\n")()?;
    let noop_hit = time(runs, exec("noop.sh", b"noop\n"))?;
    let graph_hit = time(runs, exec("s0.sh", b"s0\n"))?;
    let load_after = load_average();
    let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
    Ok(format!(
        "| measure | median of {runs} |\n|---|---|\n\
         | no-op script run directly (`/bin/sh noop.sh`) | {} |\n\
         | `once exec --script noop.sh`, hit | {} |\n\
         | hit overhead over the direct run | {} |\n\
         | 15-script `needs` graph, all hits (`once exec --script s0.sh`) | {} |\n\
         \nload average (1 min) before: {load_before}, after: {load_after}; binary: {}",
        ms(direct),
        ms(noop_hit),
        ms(noop_hit.saturating_sub(direct)),
        ms(graph_hit),
        once.display()
    ))
}

fn check(ok: bool, what: &str) -> anyhow::Result<()> {
    if ok {
        Ok(())
    } else {
        bail!("unexpected result: {what}")
    }
}

fn time(runs: usize, mut run: impl FnMut() -> anyhow::Result<()>) -> anyhow::Result<Duration> {
    let mut samples = Vec::with_capacity(runs);
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        run()?;
        samples.push(started.elapsed());
    }
    samples.sort();
    Ok(samples[samples.len() / 2])
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|text| text.split_whitespace().next().map(str::to_owned))
        .unwrap_or_else(|| "unknown".to_owned())
}
