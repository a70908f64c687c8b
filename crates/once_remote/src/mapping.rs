//! How `once`'s action keys and records map onto the Remote Execution API's messages,
//! so that every entry is a well-formed REAPI entry on any server.
//!
//! **Action.** An action key (the SHA-256 of everything the result depends on, see
//! docs/execution.md) stands for a REAPI `Command` whose arguments are
//! `["once-action", "<key in hex>"]`, with no output paths and an empty working
//! directory, and an `Action` naming that command's digest, the empty `Directory` as its
//! input root and the salt `once.remote.v1`. The ActionCache entry lives under the digest
//! of that `Action`. Both messages are uploaded to the CAS with the result, so a server
//! that checks an entry's action finds it. A Bazel client computes other digests for its
//! actions: it never shares these entries, and cannot mistake one of ours for its own.
//!
//! **Result.** The `ActionResult` lists every output file (its workspace-relative path,
//! digest and executable bit) and symbolic link, the exit code and the stdout and stderr
//! digests, as REAPI has them; the exact record `once` keeps locally (modes, directories,
//! duration) rides along in `execution_metadata.auxiliary_metadata` as a
//! `google.protobuf.Any` of type [`RECORD_TYPE_URL`]. Reading, only that record is
//! used, and it is checked like a local record: its checksum is bound to the key, so an
//! entry damaged in transit or copied to another key is no hit.

use bazel_remote_apis::build::bazel::remote::execution::v2 as reapi;
use bazel_remote_apis::google::protobuf::Any;
use once_exec::record::{ActionRecord, OutputKind};
use once_model::Sha256Digest;
use prost::Message as _;

/// The `type_url` of the record carried in an `ActionResult`.
pub const RECORD_TYPE_URL: &str = "type.googleapis.com/once.remote.v1.ActionRecord";

/// The salt of every `Action` once writes: another mapping version never shares entries.
pub const ACTION_SALT: &[u8] = b"once.remote.v1";

/// A blob named by content: its SHA-256 and size.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Blob {
    pub hash: Sha256Digest,
    pub size: u64,
}

impl Blob {
    pub fn of(bytes: &[u8]) -> Blob {
        Blob {
            hash: Sha256Digest::of(bytes),
            size: bytes.len() as u64,
        }
    }

    pub fn to_proto(self) -> reapi::Digest {
        reapi::Digest {
            hash: self.hash.to_hex(),
            size_bytes: i64::try_from(self.size).unwrap_or(i64::MAX),
        }
    }

    /// The blob a REAPI digest names, if it is a well-formed SHA-256 digest.
    pub fn from_proto(digest: &reapi::Digest) -> Option<Blob> {
        Some(Blob {
            hash: Sha256Digest::from_hex(&digest.hash)?,
            size: u64::try_from(digest.size_bytes).ok()?,
        })
    }
}

/// The REAPI messages standing for one action key.
pub struct MappedAction {
    /// The ActionCache key: the digest of the encoded `Action`.
    pub action: Blob,
    pub action_bytes: Vec<u8>,
    pub command: Blob,
    pub command_bytes: Vec<u8>,
}

/// The `Command` and `Action` of `key` (see the module's documentation).
pub fn map_action(key: &Sha256Digest) -> MappedAction {
    let command = reapi::Command {
        arguments: vec!["once-action".to_owned(), key.to_hex()],
        ..Default::default()
    };
    let command_bytes = command.encode_to_vec();
    let command_blob = Blob::of(&command_bytes);
    let action = reapi::Action {
        command_digest: Some(command_blob.to_proto()),
        input_root_digest: Some(Blob::of(&reapi::Directory::default().encode_to_vec()).to_proto()),
        salt: ACTION_SALT.to_vec(),
        ..Default::default()
    };
    let action_bytes = action.encode_to_vec();
    MappedAction {
        action: Blob::of(&action_bytes),
        action_bytes,
        command: command_blob,
        command_bytes,
    }
}

/// The `ActionResult` of `record`, stored under `key`'s action.
pub fn action_result(key: &Sha256Digest, record: &ActionRecord) -> reapi::ActionResult {
    let mut output_files = Vec::new();
    let mut output_symlinks = Vec::new();
    for entry in &record.outputs {
        match &entry.kind {
            OutputKind::File { mode, size, digest } => output_files.push(reapi::OutputFile {
                path: entry.path.clone(),
                digest: Some(
                    Blob {
                        hash: *digest,
                        size: *size,
                    }
                    .to_proto(),
                ),
                is_executable: mode & 0o111 != 0,
                ..Default::default()
            }),
            OutputKind::Symlink { target } => output_symlinks.push(reapi::OutputSymlink {
                path: entry.path.clone(),
                target: target.clone(),
                ..Default::default()
            }),
            OutputKind::Directory => {}
        }
    }
    let stream = |digest: Sha256Digest, size: u64| Some(Blob { hash: digest, size }.to_proto());
    reapi::ActionResult {
        output_files,
        output_symlinks,
        exit_code: record.exit_code,
        stdout_digest: stream(record.stdout.digest, record.stdout.size),
        stderr_digest: stream(record.stderr.digest, record.stderr.size),
        execution_metadata: Some(reapi::ExecutedActionMetadata {
            worker: "once".to_owned(),
            auxiliary_metadata: vec![Any {
                type_url: RECORD_TYPE_URL.to_owned(),
                value: record.encode(key),
            }],
            ..Default::default()
        }),
        ..Default::default()
    }
}

/// The record an `ActionResult` carries for `key`: `None` when it carries none (an entry
/// another client wrote) or one that is not intact or not of this key.
pub fn record_of(key: &Sha256Digest, result: &reapi::ActionResult) -> Option<ActionRecord> {
    let metadata = result.execution_metadata.as_ref()?;
    let carried = metadata
        .auxiliary_metadata
        .iter()
        .find(|any| any.type_url == RECORD_TYPE_URL)?;
    ActionRecord::decode(key, &carried.value).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use once_exec::record::{OutputEntry, StreamDigest};
    use std::time::Duration;

    fn record() -> ActionRecord {
        ActionRecord {
            exit_code: 0,
            duration: Duration::from_millis(7),
            stdout: StreamDigest {
                digest: Sha256Digest::of(b"hi\n"),
                size: 3,
            },
            stderr: StreamDigest {
                digest: Sha256Digest::of(b""),
                size: 0,
            },
            outputs: vec![
                OutputEntry {
                    path: ".once/out/A/d".to_owned(),
                    kind: OutputKind::Directory,
                },
                OutputEntry {
                    path: ".once/out/A/d/run".to_owned(),
                    kind: OutputKind::File {
                        mode: 0o755,
                        size: 2,
                        digest: Sha256Digest::of(b"#!"),
                    },
                },
                OutputEntry {
                    path: ".once/out/A/l".to_owned(),
                    kind: OutputKind::Symlink {
                        target: "d/run".to_owned(),
                    },
                },
            ],
        }
    }

    #[test]
    fn keys_map_to_distinct_stable_actions() {
        let (a, b) = (Sha256Digest::of(b"a"), Sha256Digest::of(b"b"));
        assert_eq!(map_action(&a).action, map_action(&a).action);
        assert_ne!(map_action(&a).action, map_action(&b).action);
        let command = reapi::Command::decode(map_action(&a).command_bytes.as_slice()).unwrap();
        assert_eq!(command.arguments, ["once-action".to_owned(), a.to_hex()]);
    }

    #[test]
    fn results_carry_the_record_bound_to_its_key() {
        let key = Sha256Digest::of(b"key");
        let result = action_result(&key, &record());
        assert_eq!(result.output_files.len(), 1);
        assert!(result.output_files[0].is_executable);
        assert_eq!(result.output_symlinks.len(), 1);
        let decoded = reapi::ActionResult::decode(result.encode_to_vec().as_slice()).unwrap();
        assert_eq!(record_of(&key, &decoded), Some(record()));
        assert_eq!(record_of(&Sha256Digest::of(b"other"), &decoded), None);
        let mut foreign = decoded.clone();
        foreign.execution_metadata = None;
        assert_eq!(record_of(&key, &foreign), None);
        let mut damaged = decoded;
        if let Some(metadata) = damaged.execution_metadata.as_mut() {
            metadata.auxiliary_metadata[0].value[20] ^= 1;
        }
        assert_eq!(record_of(&key, &damaged), None);
    }
}
