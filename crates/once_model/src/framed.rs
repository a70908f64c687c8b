//! The framing every file `once` keeps and reads back to decide a hit shares: a header
//! line naming the format and its version, the body, and a checksum line.
//!
//! ```text
//! <format> <version>\n
//! <body, the format's own: text lines or bytes>
//! checksum <SHA-256 hex>\n
//! ```
//!
//! The checksum is the SHA-256 of the file's *binding* (what the file belongs to: the key
//! of a record, the name of a per-workspace file), length-prefixed, followed by every byte
//! before the checksum line. Reading answers one of three things ([`Unframed`]):
//!
//! - **intact**: the header is this format's and version's and the checksum matches: the
//!   body is what was written for that binding (a record moved to another key's name does
//!   not match, since the key is bound in);
//! - **another version**: the header names this format with another version (a file of an
//!   older or newer `once` sharing the store): absent, silently, and left to be replaced;
//! - **damaged**: anything else (an empty or truncated file, a byte changed, garbage): the
//!   caller treats it as absent, removes or rewrites it, and warns.
//!
//! The checksum detects corruption (a bit flip, a truncation, a power cut mid-write) and
//! careless edits (a digest, a mode or an exit code changed by hand); it does not protect
//! against a writer who means harm and recomputes it, which anyone who can write the store
//! can do. It is not a signature.

use sha2::{Digest as _, Sha256};

use crate::digest::Sha256Digest;

/// The last line's first word.
const CHECKSUM_WORD: &[u8] = b"checksum ";

/// The checksum line's length: the word, 64 hex digits and the newline.
const CHECKSUM_LINE: usize = CHECKSUM_WORD.len() + 64 + 1;

/// A framed format: the name in its header line and the version this build writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Format {
    pub name: &'static str,
    pub version: u32,
}

/// What a framed file's bytes turned out to be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unframed<'a> {
    /// The body of an intact file of this format and version.
    Intact(&'a [u8]),
    /// A file of this format in another version: no entries, no warning.
    OtherVersion,
    /// Not an intact file of this format: why, for a warning.
    Damaged(Damage),
}

/// Why a file is damaged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Damage {
    /// It does not start with this format's header line.
    NoHeader,
    /// It does not end with a checksum line (empty, truncated).
    Truncated,
    /// Its checksum does not match its content.
    Checksum,
    /// Its checksum matches but its body does not parse (a writer's bug, or an edit with
    /// the checksum recomputed).
    Unparsable,
    /// Something other than a regular file is at its name (a link, a directory).
    NotAFile,
}

impl std::fmt::Display for Damage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Damage::NoHeader => "it does not start with its format's header",
            Damage::Truncated => "it is truncated",
            Damage::Checksum => "its checksum does not match its content",
            Damage::Unparsable => "its content does not parse",
            Damage::NotAFile => "it is not a regular file",
        })
    }
}

impl Format {
    /// The header line, newline included.
    pub fn header(&self) -> String {
        format!("{} {}\n", self.name, self.version)
    }

    /// The whole file for `body` bound to `binding`.
    pub fn frame(&self, binding: &[u8], body: &[u8]) -> Vec<u8> {
        let header = self.header();
        let mut out = Vec::with_capacity(header.len() + body.len() + CHECKSUM_LINE);
        out.extend_from_slice(header.as_bytes());
        out.extend_from_slice(body);
        let digest = checksum(binding, &out);
        out.extend_from_slice(CHECKSUM_WORD);
        out.extend_from_slice(digest.to_hex().as_bytes());
        out.push(b'\n');
        out
    }

    /// What `bytes` (a whole file) are for `binding`: see the module documentation.
    pub fn unframe<'a>(&self, binding: &[u8], bytes: &'a [u8]) -> Unframed<'a> {
        let header = self.header();
        let Some(rest) = bytes.strip_prefix(header.as_bytes()) else {
            return if self.is_other_version(bytes) {
                Unframed::OtherVersion
            } else {
                Unframed::Damaged(Damage::NoHeader)
            };
        };
        let Some(split) = bytes.len().checked_sub(CHECKSUM_LINE) else {
            return Unframed::Damaged(Damage::Truncated);
        };
        if split < header.len() {
            return Unframed::Damaged(Damage::Truncated);
        }
        let (content, line) = bytes.split_at(split);
        let Some(hex) = line
            .strip_prefix(CHECKSUM_WORD)
            .and_then(|hex| hex.strip_suffix(b"\n"))
        else {
            return Unframed::Damaged(Damage::Truncated);
        };
        // Compared as written (lower-case hex): an upper-case digit is a changed byte.
        if hex != checksum(binding, content).to_hex().as_bytes() {
            return Unframed::Damaged(Damage::Checksum);
        }
        Unframed::Intact(&rest[..split - header.len()])
    }

    /// Whether `bytes` start with this format's name and another version's number.
    fn is_other_version(&self, bytes: &[u8]) -> bool {
        let Some(rest) = bytes
            .strip_prefix(self.name.as_bytes())
            .and_then(|rest| rest.strip_prefix(b" "))
        else {
            return false;
        };
        let line = rest.split(|&b| b == b'\n').next().unwrap_or_default();
        std::str::from_utf8(line)
            .ok()
            .and_then(|version| version.parse::<u32>().ok())
            .is_some_and(|version| version != self.version)
    }
}

/// The SHA-256 of `binding` (length-prefixed) and `content`.
fn checksum(binding: &[u8], content: &[u8]) -> Sha256Digest {
    let mut hasher = Sha256::new();
    hasher.update((binding.len() as u64).to_le_bytes());
    hasher.update(binding);
    hasher.update(content);
    Sha256Digest(hasher.finalize().into())
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMAT: Format = Format {
        name: "once-test-file",
        version: 2,
    };

    #[test]
    fn intact_files_round_trip_for_their_binding_only() {
        let bytes = FORMAT.frame(b"key", b"line 1\nline 2\n");
        assert_eq!(
            FORMAT.unframe(b"key", &bytes),
            Unframed::Intact(b"line 1\nline 2\n")
        );
        assert_eq!(
            FORMAT.unframe(b"other key", &bytes),
            Unframed::Damaged(Damage::Checksum)
        );
        let empty = FORMAT.frame(b"", b"");
        assert_eq!(FORMAT.unframe(b"", &empty), Unframed::Intact(b""));
    }

    /// Every truncation, every bit flipped and every extension is damage, except a flip
    /// that leaves another version's header (then the file is another version's).
    #[test]
    fn any_change_is_damage_or_another_version() {
        let bytes = FORMAT.frame(b"key", b"exit 0\nfile 644 x\n");
        for length in 0..bytes.len() {
            assert!(
                matches!(
                    FORMAT.unframe(b"key", &bytes[..length]),
                    Unframed::Damaged(_)
                ),
                "cut at {length}"
            );
        }
        for index in 0..bytes.len() {
            for bit in 0..8 {
                let mut changed = bytes.clone();
                changed[index] ^= 1 << bit;
                let read = FORMAT.unframe(b"key", &changed);
                let header = index < FORMAT.header().len();
                assert!(
                    matches!(read, Unframed::Damaged(_))
                        || (header && read == Unframed::OtherVersion),
                    "byte {index} bit {bit}: {read:?}"
                );
            }
        }
        let mut longer = bytes.clone();
        longer.push(b'\n');
        assert!(matches!(
            FORMAT.unframe(b"key", &longer),
            Unframed::Damaged(_)
        ));
    }

    #[test]
    fn other_versions_and_foreign_files_are_told_apart() {
        assert_eq!(
            FORMAT.unframe(b"", b"once-test-file 1\nold body\n"),
            Unframed::OtherVersion
        );
        assert_eq!(
            FORMAT.unframe(b"", b"once-test-file 3\n"),
            Unframed::OtherVersion
        );
        for foreign in [
            &b""[..],
            b"garbage",
            b"once-test-file x\n",
            b"once-test-file 2",
        ] {
            assert!(
                matches!(FORMAT.unframe(b"", foreign), Unframed::Damaged(_)),
                "{foreign:?}"
            );
        }
    }
}
