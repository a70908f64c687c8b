//! What an evidence record holds, and its id.
//!
//! The id is the SHA-256 of a canonical encoding of the record's content and time: the
//! magic `once.evidence.v1`, then each field as its name and its value, every byte string
//! length-prefixed (its length as a little-endian u64, then the bytes), an absent optional
//! field as a single `0` byte and a present one as `1` followed by its value, numbers as
//! little-endian integers. Two records differing in any field, or made in different
//! milliseconds, have different ids; two identical records made in the same millisecond
//! are the same record (the database keeps one).

use once_model::Sha256Digest;

/// The `schema` field of every record.
pub const EVIDENCE_SCHEMA: &str = "once.evidence.v1";

/// The `kind` field: every record is the result of one action.
pub const RECORD_KIND: &str = "action_result";

/// What a record is about.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Subject {
    /// An action of a target's capability (`build`, `run`, `test`).
    Target { id: String, capability: String },
    /// A command run on its own (`once exec`); its id is its action digest.
    Command { action_digest: Sha256Digest },
}

impl Subject {
    /// `target` or `command`.
    pub fn kind(&self) -> &'static str {
        match self {
            Subject::Target { .. } => "target",
            Subject::Command { .. } => "command",
        }
    }

    /// The target id, or the command's action digest in hexadecimal.
    pub fn id(&self) -> String {
        match self {
            Subject::Target { id, .. } => id.clone(),
            Subject::Command { action_digest } => action_digest.to_hex(),
        }
    }

    pub fn capability(&self) -> Option<&str> {
        match self {
            Subject::Target { capability, .. } => Some(capability),
            Subject::Command { .. } => None,
        }
    }
}

impl std::fmt::Display for Subject {
    /// `cli:test` for a target's capability, the digest for a command.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Subject::Target { id, capability } => write!(f, "{id}:{capability}"),
            Subject::Command { action_digest } => write!(f, "{}", action_digest.to_hex()),
        }
    }
}

/// How the action ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EvidenceStatus {
    Passed,
    Failed,
}

impl EvidenceStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EvidenceStatus::Passed => "passed",
            EvidenceStatus::Failed => "failed",
        }
    }

    pub fn parse(text: &str) -> Option<EvidenceStatus> {
        match text {
            "passed" => Some(EvidenceStatus::Passed),
            "failed" => Some(EvidenceStatus::Failed),
            _ => None,
        }
    }
}

/// Where the result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum CacheOutcome {
    /// Reused from the action cache.
    Hit,
    /// Run, and its result stored.
    Miss,
    /// Run because the action is not cacheable.
    Bypass,
}

impl CacheOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CacheOutcome::Hit => "hit",
            CacheOutcome::Miss => "miss",
            CacheOutcome::Bypass => "bypass",
        }
    }

    pub fn parse(text: &str) -> Option<CacheOutcome> {
        match text {
            "hit" => Some(CacheOutcome::Hit),
            "miss" => Some(CacheOutcome::Miss),
            "bypass" => Some(CacheOutcome::Bypass),
            _ => None,
        }
    }
}

/// What one action's result says, before it gets its time and id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ActionEvidence {
    pub subject: Subject,
    /// The action's id within its capability (`cli#test/run`), when it has one.
    pub action: Option<String>,
    pub status: EvidenceStatus,
    /// The action's complete key.
    pub action_digest: Sha256Digest,
    /// What analysis knew before anything ran (the action's static key: its declaration,
    /// the digests of its source inputs, the implementation).
    pub input_digest: Option<Sha256Digest>,
    pub cache: CacheOutcome,
    /// `None` when the process did not exit with a code: a signal killed it, or `once`
    /// could not run it or keep its result (a full disk while capturing its output).
    pub exit_code: Option<i32>,
    /// The digests of the captured streams in the local store.
    pub stdout: Option<Sha256Digest>,
    pub stderr: Option<Sha256Digest>,
}

/// One stored record: the evidence, when it was made, and its id.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct EvidenceRecord {
    /// [`record_id`] of the evidence and the time.
    pub id: Sha256Digest,
    pub evidence: ActionEvidence,
    /// Milliseconds since the Unix epoch.
    pub created_at_unix_ms: u64,
}

impl EvidenceRecord {
    /// A record of `evidence` made at `created_at_unix_ms`, with its id.
    pub fn new(evidence: ActionEvidence, created_at_unix_ms: u64) -> EvidenceRecord {
        EvidenceRecord {
            id: record_id(&evidence, created_at_unix_ms),
            evidence,
            created_at_unix_ms,
        }
    }
}

/// The canonical encoding the id hashes (see the module documentation).
struct Encoder(Vec<u8>);

impl Encoder {
    fn bytes(&mut self, bytes: &[u8]) {
        self.0
            .extend_from_slice(&(bytes.len() as u64).to_le_bytes());
        self.0.extend_from_slice(bytes);
    }

    fn field(&mut self, name: &str, value: &[u8]) {
        self.bytes(name.as_bytes());
        self.bytes(value);
    }

    fn optional(&mut self, name: &str, value: Option<&[u8]>) {
        self.bytes(name.as_bytes());
        match value {
            None => self.0.push(0),
            Some(value) => {
                self.0.push(1);
                self.bytes(value);
            }
        }
    }
}

/// The id of a record of `evidence` made at `created_at_unix_ms`: the SHA-256 of the
/// canonical encoding of the schema, kind, subject, action, status, digests, cache state,
/// exit code, stream digests and time.
pub fn record_id(evidence: &ActionEvidence, created_at_unix_ms: u64) -> Sha256Digest {
    Sha256Digest::of(&canonical_encoding(evidence, created_at_unix_ms))
}

/// What [`record_id`] hashes. Its last 8 bytes are the time (little-endian), the only
/// part a repeated record changes ([`crate::Repeatable`]).
pub(crate) fn canonical_encoding(evidence: &ActionEvidence, created_at_unix_ms: u64) -> Vec<u8> {
    let mut encoder = Encoder(Vec::with_capacity(512));
    encoder.bytes(EVIDENCE_SCHEMA.as_bytes());
    encoder.field("kind", RECORD_KIND.as_bytes());
    encoder.field("subject_kind", evidence.subject.kind().as_bytes());
    encoder.field("subject_id", evidence.subject.id().as_bytes());
    encoder.optional(
        "subject_capability",
        evidence.subject.capability().map(str::as_bytes),
    );
    encoder.optional("action", evidence.action.as_deref().map(str::as_bytes));
    encoder.field("status", evidence.status.as_str().as_bytes());
    encoder.field("action_digest", &evidence.action_digest.0);
    encoder.optional(
        "input_digest",
        evidence.input_digest.as_ref().map(|d| &d.0[..]),
    );
    encoder.field("cache", evidence.cache.as_str().as_bytes());
    let exit_code = evidence.exit_code.map(i32::to_le_bytes);
    encoder.optional("exit_code", exit_code.as_ref().map(|code| &code[..]));
    encoder.optional("stdout", evidence.stdout.as_ref().map(|d| &d.0[..]));
    encoder.optional("stderr", evidence.stderr.as_ref().map(|d| &d.0[..]));
    encoder.field("created_at_unix_ms", &created_at_unix_ms.to_le_bytes());
    encoder.0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence() -> ActionEvidence {
        ActionEvidence {
            subject: Subject::Target {
                id: "cli".into(),
                capability: "test".into(),
            },
            action: Some("cli#test/run".into()),
            status: EvidenceStatus::Passed,
            action_digest: Sha256Digest::of(b"key"),
            input_digest: Some(Sha256Digest::of(b"static")),
            cache: CacheOutcome::Miss,
            exit_code: Some(0),
            stdout: Some(Sha256Digest::of(b"out")),
            stderr: None,
        }
    }

    #[test]
    fn the_id_covers_every_field_and_the_time() {
        let base = record_id(&evidence(), 1);
        assert_eq!(base, record_id(&evidence(), 1));
        assert_ne!(base, record_id(&evidence(), 2));
        let variants: Vec<fn(&mut ActionEvidence)> = vec![
            |e| {
                e.subject = Subject::Command {
                    action_digest: e.action_digest,
                }
            },
            |e| {
                e.subject = Subject::Target {
                    id: "cli".into(),
                    capability: "build".into(),
                }
            },
            |e| e.action = None,
            |e| e.status = EvidenceStatus::Failed,
            |e| e.action_digest = Sha256Digest::of(b"other"),
            |e| e.input_digest = None,
            |e| e.cache = CacheOutcome::Hit,
            |e| e.exit_code = None,
            |e| e.exit_code = Some(1),
            |e| e.stdout = None,
            |e| e.stderr = e.stdout,
        ];
        for (index, change) in variants.iter().enumerate() {
            let mut changed = evidence();
            change(&mut changed);
            assert_ne!(record_id(&changed, 1), base, "variant {index}");
        }
    }

    #[test]
    fn a_target_subject_reads_as_id_and_capability() {
        assert_eq!(evidence().subject.to_string(), "cli:test");
        let digest = Sha256Digest::of(b"key");
        assert_eq!(
            Subject::Command {
                action_digest: digest
            }
            .to_string(),
            digest.to_hex()
        );
    }
}
