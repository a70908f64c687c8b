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
//! - **Bounded, without SQLite.** A writer that leaves the journal above
//!   [`JOURNAL_INGEST_BYTES`] **compacts** it ([`compact`]): under the exclusive `flock`
//!   it rewrites the journal to the lines ingesting it could keep (the newest
//!   [`RETAINED_RECORDS`] distinct records; the database keeps no more, so the others
//!   would be inserted only to be deleted in the same transaction) in a new file renamed
//!   over it. A build of 10,000 actions that found the journal full paid a transaction of
//!   40,000 rows (1.7 s); the compaction reads and writes a few MiB. Only when the
//!   retained lines alone fill half the bound (long lines) does the writer ingest
//!   instead, as before.
//! - **Replaced, never lost.** Because a compaction replaces the file, everyone who locks
//!   the journal checks, with the lock held, that the file it locked is still the one at
//!   `.once/evidence.journal`, and opens the current one otherwise ([`open_locked`]): an
//!   appender that opened the old file before the rename would otherwise write its
//!   records into a file nobody reads again.

use std::collections::HashSet;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::path::Path;

use once_host::confined;
use once_model::Sha256Digest;
use rustix::fs::{AtFlags, FlockOperation, Mode, OFlags};

use crate::database::{EvidenceError, EvidenceStore, RETAINED_RECORDS, StoredRow};
use crate::record::{ActionEvidence, EvidenceRecord};

/// Where the journal lives, relative to the workspace root.
pub const JOURNAL_PATH: &str = ".once/evidence.journal";

const JOURNAL_NAME: &str = "evidence.journal";

/// Where a compaction writes the journal's new contents before renaming them over it.
const COMPACTING_NAME: &str = "evidence.journal.compacting";

/// A writer that leaves the journal larger than this compacts it (or, when compacting
/// cannot bring it under half of this, ingests it into the database).
pub const JOURNAL_INGEST_BYTES: u64 = 16 * 1024 * 1024;

/// Appends `records` to the journal of the workspace at `root` (making `.once` and the
/// journal when missing) in one write; returns how many were appended. Compacts the
/// journal when it has grown past [`JOURNAL_INGEST_BYTES`].
pub fn append_to_journal(root: &Path, records: &[EvidenceRecord]) -> Result<usize, EvidenceError> {
    append_bounded(root, records, JOURNAL_INGEST_BYTES)
}

/// [`append_to_journal`] with the size past which the journal is compacted.
pub(crate) fn append_bounded(
    root: &Path,
    records: &[EvidenceRecord],
    bound: u64,
) -> Result<usize, EvidenceError> {
    if records.is_empty() {
        return Ok(0);
    }
    let mut lines = Vec::new();
    for record in records {
        write_record_line(&mut lines, record);
        lines.push(b'\n');
    }
    append_lines(root, &lines, bound)?;
    Ok(records.len())
}

/// The same evidence recorded again and again at other times (the workspace server
/// answering a no-op build from memory records every action's evidence each time): the
/// record's id hashed up to its time once, and its journal line written but for its id
/// and time, so that each repetition costs one SHA-256 block and a copy.
#[derive(Clone)]
pub struct Repeatable {
    /// The SHA-256 state after everything [`crate::record_id`] hashes but the time.
    hasher: sha2::Sha256,
    /// The journal line between the id and the time.
    middle: Vec<u8>,
}

impl std::fmt::Debug for Repeatable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repeatable")
            .field("line", &String::from_utf8_lossy(&self.middle))
            .finish_non_exhaustive()
    }
}

impl Repeatable {
    pub fn new(evidence: &ActionEvidence) -> Repeatable {
        use sha2::Digest as _;
        let encoding = crate::record::canonical_encoding(evidence, 0);
        let mut hasher = sha2::Sha256::new();
        hasher.update(&encoding[..encoding.len().saturating_sub(8)]);
        // The line of the record with a placeholder id and the time 0: `["<id>",…,0]`.
        let mut line = Vec::new();
        write_record_line(
            &mut line,
            &EvidenceRecord {
                id: Sha256Digest([0; 32]),
                evidence: evidence.clone(),
                created_at_unix_ms: 0,
            },
        );
        let start = 2 + 64;
        let end = line.len().saturating_sub(2);
        Repeatable {
            hasher,
            middle: line.get(start..end).map(<[u8]>::to_vec).unwrap_or_default(),
        }
    }

    /// The journal line of the record made at `created_at_unix_ms`, newline included.
    fn write_line(&self, out: &mut Vec<u8>, created_at_unix_ms: u64) {
        use sha2::Digest as _;
        let id: [u8; 32] = self
            .hasher
            .clone()
            .chain_update(created_at_unix_ms.to_le_bytes())
            .finalize()
            .into();
        out.extend_from_slice(b"[\"");
        out.extend_from_slice(Sha256Digest(id).to_hex().as_bytes());
        out.extend_from_slice(&self.middle);
        // As the stored row has it (`StoredRow::of`).
        let stored = i64::try_from(created_at_unix_ms).unwrap_or(i64::MAX);
        out.extend_from_slice(stored.to_string().as_bytes());
        out.extend_from_slice(b"]\n");
    }
}

/// Appends the records of `repeated`, each made at `created_at_unix_ms`, to the journal
/// (as [`append_to_journal`] would append them); returns how many were appended.
pub fn append_repeated(
    root: &Path,
    repeated: &[Repeatable],
    created_at_unix_ms: u64,
) -> Result<usize, EvidenceError> {
    append_repeated_bounded(root, repeated, created_at_unix_ms, JOURNAL_INGEST_BYTES)
}

/// [`append_repeated`] without the compaction the append may make due: for a server
/// that answers its client first and then calls [`compact_journal_if_due`].
pub fn append_repeated_deferred(
    root: &Path,
    repeated: &[Repeatable],
    created_at_unix_ms: u64,
) -> Result<usize, EvidenceError> {
    append_repeated_bounded(root, repeated, created_at_unix_ms, u64::MAX)
}

/// The lines of `repeated` at `created_at_unix_ms` in one write; compacts past `bound`.
fn append_repeated_bounded(
    root: &Path,
    repeated: &[Repeatable],
    created_at_unix_ms: u64,
    bound: u64,
) -> Result<usize, EvidenceError> {
    if repeated.is_empty() {
        return Ok(0);
    }
    let mut lines = Vec::with_capacity(repeated.iter().map(|r| r.middle.len() + 96).sum());
    for record in repeated {
        record.write_line(&mut lines, created_at_unix_ms);
    }
    append_lines(root, &lines, bound)?;
    Ok(repeated.len())
}

/// Compacts (or ingests) the journal of the workspace at `root` when it has grown past
/// [`JOURNAL_INGEST_BYTES`], as an append leaving it there would have.
pub fn compact_journal_if_due(root: &Path) -> Result<(), EvidenceError> {
    let path = root.join(JOURNAL_PATH);
    let size = match std::fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.file_type().is_file() => metadata.len(),
        Ok(_) => return Ok(()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(source) => return Err(EvidenceError::Io { path, source }),
    };
    let bound = JOURNAL_INGEST_BYTES;
    if size > bound
        && !compact(root, bound, bound / 2).map_err(|source| EvidenceError::Io {
            path: path.clone(),
            source,
        })?
    {
        EvidenceStore::open(root)?;
    }
    Ok(())
}

/// Appends complete journal lines in one write; compacts past `bound`.
fn append_lines(root: &Path, lines: &[u8], bound: u64) -> Result<(), EvidenceError> {
    let path = root.join(JOURNAL_PATH);
    let io_error = |source: io::Error| EvidenceError::Io {
        path: path.clone(),
        source,
    };
    let (_, mut file) = open_locked(root, true, FlockOperation::LockShared)
        .map_err(io_error)?
        .ok_or_else(|| io_error(io::Error::other("the directory `.once` could not be made")))?;
    file.write_all(lines).map_err(io_error)?;
    let size = file.metadata().map_err(io_error)?.len();
    drop(file);
    if size > bound && !compact(root, bound, bound / 2).map_err(io_error)? {
        EvidenceStore::open(root)?;
    }
    Ok(())
}

/// Whether the workspace at `root` has a journal (with or without records).
pub(crate) fn journal_exists(root: &Path) -> bool {
    std::fs::symlink_metadata(root.join(JOURNAL_PATH)).is_ok_and(|m| m.file_type().is_file())
}

/// Opens the journal for appending and reading, without following links, and locks it
/// (`operation`); `None` when it does not exist and `create` is false. With the lock
/// held, the file must still be the one at `.once/evidence.journal`: a compaction that
/// held the exclusive lock meanwhile renamed a new file over it, and the old one is
/// read by nobody again, so it is closed and the current one opened. Answers the
/// `.once` directory too.
pub(crate) fn open_locked(
    root: &Path,
    create: bool,
    operation: FlockOperation,
) -> io::Result<Option<(OwnedFd, std::fs::File)>> {
    let root_handle = confined::open_root(root)?;
    let Some(directory) = confined::open_directory_at(root_handle.as_fd(), ".once", create)? else {
        return Ok(None);
    };
    let mut flags = OFlags::RDWR | OFlags::APPEND | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    if create {
        flags |= OFlags::CREATE;
    }
    loop {
        let journal =
            match rustix::fs::openat(&directory, JOURNAL_NAME, flags, Mode::from_raw_mode(0o644)) {
                Ok(journal) => journal,
                Err(rustix::io::Errno::NOENT) if !create => return Ok(None),
                Err(e) => return Err(e.into()),
            };
        rustix::fs::flock(&journal, operation)?;
        let held = rustix::fs::fstat(&journal)?;
        match rustix::fs::statat(&directory, JOURNAL_NAME, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(current) if current.st_dev == held.st_dev && current.st_ino == held.st_ino => {
                return Ok(Some((directory, std::fs::File::from(journal))));
            }
            // Replaced (or removed) between the open and the lock: take the current one.
            Ok(_) | Err(rustix::io::Errno::NOENT) => {}
            Err(e) => return Err(e.into()),
        }
    }
}

/// Rewrites the journal of the workspace at `root`, when it is larger than `above`, to
/// the lines [`retained`] keeps, under its exclusive lock, through a new file renamed
/// over it (a crash leaves the old journal or the new one, whole). Answers false,
/// changing nothing, when those lines alone are larger than `room` (compacting would
/// not make room: the caller ingests instead).
///
/// What it drops is what ingesting the journal would insert only for the same
/// transaction to delete: ingesting inserts the journal's records in order (a record
/// seen before is ignored), then deletes all but the database's newest
/// [`RETAINED_RECORDS`]; when the journal holds more distinct records than that, the
/// older ones among them cannot be among the newest. (A journal line can already be in
/// the database only when an ingest committed and crashed before emptying the journal;
/// those lines come first, so when one of them is among the kept lines, every line
/// dropped is such a line too, ignored by the ingest anyway.)
pub(crate) fn compact(root: &Path, above: u64, room: u64) -> io::Result<bool> {
    let Some((directory, mut file)) = open_locked(root, false, FlockOperation::LockExclusive)?
    else {
        return Ok(true);
    };
    let mut text = Vec::new();
    file.read_to_end(&mut text)?;
    // Another writer may have compacted it while this one waited for the lock.
    if text.len() as u64 <= above {
        return Ok(true);
    }
    let kept = retained_lines(complete_lines(&text));
    let size: usize = kept.iter().map(|line| line.len() + 1).sum();
    if size as u64 > room {
        return Ok(false);
    }
    let mut compacted = Vec::with_capacity(size);
    for line in &kept {
        compacted.extend_from_slice(line);
        compacted.push(b'\n');
    }
    match rustix::fs::unlinkat(&directory, COMPACTING_NAME, AtFlags::empty()) {
        Ok(()) | Err(rustix::io::Errno::NOENT) => {}
        Err(e) => return Err(e.into()),
    }
    let new = rustix::fs::openat(
        &directory,
        COMPACTING_NAME,
        OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC,
        Mode::from_raw_mode(0o644),
    )?;
    std::fs::File::from(new).write_all(&compacted)?;
    rustix::fs::renameat(&directory, COMPACTING_NAME, &directory, JOURNAL_NAME)?;
    // The lock of the old file is released with it: whoever waited for it finds the
    // file replaced and opens the new one (see `open_locked`).
    drop(file);
    Ok(true)
}

/// The complete lines of a journal's text: an incomplete last line can only be a writer
/// that died mid-write (writers hold the shared lock while they write).
fn complete_lines(text: &[u8]) -> &[u8] {
    let complete = text
        .iter()
        .rposition(|byte| *byte == b'\n')
        .map_or(0, |last| last + 1);
    &text[..complete]
}

/// The records of `lines` ingesting them can keep, in order, each with its line: the
/// lines that are records (others are dropped), each record at its first line (a
/// record's id is its content: a later line of it is ignored by `INSERT OR IGNORE`),
/// and of those the last [`RETAINED_RECORDS`].
fn retained(lines: &[u8]) -> Vec<(&[u8], StoredRow)> {
    let mut seen = HashSet::new();
    let mut rows: Vec<(&[u8], StoredRow)> = lines
        .split(|byte| *byte == b'\n')
        .filter_map(|line| row_from_line(line).map(|row| (line, row)))
        .filter(|(_, row)| seen.insert(row.id.clone()))
        .collect();
    let retained = usize::try_from(RETAINED_RECORDS).unwrap_or(usize::MAX);
    let older = rows.len().saturating_sub(retained);
    rows.drain(..older);
    rows
}

/// The lines [`retained`] keeps, found from the end: a compaction keeps the last
/// [`RETAINED_RECORDS`] of a journal four times as long, and decoding only those (and
/// reading the others' ids) took it a quarter of the time. The same lines as
/// [`retained`] answers: when a record is met twice (its first line would decide its
/// place), or a line before the kept ones could be a kept record's, it answers what
/// [`retained`] does.
fn retained_lines(lines: &[u8]) -> Vec<&[u8]> {
    let every_line: Vec<&[u8]> = lines.split(|byte| *byte == b'\n').collect();
    let limit = usize::try_from(RETAINED_RECORDS).unwrap_or(usize::MAX);
    let in_order = || {
        retained(lines)
            .into_iter()
            .map(|(line, _)| line)
            .collect::<Vec<_>>()
    };
    let mut ids = HashSet::new();
    let mut kept = Vec::new();
    let mut start = every_line.len();
    while start > 0 && kept.len() < limit {
        start -= 1;
        let line = every_line[start];
        if let Some(row) = row_from_line(line) {
            if !ids.insert(row.id) {
                return in_order();
            }
            kept.push(line);
        }
    }
    // An earlier line of a kept record would be its first: rare (an ingest that crashed
    // before emptying the journal), and then the order is taken from the start.
    let earlier_kept = every_line[..start].iter().any(|line| {
        let id = match canonical_id(line) {
            Some(id) => Some(id.to_owned()),
            None => row_from_line(line).map(|row| row.id),
        };
        id.is_some_and(|id| ids.contains(&id))
    });
    if earlier_kept {
        return in_order();
    }
    kept.reverse();
    kept
}

/// The id of a line as [`write_record_line`] writes it (`["<64 hex digits>",…`), without
/// decoding the rest; `None` for a line of any other spelling.
fn canonical_id(line: &[u8]) -> Option<&str> {
    let id = line.strip_prefix(b"[\"")?.get(..64)?;
    if line.get(66) != Some(&b'"') || !id.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    std::str::from_utf8(id).ok()
}

/// Moves the journal's records into `store` (see the module documentation): only those
/// [`retained`] keeps, which leaves the database as ingesting all of them would.
pub(crate) fn ingest(store: &mut EvidenceStore, root: &Path) -> Result<usize, EvidenceError> {
    let path = root.join(JOURNAL_PATH);
    let io_error = |source: io::Error| EvidenceError::Io {
        path: path.clone(),
        source,
    };
    let Some((_, mut file)) =
        open_locked(root, false, FlockOperation::LockExclusive).map_err(io_error)?
    else {
        return Ok(0);
    };
    let mut text = Vec::new();
    file.read_to_end(&mut text).map_err(io_error)?;
    if text.is_empty() {
        return Ok(0);
    }
    let rows: Vec<StoredRow> = retained(complete_lines(&text))
        .into_iter()
        .map(|(_, row)| row)
        .collect();
    let added = store.insert_rows(&rows)?;
    file.set_len(0).map_err(io_error)?;
    Ok(added)
}

/// Appends one record as a journal line (without the newline) to `out`: its database
/// columns in order, as a JSON array, written straight from the row's columns (a no-op
/// build of 10,000 targets writes 10,000 lines; through a `serde_json::Value` of copied
/// columns that was most of the evidence thread's time).
fn write_record_line(out: &mut Vec<u8>, record: &EvidenceRecord) {
    let row = StoredRow::of(record);
    let columns = (
        &row.id,
        &row.subject_kind,
        &row.subject_id,
        &row.subject_capability,
        &row.action,
        &row.status,
        &row.action_digest,
        &row.input_digest,
        &row.cache,
        row.exit_code,
        &row.stdout_digest,
        &row.stderr_digest,
        row.created_at_unix_ms,
    );
    // Writing strings and numbers into a vector cannot fail.
    let _ = serde_json::to_writer(out, &columns);
}

/// A journal line back as a row; `None` for a line that is not one (checked like every
/// stored row when it is read back as a record).
fn row_from_line(line: &[u8]) -> Option<StoredRow> {
    // Decoded straight into the columns' types (a compaction decodes every line of a
    // 16 MiB journal; through `serde_json::Value` that was most of its time). A line of
    // another shape (more or fewer columns, a column of another type) is not a record.
    let (
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
    ): LineColumns = serde_json::from_slice(line).ok()?;
    // Digests are checked here so that a line that is not a record is never stored.
    Sha256Digest::from_hex(&id)?;
    Sha256Digest::from_hex(&action_digest)?;
    Some(StoredRow {
        id,
        subject_kind,
        subject_id,
        subject_capability,
        action,
        status,
        action_digest,
        input_digest,
        cache,
        exit_code: match exit_code {
            None => None,
            Some(code) => Some(i32::try_from(code).ok()?),
        },
        stdout_digest,
        stderr_digest,
        created_at_unix_ms,
    })
}

/// A journal line's columns, in [`write_record_line`]'s order.
type LineColumns = (
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
    String,
    Option<String>,
    String,
    Option<i64>,
    Option<String>,
    Option<String>,
    i64,
);

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// One record's journal line.
    fn record_line(record: &EvidenceRecord) -> String {
        let mut line = Vec::new();
        write_record_line(&mut line, record);
        String::from_utf8(line).unwrap()
    }
    use crate::record::{ActionEvidence, CacheOutcome, EvidenceStatus, Subject};

    fn record(n: u64) -> EvidenceRecord {
        let evidence = ActionEvidence {
            subject: Subject::Target {
                id: format!("pkgs/p{n}/T"),
                capability: "build".into(),
            },
            action: Some(format!("pkgs/p{n}/T#build/0")),
            status: EvidenceStatus::Passed,
            action_digest: Sha256Digest::of(n.to_string().as_bytes()),
            input_digest: None,
            cache: CacheOutcome::Hit,
            exit_code: Some(0),
            stdout: None,
            stderr: None,
        };
        EvidenceRecord::new(evidence, 1_000 + n)
    }

    /// The database's record ids, oldest first.
    fn stored_ids(root: &Path) -> Vec<String> {
        let connection = rusqlite::Connection::open(root.join(crate::DATABASE_PATH)).unwrap();
        let mut select = connection
            .prepare("SELECT id FROM evidence_records ORDER BY seq")
            .unwrap();
        select
            .query_map([], |row| row.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap()
    }

    #[test]
    fn compacting_the_journal_leaves_the_database_ingesting_all_of_it_would() {
        let retained = usize::try_from(RETAINED_RECORDS).unwrap();
        let older: Vec<EvidenceRecord> = (0..100).map(record).collect();
        let newer: Vec<EvidenceRecord> =
            (100..100 + 2 * retained as u64 + 500).map(record).collect();
        let compacted = tempfile::tempdir().unwrap();
        let ingested = tempfile::tempdir().unwrap();
        for root in [compacted.path(), ingested.path()] {
            EvidenceStore::open(root)
                .unwrap()
                .record_all(&older)
                .unwrap();
        }
        // A journal whose first lines are in the database already (an ingest that
        // committed and crashed before emptying it), then new records, one of them twice,
        // a line that is not a record and a torn last line.
        append_bounded(compacted.path(), &older, u64::MAX).unwrap();
        append_bounded(compacted.path(), &newer, u64::MAX).unwrap();
        append_bounded(compacted.path(), &newer[5..6], u64::MAX).unwrap();
        let journal = compacted.path().join(JOURNAL_PATH);
        let mut text = std::fs::read(&journal).unwrap();
        text.extend_from_slice(b"[\"not a record\"]\n[\"torn");
        std::fs::write(&journal, &text).unwrap();

        // What ingesting every line does, without compacting or selecting anything.
        let every_row: Vec<StoredRow> = complete_lines(&text)
            .split(|byte| *byte == b'\n')
            .filter_map(row_from_line)
            .collect();
        assert_eq!(every_row.len(), 100 + newer.len() + 1);
        let mut store = EvidenceStore::open(ingested.path()).unwrap();
        store.insert_rows(&every_row).unwrap();
        drop(store);

        assert!(compact(compacted.path(), 0, u64::MAX).unwrap());
        let lines = std::fs::read_to_string(&journal).unwrap();
        assert_eq!(lines.lines().count(), retained);
        assert!(lines.ends_with('\n'));
        assert!(
            !compacted
                .path()
                .join(".once")
                .join(COMPACTING_NAME)
                .exists()
        );
        drop(EvidenceStore::open(compacted.path()).unwrap());
        assert_eq!(std::fs::read(&journal).unwrap(), b"");

        let expected = stored_ids(ingested.path());
        assert_eq!(expected.len(), retained);
        assert_eq!(stored_ids(compacted.path()), expected);
    }

    /// Checks that the lines found from the end are those [`retained`] keeps, for a
    /// journal of `records` (by number) with `extra` lines spliced in at their index.
    fn check_retained_lines(records: std::ops::Range<u64>, extra: &[(usize, Vec<u8>)]) {
        let mut lines: Vec<Vec<u8>> = records.map(|n| record_line(&record(n)).into()).collect();
        for (index, line) in extra {
            lines.insert(*index, line.clone());
        }
        let text: Vec<u8> = lines.join(&b'\n');
        let expected: Vec<&[u8]> = retained(&text).into_iter().map(|(l, _)| l).collect();
        assert_eq!(retained_lines(&text), expected);
    }

    #[test]
    fn the_lines_kept_from_the_end_are_those_kept_from_the_start() {
        let retained = usize::try_from(RETAINED_RECORDS).unwrap();
        let last = 2 * retained as u64 + 300;
        let duplicate = record_line(&record(last - 3)).into_bytes();
        let respelled = record_line(&record(last - 4))
            .replacen('[', "[ ", 1)
            .into_bytes();
        // Distinct records with lines that are not records among them (the fast path).
        check_retained_lines(
            0..last,
            &[
                (5, b"[\"not a record\"]".to_vec()),
                (retained * 2, b"{}".to_vec()),
            ],
        );
        // Fewer records than are kept.
        check_retained_lines(0..40, &[(3, b"[".to_vec())]);
        // A kept record met earlier, as written and spelled otherwise: its first line decides.
        check_retained_lines(0..last, &[(10, duplicate.clone())]);
        check_retained_lines(0..last, &[(10, respelled)]);
        // A record twice among the last ones.
        check_retained_lines(0..last, &[(last as usize - 1, duplicate)]);
        assert_eq!(
            canonical_id(record_line(&record(1)).as_bytes()),
            Some(&*record(1).id.to_hex())
        );
        assert_eq!(canonical_id(b"[\"abc\"]"), None);
    }

    #[test]
    fn only_a_line_of_the_record_shape_is_a_row() {
        let line = record_line(&record(7));
        let row = row_from_line(line.as_bytes()).unwrap();
        // Exactly the JSON array of the columns.
        let stored = StoredRow::of(&record(7));
        let columns = json!([
            stored.id,
            stored.subject_kind,
            stored.subject_id,
            stored.subject_capability,
            stored.action,
            stored.status,
            stored.action_digest,
            stored.input_digest,
            stored.cache,
            stored.exit_code,
            stored.stdout_digest,
            stored.stderr_digest,
            stored.created_at_unix_ms,
        ]);
        assert_eq!(line, columns.to_string());
        assert_eq!(row.id, record(7).id.to_hex());
        assert_eq!(row.exit_code, Some(0));
        assert_eq!(row.created_at_unix_ms, 1_007);
        let columns: Vec<serde_json::Value> = serde_json::from_str(&line).unwrap();
        let changed = |index: usize, value: serde_json::Value| {
            let mut columns = columns.clone();
            columns[index] = value;
            serde_json::to_vec(&columns).unwrap()
        };
        let mut longer = columns.clone();
        longer.push(json!(null));
        for not_a_row in [
            serde_json::to_vec(&longer).unwrap(),
            serde_json::to_vec(&columns[..12]).unwrap(),
            changed(0, json!("not a digest")),
            changed(6, json!(null)),
            changed(1, json!(1)),
            changed(3, json!(false)),
            changed(9, json!(i64::from(i32::MAX) + 1)),
            changed(9, json!(1.5)),
            changed(12, json!(1.5)),
            changed(12, json!("1007")),
        ] {
            assert!(
                row_from_line(&not_a_row).is_none(),
                "{}",
                String::from_utf8_lossy(&not_a_row)
            );
        }
        // Optional columns may be null.
        assert!(row_from_line(&changed(3, json!(null))).is_some());
        assert_eq!(
            row_from_line(&changed(9, json!(null))).unwrap().exit_code,
            None
        );
    }

    #[test]
    fn a_compaction_that_would_not_make_room_changes_nothing() {
        let workspace = tempfile::tempdir().unwrap();
        let records: Vec<EvidenceRecord> = (0..10).map(record).collect();
        append_bounded(workspace.path(), &records, u64::MAX).unwrap();
        let journal = workspace.path().join(JOURNAL_PATH);
        let before = std::fs::read(&journal).unwrap();
        assert!(!compact(workspace.path(), 0, 100).unwrap());
        assert_eq!(std::fs::read(&journal).unwrap(), before);
        // Under its bound a journal is left alone.
        assert!(compact(workspace.path(), before.len() as u64, 0).unwrap());
        assert_eq!(std::fs::read(&journal).unwrap(), before);
    }

    #[test]
    fn appends_racing_compactions_are_never_lost() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path();
        append_bounded(root, &[record(0)], u64::MAX).unwrap();
        let writers = 4u64;
        let each = 150u64;
        let done = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            scope.spawn(|| {
                while !done.load(std::sync::atomic::Ordering::Relaxed) {
                    compact(root, 0, u64::MAX).unwrap();
                }
            });
            let appenders: Vec<_> = (0..writers)
                .map(|writer| {
                    scope.spawn(move || {
                        for n in 0..each {
                            let record = record(1 + writer * each + n);
                            append_bounded(root, &[record], u64::MAX).unwrap();
                        }
                    })
                })
                .collect();
            for appender in appenders {
                appender.join().unwrap();
            }
            done.store(true, std::sync::atomic::Ordering::Relaxed);
        });
        drop(EvidenceStore::open(root).unwrap());
        assert_eq!(
            stored_ids(root).len() as u64,
            1 + writers * each,
            "records appended to a replaced journal were lost"
        );
    }

    #[test]
    fn a_deferred_append_leaves_the_compaction_to_compact_journal_if_due() {
        let workspace = tempfile::tempdir().unwrap();
        let root = workspace.path();
        let journal = root.join(JOURNAL_PATH);
        let size = || std::fs::metadata(&journal).map_or(0, |m| m.len());
        // A journal past its bound, as builds that deferred their compaction leave it.
        let mut n = 0;
        while size() <= JOURNAL_INGEST_BYTES {
            let batch: Vec<EvidenceRecord> = (n..n + 5_000).map(record).collect();
            append_bounded(root, &batch, u64::MAX).unwrap();
            n += 5_000;
        }
        let before = size();
        let repeated = [Repeatable::new(&record(1 << 40).evidence)];
        assert_eq!(append_repeated_deferred(root, &repeated, 7).unwrap(), 1);
        assert!(size() > before, "the deferred append compacted the journal");

        compact_journal_if_due(root).unwrap();
        let compacted = size();
        assert!(
            compacted <= JOURNAL_INGEST_BYTES / 2,
            "{compacted} bytes left"
        );
        // Under its bound it is left alone, and no journal is nothing to do.
        compact_journal_if_due(root).unwrap();
        assert_eq!(size(), compacted);
        compact_journal_if_due(tempfile::tempdir().unwrap().path()).unwrap();
        // The repeated record is kept, the newest.
        drop(EvidenceStore::open(root).unwrap());
        let mut line = Vec::new();
        repeated[0].write_line(&mut line, 7);
        assert_eq!(
            stored_ids(root).last().map(String::as_str),
            canonical_id(&line)
        );
    }
}

#[cfg(test)]
mod repeat_tests {
    use super::*;
    use crate::record::{CacheOutcome, EvidenceStatus, Subject};

    #[test]
    fn a_repeated_record_is_the_record_made_at_that_time() {
        let evidence = ActionEvidence {
            subject: Subject::Target {
                id: "p/\"quoted\"\u{e9}".into(),
                capability: "build".into(),
            },
            action: Some("p/T#build/cmd".into()),
            status: EvidenceStatus::Passed,
            action_digest: Sha256Digest::of(b"key"),
            input_digest: Some(Sha256Digest::of(b"static")),
            cache: CacheOutcome::Hit,
            exit_code: Some(0),
            stdout: Some(Sha256Digest::of(b"out")),
            stderr: None,
        };
        let repeatable = Repeatable::new(&evidence);
        for time in [0, 1, 9, 10, 1_764_950_000_123, u64::MAX] {
            let mut expected = Vec::new();
            write_record_line(&mut expected, &EvidenceRecord::new(evidence.clone(), time));
            expected.push(b'\n');
            let mut line = Vec::new();
            repeatable.write_line(&mut line, time);
            assert_eq!(
                String::from_utf8_lossy(&line),
                String::from_utf8_lossy(&expected)
            );
        }
    }
}
