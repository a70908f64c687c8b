//! The one door through which inputs change: [`ChangeEvent`] and [`apply_changes`].
//!
//! A `Changed`, `Created` or `Deleted` event bumps exactly that file's input (when one
//! exists: a file without an input was never read, so nothing depends on its contents);
//! creating or deleting a plain file (or a symbolic link) also updates the owning
//! package's file list; anything touching a `once.toml`, a `.gitignore` or a directory
//! triggers a rescan. A rescan walks again and sets the package and module lists that
//! differ, then compares the stamp of every file read since its last bump with the disk
//! and bumps exactly the files whose stamp differs (size, modification and change times,
//! inode, mode, kind). After a change of the file set, and on a rescan, every link
//! resolved since its last bump is resolved again and bumped when it leads elsewhere
//! ([`crate::links`]): the event of a change on the way (a link retargeted further down a
//! chain, a target created) names another path than the link's. Every call, an empty
//! batch too, also looks again at the host paths queries asked about and bumps those
//! that changed ([`crate::host_paths`]).

use std::path::{Path, PathBuf};

use salsa::{Durability, Setter};

use crate::discovery::{MANIFEST_NAME, discover_packages};
use crate::files::{File, Seen};
use crate::system::{EntryKind, SKIPPED_DIRECTORIES, Walked};
use crate::workspace::{Package, Workspace};
use crate::{Db, RootDatabase};

/// Something that happened to the workspace on disk (or in an editor buffer).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeEvent {
    /// A file's content changed. Paths are absolute or workspace-relative.
    Changed(PathBuf),
    Created(PathBuf),
    Deleted(PathBuf),
    /// Anything may have changed: walk again and compare.
    Rescan,
}

pub(crate) fn load_workspace(db: &mut RootDatabase, root: PathBuf) -> Workspace {
    let walked = db.system().walk_entries(&root).unwrap_or_default();
    load_walked_workspace(db, root, &walked)
}

/// [`load_workspace`] from a walk that already happened.
pub(crate) fn load_walked_workspace(
    db: &mut RootDatabase,
    root: PathBuf,
    walked: &Walked,
) -> Workspace {
    let host = db.system().host_platform();
    let discovered = crate::discovery::group_into_packages(walked);
    let star_files = star_files(db, &discovered);
    let packages = discovered
        .into_iter()
        .map(|found| {
            let manifest = file_input(db, &Package::join(&found.path, MANIFEST_NAME));
            Package::builder(found.path, manifest, found.files, found.links)
                .path_durability(Durability::HIGH)
                .manifest_durability(Durability::HIGH)
                .files_durability(Durability::MEDIUM)
                .links_durability(Durability::MEDIUM)
                .new(db)
        })
        .collect();
    Workspace::builder(root, packages, host, star_files)
        .root_durability(Durability::HIGH)
        .packages_durability(Durability::MEDIUM)
        .host_durability(Durability::HIGH)
        .star_files_durability(Durability::MEDIUM)
        .new(db)
}

/// The inputs of every `.star` file of the walk (symbolic links are no module
/// candidates), sorted by path.
fn star_files(db: &RootDatabase, discovered: &[crate::DiscoveredPackage]) -> Vec<File> {
    let mut paths: Vec<String> = discovered
        .iter()
        .flat_map(|package| {
            package
                .files
                .iter()
                .filter(|f| f.ends_with(".star") && package.links.binary_search(f).is_err())
                .map(|f| Package::join(&package.path, f))
        })
        .collect();
    paths.sort();
    paths.iter().map(|path| file_input(db, path)).collect()
}

/// Adds or removes one `.star` file from the workspace's module candidates.
fn star_file_changed(db: &mut RootDatabase, workspace: Workspace, relative: &str, exists: bool) {
    if !relative.ends_with(".star") {
        return;
    }
    let file = file_input(db, relative);
    let mut files = workspace.star_files(db).clone();
    let position = files.binary_search_by(|f| f.path(db).as_str().cmp(relative));
    match (position, exists) {
        (Err(index), true) => files.insert(index, file),
        (Ok(index), false) => {
            files.remove(index);
        }
        _ => return,
    }
    workspace
        .set_star_files(db)
        .with_durability(Durability::MEDIUM)
        .to(files);
}

/// The input for a workspace-relative path, created on first use.
///
/// Durability: a file's revision starts MEDIUM (most files are never edited while a
/// server or editor runs) and turns LOW on its first change ([`bump`]). Salsa reports a
/// write at the durability the input had, so the first edit of a file re-verifies every
/// query that read any file; from the second edit on, only a LOW write happens, and every
/// query that read no edited file is verified in one step (its durability is MEDIUM)
/// instead of dependency by dependency. An edit loop on one manifest of a 100,000-target
/// workspace re-verifies what reads that file, and the workspace-wide queries check their
/// other dependencies in one step each.
pub(crate) fn file_input(db: &RootDatabase, path: &str) -> File {
    let mut table = db.lock_file_table();
    if let Some(file) = table.get(path) {
        return file;
    }
    let file = File::builder(path.to_owned(), 0)
        .path_durability(Durability::HIGH)
        .revision_durability(Durability::MEDIUM)
        .new(db);
    table.insert(path.to_owned(), file);
    file
}

/// Applies changes, setting only the inputs that really changed.
pub fn apply_changes(db: &mut RootDatabase, changes: &[ChangeEvent]) {
    let Some(workspace) = Workspace::try_get(db) else {
        return;
    };
    let root = workspace.root(db).clone();
    let mut rescan = false;
    // Whether the set of files may have changed (a content change cannot move a link).
    let mut structure = false;
    for change in changes {
        match change {
            ChangeEvent::Rescan => rescan = true,
            ChangeEvent::Changed(path) => {
                let Some(relative) = relative_path(&root, path) else {
                    continue;
                };
                match db.file(&relative) {
                    Some(file) => bump(db, file),
                    None => {
                        structure = true;
                        let listed = walk_lists(db, &root.join(&relative));
                        rescan |= file_set_changed(db, workspace, &relative, listed);
                    }
                }
            }
            ChangeEvent::Created(path) | ChangeEvent::Deleted(path) => {
                let Some(relative) = relative_path(&root, path) else {
                    continue;
                };
                structure = true;
                if let Some(file) = db.file(&relative) {
                    bump(db, file);
                }
                let listed = walk_lists(db, &root.join(&relative));
                rescan |= file_set_changed(db, workspace, &relative, listed);
            }
        }
    }
    if rescan {
        rescan_workspace(db, workspace);
    } else if structure {
        bump_moved_links(db, &root);
    }
    crate::host_paths::refresh_host_paths(db);
}

/// Whether the walk lists `path`, and as a link: `Some(false)` for a regular file,
/// `Some(true)` for a symbolic link (whatever it leads to), `None` otherwise (nothing, a
/// directory).
fn walk_lists(db: &RootDatabase, path: &Path) -> Option<bool> {
    match db.system().link_stamp(path).ok().flatten()?.kind {
        EntryKind::File => Some(false),
        EntryKind::Symlink => Some(true),
        EntryKind::Directory | EntryKind::Other => None,
    }
}

/// A new revision for one file: every query that read it runs again on demand.
fn bump(db: &mut RootDatabase, file: File) {
    db.lock_file_table().forget_seen(file);
    let next = file.revision(db) + 1;
    file.set_revision(db)
        .with_durability(Durability::LOW)
        .to(next);
}

/// Updates the owning package's file list (and link list) for a file the walk now lists
/// (`Some(link)`) or does not (`None`); returns `true` when only a rescan can tell.
fn file_set_changed(
    db: &mut RootDatabase,
    workspace: Workspace,
    relative: &str,
    listed: Option<bool>,
) -> bool {
    let exists = listed.is_some();
    let name = relative.rsplit('/').next().unwrap_or(relative);
    if name == MANIFEST_NAME || name == ".gitignore" {
        return true;
    }
    if is_excluded_from_walk(Path::new(relative)) {
        return false;
    }
    let root = workspace.root(db).clone();
    if exists && db.system().is_ignored(&root, relative) {
        // A file the walk would not list (`.gitignore`): not a workspace file.
        return false;
    }
    if !exists
        && db
            .system()
            .walk(&workspace.root(db).join(relative))
            .is_ok_and(|f| !f.is_empty())
    {
        // A directory appeared or vanished: its contents need a walk.
        return true;
    }
    let Some(package) = workspace.owning_package(db, relative) else {
        return false;
    };
    let prefix_len = if package.path(db).is_empty() {
        0
    } else {
        package.path(db).len() + 1
    };
    let package_relative = &relative[prefix_len..];
    let link = listed == Some(true);
    let mut links = package.links(db).clone();
    let link_position = links.binary_search_by(|f| f.as_str().cmp(package_relative));
    let links_changed = match (link_position, link) {
        (Err(index), true) => {
            links.insert(index, package_relative.to_owned());
            true
        }
        (Ok(index), false) => {
            links.remove(index);
            true
        }
        _ => false,
    };
    if links_changed {
        package
            .set_links(db)
            .with_durability(Durability::MEDIUM)
            .to(links);
    }
    let mut files = package.files(db).clone();
    let position = files.binary_search_by(|f| f.as_str().cmp(package_relative));
    match (position, exists) {
        (Err(index), true) => files.insert(index, package_relative.to_owned()),
        (Ok(index), false) => {
            files.remove(index);
        }
        _ => {
            // Still listed (or still not): only a file turned link, or back, moves the
            // module list.
            if links_changed {
                star_file_changed(db, workspace, relative, exists && !link);
            }
            return false;
        }
    }
    package
        .set_files(db)
        .with_durability(Durability::MEDIUM)
        .to(files);
    star_file_changed(db, workspace, relative, exists && !link);
    false
}

/// Whether the walk never lists a root-relative path: a component is hidden (starts with
/// `.`) or a directory the walk skips (`.once`, `target`, `node_modules`).
pub fn is_excluded_from_walk(relative: &Path) -> bool {
    let components: Vec<_> = relative.components().collect();
    components.iter().enumerate().any(|(i, component)| {
        let name = component.as_os_str().to_string_lossy();
        name.starts_with('.')
            || (i + 1 < components.len() && SKIPPED_DIRECTORIES.contains(&name.as_ref()))
    })
}

/// Walks again and sets the inputs that differ from the walk.
fn rescan_workspace(db: &mut RootDatabase, workspace: Workspace) {
    let root = workspace.root(db).clone();
    let discovered = discover_packages(db.system(), &root).unwrap_or_default();
    let stars = star_files(db, &discovered);
    if stars != *workspace.star_files(db) {
        workspace
            .set_star_files(db)
            .with_durability(Durability::MEDIUM)
            .to(stars);
    }
    let existing: Vec<Package> = workspace.packages(db).clone();
    let mut packages = Vec::with_capacity(discovered.len());
    for found in discovered {
        let manifest = file_input(db, &Package::join(&found.path, MANIFEST_NAME));
        // Both lists are sorted by path.
        let known = existing
            .binary_search_by(|p| p.path(db).as_str().cmp(&found.path))
            .ok()
            .map(|index| existing[index]);
        match known {
            Some(package) => {
                if *package.files(db) != found.files {
                    package
                        .set_files(db)
                        .with_durability(Durability::MEDIUM)
                        .to(found.files);
                }
                if *package.links(db) != found.links {
                    package
                        .set_links(db)
                        .with_durability(Durability::MEDIUM)
                        .to(found.links);
                }
                packages.push(package);
            }
            None => packages.push(
                Package::builder(found.path, manifest, found.files, found.links)
                    .path_durability(Durability::HIGH)
                    .manifest_durability(Durability::HIGH)
                    .files_durability(Durability::MEDIUM)
                    .links_durability(Durability::MEDIUM)
                    .new(db),
            ),
        }
    }
    if packages != existing {
        workspace
            .set_packages(db)
            .with_durability(Durability::MEDIUM)
            .to(packages);
    }
    bump_restamped_files(db, &root);
    bump_moved_links(db, &root);
}

/// Bumps every file whose stamp on disk differs from what its reads saw (a link's own
/// stamp for a read that saw the link itself).
fn bump_restamped_files(db: &mut RootDatabase, root: &Path) {
    let seen = db.lock_file_table().seen_files();
    for (file, seen) in seen {
        let unchanged = match seen {
            Seen::Conflicting => false,
            Seen::Stamp(stamp) => {
                let path = root.join(file.path(db));
                let current = match stamp {
                    Some(stamp) if stamp.kind == EntryKind::Symlink => {
                        db.system().link_stamp(&path)
                    }
                    _ => db.system().stamp(&path),
                };
                current.is_ok_and(|current| current == stamp)
            }
        };
        if !unchanged {
            bump(db, file);
        }
    }
}

/// Bumps every link resolved since its last bump that now leads elsewhere.
fn bump_moved_links(db: &mut RootDatabase, root: &Path) {
    let links = db.lock_file_table().resolved_links();
    for (file, target) in links {
        let now = crate::links::resolve_link(db.system(), root, file.path(db));
        if now != target {
            bump(db, file);
        }
    }
}

/// A path as workspace-relative `/`-separated text, or `None` if it lies outside.
fn relative_path(root: &Path, path: &Path) -> Option<String> {
    let relative = if path.is_absolute() {
        path.strip_prefix(root).ok()?
    } else {
        path
    };
    let text = crate::system::relative_to_slash(relative)?;
    if text.is_empty() || text.split('/').any(|s| s == "..") {
        None
    } else {
        Some(text)
    }
}
