//! A session's processes, found in `/proc`, and killing them.
//!
//! The supervisor leads a process session of its own (`setsid`) and is a child
//! subreaper, so every process the program starts is, until it leaves with `setsid` of
//! its own, in the supervisor's session, and in any case a descendant of the supervisor
//! (an orphan is re-parented to the nearest subreaper, not to `init`). The supervisor
//! finds them all by walking parent ids from itself ([`descendants`]). When the
//! supervisor is dead, a reader finds what is left by session and process group
//! ([`kill_remnants`]): a process id stays allocated while a process group or session
//! still uses it, so a live group or session with the recorded id is the session's.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use rustix::process::{Pid, Signal, kill_process};

use crate::session::SessionRecord;

/// One line of `/proc/<pid>/stat`, the fields that matter here.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    pub pid: i32,
    pub parent: i32,
    pub group: i32,
    pub session: i32,
    /// Exited, not reaped yet: nothing to kill.
    pub zombie: bool,
}

/// Parses `/proc/<pid>/stat` (the command name may hold spaces and parentheses, so the
/// fields are read after the last `)`).
pub fn parse_stat(text: &str) -> Option<ProcessInfo> {
    let (head, rest) = text.rsplit_once(')')?;
    let pid = head.split_once(' ')?.0.trim().parse().ok()?;
    let mut fields = rest.split_ascii_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    let group = fields.next()?.parse().ok()?;
    let session = fields.next()?.parse().ok()?;
    Some(ProcessInfo {
        pid,
        parent,
        group,
        session,
        zombie: state == "Z" || state == "X",
    })
}

/// Every process visible in `/proc`.
pub fn scan() -> Vec<ProcessInfo> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.bytes().all(|b| b.is_ascii_digit()))
        })
        .filter_map(|e| std::fs::read_to_string(e.path().join("stat")).ok())
        .filter_map(|text| parse_stat(&text))
        .collect()
}

/// The live (not zombie) descendants of `ancestor`, and the members of its session
/// when it leads one, `ancestor` itself excluded.
pub fn descendants(ancestor: i32, processes: &[ProcessInfo]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for process in processes {
        children
            .entry(process.parent)
            .or_default()
            .push(process.pid);
    }
    let mut found = BTreeSet::new();
    let mut stack = vec![ancestor];
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).map_or(&[][..], Vec::as_slice) {
            if found.insert(child) {
                stack.push(child);
            }
        }
    }
    for process in processes {
        if process.session == ancestor {
            found.insert(process.pid);
        }
    }
    found.remove(&ancestor);
    let live: BTreeSet<i32> = processes
        .iter()
        .filter(|p| !p.zombie)
        .map(|p| p.pid)
        .collect();
    found.into_iter().filter(|pid| live.contains(pid)).collect()
}

/// Sends `signal` to each process; answers how many it reached.
pub fn signal_each(pids: &[i32], signal: Signal) -> usize {
    pids.iter()
        .filter_map(|&pid| Pid::from_raw(pid))
        .filter(|&pid| kill_process(pid, signal).is_ok())
        .count()
}

/// The machine's boot id, when the kernel tells it.
pub fn boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|id| id.trim().to_owned())
        .filter(|id| !id.is_empty())
}

/// What [`kill_remnants`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Remnants {
    /// This many processes of the session were still running and were killed.
    Killed(usize),
    /// The supervisor ran in an earlier boot: its process ids mean nothing now.
    OtherBoot,
}

/// Kills (`SIGKILL`) what is left of a session whose supervisor is gone: the processes
/// of the supervisor's process session and of the program's process group. Repeats
/// until none is left (a process may fork between a scan and a kill), at most 50 times.
pub fn kill_remnants(record: &SessionRecord) -> Remnants {
    if record.supervisor_pid.is_none() && record.pid.is_none() {
        return Remnants::Killed(0);
    }
    if record.boot_id.is_some() && record.boot_id != boot_id() {
        return Remnants::OtherBoot;
    }
    let session = record.supervisor_pid.and_then(|p| i32::try_from(p).ok());
    let group = record.pid.and_then(|p| i32::try_from(p).ok());
    let me = i32::try_from(std::process::id()).unwrap_or(0);
    let mut killed = BTreeSet::new();
    for _ in 0..50 {
        let left: Vec<i32> = scan()
            .into_iter()
            .filter(|p| !p.zombie && p.pid != me)
            .filter(|p| Some(p.session) == session || Some(p.group) == group)
            .map(|p| p.pid)
            .collect();
        if left.is_empty() {
            break;
        }
        signal_each(&left, Signal::KILL);
        killed.extend(left);
        std::thread::sleep(Duration::from_millis(10));
    }
    Remnants::Killed(killed.len())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: Option<(i32, i32, i32, i32, bool)>) {
        let parsed = parse_stat(text).map(|p| (p.pid, p.parent, p.group, p.session, p.zombie));
        assert_eq!(parsed, expected, "{text}");
    }

    #[test]
    fn stat_lines_are_read_after_the_command_name() {
        check(
            "4242 (sleep) S 4241 4242 4240 0 -1 4194560",
            Some((4242, 4241, 4242, 4240, false)),
        );
        check("7 (a) b) (c) Z 1 7 7 0", Some((7, 1, 7, 7, true)));
        check("garbage", None);
    }

    #[test]
    fn descendants_follow_parents_and_the_session() {
        let process = |pid, parent, group, session| ProcessInfo {
            pid,
            parent,
            group,
            session,
            zombie: false,
        };
        let processes = [
            process(10, 1, 10, 10),  // the supervisor, leading session 10
            process(11, 10, 11, 10), // the program
            process(12, 11, 11, 10), // its child
            process(13, 10, 13, 13), // re-parented after its own setsid
            process(14, 13, 13, 13),
            process(20, 1, 20, 20), // unrelated
        ];
        assert_eq!(descendants(10, &processes), [11, 12, 13, 14]);
    }
}
