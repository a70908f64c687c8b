//! The programs actions run: finding `argv[0]` and knowing what it is.
//!
//! A program named without a `/` is looked up on the action's `PATH` (the allowlisted or
//! declared one; relative entries are skipped): the first regular file with an execute
//! bit wins. A program with a `/` is taken relative to the action's working directory.
//! Its identity in the action key is the path it was found at and the SHA-256 of its
//! content (through links). Hashing a compiler on every run would be slow, so digests
//! are kept in the store's `tools` file by path and metadata fingerprint (device, inode,
//! size, modification and change times, mode); an entry is reused only while the
//! fingerprint is the same, and a file changed in the last two seconds is hashed again
//! each time (a change within one timestamp tick would not show in the fingerprint). The
//! file is framed ([`once_model::framed`]): a damaged one is removed with a warning, and
//! every program is hashed again.

use std::collections::HashMap;
use std::io::{self, Read as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use once_model::Sha256Digest;
use once_model::framed::{Damage, Format};
use sha2::{Digest as _, Sha256};

use crate::key::ToolIdentity;
use crate::store::Store;

/// The file at the store's `derived/` directory that keeps tool digests.
pub const TOOLS_FILE: &str = "tools";

const FORMAT: Format = Format {
    name: "once-tool-digests",
    version: 2,
};

/// How recently changed a file may be for its digest to be kept.
pub(crate) const SETTLED: Duration = Duration::from_secs(2);

/// Where `program` is found for an action whose `PATH` is `path_variable` and whose
/// working directory is `cwd`.
pub fn resolve_program(program: &str, path_variable: &str, cwd: &Path) -> Result<PathBuf, String> {
    if program.is_empty() {
        return Err("the command line is empty".to_owned());
    }
    if program.contains('/') {
        let path = cwd.join(program);
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(format!(
                "the program `{program}` is not an executable file (looked at `{}`)",
                path.display()
            ))
        };
    }
    for directory in path_variable.split(':') {
        if !directory.starts_with('/') {
            continue;
        }
        let candidate = Path::new(directory).join(program);
        if is_executable(&candidate) {
            return Ok(candidate);
        }
    }
    Err(format!(
        "the program `{program}` was not found on the action's PATH `{path_variable}`"
    ))
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.mode() & 0o111 != 0)
}

/// What a file looked like when it was hashed (or, for a probe's stamp, when the probe
/// ran).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fingerprint {
    pub device: u64,
    pub inode: u64,
    pub size: u64,
    pub modified_ns: i128,
    pub changed_ns: i128,
    pub mode: u32,
}

impl Fingerprint {
    pub fn of(metadata: &std::fs::Metadata) -> Fingerprint {
        Fingerprint {
            device: metadata.dev(),
            inode: metadata.ino(),
            size: metadata.size(),
            modified_ns: i128::from(metadata.mtime()) * 1_000_000_000
                + i128::from(metadata.mtime_nsec()),
            changed_ns: i128::from(metadata.ctime()) * 1_000_000_000
                + i128::from(metadata.ctime_nsec()),
            mode: metadata.mode(),
        }
    }

    /// The six numbers as the store's text files write them, space-separated.
    pub fn to_fields(&self) -> String {
        format!(
            "{} {} {} {} {} {}",
            self.device, self.inode, self.size, self.modified_ns, self.changed_ns, self.mode
        )
    }

    /// Reads the six numbers [`Fingerprint::to_fields`] wrote from the next fields;
    /// `None` when one is missing or not a number.
    pub fn from_fields<'a>(fields: &mut impl Iterator<Item = &'a str>) -> Option<Fingerprint> {
        let mut next = || fields.next();
        Some(Fingerprint {
            device: next()?.parse().ok()?,
            inode: next()?.parse().ok()?,
            size: next()?.parse().ok()?,
            modified_ns: next()?.parse().ok()?,
            changed_ns: next()?.parse().ok()?,
            mode: next()?.parse().ok()?,
        })
    }
}

/// The tool digests of one executor: loaded from the store on first use, saved back when
/// something new was hashed.
#[derive(Default)]
pub struct ToolDigests {
    entries: Mutex<Option<HashMap<String, (Fingerprint, Sha256Digest)>>>,
    changed: Mutex<bool>,
}

impl ToolDigests {
    fn load(store: &Store) -> HashMap<String, (Fingerprint, Sha256Digest)> {
        let Some(body) = store.read_framed(TOOLS_FILE, FORMAT) else {
            return HashMap::new();
        };
        let parsed = std::str::from_utf8(&body).ok().and_then(|text| {
            text.lines()
                .map(|line| {
                    let mut fields = line.splitn(8, ' ');
                    let digest = Sha256Digest::from_hex(fields.next()?)?;
                    let fingerprint = Fingerprint::from_fields(&mut fields)?;
                    Some((fields.next()?.to_owned(), (fingerprint, digest)))
                })
                .collect::<Option<HashMap<_, _>>>()
        });
        parsed.unwrap_or_else(|| {
            store.remove_damaged_derived(TOOLS_FILE, Damage::Unparsable);
            HashMap::new()
        })
    }

    /// The identity of the program at `path` (absolute), with the fingerprint of the
    /// file it was read from.
    pub fn identity(&self, store: &Store, path: &Path) -> io::Result<(ToolIdentity, Fingerprint)> {
        let key = path.to_string_lossy().into_owned();
        let metadata = std::fs::metadata(path)?;
        let fingerprint = Fingerprint::of(&metadata);
        {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            let entries = entries.get_or_insert_with(|| ToolDigests::load(store));
            if let Some((known, digest)) = entries.get(&key)
                && *known == fingerprint
            {
                let identity = ToolIdentity {
                    path: key,
                    digest: *digest,
                };
                return Ok((identity, fingerprint));
            }
        }
        let mut file = std::fs::File::open(path)?;
        let mut hasher = Sha256::new();
        let mut buffer = vec![0u8; 64 * 1024];
        loop {
            let read = file.read(&mut buffer)?;
            if read == 0 {
                break;
            }
            hasher.update(&buffer[..read]);
        }
        let digest = Sha256Digest(hasher.finalize().into());
        let settled = metadata
            .modified()
            .ok()
            .and_then(|modified| SystemTime::now().duration_since(modified).ok())
            .is_some_and(|age| age > SETTLED);
        if settled {
            let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
            entries
                .get_or_insert_with(HashMap::new)
                .insert(key.clone(), (fingerprint, digest));
            *self.changed.lock().unwrap_or_else(|e| e.into_inner()) = true;
        }
        Ok((ToolIdentity { path: key, digest }, fingerprint))
    }

    /// Whether the program at `path` still has `fingerprint` (an action that ran it is
    /// recorded only then: see `Executor`'s identities of programs).
    pub fn unchanged(path: &Path, fingerprint: &Fingerprint) -> bool {
        std::fs::metadata(path).is_ok_and(|metadata| Fingerprint::of(&metadata) == *fingerprint)
    }

    /// Writes the digests back when something new was hashed (the last writer wins: a
    /// lost entry is only hashed again).
    pub fn save(&self, store: &Store) -> io::Result<()> {
        if !*self.changed.lock().unwrap_or_else(|e| e.into_inner()) {
            return Ok(());
        }
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entries) = entries.as_ref() else {
            return Ok(());
        };
        let mut text = String::new();
        let mut sorted: Vec<_> = entries
            .iter()
            .filter(|(path, _)| !path.contains('\n'))
            .collect();
        sorted.sort_by(|a, b| a.0.cmp(b.0));
        for (path, (f, digest)) in sorted {
            text.push_str(&format!("{digest} {} {path}\n", f.to_fields()));
        }
        store.write_framed(TOOLS_FILE, FORMAT, text.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn programs_are_found_on_the_path_and_relative_to_the_working_directory() {
        let directory = tempfile::tempdir().unwrap();
        let bin = directory.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::write(bin.join("data"), "not executable").unwrap();
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(bin.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let path = format!("relative:{}:/nonexistent", bin.display());
        assert_eq!(
            resolve_program("tool", &path, Path::new("/")).unwrap(),
            bin.join("tool")
        );
        assert!(resolve_program("data", &path, Path::new("/")).is_err());
        assert_eq!(
            resolve_program("bin/tool", "", directory.path()).unwrap(),
            directory.path().join("bin/tool")
        );
        let missing = resolve_program("nothing", "/nonexistent", Path::new("/")).unwrap_err();
        assert_eq!(
            missing,
            "the program `nothing` was not found on the action's PATH `/nonexistent`"
        );
    }

    #[test]
    fn digests_are_reused_while_the_fingerprint_holds() {
        let directory = tempfile::tempdir().unwrap();
        let store = Store::open(&directory.path().join("store")).unwrap();
        let tool = directory.path().join("tool");
        std::fs::write(&tool, "one").unwrap();
        let old = SystemTime::now() - Duration::from_secs(60);
        std::fs::File::options()
            .write(true)
            .open(&tool)
            .unwrap()
            .set_modified(old)
            .unwrap();
        let digests = ToolDigests::default();
        let (first, fingerprint) = digests.identity(&store, &tool).unwrap();
        assert_eq!(first.digest, Sha256Digest::of(b"one"));
        assert!(ToolDigests::unchanged(&tool, &fingerprint));
        digests.save(&store).unwrap();
        let reloaded = ToolDigests::default();
        assert_eq!(reloaded.identity(&store, &tool).unwrap().0, first);
        std::fs::write(&tool, "two").unwrap();
        assert!(!ToolDigests::unchanged(&tool, &fingerprint));
        assert_eq!(
            reloaded.identity(&store, &tool).unwrap().0.digest,
            Sha256Digest::of(b"two"),
            "a changed tool is hashed again"
        );
    }
}
