//! The kernel's confinement for the programs `once` runs: what a build action may read,
//! write, reach and leave behind.
//!
//! - [`landlock`]: rulesets of the Landlock security module, made in the parent;
//! - [`confine`]: a [`Confinement`] (what a program may touch) made ready
//!   ([`Prepared`]) and installed on a `std::process::Command`: user, PID and network
//!   namespaces and the Landlock restriction, set up between `fork` and `exec`;
//! - [`launcher`]: the companion process that starts confined programs for `once`, so
//!   that `once` itself never forks for them;
//! - [`Support`]: what this kernel offers, and what is missing in words a user can act
//!   on;
//! - `trace` (x86_64): runs a program under `ptrace` and reports every file access it and
//!   its descendants attempted, with the errno of those denied; the next step names a
//!   sandboxed action's denied files with it (not wired to the executor yet).
//!
//! Apart from the tracer (whose tracing thread must be the one that forks) and the
//! launcher (which forks itself, a process `once_exec` started), this crate makes no
//! process of its own: `once_exec` builds the command, installs the
//! confinement and starts it (the one-runner rule). It is the only crate of the
//! workspace allowed `unsafe` code, because the steps between `fork` and `exec` are raw
//! system calls; every unsafe block says why it is sound.

pub mod confine;
pub mod landlock;
pub mod launcher;
#[cfg(all(target_os = "linux", target_arch = "x86_64"))]
pub mod trace;

use std::sync::OnceLock;

pub use confine::{Confinement, Exec, Prepared};

/// What this kernel offers for confinement, detected once per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Support {
    /// The Landlock ABI version (0: none).
    pub landlock_abi: u32,
    /// Whether this process may make user, PID and network namespaces (without
    /// privileges, through a user namespace).
    pub namespaces: bool,
}

impl Support {
    /// What this kernel offers (asked once: a Landlock version query, and a short-lived
    /// child trying to make the namespaces).
    pub fn detect() -> Support {
        static SUPPORT: OnceLock<Support> = OnceLock::new();
        *SUPPORT.get_or_init(|| Support {
            landlock_abi: landlock::abi(),
            namespaces: namespaces_work(),
        })
    }

    /// What is missing to confine a program (its file system too when `filesystem`), in
    /// a sentence; `None` when nothing is.
    pub fn missing(&self, filesystem: bool) -> Option<String> {
        let mut missing = Vec::new();
        if filesystem && self.landlock_abi == 0 {
            missing.push(
                "Landlock (Linux 5.13 or later, with `landlock` among the kernel's `lsm=` \
                 security modules)",
            );
        }
        if !self.namespaces {
            missing.push(
                "unprivileged user namespaces (`sysctl kernel.unprivileged_userns_clone=1`, \
                 `user.max_user_namespaces` above 0, and no AppArmor \
                 `kernel.apparmor_restrict_unprivileged_userns`)",
            );
        }
        if missing.is_empty() {
            return None;
        }
        Some(format!(
            "the sandbox cannot confine actions on this machine: it needs {}",
            missing.join(" and ")
        ))
    }
}

/// Whether a child of this process can make a user, PID and network namespace.
fn namespaces_work() -> bool {
    // SAFETY: the child only makes the `unshare` system call and exits; nothing of this
    // process's state is touched in it.
    let child = unsafe { libc::fork() };
    if child == 0 {
        // SAFETY: as above.
        unsafe {
            let made = libc::unshare(libc::CLONE_NEWUSER | libc::CLONE_NEWPID | libc::CLONE_NEWNET);
            libc::_exit(if made == 0 { 0 } else { 1 });
        }
    }
    if child < 0 {
        return false;
    }
    let mut status = 0;
    loop {
        // SAFETY: `status` is a valid place for the answer.
        let answer = unsafe { libc::waitpid(child, &raw mut status, 0) };
        if answer == child {
            return libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0;
        }
        if answer == -1 && std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_missing_is_said_in_words_a_user_can_act_on() {
        let nothing = Support {
            landlock_abi: 0,
            namespaces: false,
        };
        let said = nothing.missing(true).expect("nothing can confine");
        assert!(said.starts_with("the sandbox cannot confine actions on this machine"));
        assert!(said.contains("Landlock (Linux 5.13 or later"), "{said}");
        assert!(said.contains("unprivileged user namespaces"), "{said}");
        // Containing a program needs namespaces only.
        let no_landlock = Support {
            landlock_abi: 0,
            namespaces: true,
        };
        assert_eq!(no_landlock.missing(false), None);
        assert!(no_landlock.missing(true).is_some());
        let everything = Support {
            landlock_abi: 7,
            namespaces: true,
        };
        assert_eq!(everything.missing(true), None);
    }
}
