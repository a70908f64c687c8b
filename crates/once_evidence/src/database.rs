//! The evidence database, `.once/once.sqlite`: opening it safely, its schema, writing and
//! querying records.
//!
//! - **Confined.** `.once` is opened (and made, for writers) with `once_host::confined`,
//!   one component at a time without following links, so a `.once` that is a symbolic
//!   link is refused. SQLite itself opens by path: it is asked not to follow a link for
//!   the database file (`SQLITE_OPEN_NOFOLLOW`), and after opening, `.once` is checked to
//!   still be the directory the confined handle reached (same device and inode, not a
//!   link). A `.once` swapped for a link between the two checks and back again is the
//!   remaining window.
//! - **Concurrent.** WAL mode (readers never wait for a writer) and a busy timeout of
//!   [`BUSY_TIMEOUT`]: a writer waits for another one instead of failing. Writes are
//!   `BEGIN IMMEDIATE` transactions, which take the write lock up front (a deferred
//!   transaction upgrading from read to write could fail at once instead of waiting).
//! - **Not flushed on every commit.** `synchronous = NORMAL`, SQLite's setting for WAL:
//!   a commit is not `fsync`ed; checkpoints are (when the last connection closes, or
//!   every 1,000 pages). A crash of `once` loses nothing, a power cut may lose the last
//!   commits but never corrupts the database; evidence is provenance, written after the
//!   outputs (which are not flushed either). Skipping the checkpoint on close was tried
//!   and measured worse: the next connection rebuilds the log's index from the whole log,
//!   and a warm MCP build slowed from 3 ms to 30 ms as the log grew.
//! - **Versioned.** The `once_schema` table holds the evidence schema's version
//!   ([`SCHEMA_VERSION`]). A database with tables but no `once_schema` is foreign, one
//!   with a newer version was written by a newer `once`: both are errors that say so. An
//!   older version is rebuilt (its records dropped).
//! - **Bounded.** Queries select and order in SQL through indexes (newest first) and read
//!   at most `limit` rows; writers keep the newest [`RETAINED_RECORDS`] records.

use std::fs;
use std::io;
use std::os::fd::AsFd as _;
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use once_host::confined;
use once_model::Sha256Digest;
use rusqlite::{Connection, ErrorCode, OpenFlags, OptionalExtension as _, TransactionBehavior};

use crate::record::{ActionEvidence, CacheOutcome, EvidenceRecord, EvidenceStatus, Subject};

/// Where the database lives, relative to the workspace root.
pub const DATABASE_PATH: &str = ".once/once.sqlite";

/// The version of the evidence tables this `once` reads and writes.
pub const SCHEMA_VERSION: i64 = 1;

/// How many records a query returns when not told.
pub const DEFAULT_LIMIT: usize = 5;

/// The most records one query returns.
pub const MAX_LIMIT: usize = 100;

/// How many records a database keeps: a write removes the oldest beyond these.
pub const RETAINED_RECORDS: u64 = 10_000;

/// How long a connection waits for another process's lock before giving up.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

const STATE_DIRECTORY: &str = ".once";

const NO_LINKS: &str = "once does not write through links, which may lead outside the workspace";

/// The `once_schema` row of the evidence tables.
const SCHEMA_COMPONENT: &str = "evidence";

/// SQLite's page cache per connection, in KiB as `PRAGMA cache_size` takes it (negative:
/// a size, not a number of pages): room for a database of `RETAINED_RECORDS` records.
const CACHE_KIB: i64 = -64 * 1024;

const CREATE_SCHEMA_TABLE: &str =
    "CREATE TABLE IF NOT EXISTS once_schema (component TEXT PRIMARY KEY, version INTEGER NOT NULL)";

const CREATE_EVIDENCE_TABLES: &str = "
CREATE TABLE evidence_records (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    subject_kind TEXT NOT NULL,
    subject_id TEXT NOT NULL,
    subject_capability TEXT,
    action TEXT,
    status TEXT NOT NULL,
    action_digest TEXT NOT NULL,
    input_digest TEXT,
    cache TEXT NOT NULL,
    exit_code INTEGER,
    stdout_digest TEXT,
    stderr_digest TEXT,
    created_at_unix_ms INTEGER NOT NULL
);
CREATE INDEX evidence_by_time ON evidence_records (created_at_unix_ms, seq);
CREATE INDEX evidence_by_subject ON evidence_records (subject_id, subject_capability, created_at_unix_ms);
CREATE INDEX evidence_by_action ON evidence_records (action_digest, created_at_unix_ms);
";

const COLUMNS: &str = "id, subject_kind, subject_id, subject_capability, action, status, action_digest, \
     input_digest, cache, exit_code, stdout_digest, stderr_digest, created_at_unix_ms";

/// Why the evidence database could not be opened, read or written.
#[derive(Debug)]
pub enum EvidenceError {
    /// Reaching `.once` or the database file failed (a symbolic link is refused here).
    Io { path: PathBuf, source: io::Error },
    /// SQLite reported an error.
    Database {
        path: PathBuf,
        source: rusqlite::Error,
    },
    /// The file holds tables but no `once_schema`: it is not `once`'s.
    Foreign { path: PathBuf, tables: Vec<String> },
    /// The file was written by a newer `once`.
    NewerSchema { path: PathBuf, version: i64 },
    /// A stored row that does not read as a record.
    CorruptRecord { path: PathBuf, detail: String },
    /// A limit outside 1 to [`MAX_LIMIT`].
    InvalidLimit(usize),
}

impl std::fmt::Display for EvidenceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EvidenceError::Io { path, source } => {
                write!(
                    f,
                    "cannot open the evidence database `{}`: {source}",
                    path.display()
                )
            }
            EvidenceError::Database { path, source } => {
                write!(f, "evidence database `{}`: {source}", path.display())
            }
            EvidenceError::Foreign { path, tables } => write!(
                f,
                "`{}` is not a once evidence database (it has the tables {} and no `once_schema`); move it away and once creates a new one",
                path.display(),
                tables.join(", ")
            ),
            EvidenceError::NewerSchema { path, version } => write!(
                f,
                "the evidence database `{}` has schema version {version}, written by a newer once; this once reads version {SCHEMA_VERSION}",
                path.display()
            ),
            EvidenceError::CorruptRecord { path, detail } => write!(
                f,
                "the evidence database `{}` holds a record that cannot be read: {detail}",
                path.display()
            ),
            EvidenceError::InvalidLimit(limit) => write!(
                f,
                "the limit must be from 1 through {MAX_LIMIT}, not {limit}"
            ),
        }
    }
}

impl std::error::Error for EvidenceError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            EvidenceError::Io { source, .. } => Some(source),
            EvidenceError::Database { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// An open evidence database.
pub struct EvidenceStore {
    connection: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for EvidenceStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EvidenceStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl EvidenceStore {
    /// Opens the database of the workspace at `root`, making `.once` and the file when
    /// missing, and brings its schema to [`SCHEMA_VERSION`].
    pub fn open(root: &Path) -> Result<EvidenceStore, EvidenceError> {
        match Self::open_at(root, true)? {
            Some(store) => Ok(store),
            None => Err(EvidenceError::Io {
                path: root.join(DATABASE_PATH),
                source: io::Error::other("the directory `.once` could not be made"),
            }),
        }
    }

    /// Opens the database of the workspace at `root` when it exists (`None` otherwise:
    /// nothing was recorded yet); makes nothing.
    pub fn open_existing(root: &Path) -> Result<Option<EvidenceStore>, EvidenceError> {
        Self::open_at(root, false)
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    fn open_at(root: &Path, create: bool) -> Result<Option<EvidenceStore>, EvidenceError> {
        let path = root.join(DATABASE_PATH);
        let io_error = |source: io::Error| EvidenceError::Io {
            path: path.clone(),
            source,
        };
        let root_handle = confined::open_root(root).map_err(io_error)?;
        let Some(directory) =
            confined::open_directory_at(root_handle.as_fd(), STATE_DIRECTORY, create)
                .map_err(io_error)?
        else {
            return Ok(None);
        };
        let directory = fs::File::from(directory).metadata().map_err(io_error)?;
        // Records waiting in the journal make a database to hold them.
        let create = create || crate::journal::journal_exists(root);
        match fs::symlink_metadata(&path) {
            Err(e) if e.kind() == io::ErrorKind::NotFound && !create => return Ok(None),
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_error(e)),
            Ok(file) if file.file_type().is_symlink() => {
                return Err(io_error(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("`{DATABASE_PATH}` is a symbolic link; {NO_LINKS}"),
                )));
            }
            Ok(_) => {}
        }
        let mut flags = OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
            | OpenFlags::SQLITE_OPEN_NOFOLLOW;
        if create {
            flags |= OpenFlags::SQLITE_OPEN_CREATE;
        }
        let database_error = |source: rusqlite::Error| EvidenceError::Database {
            path: path.clone(),
            source,
        };
        let connection = Connection::open_with_flags(&path, flags).map_err(database_error)?;
        // The directory SQLite reached by path must be the one reached without links.
        let reached = fs::symlink_metadata(root.join(STATE_DIRECTORY)).map_err(io_error)?;
        if !reached.is_dir() || reached.dev() != directory.dev() || reached.ino() != directory.ino()
        {
            return Err(io_error(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "`.once` was replaced while it was opened (perhaps by a symbolic link); {NO_LINKS}"
                ),
            )));
        }
        connection
            .busy_timeout(BUSY_TIMEOUT)
            .map_err(database_error)?;
        let mut store = EvidenceStore { connection, path };
        store.use_wal()?;
        store
            .connection
            .pragma_update(None, "synchronous", "NORMAL")
            .map_err(|e| store.database_error(e))?;
        // A build of 10,000 targets journals 10,000 records, and ingesting a few such
        // journals inserts tens of thousands of rows into four indexes at random places:
        // with SQLite's default cache (2 MiB) the pages are evicted, spilled to the WAL
        // in the middle of the transaction and read back, which tripled the time of the
        // ingest. The cache grows only as pages are used.
        store
            .connection
            .pragma_update(None, "cache_size", CACHE_KIB)
            .map_err(|e| store.database_error(e))?;
        store.migrate()?;
        crate::journal::ingest(&mut store, root)?;
        Ok(Some(store))
    }

    fn database_error(&self, source: rusqlite::Error) -> EvidenceError {
        EvidenceError::Database {
            path: self.path.clone(),
            source,
        }
    }

    /// Switches to WAL mode (kept in the file, so this writes only the first time).
    /// Changing the mode needs the database to itself; SQLite does not wait for that, so
    /// this retries for up to [`BUSY_TIMEOUT`].
    fn use_wal(&mut self) -> Result<(), EvidenceError> {
        let started = Instant::now();
        loop {
            let mode = self
                .connection
                .query_row("PRAGMA journal_mode", [], |row| row.get::<_, String>(0));
            let mode = match mode {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Ok(_) => self
                    .connection
                    .query_row("PRAGMA journal_mode = WAL", [], |row| {
                        row.get::<_, String>(0)
                    }),
                Err(e) => Err(e),
            };
            match mode {
                Ok(mode) if mode.eq_ignore_ascii_case("wal") => return Ok(()),
                Err(e) if is_busy(&e) && started.elapsed() < BUSY_TIMEOUT => {}
                Err(e) => return Err(self.database_error(e)),
                // Another connection holds the file in a mode that cannot change now.
                Ok(_) if started.elapsed() < BUSY_TIMEOUT => {}
                Ok(mode) => {
                    return Err(self.database_error(rusqlite::Error::InvalidParameterName(
                        format!("the journal mode stays `{mode}`, not `wal`"),
                    )));
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// Creates the tables, or rebuilds those of an older schema, unless they are current
    /// (checked without a write lock first, so readers of a current database never write).
    fn migrate(&mut self) -> Result<(), EvidenceError> {
        if schema_version(&self.connection, &self.path)? == Some(SCHEMA_VERSION) {
            return Ok(());
        }
        let path = self.path.clone();
        let database_error = |source| EvidenceError::Database {
            path: path.clone(),
            source,
        };
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(database_error)?;
        // Another process may have migrated while this one waited for the lock.
        let version = schema_version(&transaction, &path)?;
        if version != Some(SCHEMA_VERSION) {
            transaction
                .execute_batch(&format!(
                    "{CREATE_SCHEMA_TABLE};\nDROP TABLE IF EXISTS evidence_records;\n{CREATE_EVIDENCE_TABLES}"
                ))
                .map_err(database_error)?;
            transaction
                .execute(
                    "INSERT OR REPLACE INTO once_schema (component, version) VALUES (?1, ?2)",
                    rusqlite::params![SCHEMA_COMPONENT, SCHEMA_VERSION],
                )
                .map_err(database_error)?;
        }
        transaction.commit().map_err(database_error)
    }

    /// Stores one record; `false` when a record with its id is already there.
    pub fn record(&mut self, record: &EvidenceRecord) -> Result<bool, EvidenceError> {
        Ok(self.record_all(std::slice::from_ref(record))? == 1)
    }

    /// Stores `records` in one transaction, then drops the oldest records beyond
    /// [`RETAINED_RECORDS`]; returns how many were new.
    pub fn record_all(&mut self, records: &[EvidenceRecord]) -> Result<usize, EvidenceError> {
        let rows: Vec<StoredRow> = records.iter().map(StoredRow::of).collect();
        self.insert_rows(&rows)
    }

    /// [`EvidenceStore::record_all`] for rows (of records, or read from the journal).
    pub(crate) fn insert_rows(&mut self, rows: &[StoredRow]) -> Result<usize, EvidenceError> {
        if rows.is_empty() {
            return Ok(0);
        }
        let path = self.path.clone();
        let database_error = |source| EvidenceError::Database {
            path: path.clone(),
            source,
        };
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(database_error)?;
        let mut added = 0;
        {
            let mut insert = transaction
                .prepare(&format!(
                    "INSERT OR IGNORE INTO evidence_records ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"
                ))
                .map_err(database_error)?;
            for row in rows {
                added += insert
                    .execute(rusqlite::params![
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
                    .map_err(database_error)?;
            }
            transaction
                .execute(
                    // Sequence numbers are consecutive (SQLite gives each row the largest one
                    // plus one and only the oldest rows are removed), so this is the newest
                    // `RETAINED_RECORDS` rows, found through the primary key alone.
                    "DELETE FROM evidence_records WHERE seq <= (SELECT max(seq) FROM evidence_records) - ?1",
                    [i64::try_from(RETAINED_RECORDS).unwrap_or(i64::MAX)],
                )
                .map_err(database_error)?;
        }
        transaction.commit().map_err(database_error)?;
        Ok(added)
    }

    /// The newest `limit` records (1 to [`MAX_LIMIT`]) matching `subject`, newest first:
    /// every record without a subject; with one, the records whose subject id is
    /// `subject` (`cli`: every capability of target `cli`), whose subject id and
    /// capability are `<id>:<capability>` (`cli:test`), or whose action digest is
    /// `subject` (a command's, or one action of a target).
    pub fn query(
        &self,
        subject: Option<&str>,
        limit: usize,
    ) -> Result<Vec<EvidenceRecord>, EvidenceError> {
        if !(1..=MAX_LIMIT).contains(&limit) {
            return Err(EvidenceError::InvalidLimit(limit));
        }
        let limit = limit as i64;
        let rows = match subject {
            None => self.select(
                &format!(
                    "SELECT {COLUMNS} FROM evidence_records ORDER BY created_at_unix_ms DESC, seq DESC LIMIT ?1"
                ),
                rusqlite::params![limit],
            ),
            Some(subject) => {
                let (id, capability) = subject.rsplit_once(':').unwrap_or((subject, ""));
                self.select(
                    &format!(
                        "SELECT {COLUMNS} FROM evidence_records \
                         WHERE subject_id = ?1 OR action_digest = ?1 OR (subject_id = ?2 AND subject_capability = ?3) \
                         ORDER BY created_at_unix_ms DESC, seq DESC LIMIT ?4"
                    ),
                    rusqlite::params![subject, id, capability, limit],
                )
            }
        };
        rows?
            .into_iter()
            .map(|row| {
                row.into_record()
                    .map_err(|detail| EvidenceError::CorruptRecord {
                        path: self.path.clone(),
                        detail,
                    })
            })
            .collect()
    }

    fn select(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> Result<Vec<StoredRow>, EvidenceError> {
        let mut statement = self
            .connection
            .prepare(sql)
            .map_err(|e| self.database_error(e))?;
        statement
            .query_map(params, StoredRow::read)
            .and_then(|rows| rows.collect::<Result<Vec<_>, _>>())
            .map_err(|e| self.database_error(e))
    }
}

/// The evidence schema's version, `None` when the file has no evidence tables yet;
/// refuses foreign and newer databases.
fn schema_version(connection: &Connection, path: &Path) -> Result<Option<i64>, EvidenceError> {
    let database_error = |source| EvidenceError::Database {
        path: path.to_path_buf(),
        source,
    };
    let mut statement = connection
        .prepare(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name",
        )
        .map_err(database_error)?;
    let tables = statement
        .query_map([], |row| row.get::<_, String>(0))
        .and_then(|rows| rows.collect::<Result<Vec<String>, _>>())
        .map_err(database_error)?;
    if tables.is_empty() {
        return Ok(None);
    }
    if !tables.iter().any(|table| table == "once_schema") {
        return Err(EvidenceError::Foreign {
            path: path.to_path_buf(),
            tables,
        });
    }
    let version = connection
        .query_row(
            "SELECT version FROM once_schema WHERE component = ?1",
            [SCHEMA_COMPONENT],
            |row| row.get::<_, i64>(0),
        )
        .optional()
        .map_err(database_error)?;
    if let Some(version) = version
        && version > SCHEMA_VERSION
    {
        return Err(EvidenceError::NewerSchema {
            path: path.to_path_buf(),
            version,
        });
    }
    Ok(version)
}

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// One row as stored (or journaled), before it is checked.
pub(crate) struct StoredRow {
    pub(crate) id: String,
    pub(crate) subject_kind: String,
    pub(crate) subject_id: String,
    pub(crate) subject_capability: Option<String>,
    pub(crate) action: Option<String>,
    pub(crate) status: String,
    pub(crate) action_digest: String,
    pub(crate) input_digest: Option<String>,
    pub(crate) cache: String,
    pub(crate) exit_code: Option<i32>,
    pub(crate) stdout_digest: Option<String>,
    pub(crate) stderr_digest: Option<String>,
    pub(crate) created_at_unix_ms: i64,
}

impl StoredRow {
    /// The row that stores `record`.
    pub(crate) fn of(record: &EvidenceRecord) -> StoredRow {
        let evidence = &record.evidence;
        StoredRow {
            id: record.id.to_hex(),
            subject_kind: evidence.subject.kind().to_owned(),
            subject_id: evidence.subject.id(),
            subject_capability: evidence.subject.capability().map(str::to_owned),
            action: evidence.action.clone(),
            status: evidence.status.as_str().to_owned(),
            action_digest: evidence.action_digest.to_hex(),
            input_digest: evidence.input_digest.map(|d| d.to_hex()),
            cache: evidence.cache.as_str().to_owned(),
            exit_code: evidence.exit_code,
            stdout_digest: evidence.stdout.map(|d| d.to_hex()),
            stderr_digest: evidence.stderr.map(|d| d.to_hex()),
            created_at_unix_ms: i64::try_from(record.created_at_unix_ms).unwrap_or(i64::MAX),
        }
    }

    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredRow> {
        Ok(StoredRow {
            id: row.get(0)?,
            subject_kind: row.get(1)?,
            subject_id: row.get(2)?,
            subject_capability: row.get(3)?,
            action: row.get(4)?,
            status: row.get(5)?,
            action_digest: row.get(6)?,
            input_digest: row.get(7)?,
            cache: row.get(8)?,
            exit_code: row.get(9)?,
            stdout_digest: row.get(10)?,
            stderr_digest: row.get(11)?,
            created_at_unix_ms: row.get(12)?,
        })
    }

    fn into_record(self) -> Result<EvidenceRecord, String> {
        let digest = |field: &str, text: &str| {
            Sha256Digest::from_hex(text)
                .ok_or_else(|| format!("`{field}` is not a SHA-256 digest: `{text}`"))
        };
        let optional_digest =
            |field: &str, text: Option<&str>| text.map(|t| digest(field, t)).transpose();
        let action_digest = digest("action_digest", &self.action_digest)?;
        let subject = match (self.subject_kind.as_str(), self.subject_capability) {
            ("target", Some(capability)) => Subject::Target {
                id: self.subject_id,
                capability,
            },
            ("command", None) => Subject::Command {
                action_digest: digest("subject_id", &self.subject_id)?,
            },
            (kind, _) => {
                return Err(format!(
                    "the subject kind `{kind}` is unknown or incomplete"
                ));
            }
        };
        let evidence = ActionEvidence {
            subject,
            action: self.action,
            status: EvidenceStatus::parse(&self.status)
                .ok_or_else(|| format!("the status `{}` is unknown", self.status))?,
            action_digest,
            input_digest: optional_digest("input_digest", self.input_digest.as_deref())?,
            cache: CacheOutcome::parse(&self.cache)
                .ok_or_else(|| format!("the cache state `{}` is unknown", self.cache))?,
            exit_code: self.exit_code,
            stdout: optional_digest("stdout", self.stdout_digest.as_deref())?,
            stderr: optional_digest("stderr", self.stderr_digest.as_deref())?,
        };
        Ok(EvidenceRecord {
            id: digest("id", &self.id)?,
            evidence,
            created_at_unix_ms: u64::try_from(self.created_at_unix_ms)
                .map_err(|_| format!("the time {} is negative", self.created_at_unix_ms))?,
        })
    }
}

/// The newest `limit` records of the workspace at `root` matching `subject` (see
/// [`EvidenceStore::query`]); none when nothing was recorded yet.
pub fn query_workspace(
    root: &Path,
    subject: Option<&str>,
    limit: usize,
) -> Result<Vec<EvidenceRecord>, EvidenceError> {
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(EvidenceError::InvalidLimit(limit));
    }
    match EvidenceStore::open_existing(root)? {
        Some(store) => store.query(subject, limit),
        None => Ok(Vec::new()),
    }
}
