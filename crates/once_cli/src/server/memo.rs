//! The server's memory of no-op builds: the last answer of each `once build` command
//! line, replayed while nothing it depends on can have changed.
//!
//! A no-op build of 10,000 targets still completes 10,000 keys, looks at every output and
//! writes 10,000 evidence records; the answer is the same every time until something
//! changes. So when a build through the server was a complete no-op (every action a hit,
//! no warning, success), the server keeps what it printed ([`Memo`]) under the exact
//! request (command line, current directory, environment, terminals: the encoded
//! [`super::protocol::Request`]) and, for the next identical request, replays it when it
//! can prove nothing changed since:
//!
//! - the server's **generation** is the same: it grows whenever the workspace watcher
//!   reports any change (sources, manifests, anything in a watched directory) or the
//!   tree watcher ([`once_watch::TreeWatcher`]) reports any change below `.once/out` (the
//!   outputs) or the store's `actions/` and `blobs/`; both are fenced at the request
//!   (every change made before it is seen), and the build itself was bracketed by fences
//!   that saw nothing change while it ran;
//! - every source input the build read is a regular file (or missing), not a link or a
//!   directory, somewhere a change reaches the workspace watcher
//!   ([`once_watch::WorkspaceWatcher::covers`]), every output is under
//!   `.once/out`, and no action has toolchain probes or copies a host file (their
//!   identity lives outside the workspace);
//! - the programs the actions run resolve to the same files with the same metadata
//!   ([`ToolCheck`]; a program changed within two seconds of the build is never trusted,
//!   as the store's tool digests do not trust it);
//! - no remote cache is configured, and the memo is younger than [`MAX_AGE`].
//!
//! A replay records the evidence an in-process no-op build records (the same action
//! evidence with the time of the replay) and counts the hits in the store's statistics,
//! while the answer is sent (before its exit status: whoever reads the answer can query
//! the evidence); a failure to record is the warning the in-process build prints, last.
//! A JSON answer's `duration_ms` are those of the remembered build. It does not renew the records' last use (the in-process
//! build renews a use older than an hour; the memo's age bound keeps the difference
//! small). Whenever anything is in doubt, the server builds.

use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use once_build::Plan;
use once_build::session::{Built, Session};
use once_exec::{ActionStatus, CacheState};
use once_model::action::{ActionStep, OUT_DIR};

use crate::context::Stream;

/// How long a memo is replayed at most.
pub const MAX_AGE: Duration = Duration::from_secs(10 * 60);

/// The most programs a memo re-checks; a build running more distinct ones is not kept.
const MAX_TOOLS: usize = 256;

/// The largest answer kept.
pub const MAX_OUTPUT: usize = 64 << 20;

/// How many command lines are remembered.
pub const MAX_MEMOS: usize = 8;

/// What a program looked like: device, inode, size, modification and change times
/// (nanoseconds), mode.
type Fingerprint = (u64, u64, u64, i128, i128, u32);

fn fingerprint(path: &Path) -> Option<Fingerprint> {
    let m = std::fs::metadata(path).ok()?;
    let nanos = |seconds: i64, nanos: i64| i128::from(seconds) * 1_000_000_000 + i128::from(nanos);
    Some((
        m.dev(),
        m.ino(),
        m.size(),
        nanos(m.mtime(), m.mtime_nsec()),
        nanos(m.ctime(), m.ctime_nsec()),
        m.mode(),
    ))
}

/// A program an action runs: how it was found, and what it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ToolCheck {
    argv0: String,
    path_variable: String,
    cwd: PathBuf,
    found: PathBuf,
    fingerprint: Fingerprint,
}

impl ToolCheck {
    /// Whether the program is found at the same place and looks the same.
    fn holds(&self) -> bool {
        once_exec::tools::resolve_program(&self.argv0, &self.path_variable, &self.cwd)
            .is_ok_and(|found| found == self.found)
            && fingerprint(&self.found) == Some(self.fingerprint)
    }
}

/// What a no-op build left for its replays.
#[derive(Debug)]
pub struct Capture {
    root: PathBuf,
    /// The store the build used.
    pub store: PathBuf,
    /// The evidence the build recorded, ready to be recorded again at another time.
    evidence: Vec<once_evidence::Repeatable>,
    local_hits: u64,
    tools: Vec<ToolCheck>,
    /// The source inputs (absolute) the build read outside `.once`.
    pub inputs: Vec<PathBuf>,
}

impl Capture {
    /// Whether the programs are as the build found them.
    pub fn tools_hold(&self) -> bool {
        self.tools.iter().all(ToolCheck::holds)
    }

    /// Records what the in-process no-op build records: its evidence (now) and its hits.
    /// When the evidence cannot be recorded, answers the warning the in-process build
    /// prints then (`once: warning: …`, a line of its stderr).
    pub fn record(&self) -> Option<String> {
        let mut warning = None;
        let now = once_exec::evidence::now_unix_ms();
        // The journal's compaction, when this append makes it due, waits until the
        // client has its answer (see `daemon::replay`).
        if let Err(err) = once_evidence::append_repeated_deferred(&self.root, &self.evidence, now) {
            let message = format!("the evidence of this execution was not recorded: {err}");
            warning = Some(format!(
                "once: warning: {}\n",
                crate::human::printable(&message)
            ));
        }
        if let Ok(store) = once_exec::Store::open(&self.store) {
            let counts = once_remote::stats::CacheStats::of_command(self.local_hits, 0, 0, None);
            let _ = once_remote::stats::add(&store, &counts);
        }
        warning
    }
}

/// What a command wrote, in order: each stream's consecutive writes joined.
pub type Frames = Vec<(Stream, Vec<u8>)>;

/// What a build through the server answered, for replays.
pub struct Memo {
    /// The encoded request.
    pub key: Vec<u8>,
    /// The server's generation the answer holds for.
    pub generation: u64,
    pub frames: Frames,
    pub code: u8,
    pub capture: Capture,
    pub created: Instant,
}

/// Offers the build just done on this server thread for replays (nothing happens
/// outside the server, or when the build was not a complete no-op).
pub fn offer(root: &Path, plan: &Plan, built: &Built, session: &Session, code: i32) {
    let Some(context) = crate::context::current() else {
        return;
    };
    if code != 0 || context.signal.load(std::sync::atomic::Ordering::SeqCst) != 0 {
        return;
    }
    let capture = capture(root, plan, built, session);
    *context.memo.lock().unwrap_or_else(|e| e.into_inner()) = capture;
}

/// What a replay of `built` needs, when it is a no-op a replay may stand for.
fn capture(root: &Path, plan: &Plan, built: &Built, session: &Session) -> Option<Capture> {
    if built.refused
        || !plan.problems.is_empty()
        || !built.warnings.is_empty()
        || !built.report.warnings.is_empty()
        || built.report.results.len() != plan.actions.len()
        || session.uses_remote_cache(plan)
    {
        return None;
    }
    let all_hits = built
        .report
        .results
        .iter()
        .all(|r| r.status == ActionStatus::Succeeded && r.cache == Some(CacheState::Hit));
    if !all_hits {
        return None;
    }
    let host = once_exec::HostEnvironment::from_process();
    let settled = SystemTime::now() - Duration::from_secs(2);
    let mut tools: Vec<ToolCheck> = Vec::new();
    let mut inputs = Vec::new();
    let out_dir = format!("{OUT_DIR}/");
    for planned in &plan.actions {
        let action = &planned.action;
        if !action.cacheable
            || action
                .outputs
                .iter()
                .any(|output| !output.starts_with(&out_dir))
        {
            return None;
        }
        for input in &action.inputs {
            if input == OUT_DIR || input.starts_with(&out_dir) {
                continue;
            }
            if input == ".once" || input.starts_with(".once/") || input.starts_with('/') {
                return None;
            }
            inputs.push(root.join(input));
        }
        let command = match &action.step {
            ActionStep::Run(command) => command,
            ActionStep::MaterializeHostFile { .. } => return None,
            _ => continue,
        };
        if !command.probes.is_empty() {
            return None;
        }
        let argv0 = command.argv.first().map_or("", String::as_str);
        if argv0 == once_exec::executor::ONCE_PROGRAM {
            // The server's own binary: the handshake checks its identity.
            continue;
        }
        let path_variable = host
            .action_variable(&command.env, "PATH", root)
            .map_or_else(
                || once_exec::environment::DEFAULT_PATH.to_owned(),
                |path| path.into_owned(),
            );
        let cwd = if argv0.contains('/') {
            absolute(root, &command.cwd)
        } else {
            PathBuf::new()
        };
        if tools
            .iter()
            .any(|t| t.argv0 == argv0 && t.path_variable == path_variable && t.cwd == cwd)
        {
            continue;
        }
        if tools.len() >= MAX_TOOLS {
            return None;
        }
        let found = once_exec::tools::resolve_program(argv0, &path_variable, &cwd).ok()?;
        let fingerprint = fingerprint(&found)?;
        let metadata = std::fs::metadata(&found).ok()?;
        let recent = |time: std::io::Result<SystemTime>| time.map_or(true, |t| t > settled);
        if recent(metadata.modified()) || ctime(&metadata) > settled {
            return None;
        }
        tools.push(ToolCheck {
            argv0: argv0.to_owned(),
            path_variable,
            cwd,
            found,
            fingerprint,
        });
    }
    inputs.sort();
    inputs.dedup();
    let evidence = plan_evidence(plan, built);
    let (local_hits, ..) = once_build::action_counts(&built.report);
    Some(Capture {
        root: root.to_path_buf(),
        store: session.store().path().to_path_buf(),
        evidence,
        local_hits: u64::try_from(local_hits).unwrap_or(u64::MAX),
        tools,
        inputs,
    })
}

/// The absolute path of the workspace-relative `relative` under `root` (as the executor
/// makes a command's working directory).
fn absolute(root: &Path, relative: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    for part in relative.split('/').filter(|part| !part.is_empty()) {
        path.push(part);
    }
    path
}

fn ctime(metadata: &std::fs::Metadata) -> SystemTime {
    let seconds = u64::try_from(metadata.ctime()).unwrap_or(0);
    let nanos = u32::try_from(metadata.ctime_nsec()).unwrap_or(0);
    SystemTime::UNIX_EPOCH + Duration::new(seconds, nanos)
}

/// The evidence the build recorded, in the order it recorded it.
fn plan_evidence(plan: &Plan, built: &Built) -> Vec<once_evidence::Repeatable> {
    let planned: std::collections::HashMap<&str, &once_exec::PlannedAction> = plan
        .actions
        .iter()
        .map(|planned| (planned.action.id.as_str(), planned))
        .collect();
    built
        .report
        .results
        .iter()
        .filter_map(|result| {
            once_exec::evidence::action_evidence(planned.get(result.id.as_str())?, result)
        })
        .map(|evidence| once_evidence::Repeatable::new(&evidence))
        .collect()
}
