//! The last plan a workspace's request made, one file per workspace and request in the
//! store's `derived/` directory (`last-plan-<SHA-256 of the root's path and the request>`), so that
//! a build asked again of an unchanged workspace reads its plan instead of parsing,
//! resolving and planning every target again (three quarters of a no-op build of
//! 10,000 targets went to planning, although every target's plan came from the memo).
//!
//! This module only keeps the bytes: what they hold, and when they may be used, is the
//! caller's ([`super::last_plan`]). The file holds one entry in the store's format of
//! keyed entries (see `plan_memo`), framed ([`once_model::framed`]): its key is the caller's
//! key salted with [`program_identity`] (a plan depends on the binary's prelude and
//! encodings, so a rebuilt binary never reads an older one's plan), and a file that is
//! not intact is ignored as a whole and removed with a warning. Writes are atomic (a complete temporary file
//! renamed over the old one); of two processes writing at once the last rename wins,
//! and both wrote a plan of the same request. `once cache clean` and `gc` remove every
//! such file; so does every save, for the files unused for a week (a use renews the
//! file's modification time, at most once an hour), so the requests and workspaces no
//! longer built do not keep theirs.

use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime};

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format};

use once_exec::Store;
use once_exec::store::keyed::{
    MAX_ENTRY_AGE_SECONDS, decode_entries, encode_entries, program_identity, unix_seconds,
};

/// The last-plan files' framing.
const FORMAT: Format = Format {
    name: "once-last-plan",
    version: 2,
};

/// The prefix of the last-plan files' names at the store's `derived/` directory.
pub const LAST_PLAN_PREFIX: &str = "last-plan-";

/// The file of `request` (the caller's canonical spelling of what was asked) in the
/// workspace at `workspace_root`.
fn file_name(workspace_root: &Path, request: &str) -> String {
    let mut named = workspace_root.as_os_str().as_encoded_bytes().to_vec();
    named.push(0);
    named.extend_from_slice(request.as_bytes());
    format!("{LAST_PLAN_PREFIX}{}", Sha256Digest::of(&named))
}

/// `key` salted with the running program's identity; `None` without one.
fn salted(key: &Sha256Digest) -> Option<Sha256Digest> {
    Some(once_exec::store::keyed::salted(&program_identity()?, key))
}

/// What the file of a request holds, read before its key can be checked (the key needs
/// the workspace loaded; the file is read meanwhile).
pub struct LastPlan {
    name: String,
    modified: Option<SystemTime>,
    salted_key: Sha256Digest,
    value: Vec<u8>,
}

impl LastPlan {
    /// The file of `request` in the workspace at `workspace_root`, if it is complete and
    /// intact.
    pub fn load(store: &Store, workspace_root: &Path, request: &str) -> Option<LastPlan> {
        let name = file_name(workspace_root, request);
        let modified = store.derived_modified(&name);
        let body = store.read_framed(&name, FORMAT)?;
        let mut entries = decode_entries(&body).unwrap_or_default();
        let Some((salted_key, _, value)) = entries.pop().filter(|_| entries.is_empty()) else {
            store.remove_damaged_derived(&name, Damage::Unparsable);
            return None;
        };
        Some(LastPlan {
            name,
            modified,
            salted_key,
            value: value.to_vec(),
        })
    }

    /// Marks the file as used now (see the module documentation), unless it was less
    /// than an hour ago.
    pub fn renew(&self, store: &Store) {
        if let Some(modified) = self.modified {
            store.touch_derived_if_stale(&self.name, modified, SystemTime::now());
        }
    }

    /// Whether this program saved the value under `key`.
    pub fn saved_under(&self, key: &Sha256Digest) -> bool {
        salted(key) == Some(self.salted_key)
    }

    /// The value, whatever its key (a caller may decode it while the key is worked
    /// out, and use it only if [`LastPlan::saved_under`] the key).
    pub fn value(&self) -> &[u8] {
        &self.value
    }

    /// Replaces the file of `request` with `value` under `key` (nothing is written
    /// without a [`program_identity`]).
    pub fn save(
        store: &Store,
        workspace_root: &Path,
        request: &str,
        key: &Sha256Digest,
        value: &[u8],
    ) -> io::Result<()> {
        let Some(salted_key) = salted(key) else {
            return Ok(());
        };
        let body = encode_entries(&[(salted_key, unix_seconds(SystemTime::now()), value)]);
        // Shared use: `once cache clean` and `gc` wait for the rename to finish.
        let _in_use = store.start_use()?;
        store.write_framed(&file_name(workspace_root, request), FORMAT, &body)?;
        store.remove_unused_derived(
            LAST_PLAN_PREFIX,
            Duration::from_secs(MAX_ENTRY_AGE_SECONDS),
            SystemTime::now(),
        );
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> Sha256Digest {
        Sha256Digest::of(name.as_bytes())
    }

    /// A saved value is read back under its key only, per workspace and request, and
    /// `clean` and `gc` remove it.
    #[test]
    fn values_are_kept_per_workspace_and_request_until_clean_or_gc() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (one, other) = (Path::new("/w/one"), Path::new("/w/other"));
        assert!(LastPlan::load(&store, one, "build ...").is_none());
        LastPlan::save(&store, one, "build ...", &key("inputs"), b"plan").unwrap();
        let last = LastPlan::load(&store, one, "build ...").expect("saved");
        assert!(last.saved_under(&key("inputs")));
        assert_eq!(last.value(), b"plan");
        assert!(!last.saved_under(&key("other inputs")));
        assert!(LastPlan::load(&store, other, "build ...").is_none());
        assert!(LastPlan::load(&store, one, "build x").is_none());

        LastPlan::save(&store, one, "build ...", &key("new inputs"), b"new").unwrap();
        let last = LastPlan::load(&store, one, "build ...").unwrap();
        assert!(!last.saved_under(&key("inputs")), "replaced");
        assert!(last.saved_under(&key("new inputs")));
        assert_eq!(last.value(), b"new");

        store.clean().unwrap();
        assert!(LastPlan::load(&store, one, "build ...").is_none());
        LastPlan::save(&store, one, "build ...", &key("inputs"), b"plan").unwrap();
        store.gc(u64::MAX).unwrap();
        assert!(LastPlan::load(&store, one, "build ...").is_none());
    }

    fn set_modified(path: &Path, ago: Duration) {
        std::fs::File::options()
            .write(true)
            .open(path)
            .unwrap()
            .set_modified(SystemTime::now() - ago)
            .unwrap();
    }

    fn modified(path: &Path) -> SystemTime {
        std::fs::metadata(path).unwrap().modified().unwrap()
    }

    /// A save removes the last plans unused for a week (any workspace's), and nothing
    /// else; a use renews the file once it is an hour old.
    #[test]
    fn saves_remove_last_plans_unused_for_a_week_and_a_use_renews_its_file() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (one, other) = (Path::new("/w/one"), Path::new("/w/other"));
        let file = |root: &Path, request: &str| store.derived_path().join(file_name(root, request));
        let day = Duration::from_secs(24 * 60 * 60);
        for (root, request) in [(one, "build a"), (one, "build b"), (other, "build a")] {
            LastPlan::save(&store, root, request, &key("inputs"), b"plan").unwrap();
        }
        set_modified(&file(one, "build a"), 8 * day);
        set_modified(&file(other, "build a"), 6 * day);
        let other_file = store.derived_path().join("kept-by-name");
        std::fs::write(&other_file, "x").unwrap();
        set_modified(&other_file, 30 * day);
        LastPlan::save(&store, one, "build c", &key("inputs"), b"plan").unwrap();
        assert!(!file(one, "build a").exists(), "unused for 8 days");
        for (root, request) in [(one, "build b"), (one, "build c"), (other, "build a")] {
            assert!(file(root, request).exists(), "{request}");
        }
        assert!(other_file.exists(), "another prefix");

        // Used: renewed when an hour old or more, not before.
        set_modified(&file(other, "build a"), Duration::from_secs(10 * 60));
        let recent = modified(&file(other, "build a"));
        LastPlan::load(&store, other, "build a")
            .unwrap()
            .renew(&store);
        assert_eq!(modified(&file(other, "build a")), recent);
        set_modified(&file(other, "build a"), 6 * day);
        LastPlan::load(&store, other, "build a")
            .unwrap()
            .renew(&store);
        let age = SystemTime::now()
            .duration_since(modified(&file(other, "build a")))
            .unwrap_or_default();
        assert!(age < Duration::from_secs(60), "renewed: {age:?}");
    }

    /// Any changed byte makes the file unreadable as a whole.
    #[test]
    fn a_damaged_file_is_ignored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let root = Path::new("/w");
        LastPlan::save(&store, root, "build ...", &key("inputs"), b"plan").unwrap();
        let name = file_name(root, "build ...");
        let bytes = store.read_derived(&name).unwrap().unwrap();
        for index in 0..bytes.len() {
            let mut changed = bytes.clone();
            changed[index] ^= 1;
            store.write_derived(&name, &changed).unwrap();
            assert!(
                LastPlan::load(&store, root, "build ...").is_none(),
                "byte {index} changed"
            );
            // Removed (a warning says so), unless the change made another version's.
            let warned = !store.take_warnings().is_empty();
            assert_eq!(
                warned,
                store.read_derived(&name).unwrap().is_none(),
                "byte {index} changed"
            );
        }
    }
}
