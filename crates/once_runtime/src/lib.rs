//! Runtime sessions: a target's program started in the background under a small
//! supervisor, followed through its status and logs, and stopped without leaving an
//! orphan (`docs/runtime.md`).
//!
//! A session lives on disk under `.once/runtime/<session_id>/`, so any `once` process (a
//! later CLI call, a restarted MCP server) lists and controls it:
//!
//! - [`session`]: the directory, the `session.json` record (written atomically under a
//!   state lock), the statuses, reading a record (which notices a supervisor that died),
//!   listing and pruning;
//! - [`start`]: the program specification and starting the supervisor (`once __supervise`,
//!   detached in a session of its own);
//! - [`supervisor`]: what the supervisor does for its whole life: holds the session's
//!   life lock, runs the program in its own process group as a child subreaper, records
//!   its output and its end, and carries out stop requests;
//! - [`stop`]: asking for a stop and waiting for its end (idempotent, safe when
//!   concurrent);
//! - [`logs`]: the interleaved log of line records with cursors;
//! - [`processes`]: finding a session's processes in `/proc` and killing them.

pub mod logs;
pub mod processes;
pub mod session;
pub mod start;
pub mod stop;
pub mod supervisor;

pub use logs::{LogPage, LogRecord, LogSource, read_logs};
pub use session::{SessionRecord, SessionStatus, list_sessions, prune_sessions, read_session};
pub use start::{ProgramSpec, program_specs, start_session};
pub use stop::{StopSignal, stop_session};
pub use supervisor::supervise;
