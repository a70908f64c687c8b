//! The counters `once cache stats` shows, kept in the store's `derived/cache-stats` file:
//! hits from the local store and from the remote cache, what was transferred, and every
//! kind of remote failure, summed over the commands since the store was last cleaned.
//!
//! Each command adds its counts at its end (a framed file, rewritten atomically). Two
//! commands ending at the same instant may lose one's counts (the last rename wins):
//! these are statistics, not a ledger.

use once_exec::store::Store;
use once_model::framed::Format;

use crate::client::RemoteSummary;

const FILE: &str = "cache-stats";
const FORMAT: Format = Format {
    name: "once-cache-stats",
    version: 1,
};

/// Counters summed over commands.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Commands that executed actions.
    pub commands: u64,
    pub local_hits: u64,
    pub remote_hits: u64,
    /// Actions run (cacheable ones whose result was in neither cache).
    pub misses: u64,
    pub remote_lookups: u64,
    pub bytes_down: u64,
    pub bytes_up: u64,
    pub uploads: u64,
    pub upload_failures: u64,
    pub read_failures: u64,
    pub corrupt: u64,
    pub skipped: u64,
    /// Results not uploaded by the upload policy (a file above `max_upload_size`).
    pub too_large: u64,
}

impl CacheStats {
    /// The counters, named, in the order they are written and shown.
    pub fn fields(&self) -> [(&'static str, u64); 13] {
        [
            ("commands", self.commands),
            ("local_hits", self.local_hits),
            ("remote_hits", self.remote_hits),
            ("misses", self.misses),
            ("remote_lookups", self.remote_lookups),
            ("bytes_down", self.bytes_down),
            ("bytes_up", self.bytes_up),
            ("uploads", self.uploads),
            ("upload_failures", self.upload_failures),
            ("read_failures", self.read_failures),
            ("corrupt", self.corrupt),
            ("skipped", self.skipped),
            ("too_large", self.too_large),
        ]
    }

    fn field_mut(&mut self, name: &str) -> Option<&mut u64> {
        Some(match name {
            "commands" => &mut self.commands,
            "local_hits" => &mut self.local_hits,
            "remote_hits" => &mut self.remote_hits,
            "misses" => &mut self.misses,
            "remote_lookups" => &mut self.remote_lookups,
            "bytes_down" => &mut self.bytes_down,
            "bytes_up" => &mut self.bytes_up,
            "uploads" => &mut self.uploads,
            "upload_failures" => &mut self.upload_failures,
            "read_failures" => &mut self.read_failures,
            "corrupt" => &mut self.corrupt,
            "skipped" => &mut self.skipped,
            "too_large" => &mut self.too_large,
            _ => return None,
        })
    }

    /// One command's counts: its local and remote hits and misses, and what the remote
    /// client did (when there was one).
    pub fn of_command(
        local_hits: u64,
        remote_hits: u64,
        misses: u64,
        remote: Option<&RemoteSummary>,
    ) -> CacheStats {
        let mut stats = CacheStats {
            commands: 1,
            local_hits,
            remote_hits,
            misses,
            ..CacheStats::default()
        };
        if let Some(remote) = remote {
            stats.remote_lookups = remote.lookups;
            stats.bytes_down = remote.bytes_down;
            stats.bytes_up = remote.bytes_up;
            stats.uploads = remote.uploads;
            stats.upload_failures = remote.upload_failures;
            stats.read_failures = remote.read_failures;
            stats.corrupt = remote.corrupt;
            stats.skipped = remote.skipped;
            stats.too_large = remote.too_large;
        }
        stats
    }

    fn add(&mut self, other: &CacheStats) {
        for (name, value) in other.fields() {
            if let Some(field) = self.field_mut(name) {
                *field = field.saturating_add(value);
            }
        }
    }
}

/// The counters kept in `store` (zero when there are none, or they were damaged).
pub fn read(store: &Store) -> CacheStats {
    let mut stats = CacheStats::default();
    let Some(framed) = store.read_framed(FILE, FORMAT) else {
        return stats;
    };
    let text = String::from_utf8_lossy(&framed);
    for line in text.lines() {
        if let Some((name, value)) = line.split_once(' ')
            && let (Some(field), Ok(value)) = (stats.field_mut(name), value.parse())
        {
            *field = value;
        }
    }
    stats
}

/// Adds one command's counts to those kept in `store`.
pub fn add(store: &Store, command: &CacheStats) -> std::io::Result<()> {
    let mut stats = read(store);
    stats.add(command);
    let body: String = stats
        .fields()
        .iter()
        .map(|(name, value)| format!("{name} {value}\n"))
        .collect();
    store.write_framed(FILE, FORMAT, body.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_add_up_across_commands() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(directory.path()).unwrap();
        assert_eq!(read(&store), CacheStats::default());
        let remote = RemoteSummary {
            lookups: 3,
            bytes_down: 10,
            upload_failures: 1,
            ..RemoteSummary::default()
        };
        add(&store, &CacheStats::of_command(2, 1, 4, Some(&remote))).unwrap();
        add(&store, &CacheStats::of_command(5, 0, 0, None)).unwrap();
        let stats = read(&store);
        assert_eq!(
            (
                stats.commands,
                stats.local_hits,
                stats.remote_hits,
                stats.misses
            ),
            (2, 7, 1, 4)
        );
        assert_eq!(
            (
                stats.remote_lookups,
                stats.bytes_down,
                stats.upload_failures
            ),
            (3, 10, 1)
        );
    }
}
