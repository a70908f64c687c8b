//! Landlock rulesets, built in the parent: which files and directories a confined
//! program may read, list, write or execute, and what it may not reach at all.
//!
//! Landlock (Linux 5.13 and later) is a stackable security module any unprivileged
//! process can use on itself: a *ruleset* handles a set of access rights, rules grant
//! some of them beneath a directory or on one file, and once a process restricts
//! itself every handled right not granted by a rule is denied (`EACCES`) to it and
//! to everything it starts, for ever. The ruleset is made here, in the parent (opening a
//! handle on each allowed path and adding it), so the child only has one system call
//! left to make between `fork` and `exec`: `landlock_restrict_self`.
//!
//! The ABI version decides what can be handled: truncation from version 3, TCP from 4,
//! device `ioctl`s from 5, abstract Unix sockets and signals (*scopes*) from 6. A right
//! this kernel does not know is simply not handled (it stays allowed).

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd as _, FromRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::Path;
use std::sync::OnceLock;

/// Executing a file.
pub const EXECUTE: u64 = 1 << 0;
/// Opening a file for writing.
pub const WRITE_FILE: u64 = 1 << 1;
/// Opening a file for reading.
pub const READ_FILE: u64 = 1 << 2;
/// Listing a directory.
pub const READ_DIR: u64 = 1 << 3;
const REMOVE_DIR: u64 = 1 << 4;
const REMOVE_FILE: u64 = 1 << 5;
const MAKE_CHAR: u64 = 1 << 6;
const MAKE_DIR: u64 = 1 << 7;
const MAKE_REG: u64 = 1 << 8;
const MAKE_SOCK: u64 = 1 << 9;
const MAKE_FIFO: u64 = 1 << 10;
const MAKE_BLOCK: u64 = 1 << 11;
const MAKE_SYM: u64 = 1 << 12;
const REFER: u64 = 1 << 13;
/// Truncating a file (ABI 3).
pub const TRUNCATE: u64 = 1 << 14;
/// `ioctl` on a device (ABI 5).
pub const IOCTL_DEV: u64 = 1 << 15;

/// The rights that may be granted on a single file (not a directory).
const FILE_RIGHTS: u64 = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV;

/// Reading: files, directory listings and executing.
pub const READ: u64 = EXECUTE | READ_FILE | READ_DIR;
/// Everything: reading, writing, making and removing entries.
pub const WRITE: u64 = READ
    | WRITE_FILE
    | REMOVE_DIR
    | REMOVE_FILE
    | MAKE_CHAR
    | MAKE_DIR
    | MAKE_REG
    | MAKE_SOCK
    | MAKE_FIFO
    | MAKE_BLOCK
    | MAKE_SYM
    | REFER
    | TRUNCATE
    | IOCTL_DEV;

const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;
const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

const CREATE_RULESET_VERSION: u32 = 1 << 0;
const RULE_PATH_BENEATH: libc::c_int = 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// The Landlock ABI version this kernel offers; 0 when it has none (too old, or not
/// enabled among the security modules at boot).
pub fn abi() -> u32 {
    static ABI: OnceLock<u32> = OnceLock::new();
    *ABI.get_or_init(|| {
        // SAFETY: with a null attribute pointer, size 0 and the version flag, the call
        // only returns the ABI version (or an error); it reads and writes no memory.
        let version = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                std::ptr::null::<RulesetAttr>(),
                0usize,
                CREATE_RULESET_VERSION,
            )
        };
        u32::try_from(version).unwrap_or(0)
    })
}

/// The file-system rights this kernel's ABI knows.
fn known_fs_rights(abi: u32) -> u64 {
    let mut rights = WRITE & !(REFER | TRUNCATE | IOCTL_DEV);
    if abi >= 2 {
        rights |= REFER;
    }
    if abi >= 3 {
        rights |= TRUNCATE;
    }
    if abi >= 5 {
        rights |= IOCTL_DEV;
    }
    rights
}

/// A ruleset being filled: the rights it handles and the rules granting some of them.
#[derive(Debug)]
pub struct Ruleset {
    fd: OwnedFd,
    handled: u64,
}

impl Ruleset {
    /// A ruleset handling every file-system right this kernel knows (so each is denied
    /// unless a rule grants it), TCP `bind`/`connect` when `deny_tcp` (ABI 4), and
    /// signals and abstract Unix sockets leaving the sandbox (ABI 6).
    pub fn new(deny_tcp: bool) -> io::Result<Ruleset> {
        let abi = abi();
        if abi == 0 {
            return Err(io::Error::new(
                io::ErrorKind::Unsupported,
                "this kernel offers no Landlock",
            ));
        }
        let handled = known_fs_rights(abi);
        let attr = RulesetAttr {
            handled_access_fs: handled,
            handled_access_net: if deny_tcp && abi >= 4 {
                NET_BIND_TCP | NET_CONNECT_TCP
            } else {
                0
            },
            scoped: if abi >= 6 {
                SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
            } else {
                0
            },
        };
        // Older ABIs know a shorter attribute: pass only the fields they read.
        let size = match abi {
            1..=3 => std::mem::size_of::<u64>(),
            4 | 5 => 2 * std::mem::size_of::<u64>(),
            _ => std::mem::size_of::<RulesetAttr>(),
        };
        // SAFETY: `attr` is a valid, initialised attribute of at least `size` bytes that
        // outlives the call; the kernel copies it.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_landlock_create_ruleset,
                &raw const attr,
                size,
                0u32,
            )
        };
        let fd = libc::c_int::try_from(fd).map_err(|_| io::Error::last_os_error())?;
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: the call returned a new descriptor (close-on-exec) that nothing else
        // owns.
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        Ok(Ruleset { fd, handled })
    }

    /// Grants `rights` on `path` and, for a directory, everything beneath it. A path that
    /// does not exist is skipped (there is nothing to grant on), and so is one the
    /// caller cannot open. On a file only file rights apply; the rest are dropped.
    pub fn allow(&mut self, path: &Path, rights: u64) -> io::Result<()> {
        let Ok(name) = CString::new(path.as_os_str().as_bytes()) else {
            return Ok(());
        };
        // SAFETY: `name` is a valid NUL-terminated string for the duration of the call.
        let fd = unsafe { libc::open(name.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
        if fd < 0 {
            return Ok(());
        }
        // SAFETY: `open` returned a new descriptor nothing else owns.
        let handle = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `stat` is plain data, zero is a valid value of it.
        let mut status: libc::stat = unsafe { std::mem::zeroed() };
        // SAFETY: `handle` is open and `status` is a valid place for the answer.
        if unsafe { libc::fstat(handle.as_raw_fd(), &raw mut status) } != 0 {
            return Ok(());
        }
        let directory = status.st_mode & libc::S_IFMT == libc::S_IFDIR;
        let mut allowed = rights & self.handled;
        if !directory {
            allowed &= FILE_RIGHTS;
        }
        if allowed == 0 {
            return Ok(());
        }
        let attr = PathBeneathAttr {
            allowed_access: allowed,
            parent_fd: handle.as_raw_fd(),
        };
        // SAFETY: `attr` is valid and outlives the call; both descriptors are open.
        let done = unsafe {
            libc::syscall(
                libc::SYS_landlock_add_rule,
                self.fd.as_raw_fd(),
                RULE_PATH_BENEATH,
                &raw const attr,
                0u32,
            )
        };
        if done != 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(())
    }

    /// The descriptor the child restricts itself with.
    pub(crate) fn raw_fd(&self) -> libc::c_int {
        self.fd.as_raw_fd()
    }

    /// The ruleset's descriptor, to hand to the [`crate::launcher`].
    pub(crate) fn fd(&self) -> &OwnedFd {
        &self.fd
    }
}
