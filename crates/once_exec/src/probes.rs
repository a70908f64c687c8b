//! Toolchain probes: the commands a `run` step names (`rustc -vV`) so that its key
//! follows the toolchain the command really uses when the program's own content does
//! not say it (a `rustup` or `pyenv` proxy, a wrapper shell).
//!
//! Each distinct probe (its argv, environment and working directory) runs at most once
//! per execution; its result digest covers the probe's argv, exit status and standard
//! output. A probe that cannot start, fails or runs longer than [`PROBE_TIMEOUT`] fails
//! the action with its output: a key that cannot be known is never guessed.
//!
//! **Stored answers.** A probe with stamps ([`crate::probe_stamps`]: the files whose
//! identity decides its answer) has its result digest kept in the store's `probes` file,
//! by a digest of its argv, environment and working directory, beside its stamps. A later
//! process reuses it without running the probe only while every stamp is the same
//! (path, device, inode, size, modification and change times, mode, or still absent).
//! The stamps are taken before and after the probe runs and the answer is stored only if
//! they agree and none changed in the last two seconds; failures are never stored.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format};

use crate::key::KeyHasher;
use crate::probe_stamps::{Stamp, probe_stamps, probe_stamps_with};
use crate::store::Store;
use crate::tools::{Fingerprint, resolve_program};

/// The longest a probe may run.
pub const PROBE_TIMEOUT: Duration = Duration::from_secs(30);

/// The file at the store's `derived/` directory that keeps probe answers and their stamps.
pub const PROBES_FILE: &str = "probes";

/// The `probes` file's framing ([`once_model::framed`]): a damaged file is removed with a
/// warning, and every probe runs again.
const FORMAT: Format = Format {
    name: "once-probe-answers",
    version: 2,
};

/// The most of a probe's output that is read (the rest is ignored, not keyed).
const OUTPUT_LIMIT: u64 = 1 << 20;

type ProbeKey = (Vec<String>, BTreeMap<String, String>, PathBuf);

type StoredAnswers = HashMap<Sha256Digest, (Vec<Stamp>, Sha256Digest)>;

/// The probes run so far in one execution, their results, and the answers stored by
/// earlier ones.
#[derive(Default)]
pub struct Probes {
    results: Mutex<HashMap<ProbeKey, Result<Sha256Digest, String>>>,
    stored: Mutex<Option<StoredAnswers>>,
    changed: Mutex<bool>,
    runs: AtomicUsize,
}

impl Probes {
    /// The result digest of `probe` run with `environment` from `cwd`: a stored answer
    /// whose stamps all hold, else the probe's run (the first time it is asked for).
    pub fn result(
        &self,
        store: &Store,
        probe: &[String],
        environment: &BTreeMap<String, String>,
        cwd: &Path,
    ) -> Result<Sha256Digest, String> {
        let key = (probe.to_vec(), environment.clone(), cwd.to_path_buf());
        if let Some(known) = self.lock().get(&key) {
            return known.clone();
        }
        let stamps = probe_stamps(probe, environment, cwd);
        let answer_key = answer_key(probe, environment, cwd);
        if let Some(answer) = self.stored_answer(store, &answer_key, stamps.as_deref()) {
            self.lock().insert(key, Ok(answer));
            return Ok(answer);
        }
        self.runs.fetch_add(1, Ordering::Relaxed);
        let result = run_probe(probe, environment, cwd);
        if let (Ok(answer), Some(before)) = (&result, stamps) {
            let now = SystemTime::now();
            let after = probe_stamps(probe, environment, cwd);
            if after.as_ref() == Some(&before) && before.iter().all(|s| s.is_settled(now)) {
                let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
                stored
                    .get_or_insert_with(|| load(store))
                    .insert(answer_key, (before, *answer));
                *self.changed.lock().unwrap_or_else(|e| e.into_inner()) = true;
            }
        }
        self.lock().insert(key, result.clone());
        result
    }

    /// Whether `probe` has a result without running it: memoised in this execution, or a
    /// stored answer whose stamps all hold (then memoised). The executor asks this first,
    /// so that only the probes that must run get a thread of their own. `resolve` finds
    /// the probe's program (called like [`resolve_program`]): the executor passes its
    /// lookup of the execution, which finds a program once (several probes, one per
    /// package's working directory, name the same `cargo`).
    pub fn is_answered(
        &self,
        store: &Store,
        probe: &[String],
        environment: &BTreeMap<String, String>,
        cwd: &Path,
        resolve: &dyn Fn(&str, &str, &Path) -> Result<PathBuf, String>,
    ) -> bool {
        let key = (probe.to_vec(), environment.clone(), cwd.to_path_buf());
        if self.lock().contains_key(&key) {
            return true;
        }
        let stamps = probe_stamps_with(probe, environment, cwd, resolve);
        let answer_key = answer_key(probe, environment, cwd);
        match self.stored_answer(store, &answer_key, stamps.as_deref()) {
            Some(answer) => {
                self.lock().insert(key, Ok(answer));
                true
            }
            None => false,
        }
    }

    /// The stored answer filed under `answer_key` when the probe has `stamps` and they
    /// are the ones stored with it.
    fn stored_answer(
        &self,
        store: &Store,
        answer_key: &Sha256Digest,
        stamps: Option<&[Stamp]>,
    ) -> Option<Sha256Digest> {
        let stamps = stamps?;
        let mut stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        let stored = stored.get_or_insert_with(|| load(store));
        match stored.get(answer_key) {
            Some((known_stamps, answer)) if known_stamps.as_slice() == stamps => Some(*answer),
            _ => None,
        }
    }

    /// How many probes this value ran (stored answers and memoised results not counted).
    pub fn runs(&self) -> usize {
        self.runs.load(Ordering::Relaxed)
    }

    /// Writes the stored answers back when a probe ran and its answer may be kept (the
    /// last writer wins: a lost answer only runs its probe again).
    pub fn save(&self, store: &Store) -> std::io::Result<()> {
        if !*self.changed.lock().unwrap_or_else(|e| e.into_inner()) {
            return Ok(());
        }
        let stored = self.stored.lock().unwrap_or_else(|e| e.into_inner());
        let Some(stored) = stored.as_ref() else {
            return Ok(());
        };
        let mut sorted: Vec<_> = stored.iter().collect();
        sorted.sort_by_key(|(key, _)| key.to_hex());
        let mut text = String::new();
        for (key, (stamps, answer)) in sorted {
            text.push_str(&format!("answer {key} {answer} {}\n", stamps.len()));
            for stamp in stamps {
                match stamp.state {
                    Some(f) => text.push_str(&format!("stamp {} {}\n", f.to_fields(), stamp.path)),
                    None => text.push_str(&format!("absent {}\n", stamp.path)),
                }
            }
        }
        store.write_framed(PROBES_FILE, FORMAT, text.as_bytes())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<ProbeKey, Result<Sha256Digest, String>>> {
        self.results
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// What a stored answer is filed under: the probe's argv, environment and directory.
fn answer_key(
    probe: &[String],
    environment: &BTreeMap<String, String>,
    cwd: &Path,
) -> Sha256Digest {
    let mut hasher = KeyHasher::new();
    hasher.field("probe-answer");
    hasher.strings(probe.iter().map(String::as_str));
    hasher.number(environment.len() as u64);
    for (name, value) in environment {
        hasher.strings([name.as_str(), value.as_str()].into_iter());
    }
    hasher.bytes(cwd.as_os_str().as_encoded_bytes());
    hasher.finish()
}

/// The answers in the store's `probes` file (none when it is missing, another version's
/// or damaged: removed with a warning).
fn load(store: &Store) -> StoredAnswers {
    let Some(body) = store.read_framed(PROBES_FILE, FORMAT) else {
        return HashMap::new();
    };
    parse_answers(&body).unwrap_or_else(|| {
        store.remove_damaged_derived(PROBES_FILE, Damage::Unparsable);
        HashMap::new()
    })
}

/// The answers of an intact `probes` body; `None` when a line does not parse.
fn parse_answers(body: &[u8]) -> Option<StoredAnswers> {
    let mut answers = HashMap::new();
    let mut lines = std::str::from_utf8(body).ok()?.lines();
    while let Some(line) = lines.next() {
        let parsed = (|| {
            let mut fields = line.split(' ');
            if fields.next()? != "answer" {
                return None;
            }
            let key = Sha256Digest::from_hex(fields.next()?)?;
            let answer = Sha256Digest::from_hex(fields.next()?)?;
            let count: usize = fields.next()?.parse().ok()?;
            let mut stamps = Vec::with_capacity(count.min(1024));
            for _ in 0..count {
                stamps.push(parse_stamp(lines.next()?)?);
            }
            Some((key, (stamps, answer)))
        })();
        let (key, entry) = parsed?;
        answers.insert(key, entry);
    }
    Some(answers)
}

fn parse_stamp(line: &str) -> Option<Stamp> {
    if let Some(path) = line.strip_prefix("absent ") {
        return Some(Stamp {
            path: path.to_owned(),
            state: None,
        });
    }
    let mut fields = line.strip_prefix("stamp ")?.splitn(7, ' ');
    let state = Fingerprint::from_fields(&mut fields)?;
    Some(Stamp {
        path: fields.next()?.to_owned(),
        state: Some(state),
    })
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
    let mut command = Command::new(&found);
    command
        .args(arguments)
        .env_clear()
        .envs(environment)
        .current_dir(cwd)
        .stdin(Stdio::null());
    // Read through pipes with a bound, the group killed when the probe exits: a probe
    // that leaves a background child holding its output does not hold the build.
    let limit = usize::try_from(OUTPUT_LIMIT).unwrap_or(usize::MAX);
    let mut stdout = crate::piped::Bounded::new(limit);
    let mut stderr = crate::piped::Bounded::new(limit);
    let exit = crate::piped::run_piped(
        &mut command,
        Some(PROBE_TIMEOUT),
        &mut |chunk| stdout.take(chunk),
        &mut |chunk| stderr.take(chunk),
    )
    .map_err(|e| format!("the toolchain probe `{shown}` cannot start: {e}"))?;
    if exit.timed_out {
        return Err(format!(
            "the toolchain probe `{shown}` ran longer than {} s",
            PROBE_TIMEOUT.as_secs()
        ));
    }
    let status = exit.status;
    let (stdout, stderr) = (stdout.bytes, stderr.bytes);
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
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let cwd = Path::new("/");
        let one = probes
            .result(&store, &probe("echo v1"), &environment(), cwd)
            .unwrap();
        assert_eq!(
            probes
                .result(&store, &probe("echo v1"), &environment(), cwd)
                .unwrap(),
            one
        );
        let two = probes
            .result(&store, &probe("echo v2"), &environment(), cwd)
            .unwrap();
        assert_ne!(one, two);
        let other_env = BTreeMap::from([
            ("PATH".to_owned(), "/usr/bin:/bin".to_owned()),
            ("V".to_owned(), "3".to_owned()),
        ]);
        let three = probes
            .result(&store, &probe("echo v$V"), &other_env, cwd)
            .unwrap();
        let empty = probes
            .result(&store, &probe("echo v$V"), &environment(), cwd)
            .unwrap();
        assert_ne!(three, empty, "the environment is the probe's");
    }

    #[test]
    fn failing_and_missing_probes_are_errors_with_their_output() {
        let probes = Probes::default();
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let cwd = Path::new("/");
        let error = probes
            .result(
                &store,
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
            .result(
                &store,
                &["no-such-probe-program".to_owned()],
                &environment(),
                cwd,
            )
            .unwrap_err();
        assert!(error.contains("cannot start"), "{error}");
    }

    #[test]
    fn a_probe_that_leaves_a_background_child_answers_at_once() {
        let (sender, answer) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let probes = Probes::default();
            let directory = tempfile::tempdir().unwrap();
            let store = Store::open(directory.path()).unwrap();
            let result = probes.result(
                &store,
                &probe("sleep 600 & echo $! > sleeper; echo v1"),
                &environment(),
                directory.path(),
            );
            let sleeper = std::fs::read_to_string(directory.path().join("sleeper"));
            let _ = sender.send((result, sleeper));
        });
        let (result, sleeper) = answer
            .recv_timeout(Duration::from_secs(20))
            .expect("the probe answers although its background child holds its pipes");
        assert!(result.is_ok(), "{result:?}");
        let sleeper = sleeper.expect("the probe wrote its child's id");
        std::thread::sleep(Duration::from_millis(50));
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", sleeper.trim()));
        assert!(
            stat.is_err() || stat.is_ok_and(|stat| stat.contains(") Z")),
            "the probe's background child survived"
        );
    }

    fn set_modified(path: &Path, ago: u64) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - Duration::from_secs(ago))
            .unwrap();
    }

    #[test]
    fn stored_answers_are_reused_only_while_every_stamp_holds() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(&directory.path().join("store")).unwrap();
        let bin = directory.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        let tool = bin.join("tool");
        std::fs::copy("/bin/echo", &tool).unwrap();
        set_modified(&tool, 60);
        let environment = BTreeMap::from([("PATH".to_owned(), bin.to_string_lossy().into_owned())]);
        let version = vec!["tool".to_owned(), "--version".to_owned()];
        let cwd = directory.path();
        // Each new `Probes` is a new process's: it sees only what the store keeps.
        let process = |expected_runs: usize| {
            let probes = Probes::default();
            // Answered without running exactly when the run would not be needed.
            assert_eq!(
                probes.is_answered(&store, &version, &environment, cwd, &resolve_program),
                expected_runs == 0
            );
            assert_eq!(
                probes.runs(),
                0,
                "asking whether it is answered runs nothing"
            );
            let answer = probes.result(&store, &version, &environment, cwd).unwrap();
            assert_eq!(
                probes.result(&store, &version, &environment, cwd).unwrap(),
                answer
            );
            assert_eq!(probes.runs(), expected_runs);
            probes.save(&store).unwrap();
            answer
        };
        let first = process(1);
        assert_eq!(process(0), first, "unchanged stamps: the stored answer");
        set_modified(&tool, 120);
        assert_eq!(process(1), first, "a changed stamp runs the probe again");
        assert_eq!(process(0), first);
        std::fs::copy("/bin/echo", bin.join("tool.new")).unwrap();
        std::fs::rename(bin.join("tool.new"), &tool).unwrap();
        process(1);
        process(1);
        set_modified(&tool, 60);
        process(1);
        process(0);
        // Another environment is another probe.
        let mut other = environment.clone();
        other.insert("LANG".to_owned(), "C".to_owned());
        let probes = Probes::default();
        probes.result(&store, &version, &other, cwd).unwrap();
        assert_eq!(probes.runs(), 1);
        // A probe without stamps runs in every process.
        for _ in 0..2 {
            let probes = Probes::default();
            assert!(!probes.is_answered(
                &store,
                &probe("echo v1"),
                &self::environment(),
                cwd,
                &resolve_program
            ));
            probes
                .result(&store, &probe("echo v1"), &self::environment(), cwd)
                .unwrap();
            probes.save(&store).unwrap();
            assert_eq!(probes.runs(), 1);
        }
    }

    #[test]
    fn the_stored_answers_file_round_trips_and_a_damaged_one_is_ignored() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        let key = Sha256Digest::of(b"key");
        let answer = Sha256Digest::of(b"answer");
        let stamps = vec![
            Stamp {
                path: "/usr/bin/a b".to_owned(),
                state: Some(Fingerprint {
                    device: 1,
                    inode: 2,
                    size: 3,
                    modified_ns: 4,
                    changed_ns: 5,
                    mode: 0o100755,
                }),
            },
            Stamp {
                path: "/x/rust-toolchain".to_owned(),
                state: None,
            },
        ];
        let probes = Probes::default();
        *probes.stored.lock().unwrap() = Some(HashMap::from([(key, (stamps.clone(), answer))]));
        *probes.changed.lock().unwrap() = true;
        probes.save(&store).unwrap();
        assert_eq!(load(&store).get(&key), Some(&(stamps, answer)));
        let text = String::from_utf8(store.read_derived(PROBES_FILE).unwrap().unwrap()).unwrap();
        store
            .write_derived(
                PROBES_FILE,
                text.replace("stamp 1 2 3", "stamp 1 2 4").as_bytes(),
            )
            .unwrap();
        assert!(load(&store).is_empty(), "a changed stamp is damage");
        let warnings = store.take_warnings();
        assert!(
            warnings.len() == 1 && warnings[0].contains("probes"),
            "{warnings:?}"
        );
        assert_eq!(store.read_derived(PROBES_FILE).unwrap(), None, "removed");
    }
}
