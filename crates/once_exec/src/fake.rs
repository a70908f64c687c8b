//! An in-memory [`ProcessRunner`] for tests: no process is started; a script decides, per
//! command line, what the "program" writes, prints and exits with.
//!
//! The fake records every command it ran and the highest number of commands running at
//! once, which is how scheduling tests see parallelism and order.

use std::io::{self, Write as _};
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use crate::runner::{ProcessExit, ProcessRequest, ProcessRunner};

/// What a fake program does.
#[derive(Debug, Clone, Default)]
pub struct FakeOutcome {
    /// Files to write, paths relative to the working directory.
    pub writes: Vec<(String, Vec<u8>)>,
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit_code: i32,
    /// How long it pretends to run (cut short by cancellation).
    pub duration: Duration,
}

impl FakeOutcome {
    /// Succeeds after writing `bytes` to `path`.
    pub fn writes(path: &str, bytes: &[u8]) -> FakeOutcome {
        FakeOutcome {
            writes: vec![(path.to_owned(), bytes.to_vec())],
            ..FakeOutcome::default()
        }
    }

    pub fn failing(exit_code: i32, stderr: &str) -> FakeOutcome {
        FakeOutcome {
            exit_code,
            stderr: stderr.as_bytes().to_vec(),
            ..FakeOutcome::default()
        }
    }

    pub fn taking(mut self, duration: Duration) -> FakeOutcome {
        self.duration = duration;
        self
    }
}

type Script = dyn Fn(&[String]) -> FakeOutcome + Send + Sync;

/// The fake runner.
pub struct FakeRunner {
    script: Box<Script>,
    state: Mutex<FakeState>,
}

#[derive(Default)]
struct FakeState {
    ran: Vec<Vec<String>>,
    running: usize,
    peak: usize,
}

impl FakeRunner {
    pub fn new(script: impl Fn(&[String]) -> FakeOutcome + Send + Sync + 'static) -> Self {
        FakeRunner {
            script: Box::new(script),
            state: Mutex::new(FakeState::default()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, FakeState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The command lines run so far, in the order they started.
    pub fn ran(&self) -> Vec<Vec<String>> {
        self.lock().ran.clone()
    }

    /// The highest number of commands that ran at once.
    pub fn peak_parallelism(&self) -> usize {
        self.lock().peak
    }
}

impl ProcessRunner for FakeRunner {
    fn run(&self, mut request: ProcessRequest<'_>) -> io::Result<ProcessExit> {
        {
            let mut state = self.lock();
            state.ran.push(request.argv.to_vec());
            state.running += 1;
            state.peak = state.peak.max(state.running);
        }
        let outcome = (self.script)(request.argv);
        let cancelled = request.cancel.sleep(outcome.duration);
        let result = (|| {
            if cancelled {
                return Ok(ProcessExit::Signal(9));
            }
            for (path, bytes) in &outcome.writes {
                let path: PathBuf = request.cwd.join(path);
                if let Some(parent) = path.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(&path, bytes)?;
            }
            request.stdout.write_all(&outcome.stdout)?;
            request.stderr.write_all(&outcome.stderr)?;
            Ok(ProcessExit::Code(outcome.exit_code))
        })();
        self.lock().running -= 1;
        result
    }
}
