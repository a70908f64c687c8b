//! The store's files of keyed entries (the plan memo, last plans, record indexes): the
//! body format they share, each entry with the time it was last used, and the salt that
//! binds an entry to the program that wrote it. The files are framed by their owners
//! ([`once_model::framed`]) and kept in the store's `derived/` directory.

use std::sync::OnceLock;
use std::time::SystemTime;

use once_model::Sha256Digest;
use once_model::codec::{ValueReader, ValueWriter};

use crate::tools::Fingerprint;

/// How long an entry no process used is kept (a week, in seconds): plans of edited-away
/// revisions do not make every later process read them.
pub const MAX_ENTRY_AGE_SECONDS: u64 = 7 * 24 * 60 * 60;

/// Per entry: the key, the last use and the value's length.
const ENTRY_HEADER: usize = 32 + 8 + 4;

/// What identifies the running program: a digest of `/proc/self/exe`'s fingerprint (the
/// file the process runs, even after it was replaced or removed), read once per process;
/// `None` when it cannot be read.
pub fn program_identity() -> Option<Sha256Digest> {
    static IDENTITY: OnceLock<Option<Sha256Digest>> = OnceLock::new();
    *IDENTITY.get_or_init(|| {
        let metadata = std::fs::metadata("/proc/self/exe")
            .or_else(|_| std::env::current_exe().and_then(std::fs::metadata))
            .ok()?;
        let fingerprint = Fingerprint::of(&metadata);
        Some(Sha256Digest::of(
            format!(
                "once-program {} {}",
                env!("CARGO_PKG_VERSION"),
                fingerprint.to_fields()
            )
            .as_bytes(),
        ))
    })
}

/// `key` salted with `salt` (the program's identity in the store's per-program files).
pub fn salted(salt: &Sha256Digest, key: &Sha256Digest) -> Sha256Digest {
    let mut bytes = [0u8; 64];
    bytes[..32].copy_from_slice(&salt.0);
    bytes[32..].copy_from_slice(&key.0);
    Sha256Digest::of(&bytes)
}

/// Seconds since the epoch (0 before it), as the keyed-entries files keep times.
pub fn unix_seconds(time: SystemTime) -> u64 {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// The body of a file of keyed entries (framed by the caller, [`once_model::framed`]), each
/// with the time it was last used (seconds since the epoch): per entry its key (32
/// bytes), the time (little-endian `u64`), the value's length (little-endian `u32`) and
/// the value. Values longer than a `u32` are left out.
pub fn encode_entries(entries: &[(Sha256Digest, u64, &[u8])]) -> Vec<u8> {
    let entries: Vec<_> = entries
        .iter()
        .filter_map(|(key, last_used, value)| {
            u32::try_from(value.len())
                .ok()
                .map(|length| (key, last_used, length, value))
        })
        .collect();
    let size = entries
        .iter()
        .map(|(_, _, _, value)| ENTRY_HEADER + value.len())
        .sum::<usize>();
    let mut out = ValueWriter(Vec::with_capacity(size));
    for (key, last_used, length, value) in entries {
        out.bytes(&key.0);
        out.u64(*last_used);
        out.u32(length);
        out.bytes(value);
    }
    out.0
}

/// The entries of a body [`encode_entries`] wrote; `None` when it does not parse to its
/// end.
pub fn decode_entries(body: &[u8]) -> Option<Vec<(Sha256Digest, u64, &[u8])>> {
    let mut input = ValueReader::new(body);
    let mut entries = Vec::new();
    while !input.is_empty() {
        let key = Sha256Digest(input.take(32)?.try_into().ok()?);
        let last_used = input.u64()?;
        let length = usize::try_from(input.u32()?).ok()?;
        entries.push((key, last_used, input.take(length)?));
    }
    Some(entries)
}
