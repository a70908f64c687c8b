//! The evidence journal, `.once/evidence.journal`: where a build appends its records
//! without opening SQLite, and from where every opener of the database takes them.
//!
//! - **Appending** ([`append_to_journal`]) is one `O_APPEND` write of one line per record
//!   (a JSON array of the database's columns), under a shared `flock` of the journal, not
//!   flushed to the disk (like the database's commits, see [`crate::database`]). Writers
//!   of several processes append side by side.
//! - **Ingesting** (by [`EvidenceStore::open`](crate::EvidenceStore::open) and so by every
//!   reader: `once query evidence`, the MCP tool `once_query_evidence`) happens under the
//!   database's write lock and an exclusive `flock` of the journal: the complete lines go
//!   into the database in one transaction (`INSERT OR IGNORE`: a record's id is its
//!   content, so ingesting twice after a crash stores it once), then the journal is
//!   emptied. An incomplete last line can only be a writer that died mid-write (writers
//!   hold the shared lock while they write) and is dropped.
//! - **Bounded.** A writer that leaves the journal above [`JOURNAL_INGEST_BYTES`] ingests
//!   it itself, so builds nobody queries do not grow it without end.

use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::Path;

use once_db::Sha256Digest;
use once_db::confined;
use rustix::fs::{FlockOperation, Mode, OFlags};
use serde_json::{Value, json};

use crate::database::{EvidenceError, EvidenceStore, StoredRow};
use crate::record::EvidenceRecord;

/// Where the journal lives, relative to the workspace root.
pub const JOURNAL_PATH: &str = ".once/evidence.journal";

const JOURNAL_NAME: &str = "evidence.journal";

/// A writer that leaves the journal larger than this ingests it into the database.
pub const JOURNAL_INGEST_BYTES: u64 = 16 * 1024 * 1024;

/// Appends `records` to the journal of the workspace at `root` (making `.once` and the
/// journal when missing) in one write; returns how many were appended. Ingests the
/// journal when it has grown past [`JOURNAL_INGEST_BYTES`].
pub fn append_to_journal(root: &Path, records: &[EvidenceRecord]) -> Result<usize, EvidenceError> {
    if records.is_empty() {
        return Ok(0);
    }
    let path = root.join(JOURNAL_PATH);
    let io_error = |source: io::Error| EvidenceError::Io {
        path: path.clone(),
        source,
    };
    let mut lines = String::new();
    for record in records {
        lines.push_str(&record_line(record));
        lines.push('\n');
    }
    let journal = open_journal(root, true)
        .map_err(io_error)?
        .ok_or_else(|| io_error(io::Error::other("the directory `.once` could not be made")))?;
    rustix::fs::flock(&journal, FlockOperation::LockShared).map_err(|e| io_error(e.into()))?;
    let mut file = std::fs::File::from(journal);
    file.write_all(lines.as_bytes()).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    drop(file);
    if size > JOURNAL_INGEST_BYTES {
        EvidenceStore::open(root)?;
    }
    Ok(records.len())
}

/// Whether the workspace at `root` has a journal (with or without records).
pub(crate) fn journal_exists(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(JOURNAL_PATH)).is_ok_and(|m| m.file_type().is_file())
}

/// Opens the journal for appending and reading, without following links.
fn open_journal(root: &Path, create: bool) -> io::Result<Option<OwnedFd>> {
    let root_handle = confined::open_root(root)?;
    let Some(directory) = confined::open_directory_at(root_handle.as_fd(), ".once", create)? else {
        return Ok(None);
    };
    let mut flags = OFlags::RDWR | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if create {
        flags |= OFlags::CREATE;
    }
    match rustix::fs::openat(&directory, JOURNAL_NAME, flags, Mode::from_raw_mode(0o644)) {
        Ok(journal) => Ok(Some(journal)),
        Err(rustix::io::Errno::NOENT) if !create => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Moves the journal's records into `store` (see the module documentation).
pub(crate) fn ingest(store: &mut EvidenceStore, root: &Path) -> Result<usize, EvidenceError> {
    let path = root.join(JOURNAL_PATH);
    let io_error = |source: io::Error| EvidenceError::Io {
        path: path.clone(),
        source,
    };
    let Some(journal) = open_journal(root, false).map_err(io_error)? else {
        return Ok(0);
    };
    rustix::fs::flock(&journal, FlockOperation::LockExclusive).map_err(|e| io_error(e.into()))?;
    let mut file = std::fs::File::from(journal);
    let mut text = Vec::new();
    file.read_to_end(&mut text).map_err(io_error)?;
    if text.is_empty() {
        return Ok(0);
    }
    let complete = text
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |last| last + 1);
    let rows: Vec<StoredRow> = text[..complete]
        .split(|byte| *byte == b'\n')
        .filter_map(row_from_line)
        .collect();
    let added = store.insert_rows(&rows)?;
    file.set_len(0).map_err(io_error)?;
    Ok(added)
}

/// One record as a journal line (without the newline): its database columns in order.
fn record_line(record: &EvidenceRecord) -> String {
    let row = StoredRow::of(record);
    json!([
        row.id,
        row.subject_kind,
        row.subject_id,
        row.subject_capability,
        row.action,
        row.status,
        row.action_digest,
        row.input_digest,
        row.cache,
        row.exit_code,
        row.stdout_digest,
        row.stderr_digest,
        row.created_at_unix_ms,
    ])
    .to_string()
}

/// A journal line back as a row; `None` for a line that is not one (checked like every
/// stored row when it is read back as a record).
fn row_from_line(line: &[u8]) -> Option<StoredRow> {
    let columns: Vec<Value> = serde_json::from_slice(line).ok()?;
    let [
        id,
        subject_kind,
        subject_id,
        subject_capability,
        action,
        status,
        action_digest,
        input_digest,
        cache,
        exit_code,
        stdout_digest,
        stderr_digest,
        created_at_unix_ms,
    ] = columns.as_slice()
    else {
        return None;
    };
    let text = |value: &Value| value.as_str().map(str::to_owned);
    let optional = |value: &Value| match value {
        Value::Null => Some(None),
        value => value.as_str().map(|s| Some(s.to_owned())),
    };
    // Digests are checked here so that a line that is not a record is never stored.
    let digest = |value: &Value| value.as_str().and_then(Sha256Digest::from_hex).map(|_| ());
    digest(id)?;
    digest(action_digest)?;
    Some(StoredRow {
        id: text(id)?,
        subject_kind: text(subject_kind)?,
        subject_id: text(subject_id)?,
        subject_capability: optional(subject_capability)?,
        action: optional(action)?,
        status: text(status)?,
        action_digest: text(action_digest)?,
        input_digest: optional(input_digest)?,
        cache: text(cache)?,
        exit_code: match exit_code {
            Value::Null => None,
            code => Some(i32::try_from(code.as_i64()?).ok()?),
        },
        stdout_digest: optional(stdout_digest)?,
        stderr_digest: optional(stderr_digest)?,
        created_at_unix_ms: created_at_unix_ms.as_i64()?,
    })
}
