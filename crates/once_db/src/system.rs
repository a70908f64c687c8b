//! The outside world, behind one trait: [`OsSystem`] for the disk, [`MemorySystem`] for tests.

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

/// The operating system and CPU architecture `select` tokens are derived from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct HostPlatform {
    pub os: String,
    pub arch: String,
}

impl HostPlatform {
    /// The platform this binary was built for.
    pub fn current() -> HostPlatform {
        HostPlatform {
            os: std::env::consts::OS.to_owned(),
            arch: std::env::consts::ARCH.to_owned(),
        }
    }
}

/// Everything core crates need from the outside world.
pub trait System: Send + Sync + fmt::Debug {
    /// Reads a file as UTF-8 text.
    fn read_to_string(&self, path: &Path) -> io::Result<String>;

    /// Whether `path` is an existing regular file.
    fn is_file(&self, path: &Path) -> bool;

    /// Every regular file below `root`, as sorted `/`-separated root-relative paths.
    ///
    /// Skips hidden entries (names starting with `.`), directories named `.once`,
    /// `target` or `node_modules`, and whatever `.gitignore` files exclude.
    fn walk(&self, root: &Path) -> io::Result<Vec<String>>;

    fn host_platform(&self) -> HostPlatform;
}

/// Directory names never walked into, wherever they appear.
pub const SKIPPED_DIRECTORIES: &[&str] = &[".once", "target", "node_modules"];

/// The real file system.
#[derive(Debug, Default)]
pub struct OsSystem;

impl System for OsSystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        std::fs::read_to_string(path)
    }

    fn is_file(&self, path: &Path) -> bool {
        path.is_file()
    }

    fn walk(&self, root: &Path) -> io::Result<Vec<String>> {
        if !root.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::NotFound,
                format!("`{}` is not a directory", root.display()),
            ));
        }
        let walker = ignore::WalkBuilder::new(root)
            .hidden(true)
            .git_ignore(true)
            .git_global(false)
            .git_exclude(true)
            .require_git(false)
            .ignore(false)
            .parents(false)
            .follow_links(false)
            .filter_entry(|entry| {
                !(entry.depth() > 0
                    && entry.file_type().is_some_and(|t| t.is_dir())
                    && entry
                        .file_name()
                        .to_str()
                        .is_some_and(|n| SKIPPED_DIRECTORIES.contains(&n)))
            })
            .build_parallel();
        let found = std::sync::Mutex::new(Vec::new());
        walker.run(|| {
            let found = &found;
            Box::new(move |entry| {
                if let Ok(entry) = entry
                    && entry.file_type().is_some_and(|t| t.is_file())
                    && let Ok(relative) = entry.path().strip_prefix(root)
                    && let Some(relative) = relative_to_slash(relative)
                    && let Ok(mut found) = found.lock()
                {
                    found.push(relative);
                }
                ignore::WalkState::Continue
            })
        });
        let mut files = found
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        files.sort_unstable();
        Ok(files)
    }

    fn host_platform(&self) -> HostPlatform {
        HostPlatform::current()
    }
}

/// Converts a relative path to `/`-separated UTF-8, or `None` if it is not UTF-8.
pub fn relative_to_slash(path: &Path) -> Option<String> {
    let mut out = String::new();
    for component in path.components() {
        let part = component.as_os_str().to_str()?;
        if !out.is_empty() {
            out.push('/');
        }
        out.push_str(part);
    }
    Some(out)
}

/// An in-memory file system for tests. Cloning shares the same files.
#[derive(Clone, Debug)]
pub struct MemorySystem {
    files: Arc<RwLock<BTreeMap<PathBuf, String>>>,
    host: HostPlatform,
}

impl Default for MemorySystem {
    fn default() -> MemorySystem {
        MemorySystem {
            files: Arc::default(),
            host: HostPlatform {
                os: "linux".into(),
                arch: "x86_64".into(),
            },
        }
    }
}

impl MemorySystem {
    pub fn with_host(host: HostPlatform) -> MemorySystem {
        MemorySystem {
            host,
            ..MemorySystem::default()
        }
    }

    pub fn write(&self, path: impl Into<PathBuf>, contents: impl Into<String>) {
        if let Ok(mut files) = self.files.write() {
            files.insert(path.into(), contents.into());
        }
    }

    pub fn remove(&self, path: &Path) {
        if let Ok(mut files) = self.files.write() {
            files.remove(path);
        }
    }
}

impl System for MemorySystem {
    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        self.files
            .read()
            .ok()
            .and_then(|files| files.get(path).cloned())
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, "no such file"))
    }

    fn is_file(&self, path: &Path) -> bool {
        self.files
            .read()
            .is_ok_and(|files| files.contains_key(path))
    }

    fn walk(&self, root: &Path) -> io::Result<Vec<String>> {
        let files = self
            .files
            .read()
            .map_err(|_| io::Error::other("memory system poisoned"))?;
        let mut out = Vec::new();
        for path in files.keys() {
            let Ok(relative) = path.strip_prefix(root) else {
                continue;
            };
            let Some(relative) = relative_to_slash(relative) else {
                continue;
            };
            let parts: Vec<&str> = relative.split('/').collect();
            let skipped = parts.iter().enumerate().any(|(i, part)| {
                part.starts_with('.') || (i + 1 < parts.len() && SKIPPED_DIRECTORIES.contains(part))
            });
            if !skipped {
                out.push(relative);
            }
        }
        Ok(out)
    }

    fn host_platform(&self) -> HostPlatform {
        self.host.clone()
    }
}
