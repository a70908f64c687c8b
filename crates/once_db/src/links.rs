//! Symbolic links among the workspace's files: where each leads ([`link_target`]), and
//! whether once follows it.
//!
//! The walk lists every link (never following one), so the set of files changes only
//! when a link is made or removed. A link is a source like any file when it leads,
//! through any chain of links, to a regular file the workspace walk lists (inside the root, not hidden, not ignored, not
//! under `.once`, `target` or `node_modules`): its digest and permission bits are those of
//! that file, read through that file's own input, so an edit of the target re-keys every
//! action reading the link. A link leading out of the workspace, to nothing, to a
//! directory, to a file the walk does not list or to something that is not a regular
//! file is not followed: the analysis reports it by name, and nothing reads through it.
//!
//! The warm database notices a change of where a link leads (its text, a link or
//! directory on the way, a target appearing or going) without an event for the link
//! itself: every link resolved since its last bump is resolved again after each change of
//! the file set and on each rescan ([`crate::changes`]), and bumped when the answer
//! differs.

use std::io;
use std::path::Path;

use crate::Db;
use crate::changes::is_excluded_from_walk;
use crate::files::File;
use crate::system::{EntryKind, System, relative_to_slash};

/// Where a symbolic link leads.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum LinkTarget {
    /// A workspace file the walk lists (workspace-relative, every link resolved): the
    /// link is followed.
    File(String),
    /// Out of the workspace (the absolute path it resolves to).
    Outside(String),
    /// Nowhere: the link's text.
    Dangling(String),
    /// A directory (workspace-relative; links to directories are not followed).
    Directory(String),
    /// A path inside the workspace the walk does not list: hidden, ignored, or below
    /// `.once`, `target` or `node_modules` (workspace-relative).
    Unlisted(String),
    /// Something that is not a regular file (a FIFO, a device; workspace-relative).
    Special(String),
    /// The link could not be resolved (a cycle of links, a permission): why.
    Unresolvable(String),
}

impl LinkTarget {
    /// Whether once follows the link (it leads to a workspace file).
    pub fn followed(&self) -> Option<&str> {
        match self {
            LinkTarget::File(target) => Some(target),
            _ => None,
        }
    }

    /// Why the link is not followed, as the end of a sentence starting with "a symbolic
    /// link": "to `/etc/passwd`, outside the workspace". `None` for a followed link.
    pub fn refusal(&self) -> Option<String> {
        Some(match self {
            LinkTarget::File(_) => return None,
            LinkTarget::Outside(path) => format!("to `{path}`, outside the workspace"),
            LinkTarget::Dangling(text) => format!("to `{text}`, which does not exist"),
            LinkTarget::Directory(path) => format!(
                "to the directory `{}` (links to directories are not followed)",
                display(path)
            ),
            LinkTarget::Unlisted(path) => format!(
                "to `{path}`, which is not a file of the workspace (it is hidden, ignored, or \
                 below `.once`, `target` or `node_modules`)"
            ),
            LinkTarget::Special(path) => {
                format!("to `{path}`, which is not a regular file")
            }
            LinkTarget::Unresolvable(why) => format!("that cannot be resolved ({why})"),
        })
    }
}

fn display(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

/// Where the link at the workspace-relative `relative` below `root` leads (see
/// [`LinkTarget`]), read through `system` now.
pub fn resolve_link(system: &dyn System, root: &Path, relative: &str) -> LinkTarget {
    let absolute = root.join(relative);
    let text = match system.read_link(&absolute) {
        Ok(text) => text.to_string_lossy().into_owned(),
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return LinkTarget::Dangling(relative.to_owned());
        }
        Err(error) => return LinkTarget::Unresolvable(error.to_string()),
    };
    let canonical = match system.canonicalize(&absolute) {
        Ok(canonical) => canonical,
        Err(error) if error.kind() == io::ErrorKind::NotFound => {
            return LinkTarget::Dangling(text);
        }
        Err(error) => return LinkTarget::Unresolvable(error.to_string()),
    };
    let canonical_root = system
        .canonicalize(root)
        .unwrap_or_else(|_| root.to_path_buf());
    let inside = canonical
        .strip_prefix(&canonical_root)
        .ok()
        .and_then(relative_to_slash);
    let Some(target) = inside else {
        return LinkTarget::Outside(canonical.display().to_string());
    };
    match system.stamp(&canonical) {
        Ok(Some(stamp)) if stamp.kind == EntryKind::Directory => {
            return LinkTarget::Directory(target);
        }
        Ok(Some(stamp)) if stamp.kind == EntryKind::File => {}
        Ok(Some(_)) => return LinkTarget::Special(target),
        Ok(None) => return LinkTarget::Dangling(text),
        Err(error) => return LinkTarget::Unresolvable(error.to_string()),
    }
    if target.is_empty()
        || is_excluded_from_walk(Path::new(&target))
        || system.is_ignored(root, &target)
    {
        return LinkTarget::Unlisted(target);
    }
    LinkTarget::File(target)
}

/// Where the link `file` leads, re-run when its revision changes (and bumped by
/// [`crate::apply_changes`] when the answer on disk differs).
#[salsa::tracked(returns(ref))]
pub fn link_target(db: &dyn Db, file: File) -> LinkTarget {
    let _ = file.revision(db);
    let root = crate::workspace::workspace_root(db);
    let target = resolve_link(db.system(), &root, file.path(db));
    db.record_link(file, target.clone());
    target
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::MemorySystem;

    #[test]
    fn links_resolve_to_workspace_files_or_say_why_not() {
        let system = MemorySystem::default();
        let root = PathBuf::from("/ws");
        system.write("/ws/p/real.txt", "real\n");
        system.write("/ws/.hidden/x.txt", "x\n");
        system.write("/elsewhere/secret.txt", "secret\n");
        system.symlink("/ws/p/same.txt", "real.txt");
        system.symlink("/ws/p/chain.txt", "same.txt");
        system.symlink("/ws/p/up.txt", "../p/real.txt");
        system.symlink("/ws/p/escape.txt", "/elsewhere/secret.txt");
        system.symlink("/ws/p/dangling.txt", "nothing.txt");
        system.symlink("/ws/p/dir", "/ws/p");
        system.symlink("/ws/p/hidden.txt", "../.hidden/x.txt");
        system.symlink("/ws/p/loop.txt", "loop.txt");
        let resolve = |path| resolve_link(&system, &root, path);
        let file = |path: &str| LinkTarget::File(path.to_owned());
        assert_eq!(resolve("p/same.txt"), file("p/real.txt"));
        assert_eq!(resolve("p/chain.txt"), file("p/real.txt"));
        assert_eq!(resolve("p/up.txt"), file("p/real.txt"));
        assert_eq!(
            resolve("p/escape.txt"),
            LinkTarget::Outside("/elsewhere/secret.txt".into())
        );
        assert_eq!(
            resolve("p/dangling.txt"),
            LinkTarget::Dangling("nothing.txt".into())
        );
        assert_eq!(resolve("p/dir"), LinkTarget::Directory("p".into()));
        assert_eq!(
            resolve("p/hidden.txt"),
            LinkTarget::Unlisted(".hidden/x.txt".into())
        );
        assert!(matches!(resolve("p/loop.txt"), LinkTarget::Unresolvable(_)));
        assert_eq!(file("p/real.txt").refusal(), None);
        assert_eq!(
            resolve("p/escape.txt").refusal().as_deref(),
            Some("to `/elsewhere/secret.txt`, outside the workspace")
        );
    }
}
