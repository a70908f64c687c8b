//! The action cache's result record and its text encoding.
//!
//! A record says what a successful run of an action produced: its exit code, how long
//! it took, the digests of its captured streams and every output entry (a file with its
//! mode, size and content digest, a directory, or a symbolic link with its target). It is
//! stored as text, framed ([`once_model::framed`]) with a checksum bound to the action key:
//!
//! ```text
//! once-action-result 2
//! exit 0
//! duration-ms 40
//! stdout <sha256 hex> <size>
//! stderr <sha256 hex> <size>
//! file <mode, octal> <sha256 hex> <size> <path>
//! dir <path>
//! link <target, hex of its bytes> <path>
//! checksum <SHA-256 of the key and of every line above>
//! ```
//!
//! Paths come last on their line and never contain a newline (such an output is refused
//! when captured). A record of another version is no record (a miss); one that is not
//! intact (truncated, a byte changed, its checksum another key's) is damaged: a miss, and
//! the store removes it and says so ([`RecordDamage`]).

use std::time::Duration;

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format, Unframed};

use crate::key::KeyHasher;

/// The records' framing: header line and this version.
const FORMAT: Format = Format {
    name: "once-action-result",
    version: 2,
};

/// Why bytes stored under a key are not a record of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordDamage {
    /// A record of another version of `once`: a miss, nothing to report.
    OtherVersion,
    /// Not an intact record (see [`Damage`]).
    Damaged(Damage),
}

/// A captured stream in the store: its digest and size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct StreamDigest {
    pub digest: Sha256Digest,
    pub size: u64,
}

/// What is at an output path.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum OutputKind {
    /// A regular file: its permission bits (`0o777` mask), size and content digest.
    File {
        mode: u32,
        size: u64,
        digest: Sha256Digest,
    },
    Directory,
    /// A symbolic link, with the text it points to (never followed).
    Symlink {
        target: String,
    },
}

/// One entry of an action's outputs: a declared output or something under a declared
/// output directory. The path is workspace-relative.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct OutputEntry {
    pub path: String,
    pub kind: OutputKind,
}

/// A successful run of an action, as the action cache keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ActionRecord {
    pub exit_code: i32,
    pub duration: Duration,
    pub stdout: StreamDigest,
    pub stderr: StreamDigest,
    /// In the order of a walk: each declared output, a directory before what is in it
    /// (names sorted within a directory).
    pub outputs: Vec<OutputEntry>,
}

impl ActionRecord {
    /// The record file of this record stored under `key`.
    pub fn encode(&self, key: &Sha256Digest) -> Vec<u8> {
        let mut text = format!(
            "exit {}\nduration-ms {}\nstdout {} {}\nstderr {} {}\n",
            self.exit_code,
            self.duration.as_millis(),
            self.stdout.digest,
            self.stdout.size,
            self.stderr.digest,
            self.stderr.size
        );
        for entry in &self.outputs {
            match &entry.kind {
                OutputKind::File { mode, size, digest } => {
                    text.push_str(&format!("file {mode:o} {digest} {size} {}\n", entry.path));
                }
                OutputKind::Directory => text.push_str(&format!("dir {}\n", entry.path)),
                OutputKind::Symlink { target } => {
                    let hex = hex(target.as_bytes());
                    text.push_str(&format!("link {hex} {}\n", entry.path));
                }
            }
        }
        FORMAT.frame(&key.0, text.as_bytes())
    }

    /// The record in `bytes` (a record file) stored under `key`, or why there is none.
    pub fn decode(key: &Sha256Digest, bytes: &[u8]) -> Result<ActionRecord, RecordDamage> {
        let body = match FORMAT.unframe(&key.0, bytes) {
            Unframed::Intact(body) => body,
            Unframed::OtherVersion => return Err(RecordDamage::OtherVersion),
            Unframed::Damaged(damage) => return Err(RecordDamage::Damaged(damage)),
        };
        std::str::from_utf8(body)
            .ok()
            .and_then(parse_body)
            .ok_or(RecordDamage::Damaged(Damage::Unparsable))
    }

    /// The content digests this record refers to (outputs and streams).
    pub fn blobs(&self) -> impl Iterator<Item = Sha256Digest> + '_ {
        [self.stdout.digest, self.stderr.digest]
            .into_iter()
            .chain(self.outputs.iter().filter_map(|entry| match entry.kind {
                OutputKind::File { digest, .. } => Some(digest),
                _ => None,
            }))
    }
}

/// The record a checked body holds: every line must parse.
fn parse_body(text: &str) -> Option<ActionRecord> {
    let mut lines = text.lines();
    let exit_code = lines.next()?.strip_prefix("exit ")?.parse().ok()?;
    let millis = lines.next()?.strip_prefix("duration-ms ")?.parse().ok()?;
    let stream = |line: &str, name: &str| -> Option<StreamDigest> {
        let rest = line.strip_prefix(name)?.strip_prefix(' ')?;
        let (digest, size) = rest.split_once(' ')?;
        Some(StreamDigest {
            digest: Sha256Digest::from_hex(digest)?,
            size: size.parse().ok()?,
        })
    };
    let stdout = stream(lines.next()?, "stdout")?;
    let stderr = stream(lines.next()?, "stderr")?;
    let mut outputs = Vec::new();
    for line in lines {
        let (word, rest) = line.split_once(' ')?;
        let (path, kind) = match word {
            "file" => {
                let mut fields = rest.splitn(4, ' ');
                let mode = u32::from_str_radix(fields.next()?, 8).ok()?;
                let digest = Sha256Digest::from_hex(fields.next()?)?;
                let size = fields.next()?.parse().ok()?;
                let path = fields.next()?;
                (path, OutputKind::File { mode, size, digest })
            }
            "dir" => (rest, OutputKind::Directory),
            "link" => {
                let (hex, path) = rest.split_once(' ')?;
                let target = String::from_utf8(decode_hex(hex)?).ok()?;
                (path, OutputKind::Symlink { target })
            }
            _ => return None,
        };
        outputs.push(OutputEntry {
            path: path.to_owned(),
            kind,
        });
    }
    Some(ActionRecord {
        exit_code,
        duration: Duration::from_millis(millis),
        stdout,
        stderr,
        outputs,
    })
}

fn decode_hex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// The digest a dependent sees of the declared output `declared`: every entry at or under
/// it (kind, mode, content digest or link target, path relative to `declared`), so two
/// runs that leave byte-identical outputs with the same modes have the same digest.
pub fn output_digest(entries: &[OutputEntry], declared: &str) -> Sha256Digest {
    let mut hasher = KeyHasher::new();
    hasher.field("output");
    for entry in entries {
        let relative = if entry.path == declared {
            ""
        } else if let Some(rest) = entry
            .path
            .strip_prefix(declared)
            .and_then(|rest| rest.strip_prefix('/'))
        {
            rest
        } else {
            continue;
        };
        hash_entry(&mut hasher, relative, &entry.kind);
    }
    hasher.finish()
}

/// [`output_digest`] of each of `declared`, in one pass over `entries` when there are
/// many (each entry is looked up with its ancestors; a scan of every entry per declared
/// output made an action declaring thousands of outputs quadratic).
pub fn output_digests(entries: &[OutputEntry], declared: &[String]) -> Vec<Sha256Digest> {
    if declared.len() <= 4 {
        return declared
            .iter()
            .map(|path| output_digest(entries, path))
            .collect();
    }
    let positions: rustc_hash::FxHashMap<&str, usize> = declared
        .iter()
        .enumerate()
        .map(|(index, path)| (path.as_str(), index))
        .collect();
    let mut hashers: Vec<KeyHasher> = declared
        .iter()
        .map(|_| {
            let mut hasher = KeyHasher::new();
            hasher.field("output");
            hasher
        })
        .collect();
    for entry in entries {
        let mut at = entry.path.as_str();
        loop {
            if let Some(&index) = positions.get(at) {
                let relative = entry.path[at.len()..].trim_start_matches('/');
                hash_entry(&mut hashers[index], relative, &entry.kind);
            }
            match at.rsplit_once('/') {
                Some((parent, _)) => at = parent,
                None => break,
            }
        }
    }
    hashers.into_iter().map(KeyHasher::finish).collect()
}

/// One entry of an output digest: its path relative to the declared output, its kind.
fn hash_entry(hasher: &mut KeyHasher, relative: &str, kind: &OutputKind) {
    hasher.bytes(relative.as_bytes());
    match kind {
        OutputKind::File { mode, digest, .. } => {
            hasher.field("file");
            hasher.number(u64::from(*mode));
            hasher.bytes(&digest.0);
        }
        OutputKind::Directory => hasher.field("dir"),
        OutputKind::Symlink { target } => {
            hasher.field("link");
            hasher.bytes(target.as_bytes());
        }
    }
}

/// Lower-case hexadecimal of arbitrary bytes.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> ActionRecord {
        ActionRecord {
            exit_code: 0,
            duration: Duration::from_millis(42),
            stdout: StreamDigest {
                digest: Sha256Digest::of(b"out"),
                size: 3,
            },
            stderr: StreamDigest {
                digest: Sha256Digest::of(b""),
                size: 0,
            },
            outputs: vec![
                OutputEntry {
                    path: ".once/out/A/dir".to_owned(),
                    kind: OutputKind::Directory,
                },
                OutputEntry {
                    path: ".once/out/A/dir/file with spaces".to_owned(),
                    kind: OutputKind::File {
                        mode: 0o755,
                        size: 5,
                        digest: Sha256Digest::of(b"hello"),
                    },
                },
                OutputEntry {
                    path: ".once/out/A/link".to_owned(),
                    kind: OutputKind::Symlink {
                        target: "dir/file with spaces".to_owned(),
                    },
                },
            ],
        }
    }

    #[test]
    fn records_round_trip_and_any_change_is_damage() {
        let record = record();
        let key = Sha256Digest::of(b"key");
        let bytes = record.encode(&key);
        assert_eq!(ActionRecord::decode(&key, &bytes), Ok(record.clone()));
        for cut in 0..bytes.len() {
            assert!(
                matches!(
                    ActionRecord::decode(&key, &bytes[..cut]),
                    Err(RecordDamage::Damaged(_))
                ),
                "a record cut at {cut} bytes is damaged"
            );
        }
        let text = String::from_utf8(bytes.clone()).unwrap();
        let (hello, empty) = (Sha256Digest::of(b"hello"), Sha256Digest::of(b""));
        // A mode, an exit code, a digest changed; the record moved to another key.
        for (from, to) in [
            ("file 755".to_owned(), "file 754".to_owned()),
            ("exit 0".to_owned(), "exit 1".to_owned()),
            (hello.to_hex(), empty.to_hex()),
        ] {
            let changed = text.replacen(&from, &to, 1);
            assert_ne!(changed, text);
            assert_eq!(
                ActionRecord::decode(&key, changed.as_bytes()),
                Err(RecordDamage::Damaged(Damage::Checksum)),
                "{from} -> {to}"
            );
        }
        assert_eq!(
            ActionRecord::decode(&Sha256Digest::of(b"other key"), &bytes),
            Err(RecordDamage::Damaged(Damage::Checksum))
        );
        assert_eq!(
            ActionRecord::decode(&key, b"once-action-result 1\nexit 0\n"),
            Err(RecordDamage::OtherVersion)
        );
        assert_eq!(record.blobs().count(), 3);
    }

    /// Many declared outputs are digested in one pass, to the same digests.
    #[test]
    fn output_digests_of_many_outputs_are_those_of_each() {
        let mut entries = Vec::new();
        let mut declared = Vec::new();
        for index in 0..20 {
            let path = format!(".once/out/A/o{index}");
            declared.push(path.clone());
            if index % 2 == 0 {
                entries.push(OutputEntry {
                    path: path.clone(),
                    kind: OutputKind::Directory,
                });
                for child in ["a", "b/c"] {
                    entries.push(OutputEntry {
                        path: format!("{path}/{child}"),
                        kind: OutputKind::File {
                            mode: 0o644,
                            size: 1,
                            digest: Sha256Digest::of(child.as_bytes()),
                        },
                    });
                }
            } else {
                entries.push(OutputEntry {
                    path,
                    kind: OutputKind::Symlink {
                        target: format!("t{index}"),
                    },
                });
            }
        }
        // `o1` is a prefix of `o10`…`o19` as a string, not as a path.
        let each: Vec<_> = declared
            .iter()
            .map(|path| output_digest(&entries, path))
            .collect();
        assert_eq!(output_digests(&entries, &declared), each);
        assert_eq!(output_digests(&entries, &declared[..3]), each[..3]);
    }

    #[test]
    fn output_digests_cover_the_entries_under_a_declared_output_only() {
        let record = record();
        let directory = output_digest(&record.outputs, ".once/out/A/dir");
        let link = output_digest(&record.outputs, ".once/out/A/link");
        assert_ne!(directory, link);
        let mut changed = record.clone();
        changed.outputs[2].kind = OutputKind::Symlink {
            target: "elsewhere".to_owned(),
        };
        assert_eq!(
            output_digest(&changed.outputs, ".once/out/A/dir"),
            directory
        );
        assert_ne!(output_digest(&changed.outputs, ".once/out/A/link"), link);
        let mut executable_bit = record.clone();
        executable_bit.outputs[1].kind = OutputKind::File {
            mode: 0o644,
            size: 5,
            digest: Sha256Digest::of(b"hello"),
        };
        assert_ne!(
            output_digest(&executable_bit.outputs, ".once/out/A/dir"),
            directory
        );
    }
}
