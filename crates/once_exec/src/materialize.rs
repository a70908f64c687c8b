//! `# once output-symlinks "materialize-external"`: after a script runs, a symbolic link
//! in one of its declared outputs that leads out of that output's tree is replaced by a
//! copy of what it points to, so the stored result holds the bytes, not a pointer to a
//! file the cache does not own. The same confined resolution finds the file a source
//! that is a link is copied from ([`resolve_source`]).
//!
//! For each declared output `D` (a file, a directory or itself a link), every link found
//! under `D` without following any is resolved to its **canonical target**: each
//! component is looked up from a directory handle, links met on the way are expanded (at
//! most [`MAX_LINK_HOPS`]), `..` goes up one real directory. Then:
//!
//! - a target equal to `D` or below it: the link stays a link, its text unchanged;
//! - a file or directory elsewhere in the workspace: the link is replaced by a copy (a
//!   file with its permission bits, a directory tree), built under a temporary name in the
//!   link's directory and renamed into place;
//! - a target outside the workspace (`/etc/hosts`, `../../elsewhere`), a link that leads
//!   nowhere (dangling), a cycle of links, or a directory that contains `D` itself (its
//!   copy would contain the copy): an error naming the link, so the run fails rather than
//!   store a result that depends on what the cache cannot see.
//!
//! Inside a copied directory, each link is resolved the same way: one leading into `D` or
//! into a directory being copied becomes a relative link to the same place in the result
//! (so a tree that links to itself stays finite), anything else is copied in turn. A copy
//! is bounded by [`MAX_COPIED_BYTES`], [`MAX_COPIED_ENTRIES`] and [`MAX_COPY_DEPTH`]; past
//! a bound the run fails with the limit in the message.
//!
//! Everything goes through directory handles (`openat`/`readlinkat`/`statat` without
//! following links), so an entry swapped for a link between a look and a use is refused,
//! never followed.

use std::io::{self, Read as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use once_host::confined::{TEMPORARY_PREFIX, create_temporary};
use rustix::fs::{AtFlags, FileType, Mode, fchmod, fstat, mkdirat, readlinkat, renameat, unlinkat};

use crate::handles;
use crate::outputs::split;

/// The most links one resolution may expand before it is taken for a cycle.
pub const MAX_LINK_HOPS: usize = 40;

/// The most bytes the copies of one output's external links may hold.
pub const MAX_COPIED_BYTES: u64 = 1 << 30;

/// The most files, directories and links the copies of one output's links may hold.
pub const MAX_COPIED_ENTRIES: usize = 100_000;

/// The deepest directory nesting of a copy.
pub const MAX_COPY_DEPTH: usize = 256;

/// What to write into an error's repair.
const REPAIR: &str = "copy it into the output in the script, or declare `# once output-symlinks \"preserve\"` to store links as links";

/// Replaces the links of the output `declared` (workspace-relative) that lead out of it
/// with copies of their targets; see the module documentation. `root` is the handle of the
/// workspace at `root_path`. Answers how many links were replaced.
pub fn materialize_external_links(
    root: BorrowedFd<'_>,
    root_path: &Path,
    declared: &str,
) -> io::Result<usize> {
    let resolver = Resolver::new(root, root_path);
    let mut links = Vec::new();
    let (parent, name) = split(declared);
    let Some(directory) = open_path(root, parent)? else {
        return Ok(0);
    };
    find_links(&directory, parent, name, &mut links)?;
    // Every decision is taken before anything changes, so the result does not depend on
    // the order the links are replaced in.
    let mut replacements = Vec::new();
    for link in links {
        let target = resolver
            .resolve(&link.parent, &link.text)
            .map_err(|unresolved| {
                let link_path = link.path();
                let described = format!("the output link `{link_path}`");
                io::Error::other(unresolved.message(&described, &link.text, declared))
            })?;
        if is_under(&target.path, declared) {
            continue;
        }
        if target.kind == FileType::Directory && is_under(declared, &target.path) {
            return Err(io::Error::other(format!(
                "the output link `{}` points to `{}`, a directory that contains the output `{declared}`: its copy would contain itself (a cycle); {REPAIR}",
                link.path(),
                display(&target.path)
            )));
        }
        replacements.push((link, target));
    }
    let count = replacements.len();
    let mut copier = Copier {
        resolver: &resolver,
        output: declared,
        roots: Vec::new(),
        bytes: 0,
        entries: 0,
    };
    for (link, target) in replacements {
        let directory = open_path(root, &link.parent)?
            .ok_or_else(|| io::Error::other(format!("`{}` disappeared", display(&link.parent))))?;
        copier
            .replace(&directory, &link.name, &link.path(), &target)
            .map_err(|e| handles::with_context(e, format_args!("output link `{}`", link.path())))?;
    }
    Ok(count)
}

/// The workspace path the source file `path` is read from: `path` itself unless it is a
/// symbolic link, else the file its links lead to, each looked up from the root's handle
/// as for output links (never out of the workspace). A link leading out of the
/// workspace, nowhere, or to something other than a regular file is an error naming it
/// (analysis refuses such sources: one met here changed after it was planned).
pub fn resolve_source<'p>(
    root: BorrowedFd<'_>,
    root_path: &Path,
    path: &'p str,
) -> io::Result<std::borrow::Cow<'p, str>> {
    let (parent, name) = split(path);
    let Some(directory) = open_path(root, parent)? else {
        return Ok(std::borrow::Cow::Borrowed(path));
    };
    match handles::stat_entry(&directory, name)? {
        Some(stat) if handles::file_type(&stat) == FileType::Symlink => {}
        _ => return Ok(std::borrow::Cow::Borrowed(path)),
    }
    let text = link_text(&directory, name, path)?;
    let refused = |why: String| {
        io::Error::other(format!(
            "the source `{path}` is a symbolic link to `{text}`, {why}; once follows links to \
             files of the workspace only"
        ))
    };
    let target = Resolver::new(root, root_path)
        .resolve(parent, name)
        .map_err(|unresolved| {
            refused(match unresolved {
                Unresolved::Outside => "outside the workspace".to_owned(),
                Unresolved::Dangling => "which does not exist".to_owned(),
                Unresolved::Cycle => format!("more than {MAX_LINK_HOPS} links in a row"),
                Unresolved::Special(_) => "which is not a regular file".to_owned(),
                Unresolved::Io(error) => format!("which cannot be resolved ({error})"),
            })
        })?;
    if target.kind != FileType::RegularFile {
        return Err(refused("which is not a regular file".to_owned()));
    }
    Ok(std::borrow::Cow::Owned(target.path))
}

/// A link found in an output: the directory holding it (workspace-relative), its name and
/// its text.
struct FoundLink {
    parent: String,
    name: String,
    text: String,
}

impl FoundLink {
    fn path(&self) -> String {
        join(&self.parent, &self.name)
    }
}

/// Collects the links at or below `name` in `directory` (whose workspace path is
/// `parent`), following none.
fn find_links(
    directory: &OwnedFd,
    parent: &str,
    name: &str,
    links: &mut Vec<FoundLink>,
) -> io::Result<()> {
    let Some(stat) = handles::stat_entry(directory, name)? else {
        return Ok(());
    };
    match handles::file_type(&stat) {
        FileType::Symlink => {
            let text = link_text(directory, name, &join(parent, name))?;
            links.push(FoundLink {
                parent: parent.to_owned(),
                name: name.to_owned(),
                text,
            });
        }
        FileType::Directory => {
            let Some(inner) = handles::open_directory(directory, name)? else {
                return Ok(());
            };
            let path = join(parent, name);
            for child in handles::entry_names(&inner)? {
                find_links(&inner, &path, &child, links)?;
            }
        }
        _ => {}
    }
    Ok(())
}

fn link_text(directory: impl AsFd, name: &str, path: &str) -> io::Result<String> {
    readlinkat(directory, name, Vec::new())?
        .into_string()
        .map_err(|_| io::Error::other(format!("the link `{path}` holds a path that is not UTF-8")))
}

/// Where a link leads: a workspace-relative path free of links, and what is there.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Target {
    path: String,
    kind: FileType,
}

/// Why a link has no target in the workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Unresolved {
    /// It leads out of the workspace.
    Outside,
    /// Nothing is at the path it leads to (or a file stands where a directory should).
    Dangling,
    /// More than [`MAX_LINK_HOPS`] links: a cycle.
    Cycle,
    /// Neither a regular file nor a directory (a socket, a device).
    Special(String),
    Io(String),
}

impl Unresolved {
    /// Why `link` (a description: "the output link `out/x`") whose text is `text` cannot
    /// be materialised in the output `output`.
    fn message(&self, link: &str, text: &str, output: &str) -> String {
        match self {
            Unresolved::Outside => format!(
                "{link} points to `{text}`, outside the workspace: `once` does not copy files from outside the workspace into the cache; {REPAIR}"
            ),
            Unresolved::Dangling => format!(
                "{link} points to `{text}`, which does not exist (a dangling link in the output `{output}`)"
            ),
            Unresolved::Cycle => format!(
                "{link} points to `{text}`, which does not resolve: more than {MAX_LINK_HOPS} links in a row (a cycle of symbolic links)"
            ),
            Unresolved::Special(path) => format!(
                "{link} points to `{}`, which is neither a regular file nor a directory",
                display(path)
            ),
            Unresolved::Io(error) => {
                format!("{link} cannot be resolved: {error}")
            }
        }
    }
}

/// Resolves link texts to canonical workspace paths from the root's handle.
struct Resolver<'a> {
    root: BorrowedFd<'a>,
    /// The workspace root's absolute path as given and with its links resolved: an
    /// absolute link text below either is inside the workspace.
    absolute_roots: Vec<PathBuf>,
}

impl<'a> Resolver<'a> {
    fn new(root: BorrowedFd<'a>, root_path: &Path) -> Resolver<'a> {
        let mut absolute_roots = Vec::new();
        if let Ok(canonical) = std::fs::canonicalize(root_path) {
            absolute_roots.push(canonical);
        }
        if root_path.is_absolute() && !absolute_roots.iter().any(|r| r == root_path) {
            absolute_roots.push(root_path.to_path_buf());
        }
        Resolver {
            root,
            absolute_roots,
        }
    }

    /// Where the link text `text`, read from a link in the directory `from`
    /// (workspace-relative, free of links), leads.
    fn resolve(&self, from: &str, text: &str) -> Result<Target, Unresolved> {
        let io = |e: io::Error| Unresolved::Io(e.to_string());
        // The directories walked so far: names and handles (the root's is `self.root`).
        let mut names: Vec<String> = Vec::new();
        let mut handles_so_far: Vec<OwnedFd> = Vec::new();
        for part in components(from) {
            let parent = handles_so_far.last().map_or(self.root, |h| h.as_fd());
            let handle = handles::open_directory(parent, part)
                .map_err(io)?
                .ok_or(Unresolved::Dangling)?;
            names.push(part.to_owned());
            handles_so_far.push(handle);
        }
        // Components still to walk, the next one last.
        let mut pending: Vec<String> = Vec::new();
        let mut hops = 0;
        self.push_text(text, &mut names, &mut handles_so_far, &mut pending)?;
        let mut kind = FileType::Directory;
        while let Some(part) = pending.pop() {
            match part.as_str() {
                "" | "." => continue,
                ".." => {
                    if names.pop().is_none() {
                        return Err(Unresolved::Outside);
                    }
                    handles_so_far.pop();
                    kind = FileType::Directory;
                    continue;
                }
                _ => {}
            }
            let parent = handles_so_far.last().map_or(self.root, |h| h.as_fd());
            let stat = handles::stat_entry(parent, &part)
                .map_err(io)?
                .ok_or(Unresolved::Dangling)?;
            match handles::file_type(&stat) {
                FileType::Symlink => {
                    hops += 1;
                    if hops > MAX_LINK_HOPS {
                        return Err(Unresolved::Cycle);
                    }
                    let path = join(&names.join("/"), &part);
                    let inner = link_text(parent, &part, &path).map_err(io)?;
                    self.push_text(&inner, &mut names, &mut handles_so_far, &mut pending)?;
                    kind = FileType::Directory;
                }
                FileType::Directory => {
                    let handle = handles::open_directory(parent, &part)
                        .map_err(io)?
                        .ok_or(Unresolved::Dangling)?;
                    names.push(part);
                    handles_so_far.push(handle);
                    kind = FileType::Directory;
                }
                FileType::RegularFile => {
                    // A name without a handle: nothing may be looked up below it (checked
                    // next), so the names and handles stay in step for `..`.
                    names.push(part);
                    kind = FileType::RegularFile;
                }
                _ => {
                    names.push(part);
                    return Err(Unresolved::Special(names.join("/")));
                }
            }
            // `file/x` or `file/..`: a file is no directory.
            if kind == FileType::RegularFile && pending.iter().any(|p| !p.is_empty() && p != ".") {
                return Err(Unresolved::Dangling);
            }
        }
        Ok(Target {
            path: names.join("/"),
            kind,
        })
    }

    /// Queues the components of a link text: an absolute one restarts from the workspace
    /// root when it lies below it.
    fn push_text(
        &self,
        text: &str,
        names: &mut Vec<String>,
        handles_so_far: &mut Vec<OwnedFd>,
        pending: &mut Vec<String>,
    ) -> Result<(), Unresolved> {
        let relative = if text.starts_with('/') {
            let absolute = Path::new(text);
            let inside = self
                .absolute_roots
                .iter()
                .find_map(|root| absolute.strip_prefix(root).ok())
                .ok_or(Unresolved::Outside)?;
            names.clear();
            handles_so_far.clear();
            inside.to_str().ok_or(Unresolved::Outside)?.to_owned()
        } else {
            text.to_owned()
        };
        pending.extend(relative.split('/').rev().map(str::to_owned));
        Ok(())
    }
}

/// Makes the copies; counts what they hold against the bounds.
struct Copier<'r, 'a> {
    resolver: &'r Resolver<'a>,
    /// The declared output being materialised.
    output: &'r str,
    /// `(source directory, where its copy goes)` of the directories being copied, so a
    /// link into one of them becomes a link into its copy.
    roots: Vec<(String, String)>,
    bytes: u64,
    entries: usize,
}

impl Copier<'_, '_> {
    /// Replaces the link `name` in `directory` (workspace path `path`) with a copy of
    /// `target`.
    fn replace(
        &mut self,
        directory: &OwnedFd,
        name: &str,
        path: &str,
        target: &Target,
    ) -> io::Result<()> {
        if target.kind == FileType::RegularFile {
            let (source_directory, source_name) = self.open_parent(&target.path)?;
            let temporary = self.copy_file(&source_directory, source_name, directory)?;
            return renameat(directory, temporary.as_str(), directory, name).map_err(|e| {
                let _ = unlinkat(directory, temporary.as_str(), AtFlags::empty());
                e.into()
            });
        }
        let temporary = temporary_directory(directory)?;
        let copied = (|| {
            let inner = handles::open_directory(directory, &temporary)?
                .ok_or_else(|| io::Error::other("the temporary directory disappeared"))?;
            self.copy_tree(&target.path, &inner, path, 0)?;
            // A directory cannot be renamed over a link: the link goes first (the output
            // lock keeps other runs of this action away meanwhile).
            unlinkat(directory, name, AtFlags::empty())?;
            renameat(directory, temporary.as_str(), directory, name)?;
            Ok(())
        })();
        if copied.is_err() {
            let _ = handles::remove_entry(directory, &temporary);
        }
        copied
    }

    /// The handle of the directory holding the workspace path `path`, and its last name.
    fn open_parent<'p>(&self, path: &'p str) -> io::Result<(OwnedFd, &'p str)> {
        let (parent, name) = split(path);
        let directory = open_path(self.resolver.root, parent)?
            .ok_or_else(|| io::Error::other(format!("`{}` disappeared", display(parent))))?;
        Ok((directory, name))
    }

    fn count(&mut self, path: &str) -> io::Result<()> {
        self.entries += 1;
        if self.entries > MAX_COPIED_ENTRIES {
            return Err(io::Error::other(format!(
                "copying the targets of the links in `{}` reached `{path}` past the limit of {MAX_COPIED_ENTRIES} entries; {REPAIR}",
                self.output
            )));
        }
        Ok(())
    }

    /// Copies the regular file `name` in `source` to a temporary file in `destination`,
    /// with its permission bits; answers the temporary name.
    fn copy_file(
        &mut self,
        source: &OwnedFd,
        name: &str,
        destination: &OwnedFd,
    ) -> io::Result<String> {
        self.count(name)?;
        let mut file = handles::open_file(source, name)?
            .ok_or_else(|| io::Error::other(format!("`{name}` disappeared")))?;
        let stat = fstat(&file)?;
        if handles::file_type(&stat) != FileType::RegularFile {
            return Err(io::Error::other(format!("`{name}` is not a regular file")));
        }
        let budget = MAX_COPIED_BYTES - self.bytes;
        let (temporary, mut copy) = create_temporary(destination)?;
        let written = (|| {
            let copied = io::copy(&mut (&mut file).take(budget + 1), &mut copy)?;
            if copied > budget {
                return Err(io::Error::other(format!(
                    "copying the targets of the links in `{}` passes the limit of {MAX_COPIED_BYTES} bytes; {REPAIR}",
                    self.output
                )));
            }
            self.bytes += copied;
            fchmod(&copy, Mode::from_raw_mode(stat.st_mode & 0o777))?;
            Ok(())
        })();
        if let Err(error) = written {
            let _ = unlinkat(destination, temporary.as_str(), AtFlags::empty());
            return Err(error);
        }
        Ok(temporary)
    }

    /// Copies the directory `source` (a canonical workspace path) into the empty directory
    /// `destination`, which will be at the workspace path `destination_path`.
    fn copy_tree(
        &mut self,
        source: &str,
        destination: &OwnedFd,
        destination_path: &str,
        depth: usize,
    ) -> io::Result<()> {
        self.roots
            .push((source.to_owned(), destination_path.to_owned()));
        let copied = self.copy_entries(source, destination, destination_path, depth);
        self.roots.pop();
        copied
    }

    fn copy_entries(
        &mut self,
        source: &str,
        destination: &OwnedFd,
        destination_path: &str,
        depth: usize,
    ) -> io::Result<()> {
        if depth > MAX_COPY_DEPTH {
            return Err(io::Error::other(format!(
                "copying the targets of the links in `{}` nests directories deeper than {MAX_COPY_DEPTH} levels at `{destination_path}`; {REPAIR}",
                self.output
            )));
        }
        let directory = open_path(self.resolver.root, source)?
            .ok_or_else(|| io::Error::other(format!("`{}` disappeared", display(source))))?;
        for child in handles::entry_names(&directory)? {
            let child_source = join(source, &child);
            let child_path = join(destination_path, &child);
            let Some(stat) = handles::stat_entry(&directory, &child)? else {
                continue;
            };
            match handles::file_type(&stat) {
                FileType::RegularFile => {
                    let temporary = self.copy_file(&directory, &child, destination)?;
                    renameat(destination, temporary.as_str(), destination, child.as_str())?;
                }
                FileType::Directory => {
                    self.count(&child_path)?;
                    let inner = handles::make_directory(destination, &child)?;
                    self.copy_entries(&child_source, &inner, &child_path, depth + 1)?;
                }
                FileType::Symlink => {
                    self.count(&child_path)?;
                    let text = link_text(&directory, &child, &child_source)?;
                    let target = self.resolver.resolve(source, &text).map_err(|unresolved| {
                        let described =
                            format!("the link `{child_source}` (copied into `{child_path}`)");
                        io::Error::other(unresolved.message(&described, &text, self.output))
                    })?;
                    if let Some(place) = self.place_in_result(&target.path) {
                        // Into the output or into a tree being copied: a link to the same
                        // place in the result.
                        let relative = relative_path(destination_path, &place);
                        rustix::fs::symlinkat(relative.as_str(), destination, child.as_str())?;
                    } else if target.kind == FileType::RegularFile {
                        let (source_directory, source_name) = self.open_parent(&target.path)?;
                        let temporary =
                            self.copy_file(&source_directory, source_name, destination)?;
                        renameat(destination, temporary.as_str(), destination, child.as_str())?;
                    } else {
                        if is_under(self.output, &target.path) {
                            return Err(io::Error::other(format!(
                                "the link `{child_source}` points to `{}`, a directory that contains the output `{}`: its copy would contain itself (a cycle); {REPAIR}",
                                display(&target.path),
                                self.output
                            )));
                        }
                        let inner = handles::make_directory(destination, &child)?;
                        self.copy_tree(&target.path, &inner, &child_path, depth + 1)?;
                    }
                }
                _ => {
                    return Err(io::Error::other(format!(
                        "`{child_source}` is neither a regular file, a directory nor a link"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Where the canonical workspace path `target` is in the materialised output, when it
    /// is in it: inside the output itself, or inside a directory being copied (at the
    /// same place in its copy).
    fn place_in_result(&self, target: &str) -> Option<String> {
        if is_under(target, self.output) {
            return Some(target.to_owned());
        }
        self.roots.iter().rev().find_map(|(source, copy)| {
            is_under(target, source).then(|| {
                let rest = target[source.len()..].trim_start_matches('/');
                join(copy, rest)
            })
        })
    }
}

/// Whether the workspace path `path` is `directory` or below it (everything is below the
/// root, `""`).
fn is_under(path: &str, directory: &str) -> bool {
    directory.is_empty() || once_model::paths::is_under(path, directory)
}

/// Makes a fresh, empty temporary directory in `directory` and answers its name.
fn temporary_directory(directory: &OwnedFd) -> io::Result<String> {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    loop {
        let count = COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{TEMPORARY_PREFIX}{}-tree-{count}", std::process::id());
        match mkdirat(directory, name.as_str(), Mode::from_raw_mode(0o777)) {
            Ok(()) => return Ok(name),
            Err(rustix::io::Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Opens the workspace directory `relative` (`""`: the root) from `root` without
/// following links; `None` when missing.
fn open_path(root: BorrowedFd<'_>, relative: &str) -> io::Result<Option<OwnedFd>> {
    once_host::confined::open_directory_at(root, relative, false)
}

fn components(path: &str) -> impl Iterator<Item = &str> {
    path.split('/').filter(|part| !part.is_empty())
}

fn join(directory: &str, name: &str) -> String {
    match (directory.is_empty(), name.is_empty()) {
        (true, _) => name.to_owned(),
        (_, true) => directory.to_owned(),
        _ => format!("{directory}/{name}"),
    }
}

/// A workspace path for a message (the root is `.`).
fn display(path: &str) -> &str {
    if path.is_empty() { "." } else { path }
}

/// The text of a link in the workspace directory `from` that leads to the workspace path
/// `to`.
fn relative_path(from: &str, to: &str) -> String {
    let from: Vec<&str> = components(from).collect();
    let to: Vec<&str> = components(to).collect();
    let common = from.iter().zip(&to).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; from.len() - common];
    parts.extend(&to[common..]);
    if parts.is_empty() {
        ".".to_owned()
    } else {
        parts.join("/")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;
    use std::os::unix::fs::{PermissionsExt as _, symlink};

    struct Workspace {
        _temporary: tempfile::TempDir,
        root: PathBuf,
    }

    impl Workspace {
        fn new() -> Workspace {
            let temporary = tempfile::tempdir().expect("a temporary directory");
            let root = temporary.path().join("ws");
            fs::create_dir(&root).expect("the workspace");
            Workspace {
                _temporary: temporary,
                root,
            }
        }

        fn write(&self, path: &str, content: &str) {
            let path = self.root.join(path);
            fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
            fs::write(path, content).expect("a file");
        }

        fn link(&self, path: &str, target: &str) {
            let path = self.root.join(path);
            fs::create_dir_all(path.parent().expect("a parent")).expect("directories");
            symlink(target, path).expect("a link");
        }

        fn materialize(&self, output: &str) -> io::Result<usize> {
            let root = once_host::confined::open_root(&self.root).expect("the root");
            materialize_external_links(root.as_fd(), &self.root, output)
        }

        fn is_link(&self, path: &str) -> bool {
            fs::symlink_metadata(self.root.join(path))
                .expect("an entry")
                .file_type()
                .is_symlink()
        }

        fn read(&self, path: &str) -> String {
            fs::read_to_string(self.root.join(path)).expect("a readable file")
        }

        fn error(&self, output: &str) -> String {
            self.materialize(output)
                .expect_err("materialising fails")
                .to_string()
        }
    }

    #[test]
    fn a_link_to_a_file_elsewhere_in_the_workspace_becomes_a_copy() {
        let ws = Workspace::new();
        ws.write("src/data.txt", "data\n");
        fs::set_permissions(
            ws.root.join("src/data.txt"),
            fs::Permissions::from_mode(0o750),
        )
        .expect("chmod");
        ws.link("out/data.txt", "../src/data.txt");
        assert_eq!(ws.materialize("out").expect("materialised"), 1);
        assert!(!ws.is_link("out/data.txt"));
        assert_eq!(ws.read("out/data.txt"), "data\n");
        let mode = fs::metadata(ws.root.join("out/data.txt"))
            .expect("metadata")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o750, "the permission bits are copied");
        assert_eq!(ws.read("src/data.txt"), "data\n", "the source is untouched");
    }

    #[test]
    fn a_declared_output_that_is_a_link_becomes_a_copy() {
        let ws = Workspace::new();
        ws.write("src/data.txt", "data\n");
        ws.link("out.txt", "src/data.txt");
        assert_eq!(ws.materialize("out.txt").expect("materialised"), 1);
        assert!(!ws.is_link("out.txt"));
        assert_eq!(ws.read("out.txt"), "data\n");
        // A directory: its tree, the temporary name gone.
        ws.write("assets/sub/a.txt", "a\n");
        ws.link("dist", "assets");
        assert_eq!(ws.materialize("dist").expect("materialised"), 1);
        assert!(!ws.is_link("dist") && ws.root.join("dist").is_dir());
        assert_eq!(ws.read("dist/sub/a.txt"), "a\n");
        let mut names: Vec<String> = fs::read_dir(&ws.root)
            .expect("listed")
            .map(|e| {
                e.expect("an entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        names.sort();
        assert_eq!(names, ["assets", "dist", "out.txt", "src"]);
    }

    #[test]
    fn an_absolute_link_into_the_workspace_is_resolved_from_the_root() {
        let ws = Workspace::new();
        ws.write("src/data.txt", "data\n");
        let absolute = ws.root.join("src/data.txt");
        ws.link("out/data.txt", absolute.to_str().expect("UTF-8"));
        assert_eq!(ws.materialize("out").expect("materialised"), 1);
        assert_eq!(ws.read("out/data.txt"), "data\n");
        assert!(!ws.is_link("out/data.txt"));
    }

    #[test]
    fn links_within_the_output_stay_links() {
        let ws = Workspace::new();
        ws.write("out/real.txt", "real\n");
        ws.write("out/sub/x.txt", "x\n");
        ws.link("out/alias.txt", "real.txt");
        ws.link("out/sub/up.txt", "../real.txt");
        ws.link("out/self", ".");
        ws.link("out/roundabout.txt", "../out/real.txt");
        assert_eq!(ws.materialize("out").expect("materialised"), 0);
        for link in [
            "out/alias.txt",
            "out/sub/up.txt",
            "out/self",
            "out/roundabout.txt",
        ] {
            assert!(ws.is_link(link), "{link} stays a link");
        }
        assert_eq!(
            fs::read_link(ws.root.join("out/roundabout.txt")).expect("a link"),
            Path::new("../out/real.txt"),
            "its text unchanged"
        );
    }

    #[test]
    fn a_link_to_a_directory_becomes_a_copy_of_the_tree() {
        let ws = Workspace::new();
        ws.write("assets/a.txt", "a\n");
        ws.write("assets/deep/b.txt", "b\n");
        ws.link("assets/alias.txt", "a.txt");
        ws.link("assets/deep/top", "..");
        ws.write("other/c.txt", "c\n");
        ws.link("assets/deep/c.txt", "../../other/c.txt");
        ws.write("out/own.txt", "own\n");
        ws.link("assets/deep/own.txt", "../../out/own.txt");
        ws.link("out/assets", "../assets");
        assert_eq!(ws.materialize("out").expect("materialised"), 1);
        assert!(!ws.is_link("out/assets"));
        assert_eq!(ws.read("out/assets/a.txt"), "a\n");
        assert_eq!(ws.read("out/assets/deep/b.txt"), "b\n");
        // A link within the copied tree stays a link, to the copy.
        assert!(ws.is_link("out/assets/alias.txt"));
        assert_eq!(
            fs::read_link(ws.root.join("out/assets/alias.txt")).expect("a link"),
            Path::new("a.txt")
        );
        // A link out of it is copied in turn; one into the output links there.
        assert!(!ws.is_link("out/assets/deep/c.txt"));
        assert_eq!(ws.read("out/assets/deep/c.txt"), "c\n");
        assert_eq!(
            fs::read_link(ws.root.join("out/assets/deep/own.txt")).expect("a link"),
            Path::new("../../own.txt")
        );
        // A link back up the copied tree is a link within the copy: it stays finite.
        assert_eq!(
            fs::read_link(ws.root.join("out/assets/deep/top")).expect("a link"),
            Path::new("..")
        );
        assert!(ws.is_link("assets/alias.txt"), "the source is untouched");
    }

    #[test]
    fn a_link_to_a_directory_containing_the_output_is_a_cycle() {
        let ws = Workspace::new();
        ws.write("gen/out/a.txt", "a\n");
        ws.link("gen/out/up", "..");
        let error = ws.error("gen/out");
        assert!(
            error.contains("`gen/out/up` points to `gen`") && error.contains("a cycle"),
            "{error}"
        );
        // The same from inside a copied tree: `assets/root` leads to the workspace root.
        let ws = Workspace::new();
        ws.write("assets/a.txt", "a\n");
        ws.link("assets/root", "..");
        ws.link("out/assets", "../assets");
        let error = ws.error("out");
        assert!(
            error.contains(
                "`assets/root` points to `.`, a directory that contains the output `out`"
            ),
            "{error}"
        );
        assert!(ws.is_link("out/assets"), "nothing replaced on failure");
    }

    #[test]
    fn a_cycle_of_links_is_an_error() {
        let ws = Workspace::new();
        ws.link("out/a", "b");
        ws.link("out/b", "a");
        let error = ws.error("out");
        assert!(error.contains("a cycle of symbolic links"), "{error}");
    }

    #[test]
    fn a_dangling_link_is_an_error() {
        let ws = Workspace::new();
        ws.link("out/missing.txt", "../src/missing.txt");
        let error = ws.error("out");
        assert!(
            error
                .contains("`out/missing.txt` points to `../src/missing.txt`, which does not exist"),
            "{error}"
        );
        ws.write("src/file.txt", "f\n");
        fs::remove_file(ws.root.join("out/missing.txt")).expect("removed");
        ws.link("out/through.txt", "../src/file.txt/inner");
        assert!(ws.error("out").contains("does not exist"));
        // Inside a copied tree, the message names the link and where its copy was going.
        let ws = Workspace::new();
        ws.write("assets/a.txt", "a\n");
        ws.link("assets/gone", "missing");
        ws.link("out/assets", "../assets");
        assert_eq!(
            ws.error("out"),
            "output link `out/assets`: the link `assets/gone` (copied into `out/assets/gone`) points to `missing`, which does not exist (a dangling link in the output `out`)"
        );
    }

    #[test]
    fn a_link_out_of_the_workspace_is_an_error() {
        let ws = Workspace::new();
        fs::write(ws.root.parent().expect("a parent").join("secret"), "s").expect("a file");
        ws.link("out/escape.txt", "../../secret");
        let error = ws.error("out");
        assert!(
            error.contains("`out/escape.txt` points to `../../secret`, outside the workspace")
                && error.contains("# once output-symlinks \"preserve\""),
            "{error}"
        );
        fs::remove_file(ws.root.join("out/escape.txt")).expect("removed");
        ws.link("out/hosts", "/etc/hosts");
        assert!(ws.error("out").contains("outside the workspace"));
    }

    #[test]
    fn a_copy_past_a_bound_is_refused_and_leaves_nothing_behind() {
        let ws = Workspace::new();
        ws.write("deep/x.txt", "x\n");
        // A tree nested deeper than the copy allows.
        let mut path = String::from("deep");
        for _ in 0..=MAX_COPY_DEPTH {
            path.push_str("/d");
        }
        fs::create_dir_all(ws.root.join(&path)).expect("a deep tree");
        ws.link("out/deep", "../deep");
        let error = ws.error("out");
        assert!(error.contains("deeper than 256 levels"), "{error}");
        assert!(ws.is_link("out/deep"), "nothing replaced on failure");
        let leftovers: Vec<_> = fs::read_dir(ws.root.join("out"))
            .expect("listed")
            .map(|e| e.expect("an entry").file_name())
            .collect();
        assert_eq!(leftovers.len(), 1, "no temporary left: {leftovers:?}");
    }

    #[test]
    fn relative_paths_between_workspace_paths() {
        assert_eq!(relative_path("out/a", "out/b.txt"), "../b.txt");
        assert_eq!(relative_path("out", "out/b.txt"), "b.txt");
        assert_eq!(relative_path("out/a", "out/a"), ".");
        assert_eq!(relative_path("", "x"), "x");
    }
}
