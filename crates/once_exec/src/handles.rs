//! File operations relative to directory handles, never following a symbolic link: the
//! small set the store and the output restorer share, on top of
//! [`once_host::confined`]'s directory walk and temporary files.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, OwnedFd};

use once_host::confined::create_temporary;
use rustix::fs::{
    AtFlags, Dir, FileType, FlockOperation, Mode, OFlags, Stat, fchmod, flock, mkdirat, openat,
    renameat, statat, unlinkat,
};
use rustix::io::Errno;

/// `e` as an I/O error whose message starts with `context`.
pub fn with_context(error: impl Into<io::Error>, context: impl std::fmt::Display) -> io::Error {
    let error = error.into();
    io::Error::new(error.kind(), format!("{context}: {error}"))
}

/// Opens the regular file `name` in `directory` for reading, without following a link;
/// `None` when nothing is there.
pub fn open_file(directory: impl AsFd, name: &str) -> io::Result<Option<File>> {
    let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
    match openat(directory, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(File::from(fd))),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The whole content of the regular file `name` in `directory`; `None` when missing.
pub fn read_file(directory: impl AsFd, name: &str) -> io::Result<Option<Vec<u8>>> {
    let Some(mut file) = open_file(directory, name)? else {
        return Ok(None);
    };
    let mut bytes = Vec::new();
    file.read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}

/// The status of `name` in `directory`, not following a link; `None` when missing.
pub fn stat_entry(directory: impl AsFd, name: &str) -> io::Result<Option<Stat>> {
    match statat(directory, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => Ok(Some(stat)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

pub fn file_type(stat: &Stat) -> FileType {
    FileType::from_raw_mode(stat.st_mode)
}

/// Makes the directory `name` in `directory` unless it exists, and opens it (without
/// following a link).
pub fn make_directory(directory: impl AsFd, name: &str) -> io::Result<OwnedFd> {
    match mkdirat(&directory, name, Mode::from_raw_mode(0o777)) {
        Ok(()) | Err(Errno::EXIST) => {}
        Err(e) => return Err(e.into()),
    }
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    Ok(openat(&directory, name, flags, Mode::empty())?)
}

/// Opens the existing directory `name` in `directory` without following a link; `None`
/// when missing.
pub fn open_directory(directory: impl AsFd, name: &str) -> io::Result<Option<OwnedFd>> {
    let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    match openat(directory, name, flags, Mode::empty()) {
        Ok(fd) => Ok(Some(fd)),
        Err(Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// Writes `contents` to `name` in `directory` atomically: a temporary file in the same
/// directory, given `mode`, renamed over `name`. Nothing is flushed to the device: readers
/// of what this writes check it (a digest or a complete parse), so a power cut costs a
/// miss, never a wrong result.
pub fn write_atomically(
    directory: impl AsFd,
    name: &str,
    contents: &[u8],
    mode: u32,
) -> io::Result<()> {
    let (temporary, mut file) = create_temporary(&directory)?;
    let written = (|| {
        file.write_all(contents)?;
        fchmod(&file, Mode::from_raw_mode(mode))?;
        renameat(&directory, temporary.as_str(), &directory, name)?;
        Ok(())
    })();
    if written.is_err() {
        let _ = unlinkat(&directory, temporary.as_str(), AtFlags::empty());
    }
    written
}

/// Removes whatever is at `name` in `directory` (a directory with everything in it),
/// never following a link; nothing there is fine.
pub fn remove_entry(directory: impl AsFd, name: &str) -> io::Result<()> {
    let Some(stat) = stat_entry(&directory, name)? else {
        return Ok(());
    };
    if file_type(&stat) == FileType::Directory {
        if let Some(inner) = open_directory(&directory, name)? {
            for entry_name in entry_names(&inner)? {
                remove_entry(&inner, &entry_name)?;
            }
        }
        match unlinkat(&directory, name, AtFlags::REMOVEDIR) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    } else {
        match unlinkat(&directory, name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(e) => Err(e.into()),
        }
    }
}

/// The names in `directory` (not `.` and `..`; names that are not UTF-8 left out), sorted.
pub fn entry_names(directory: impl AsFd) -> io::Result<Vec<String>> {
    let mut names = Vec::new();
    for entry in Dir::read_from(directory)? {
        let entry = entry?;
        let name = entry.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        if let Ok(name) = std::str::from_utf8(name) {
            names.push(name.to_owned());
        }
    }
    names.sort();
    Ok(names)
}

/// Takes an exclusive `flock` on the file `name` in `directory` (created when missing),
/// waiting while another holder has it; gives up (answering `None`) once `give_up` says
/// so, checked after 1 ms, then twice as long each time up to every 20 ms (most waits are
/// for another thread's hit, a millisecond or two). The lock is released when the file is
/// closed.
pub fn lock_exclusive(
    directory: impl AsFd,
    name: &str,
    give_up: impl Fn() -> bool,
) -> io::Result<Option<File>> {
    let flags = OFlags::RDWR | OFlags::CREATE | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let fd = openat(directory, name, flags, Mode::from_raw_mode(0o666))?;
    let mut pause = std::time::Duration::from_millis(1);
    loop {
        match flock(&fd, FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => return Ok(Some(File::from(fd))),
            Err(Errno::WOULDBLOCK) | Err(Errno::INTR) => {
                if give_up() {
                    return Ok(None);
                }
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(20));
            }
            Err(e) => return Err(e.into()),
        }
    }
}
