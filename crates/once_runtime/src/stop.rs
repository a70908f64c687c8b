//! Stopping a session: [`stop_session`] asks the supervisor (through `stop.request`)
//! and waits for the final record.
//!
//! Stopping is idempotent: a finished session's record is returned as it is, and a
//! second request while one is being carried out waits for the same end (the first
//! request's grace period holds). Requests are made under the state lock, so concurrent
//! stops from several processes are safe. A session whose supervisor is gone is
//! finished on the spot (`failed`, what is left of it killed; see
//! [`crate::session::observe`]).

use std::io;
use std::path::Path;
use std::time::{Duration, Instant};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::session::{self, STOP_FILE, SessionRecord, SessionStatus, now_unix_ms};

/// The grace period between `SIGTERM` and `SIGKILL` when the caller gives none.
pub const DEFAULT_GRACE: Duration = Duration::from_secs(10);

/// How long [`stop_session`] waits past the grace period for the supervisor to record
/// the end (killing and reaping take a moment).
const RECORD_SLACK: Duration = Duration::from_secs(5);

/// What ended a stopped session's processes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum StopSignal {
    /// Everything ended within the grace period after `SIGTERM` to the program's group.
    #[serde(rename = "SIGTERM")]
    Term,
    /// Something was still running after the grace period and got `SIGKILL`.
    #[serde(rename = "SIGKILL")]
    Kill,
}

impl StopSignal {
    pub fn as_str(self) -> &'static str {
        match self {
            StopSignal::Term => "SIGTERM",
            StopSignal::Kill => "SIGKILL",
        }
    }
}

/// Asks session `id` to stop with `grace` between `SIGTERM` and `SIGKILL`, and waits
/// (at most the grace period and a few seconds) for its final record, which it answers.
/// A session that has not finished by then is answered as it is (`stopping`).
pub fn stop_session(root: &Path, id: &str, grace: Duration) -> io::Result<SessionRecord> {
    let dir = session::session_dir(root, id)?;
    let record = session::observe(&dir)?;
    if record.status.is_final() {
        return Ok(record);
    }
    let requested = {
        let _state = session::lock_state(&dir)?;
        let mut record = session::read_record(&dir)?;
        if record.status.is_final() {
            return Ok(record);
        }
        let request = dir.join(STOP_FILE);
        if !request.exists() {
            let millis = u64::try_from(grace.as_millis()).unwrap_or(u64::MAX);
            let temporary = dir.join(".stop.request.tmp");
            std::fs::write(&temporary, format!("{millis}\n"))?;
            std::fs::rename(&temporary, &request)?;
            record.status = SessionStatus::Stopping;
            record.stop_requested_at_unix_ms = Some(now_unix_ms());
            session::write_record(&dir, &record)?;
        }
        record
    };
    let deadline = Instant::now() + grace + RECORD_SLACK;
    let mut record = requested;
    while Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
        record = session::observe(&dir)?;
        if record.status.is_final() {
            break;
        }
    }
    Ok(record)
}
