//! Writing planned files into the workspace, confined to it.
//!
//! Editing operations are planned as pure data ([`FileWrite`]s with workspace-relative
//! paths); this module is where they reach the disk. Every path is checked twice: lexically
//! ([`normalize_relative`]: no absolute paths, no `..`) and against the file system
//! ([`check_confined`]: no component is a symbolic link or a file where a directory is
//! needed, and the canonical parent stays below the canonical root). Each file is written
//! atomically through [`System::write_atomic`].

use std::io;
use std::path::{Path, PathBuf};

use crate::ChangeEvent;
use crate::system::{EntryKind, System};

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

/// What a confined path currently holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Existing {
    Missing,
    File,
}

/// Checks that writing the file `relative` (already normalised) stays inside the workspace:
/// walking down from the root, no component may be a symbolic link, every parent must be
/// a directory (or missing), and the path itself must be a regular file or missing.
pub fn check_confined(
    system: &dyn System,
    root: &Path,
    relative: &str,
) -> Result<Existing, String> {
    let parts: Vec<&str> = relative.split('/').filter(|p| !p.is_empty()).collect();
    if parts.is_empty() {
        return Err("the path names the workspace root, not a file".to_owned());
    }
    let mut current = root.to_path_buf();
    for (index, part) in parts.iter().enumerate() {
        current.push(part);
        let last = index + 1 == parts.len();
        let so_far = parts[..=index].join("/");
        match system.entry_kind(&current) {
            Err(e) => return Err(format!("could not inspect `{so_far}`: {e}")),
            Ok(None) => return Ok(Existing::Missing),
            Ok(Some(EntryKind::Symlink)) => {
                return Err(format!(
                    "`{so_far}` is a symbolic link; once does not write through links, which may lead outside the workspace"
                ));
            }
            Ok(Some(EntryKind::Directory)) if last => {
                return Err(format!(
                    "an existing directory occupies the file path `{so_far}`"
                ));
            }
            Ok(Some(EntryKind::Directory)) => {}
            Ok(Some(EntryKind::File)) if last => return Ok(Existing::File),
            Ok(Some(_)) => {
                return Err(format!(
                    "`{so_far}` is not a directory, but `{relative}` needs it to be one"
                ));
            }
        }
    }
    Ok(Existing::File)
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

/// Writes every file, each atomically, after checking all of them for confinement. Returns
/// the change events to apply to the database.
pub fn write_files(
    system: &dyn System,
    root: &Path,
    writes: &[FileWrite],
) -> Result<Vec<ChangeEvent>, WriteError> {
    let fail = |written: Vec<String>, message: String| WriteError { written, message };
    let canonical_root = system.canonicalize(root).map_err(|e| {
        fail(
            Vec::new(),
            format!("cannot resolve the workspace root: {e}"),
        )
    })?;
    let mut existing = Vec::with_capacity(writes.len());
    for write in writes {
        let relative = normalize_relative(&write.path).map_err(|e| fail(Vec::new(), e))?;
        let state = check_confined(system, root, &relative)
            .map_err(|e| fail(Vec::new(), format!("refusing to write `{relative}`: {e}")))?;
        // Belt and braces: the deepest existing ancestor resolves below the root.
        let mut ancestor = absolute(root, &relative);
        while ancestor.pop() && ancestor.starts_with(root) && ancestor != root {
            if let Ok(Some(_)) = system.entry_kind(&ancestor) {
                break;
            }
        }
        if !ancestor.starts_with(root) {
            ancestor = root.to_path_buf();
        }
        match system.canonicalize(&ancestor) {
            Ok(resolved) if resolved.starts_with(&canonical_root) => {}
            Ok(resolved) => {
                return Err(fail(
                    Vec::new(),
                    format!(
                        "refusing to write `{relative}`: it resolves to `{}`, outside the workspace",
                        resolved.display()
                    ),
                ));
            }
            Err(e) => {
                return Err(fail(
                    Vec::new(),
                    format!("cannot resolve `{relative}`: {e}"),
                ));
            }
        }
        existing.push((relative, state));
    }
    let mut events = Vec::new();
    let mut written = Vec::new();
    for (write, (relative, state)) in writes.iter().zip(existing) {
        let path = absolute(root, &relative);
        if let Err(e) = system.write_atomic(&path, &write.contents) {
            return Err(fail(written, format!("could not write `{relative}`: {e}")));
        }
        events.push(match state {
            Existing::File => ChangeEvent::Changed(path),
            Existing::Missing => ChangeEvent::Created(path),
        });
        written.push(relative);
    }
    Ok(events)
}

/// Reads the current bytes of a confined file, `None` when it does not exist.
pub fn read_existing(system: &dyn System, root: &Path, relative: &str) -> io::Result<Vec<u8>> {
    system.read_bytes(&absolute(root, relative))
}

#[cfg(test)]
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
            check_confined(&system, root, "once.toml"),
            Ok(Existing::File)
        );
        assert_eq!(
            check_confined(&system, root, "new/once.toml"),
            Ok(Existing::Missing)
        );
        assert!(
            check_confined(&system, root, "link/once.toml")
                .unwrap_err()
                .contains("symbolic link")
        );
        assert!(
            check_confined(&system, root, "file/once.toml")
                .unwrap_err()
                .contains("not a directory")
        );
        let refused = write_files(
            &system,
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

    #[test]
    fn an_injected_failure_before_the_rename_leaves_the_original_intact() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("once.toml");
        std::fs::write(&path, "original\n").unwrap();
        let result = crate::system::write_atomic_with(&path, b"new\n", |_| {
            Err(io::Error::other("simulated crash"))
        });
        assert!(result.is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "original\n");
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "the temporary file is removed");
        crate::system::write_atomic_with(&path, b"new\n", |_| Ok(())).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "new\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_real_symlink_to_outside_is_refused() {
        let outside = tempfile::tempdir().unwrap();
        let ws = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), ws.path().join("escape")).unwrap();
        let result = write_files(
            &crate::OsSystem,
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
