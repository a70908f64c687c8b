//! The workspace and package inputs.

use std::path::PathBuf;

use crate::Db;
use crate::files::File;
use crate::system::HostPlatform;

/// The loaded workspace: its root, every directory holding a `once.toml` (before
/// `[workspace] include/exclude` filtering), and the host platform.
#[salsa::input(debug, singleton)]
pub struct Workspace {
    /// Absolute root directory.
    #[returns(ref)]
    pub root: PathBuf,
    /// Every package directory found by the walk, sorted by path.
    #[returns(ref)]
    pub packages: Vec<Package>,
    #[returns(ref)]
    pub host: HostPlatform,
    /// Every `.star` file the walk found (the candidates for `[modules] paths` and
    /// `load()`), sorted by path. Editing one bumps only its own revision.
    #[returns(ref)]
    pub star_files: Vec<File>,
}

/// A directory holding a `once.toml`.
#[salsa::input(debug)]
pub struct Package {
    /// Workspace-relative directory, `""` for the root package.
    #[returns(ref)]
    pub path: String,
    /// The package's `once.toml`.
    #[returns(copy)]
    pub manifest: File,
    /// Package-relative paths of the files the package owns: every file below its
    /// directory that no nested package owns, symbolic links included (see
    /// [`crate::links`]). Sorted.
    #[returns(ref)]
    pub files: Vec<String>,
    /// The symbolic links among `files` (package-relative, sorted): the analysis checks
    /// where each leads, the only files it examines before anything reads them.
    #[returns(ref)]
    pub links: Vec<String>,
}

impl Package {
    /// The workspace-relative path of a package-relative file.
    pub fn join(path: &str, file: &str) -> String {
        if path.is_empty() {
            file.to_owned()
        } else {
            format!("{path}/{file}")
        }
    }
}

impl Workspace {
    /// The package owning a workspace-relative file: the deepest package directory that
    /// contains it (before include/exclude filtering).
    pub fn owning_package(self, db: &dyn Db, path: &str) -> Option<Package> {
        let packages = self.packages(db);
        crate::discovery::enclosing_dirs(path).find_map(|dir| {
            packages
                .binary_search_by(|package| package.path(db).as_str().cmp(dir))
                .ok()
                .map(|index| packages[index])
        })
    }
}

/// The absolute root, or an empty path before a workspace is loaded.
pub fn workspace_root(db: &dyn Db) -> PathBuf {
    match Workspace::try_get(db) {
        Some(workspace) => workspace.root(db).clone(),
        None => PathBuf::new(),
    }
}
