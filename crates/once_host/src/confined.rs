//! Confined file access (what `once_db::OsSystem`, the store and the executor write and read with): every step relative to a
//! directory handle of the workspace root, never following a symbolic link.
//!
//! A path is never checked first and used later. Each component below the root is opened
//! with `openat(O_DIRECTORY | O_NOFOLLOW)` from the handle of its parent (missing ones are
//! made with `mkdirat`; where the kernel has `openat2`, an existing directory is reached
//! in one call with `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH` instead), the new contents go
//! to a temporary file created with
//! `openat(O_CREAT | O_EXCL | O_NOFOLLOW)` in the final directory's handle, and `renameat`
//! within that same handle puts it in place. A directory swapped for a link while this
//! runs makes the write fail; it cannot redirect it outside the workspace.
//!
//! Writers of one workspace are serialised by an advisory lock on `.once/write.lock`
//! ([`lock_writes`]); while it is held, any `.once-write-*` file is a leftover of a writer
//! that died and is removed.
//!
//! The primitives under the whole-file operations are public for the execution layer
//! (`once_exec`), which confines its store and build outputs the same way:
//! [`open_root`] and [`open_directory_at`] give directory handles reached without following
//! links, [`create_temporary`] a fresh temporary file in one of them.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rustix::fs::{
    AtFlags, CWD, Dir, FileType, FlockOperation, Mode, OFlags, ResolveFlags, fchmod, flock, fstat,
    mkdirat, openat, openat2, renameat, statat, unlinkat,
};
use rustix::io::Errno;

/// The prefix of temporary files; discovery skips them (they are hidden files).
pub const TEMPORARY_PREFIX: &str = ".once-write-";

/// The workspace's write lock, relative to the root.
pub const LOCK_FILE: &str = ".once/write.lock";

/// Mode bits of new files and directories before the umask, as `open`/`mkdir` use.
const NEW_FILE_MODE: u32 = 0o666;
const NEW_DIRECTORY_MODE: u32 = 0o777;

/// `e` as an I/O error of the same kind, its message prefixed with `context`.
fn with_context(e: Errno, context: impl std::fmt::Display) -> io::Error {
    let error = io::Error::from(e);
    io::Error::new(error.kind(), format!("{context}: {error}"))
}

/// A handle of the directory `root` (which may itself be reached through links: it is the
/// trusted starting point).
pub fn open_root(root: &Path) -> io::Result<OwnedFd> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    openat(CWD, root, flags, Mode::empty()).map_err(|e| {
        with_context(
            e,
            format_args!("cannot open the workspace root `{}`", root.display()),
        )
    })
}

fn components(relative: &str) -> Vec<&str> {
    relative.split('/').filter(|p| !p.is_empty()).collect()
}

/// Why `so_far` (opened as a directory or file without following links) was refused.
fn refusal(directory: &OwnedFd, name: &str, so_far: &str, relative: &str, e: Errno) -> io::Error {
    let kind = statat(directory, name, AtFlags::SYMLINK_NOFOLLOW)
        .ok()
        .map(|stat| FileType::from_raw_mode(stat.st_mode));
    let last = so_far == relative;
    let refused = |message: String| io::Error::new(io::ErrorKind::InvalidInput, message);
    const NO_LINKS: &str =
        "once does not write through links, which may lead outside the workspace";
    match kind {
        // `O_NOFOLLOW` met a link (it may be gone again by now).
        _ if e == Errno::LOOP => refused(format!("`{so_far}` is a symbolic link; {NO_LINKS}")),
        Some(FileType::Symlink) => refused(format!("`{so_far}` is a symbolic link; {NO_LINKS}")),
        Some(FileType::Directory) if last => refused(format!(
            "an existing directory occupies the file path `{so_far}`"
        )),
        // Not a directory when opened, one now: swapped, by a link or otherwise.
        Some(FileType::Directory) if e == Errno::NOTDIR => refused(format!(
            "`{so_far}` was replaced while it was opened (perhaps by a symbolic link); {NO_LINKS}"
        )),
        Some(FileType::RegularFile) if !last => refused(format!(
            "`{so_far}` is not a directory, but `{relative}` needs it to be one"
        )),
        Some(FileType::Directory | FileType::RegularFile) | None => {
            with_context(e, format_args!("cannot open `{so_far}`"))
        }
        Some(_) if last => refused(format!("`{so_far}` is not a regular file")),
        Some(_) => refused(format!(
            "`{so_far}` is not a directory, but `{relative}` needs it to be one"
        )),
    }
}

/// Opens the directory `parts` below `root`, one component at a time without following
/// links. Missing directories are created when `create`, else `Ok(None)`.
fn open_directory(
    root: OwnedFd,
    parts: &[&str],
    relative: &str,
    create: bool,
) -> io::Result<Option<OwnedFd>> {
    let mut directory = root;
    for (index, part) in parts.iter().enumerate() {
        let so_far = parts[..=index].join("/");
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
        let mut opened = openat(&directory, *part, flags, Mode::empty());
        if matches!(opened, Err(Errno::NOENT)) {
            if !create {
                return Ok(None);
            }
            match mkdirat(&directory, *part, Mode::from_raw_mode(NEW_DIRECTORY_MODE)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => {
                    return Err(with_context(
                        e,
                        format_args!("cannot create the directory `{so_far}`"),
                    ));
                }
            }
            opened = openat(&directory, *part, flags, Mode::empty());
        }
        directory = opened.map_err(|e| refusal(&directory, part, &so_far, relative, e))?;
    }
    Ok(Some(directory))
}

/// Opens the directory `relative` (`/`-separated, `""` for `root` itself) below the handle
/// `root`, one component at a time without following links; missing directories are
/// created when `create`, else the answer is `Ok(None)`. A component that is a link, a file
/// or anything else but a directory is refused with the reason.
pub fn open_directory_at(
    root: BorrowedFd<'_>,
    relative: &str,
    create: bool,
) -> io::Result<Option<OwnedFd>> {
    let parts = components(relative);
    if let Some(found) = open_beneath(root, &parts, create) {
        return Ok(found);
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
    let start = openat(root, ".", flags, Mode::empty())?;
    open_directory(start, &parts, relative, create)
}

/// The directory `parts` below `root` in one call where the kernel has `openat2` (Linux
/// 5.6), which resolves the whole path without following any link and without leaving
/// `root`: `Some(Some(directory))`, or `Some(None)` when it is missing and not to be
/// created. `None` for one component (nothing to save) and for anything else, which
/// takes the walk of [`open_directory`]: it makes missing directories and says why a
/// component is refused.
fn open_beneath(root: BorrowedFd<'_>, parts: &[&str], create: bool) -> Option<Option<OwnedFd>> {
    if parts.len() < 2 || !OPENAT2.load(Ordering::Relaxed) {
        return None;
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
    match openat2(root, parts.join("/"), flags, Mode::empty(), resolve) {
        Ok(directory) => Some(Some(directory)),
        Err(Errno::NOENT) if !create => Some(None),
        Err(Errno::NOSYS | Errno::PERM) => {
            OPENAT2.store(false, Ordering::Relaxed);
            None
        }
        Err(_) => None,
    }
}

/// Whether `openat2` may be tried (cleared when the kernel or a sandbox refuses it).
static OPENAT2: AtomicBool = AtomicBool::new(true);

/// Splits a workspace-relative file path into its directories and file name.
fn split_file(relative: &str) -> io::Result<(Vec<&str>, &str)> {
    let mut parts = components(relative);
    let name = parts.pop().ok_or_else(|| {
        io::Error::new(
            io::ErrorKind::InvalidInput,
            "the path names the workspace root, not a file",
        )
    })?;
    Ok((parts, name))
}

/// Reads the regular file `relative` below `root` without following links; `None` when
/// it (or a directory above it) does not exist. Like every read of a user path, at most
/// [`crate::MAX_READ_BYTES`].
pub fn read_confined(root: &Path, relative: &str) -> io::Result<Option<Vec<u8>>> {
    let (directories, name) = split_file(relative)?;
    let root = open_root(root)?;
    // A test's results are six levels down: one `openat2` where the kernel has it. The
    // walk's refusals name the whole file path (`relative`), so it is called here rather
    // than through `open_directory_at`, whose messages name the directory.
    let directory = match open_beneath(root.as_fd(), &directories, false) {
        Some(found) => found,
        None => open_directory(root, &directories, relative, false)?,
    };
    let Some(directory) = directory else {
        return Ok(None);
    };
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    let fd = match openat(&directory, name, flags, Mode::empty()) {
        Ok(fd) => fd,
        Err(Errno::NOENT) => return Ok(None),
        Err(e) => return Err(refusal(&directory, name, relative, relative, e)),
    };
    let stat = fstat(&fd)?;
    if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
        return Err(refusal(&directory, name, relative, relative, Errno::INVAL));
    }
    let limit = crate::MAX_READ_BYTES;
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "`{relative}` is larger than the {} MiB read limit",
                limit >> 20
            ),
        )
    };
    if stat.st_size as u64 > limit {
        return Err(too_large());
    }
    // Sized from the metadata (one byte more to see the end), so the read is one call
    // and not a series of growing ones; a file that grew since is still read whole.
    let mut bytes = Vec::with_capacity(stat.st_size as usize + 1);
    File::from(fd).take(limit + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(Some(bytes))
}

/// Takes the workspace's write lock, waiting while another writer holds it. The lock is
/// released when the returned file is closed.
pub fn lock_writes(root: &Path) -> io::Result<File> {
    let (directories, name) = split_file(LOCK_FILE)?;
    let directory = open_directory(open_root(root)?, &directories, LOCK_FILE, true)?
        .ok_or_else(|| io::Error::other("the lock directory could not be created"))?;
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(&directory, name, flags, Mode::from_raw_mode(NEW_FILE_MODE))
        .map_err(|e| refusal(&directory, name, LOCK_FILE, LOCK_FILE, e))?;
    flock(&fd, FlockOperation::LockExclusive)?;
    Ok(File::from(fd))
}

/// Removes leftover temporary files of writers that died (the caller holds the lock, so
/// no live writer has one).
fn remove_stale_temporaries(directory: &OwnedFd) {
    let Ok(entries) = Dir::read_from(directory) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        if name.to_bytes().starts_with(TEMPORARY_PREFIX.as_bytes()) {
            let _ = unlinkat(directory, name, AtFlags::empty());
        }
    }
}

static TEMPORARY_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Creates a new temporary file (named [`TEMPORARY_PREFIX`]`<pid>-<n>`) in `directory`,
/// mode 0666 less the umask; returns its name and the open file.
pub fn create_temporary(directory: impl AsFd) -> io::Result<(String, File)> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    loop {
        let count = TEMPORARY_COUNTER.fetch_add(1, Ordering::Relaxed);
        let name = format!("{TEMPORARY_PREFIX}{}-{count}", std::process::id());
        match openat(&directory, &name, flags, Mode::from_raw_mode(NEW_FILE_MODE)) {
            Ok(fd) => return Ok((name, File::from(fd))),
            Err(Errno::EXIST) => continue,
            Err(e) => return Err(e.into()),
        }
    }
}

/// Replaces (or creates) the file `relative` below `root` atomically and confined; see
/// the module documentation. `before_rename` runs after the temporary file is written and
/// flushed (tests inject failures there); when it or any step fails, the temporary file
/// is removed and the target is untouched. Returns whether the file existed. The caller
/// holds the write lock.
pub fn write_confined(
    root: &Path,
    relative: &str,
    contents: &[u8],
    before_rename: impl FnOnce() -> io::Result<()>,
) -> io::Result<bool> {
    let (directories, name) = split_file(relative)?;
    let directory = open_directory(open_root(root)?, &directories, relative, true)?
        .ok_or_else(|| io::Error::other(format!("cannot create the directory of `{relative}`")))?;
    let existing_mode = match statat(&directory, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) if FileType::from_raw_mode(stat.st_mode) == FileType::RegularFile => {
            Some(Mode::from_raw_mode(stat.st_mode) & Mode::from_raw_mode(0o7777))
        }
        Ok(_) => return Err(refusal(&directory, name, relative, relative, Errno::INVAL)),
        Err(Errno::NOENT) => None,
        Err(e) => return Err(refusal(&directory, name, relative, relative, e)),
    };
    remove_stale_temporaries(&directory);
    let (temporary, mut file) = create_temporary(&directory)?;
    let written = (|| {
        file.write_all(contents)?;
        if let Some(mode) = existing_mode {
            fchmod(&file, mode)?;
        }
        file.sync_all()?;
        before_rename()?;
        renameat(&directory, temporary.as_str(), &directory, name)?;
        Ok(())
    })();
    if let Err(e) = written {
        let _ = unlinkat(&directory, temporary.as_str(), AtFlags::empty());
        return Err(e);
    }
    // Make the rename itself durable.
    let _ = rustix::fs::fsync(&directory);
    Ok(existing_mode.is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_injected_failure_before_the_rename_leaves_the_original_intact() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("once.toml"), "original\n").unwrap();
        let result = write_confined(dir.path(), "once.toml", b"new\n", || {
            Err(io::Error::other("simulated crash"))
        });
        assert!(result.is_err());
        assert_eq!(
            std::fs::read_to_string(dir.path().join("once.toml")).unwrap(),
            "original\n"
        );
        let leftovers: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(leftovers.len(), 1, "the temporary file is removed");
        let existed = write_confined(dir.path(), "once.toml", b"new\n", || Ok(())).unwrap();
        assert!(existed, "the file existed");
        assert_eq!(
            std::fs::read_to_string(dir.path().join("once.toml")).unwrap(),
            "new\n"
        );
    }

    #[test]
    fn links_special_files_and_files_in_the_way_are_refused_with_reasons() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("link")).unwrap();
        std::os::unix::fs::symlink(outside.path().join("x"), root.join("dangling")).unwrap();
        std::fs::write(root.join("file"), "").unwrap();
        std::fs::create_dir(root.join("dir")).unwrap();
        rustix::fs::mkfifoat(CWD, root.join("fifo"), Mode::from_raw_mode(0o600)).unwrap();
        let refusal = |relative: &str| {
            let read = read_confined(root, relative).unwrap_err().to_string();
            let write = write_confined(root, relative, b"x", || Ok(()))
                .unwrap_err()
                .to_string();
            assert_eq!(read, write, "{relative}");
            read
        };
        let reasons: Vec<String> = ["link/x", "dangling", "file/x", "dir", "fifo"]
            .into_iter()
            .map(refusal)
            .collect();
        expect_test::expect![[r#"
            [
                "`link` is a symbolic link; once does not write through links, which may lead outside the workspace",
                "`dangling` is a symbolic link; once does not write through links, which may lead outside the workspace",
                "`file` is not a directory, but `file/x` needs it to be one",
                "an existing directory occupies the file path `dir`",
                "`fifo` is not a regular file",
            ]
        "#]]
        .assert_debug_eq(&reasons);
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        assert_eq!(read_confined(root, "missing/x").unwrap(), None);
    }

    #[test]
    fn deep_directories_are_reached_and_links_inside_them_refused() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join("a/b/c")).unwrap();
        std::fs::write(root.join("a/b/c/f"), "deep").unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("a/link")).unwrap();
        let handle = open_root(root).unwrap();
        let reached = open_directory_at(handle.as_fd(), "a/b/c", false)
            .unwrap()
            .unwrap();
        let mut file = File::from(openat(&reached, "f", OFlags::RDONLY, Mode::empty()).unwrap());
        let mut text = String::new();
        file.read_to_string(&mut text).unwrap();
        assert_eq!(text, "deep");
        assert!(
            open_directory_at(handle.as_fd(), "a/b/missing/d", false)
                .unwrap()
                .is_none()
        );
        let refused = open_directory_at(handle.as_fd(), "a/link/d", true).unwrap_err();
        assert_eq!(
            refused.to_string(),
            "`a/link` is a symbolic link; once does not write through links, which may lead outside the workspace"
        );
        assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none());
        // A missing directory below existing ones is made.
        open_directory_at(handle.as_fd(), "a/b/new/e", true)
            .unwrap()
            .unwrap();
        assert!(root.join("a/b/new/e").is_dir());
        // Reads take the same path (in one `openat2` below two directories and more).
        assert_eq!(
            read_confined(root, "a/b/c/f").unwrap().as_deref(),
            Some(&b"deep"[..])
        );
        assert_eq!(read_confined(root, "a/b/missing/f").unwrap(), None);
        std::fs::write(outside.path().join("secret"), "outside").unwrap();
        std::fs::create_dir(outside.path().join("d")).unwrap();
        std::fs::write(outside.path().join("d/secret"), "outside").unwrap();
        for through_link in ["a/link/secret", "a/link/d/secret"] {
            assert_eq!(
                read_confined(root, through_link).unwrap_err().to_string(),
                "`a/link` is a symbolic link; once does not write through links, which may lead outside the workspace",
                "{through_link}"
            );
        }
        // A link that stays inside the workspace is not followed either.
        std::os::unix::fs::symlink("b", root.join("a/inner")).unwrap();
        assert_eq!(
            read_confined(root, "a/inner/c/f").unwrap_err().to_string(),
            "`a/inner` is a symbolic link; once does not write through links, which may lead outside the workspace"
        );
        std::fs::write(root.join("a/b/file"), "").unwrap();
        assert_eq!(
            read_confined(root, "a/b/file/x/y").unwrap_err().to_string(),
            "`a/b/file` is not a directory, but `a/b/file/x/y` needs it to be one"
        );
    }
}
