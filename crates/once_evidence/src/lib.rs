//! Evidence: a durable `once.evidence.v1` record of every action an execution ran or
//! reused, in the workspace's SQLite database `.once/once.sqlite`.
//!
//! A record says that at `created_at_unix_ms` an action with this action digest (its
//! complete key) ended with this status, exit code and cache state, for this subject (a
//! target's capability, or a command). It is historical provenance, not proof that the
//! inputs are still unchanged: whoever needs a current result runs the capability again.
//!
//! - [`EvidenceRecord`], [`ActionEvidence`], [`Subject`]: what a record holds; its `id` is
//!   [`record_id`], a SHA-256 over its content and time.
//! - [`EvidenceStore`]: the database. It is opened through the workspace's confined paths
//!   (`.once` is never followed when it is a symbolic link), in WAL mode with a busy
//!   timeout, so concurrent `once` processes wait for each other instead of failing; the
//!   `once_schema` table says which schema the file holds (a newer or foreign one is an
//!   [`EvidenceError`], an older one is rebuilt).
//! - [`append_to_journal`]: how a build records without opening SQLite: one appended
//!   write to `.once/evidence.journal`, which every opener of the database ingests first
//!   (so every reader sees it).
//! - [`append_repeated`]: the same, for the same evidence recorded again at another time
//!   ([`Repeatable`]: its id hashed up to the time and its line made once);
//!   [`append_repeated_deferred`] leaves the journal's compaction to a later
//!   [`compact_journal_if_due`] (the workspace server's, after it has answered).
//! - [`query_workspace`]: the newest records matching a subject filter, for `once query
//!   evidence` and the MCP tool `once_query_evidence`; no database yet is no records.
//!
//! The execution layer turns its results into records (`once_exec::evidence`).

mod database;
mod journal;
mod record;

/// The digest type of records' fields.
pub use once_model::Sha256Digest;

pub use database::{
    DATABASE_PATH, DEFAULT_LIMIT, EvidenceError, EvidenceStore, MAX_LIMIT, RETAINED_RECORDS,
    SCHEMA_VERSION, query_workspace,
};
pub use journal::{
    JOURNAL_INGEST_BYTES, JOURNAL_PATH, Repeatable, append_repeated, append_repeated_deferred,
    append_to_journal, compact_journal_if_due,
};
pub use record::{
    ActionEvidence, CacheOutcome, EVIDENCE_SCHEMA, EvidenceRecord, EvidenceStatus, RECORD_KIND,
    Subject, record_id,
};
