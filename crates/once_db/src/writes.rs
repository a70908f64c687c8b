//! Writing planned files into the workspace, confined to it.
//!
//! Editing operations are planned as pure data ([`FileWrite`]s with workspace-relative
//! paths); this module is where they reach the disk. Paths are checked lexically
//! ([`normalize_relative`]: no absolute paths, no `..`); confinement on the file system is
//! the job of [`System::write_confined`], which never follows a symbolic link and never
//! checks a path before using it. Writers hold the workspace's [`WriteLock`] from reading
//! what a write is based on until it is done.

use std::path::{Path, PathBuf};

use crate::ChangeEvent;
use crate::system::{System, WriteLock};

/// One file to write: a workspace-relative `/`-separated path and its new contents.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FileWrite {
    pub path: String,
    pub contents: Vec<u8>,
}

/// Normalises a workspace-relative path given by a user: `\` is refused, `.` and empty
/// segments are dropped, `""` and `.` mean the root. Absolute paths, `..` and drive
/// prefixes are refused.
pub fn normalize_relative(input: &str) -> Result<String, String> {
    let refuse = || {
        Err(format!(
            "`{input}` must be a relative path inside the workspace (no leading `/`, no `..`)"
        ))
    };
    if input.starts_with('/') || input.contains('\\') || input.contains(':') {
        return refuse();
    }
    let mut parts = Vec::new();
    for part in input.split('/') {
        match part {
            "" | "." => {}
            ".." => return refuse(),
            part => parts.push(part),
        }
    }
    Ok(parts.join("/"))
}

/// Joins a workspace-relative path onto the root.
pub fn absolute(root: &Path, relative: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    for part in relative.split('/').filter(|p| !p.is_empty()) {
        path.push(part);
    }
    path
}

/// Why a write stopped.
#[derive(Debug)]
pub struct WriteError {
    /// Files written before the failure (workspace-relative).
    pub written: Vec<String>,
    pub message: String,
}

impl std::fmt::Display for WriteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)?;
        if !self.written.is_empty() {
            write!(f, " (already written: {})", self.written.join(", "))?;
        }
        Ok(())
    }
}

impl std::error::Error for WriteError {}

/// Writes every file, each atomically and confined ([`System::write_confined`]), under the
/// held write lock. Every path is read first without following links, so a refused path
/// (a link, a file in the way) stops the batch before anything is written. Returns the
/// change events to apply to the database.
pub fn write_files(
    system: &dyn System,
    lock: &WriteLock,
    root: &Path,
    writes: &[FileWrite],
) -> Result<Vec<ChangeEvent>, WriteError> {
    let fail = |written: Vec<String>, message: String| WriteError { written, message };
    let mut relatives = Vec::with_capacity(writes.len());
    for write in writes {
        let relative = normalize_relative(&write.path).map_err(|e| fail(Vec::new(), e))?;
        if let Err(e) = system.read_confined(root, &relative) {
            return Err(fail(
                Vec::new(),
                format!("refusing to write `{relative}`: {e}"),
            ));
        }
        relatives.push(relative);
    }
    let mut events = Vec::new();
    let mut written = Vec::new();
    for (write, relative) in writes.iter().zip(relatives) {
        let existed = system
            .write_confined(lock, root, &relative, &write.contents)
            .map_err(|e| {
                fail(
                    written.clone(),
                    format!("could not write `{relative}`: {e}"),
                )
            })?;
        let path = absolute(root, &relative);
        events.push(if existed {
            ChangeEvent::Changed(path)
        } else {
            ChangeEvent::Created(path)
        });
        written.push(relative);
    }
    Ok(events)
}

#[cfg(test)]
#[allow(
    clippy::disallowed_methods,
    reason = "the tests check what reached a real directory"
)]
mod tests {
    use super::*;
    use crate::MemorySystem;

    #[test]
    fn relative_paths_are_normalised_or_refused() {
        assert_eq!(normalize_relative("").unwrap(), "");
        assert_eq!(normalize_relative(".").unwrap(), "");
        assert_eq!(normalize_relative("a/./b/").unwrap(), "a/b");
        for bad in ["../x", "/etc", "a/../../b", "C:/x", "a\\b"] {
            assert!(normalize_relative(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn symlinks_and_files_in_the_way_are_refused() {
        let system = MemorySystem::default();
        system.write("/ws/once.toml", "");
        system.write("/ws/file", "x");
        system.symlink("/ws/link", "/etc");
        let root = Path::new("/ws");
        assert_eq!(
            system.read_confined(root, "once.toml").unwrap(),
            Some(Vec::new())
        );
        assert_eq!(system.read_confined(root, "new/once.toml").unwrap(), None);
        let refusal = |path: &str| system.read_confined(root, path).unwrap_err().to_string();
        assert!(refusal("link/once.toml").contains("symbolic link"));
        assert!(refusal("file/once.toml").contains("not a directory"));
        let lock = system.lock_writes(root).unwrap();
        let refused = write_files(
            &system,
            &lock,
            root,
            &[
                FileWrite {
                    path: "ok.txt".into(),
                    contents: b"1".to_vec(),
                },
                FileWrite {
                    path: "link/x".into(),
                    contents: b"2".to_vec(),
                },
            ],
        );
        assert!(refused.is_err());
        assert!(
            !system.is_file(Path::new("/ws/ok.txt")),
            "nothing is written when one path is refused"
        );
    }

    #[cfg(unix)]
    #[test]
    fn a_real_symlink_to_outside_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("escape")).unwrap();
        let system = crate::OsSystem;
        let lock = system.lock_writes(ws.path()).unwrap();
        let result = write_files(
            &system,
            &lock,
            ws.path(),
            &[FileWrite {
                path: "escape/once.toml".into(),
                contents: b"x".to_vec(),
            }],
        );
        assert!(result.unwrap_err().message.contains("symbolic link"));
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
    }
}
