//! Toolchain probes: the commands a `run` step names (`rustc -vV`) so that its key
//! follows the toolchain the command really uses when the program's own content does
//! not say it (a `rustup` or `pyenv` proxy, a wrapper shell).
//!
//! Each distinct probe (its argv, environment and working directory) runs once per
//! execution; its result digest covers the probe's argv, exit status and standard
//! output. A probe that cannot start, fails or runs longer than [`PROBE_TIMEOUT`] fails
//! the action with its output: a key that cannot be known is never guessed.

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use once_db::Sha256Digest;

use crate::key::KeyHasher;
use crate::tools::resolve_program;

/// The longest a probe may run.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The most of a probe's output that is read (the rest is ignored, not keyed).
const OUTPUT_LIMIT: u64 = 1 << 20;

type ProbeKey = (Vec<String>, BTreeMap<String, String>, PathBuf);

/// The probes run so far in one execution, and their results.
#[derive(Default)]
pub struct Probes {
    results: Mutex<HashMap<ProbeKey, Result<Sha256Digest, String>>>,
}

impl Probes {
    /// The result digest of `probe` run with `environment` from `cwd`, running it the
    /// first time it is asked for.
    pub fn result(
        &self,
        probe: &[String],
        environment: &BTreeMap<String, String>,
        cwd: &Path,
    ) -> Result<Sha256Digest, String> {
        let key = (probe.to_vec(), environment.clone(), cwd.to_path_buf());
        if let Some(known) = self.lock().get(&key) {
            return known.clone();
        }
        let result = run_probe(probe, environment, cwd);
        self.lock().insert(key, result.clone());
        result
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProbeKey, Result<Sha256Digest, String>>> {
        self.results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

fn run_probe(
    probe: &[String],
    environment: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Sha256Digest, String> {
    let shown = probe.join(" ");
    let (program, arguments) = probe
        .split_first()
        .ok_or_else(|| "a probe is an empty command".to_owned())?;
    let path_variable = environment.get("PATH").map_or("", String::as_str);
    let found = resolve_program(program, path_variable, cwd)
        .map_err(|e| format!("the toolchain probe `{shown}` cannot start: {e}"))?;
    let mut child = Command::new(&found)
        .args(arguments)
        .env_clear()
        .envs(environment)
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("the toolchain probe `{shown}` cannot start: {e}"))?;
    let stdout = child.stdout.take();
    let stderr = child.stderr.take();
    let read_out = std::thread::spawn(move || read_bounded(stdout));
    let read_err = std::thread::spawn(move || read_bounded(stderr));
    let started = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if started.elapsed() < PROBE_TIMEOUT => {
                std::thread::sleep(Duration::from_millis(2));
            }
            Ok(None) => {
                let group = rustix::process::Pid::from_raw(child.id().cast_signed());
                if let Some(group) = group {
                    let _ =
                        rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
                }
                let _ = child.wait();
                return Err(format!(
                    "the toolchain probe `{shown}` ran longer than {} s",
                    PROBE_TIMEOUT.as_secs()
                ));
            }
            Err(e) => return Err(format!("the toolchain probe `{shown}` was lost: {e}")),
        }
    };
    let stdout = read_out.join().unwrap_or_default();
    let stderr = read_err.join().unwrap_or_default();
    if !status.success() {
        return Err(format!(
            "the toolchain probe `{shown}` failed ({status}): {}",
            String::from_utf8_lossy(&stderr).trim()
        ));
    }
    let mut hasher = KeyHasher::new();
    hasher.field("probe");
    hasher.strings(probe.iter().map(String::as_str));
    hasher.number(u64::from(status.code().unwrap_or(-1).cast_unsigned()));
    hasher.bytes(&stdout);
    Ok(hasher.finish())
}

fn read_bounded(pipe: Option<impl std::io::Read>) -> Vec<u8> {
    let mut bytes = Vec::new();
    if let Some(pipe) = pipe {
        let mut limited = pipe.take(OUTPUT_LIMIT);
        let _ = limited.read_to_end(&mut bytes);
        // Drain the rest so the probe never blocks on a full pipe.
        let mut rest = limited.into_inner();
        let _ = std::io::copy(&mut rest, &mut std::io::sink());
    }
    bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn environment() -> BTreeMap<String, String> {
        BTreeMap::from([("PATH".to_owned(), "/usr/bin:/bin".to_owned())])
    }

    fn probe(script: &str) -> Vec<String> {
        vec!["sh".to_owned(), "-c".to_owned(), script.to_owned()]
    }

    #[test]
    fn results_follow_the_output_and_are_memoised() {
        let probes = Probes::default();
        let cwd = Path::new("/");
        let one = probes
            .result(&probe("echo v1"), &environment(), cwd)
            .unwrap();
        assert_eq!(
            probes
                .result(&probe("echo v1"), &environment(), cwd)
                .unwrap(),
            one
        );
        let two = probes
            .result(&probe("echo v2"), &environment(), cwd)
            .unwrap();
        assert_ne!(one, two);
        let other_env = BTreeMap::from([
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("V".to_owned(), "3".to_owned()),
        ]);
        let three = probes.result(&probe("echo v$V"), &other_env, cwd).unwrap();
        let empty = probes
            .result(&probe("echo v$V"), &environment(), cwd)
            .unwrap();
        assert_ne!(three, empty, "the environment is the probe's");
    }

    #[test]
    fn failing_and_missing_probes_are_errors_with_their_output() {
        let probes = Probes::default();
        let cwd = Path::new("/");
        let error = probes
            .result(
                &probe("echo broken toolchain >&2; exit 3"),
                &environment(),
                cwd,
            )
            .unwrap_err();
        assert!(
            error.contains("broken toolchain") && error.contains("exit status: 3"),
            "{error}"
        );
        let error = probes
            .result(&["no-such-probe-program".to_owned()], &environment(), cwd)
            .unwrap_err();
        assert!(error.contains("cannot start"), "{error}");
    }
}
