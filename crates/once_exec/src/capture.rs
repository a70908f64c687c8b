//! Capturing a program's stdout and stderr through pipes into the store.
//!
//! The program writes into two pipes; one drain thread per program reads both while it
//! runs, hashing each stream, keeping its last bytes in memory ([`CapturedStream::tail`])
//! and its whole content in memory up to [`SPILL_BYTES`], past which the stream goes on
//! into a temporary file in the store. So a silent stream costs no file at all and a
//! short one exactly its blob: creating files is the dearest step of a small action on
//! some file systems (ext4 allocating inodes after many deletions). Nothing is lost
//! however much a program prints: the drain never stops reading while the program runs.
//!
//! When the program has exited (and the runner has killed its process group), the drain
//! reads what is left until both pipes are closed, at most [`LINGER`]: a process that
//! escaped the group (`setsid`) and still holds a pipe does not hold the action up, and
//! what it writes later is not part of the action's streams (it gets `EPIPE`).

use std::fs::File;
use std::io::{self, Write as _};
use std::os::fd::{AsFd as _, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use once_model::Sha256Digest;
use rustix::event::{PollFd, PollFlags, Timespec, poll};
use rustix::pipe::{PipeFlags, pipe_with};
use sha2::{Digest as _, Sha256};

use crate::executor::CapturedStream;
use crate::store::Store;

/// How much of a stream stays in memory before it goes on in a temporary file.
pub const SPILL_BYTES: usize = 1 << 20;

/// How long the drain keeps reading after the program ended, for what processes that
/// escaped its process group still write.
pub const LINGER: Duration = Duration::from_millis(200);

/// How often a blocked drain checks whether the program has ended.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

/// The write ends of the two pipes, for the program.
pub struct PipeEnds {
    pub stdout: File,
    pub stderr: File,
}

/// The reading side: [`Drain::run`] on its own thread, [`Drain::finish`] once the program
/// has ended.
pub struct Drain {
    stdout: OwnedFd,
    stderr: OwnedFd,
    ended: Arc<AtomicBool>,
}

/// Tells the drain that the program has ended.
#[derive(Clone)]
pub struct Ended(Arc<AtomicBool>);

impl Ended {
    pub fn mark(&self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Two pipes (close-on-exec, so programs other threads start never hold them) and their
/// drain.
pub fn pipes() -> io::Result<(PipeEnds, Drain, Ended)> {
    let (stdout_read, stdout_write) = pipe_with(PipeFlags::CLOEXEC)?;
    let (stderr_read, stderr_write) = pipe_with(PipeFlags::CLOEXEC)?;
    let ended = Arc::new(AtomicBool::new(false));
    Ok((
        PipeEnds {
            stdout: File::from(stdout_write),
            stderr: File::from(stderr_write),
        },
        Drain {
            stdout: stdout_read,
            stderr: stderr_read,
            ended: Arc::clone(&ended),
        },
        Ended(ended),
    ))
}

/// One stream being read: its digest so far, its tail, and its content.
struct Sink {
    hasher: Sha256,
    size: u64,
    tail: TailWriter,
    memory: Vec<u8>,
    /// The temporary file the stream went on in, past [`SPILL_BYTES`].
    spilled: Option<(String, File)>,
    open: bool,
}

impl Sink {
    fn new(tail_limit: usize) -> Sink {
        Sink {
            hasher: Sha256::new(),
            size: 0,
            tail: TailWriter::new(tail_limit),
            memory: Vec::new(),
            spilled: None,
            open: true,
        }
    }

    fn take(&mut self, store: &Store, chunk: &[u8]) -> io::Result<()> {
        self.hasher.update(chunk);
        self.size += chunk.len() as u64;
        self.tail.write_all(chunk)?;
        if let Some((_, file)) = &mut self.spilled {
            return file.write_all(chunk);
        }
        if self.memory.len() + chunk.len() <= SPILL_BYTES {
            self.memory.extend_from_slice(chunk);
            return Ok(());
        }
        let (name, mut file) = store.temporary_file()?;
        let written = file
            .write_all(&self.memory)
            .and_then(|()| file.write_all(chunk));
        self.spilled = Some((name, file));
        self.memory = Vec::new();
        written
    }

    /// Stores the stream as a blob (nothing is written for a stream already stored, the
    /// empty one included).
    fn store(self, store: &Store) -> io::Result<CapturedStream> {
        let digest = Sha256Digest(self.hasher.finalize().into());
        match self.spilled {
            Some((name, file)) => store.adopt_temporary(&name, &file, &digest)?,
            None => store.put_hashed_blob(&self.memory, &digest)?,
        }
        Ok(CapturedStream {
            digest: Some(digest),
            size: self.size,
            tail: self.tail.into_bytes(),
        })
    }

    fn discard(self, store: &Store) {
        if let Some((name, _)) = self.spilled {
            store.remove_temporary(&name);
        }
    }
}

/// Keeps the last `limit` bytes written to it.
pub(crate) struct TailWriter {
    limit: usize,
    bytes: Vec<u8>,
}

impl TailWriter {
    pub(crate) fn new(limit: usize) -> TailWriter {
        TailWriter {
            limit,
            bytes: Vec::new(),
        }
    }

    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.bytes
    }
}

impl io::Write for TailWriter {
    fn write(&mut self, buffer: &[u8]) -> io::Result<usize> {
        if buffer.len() >= self.limit {
            self.bytes.clear();
            self.bytes
                .extend_from_slice(&buffer[buffer.len() - self.limit..]);
        } else {
            self.bytes.extend_from_slice(buffer);
            if self.bytes.len() > self.limit {
                let excess = self.bytes.len() - self.limit;
                self.bytes.drain(..excess);
            }
        }
        Ok(buffer.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

impl Drain {
    /// Reads both pipes until both are closed, or [`LINGER`] after the program ended;
    /// answers the two streams, stored.
    pub fn run(
        self,
        store: &Store,
        tail_limit: usize,
    ) -> io::Result<(CapturedStream, CapturedStream)> {
        let mut sinks = [Sink::new(tail_limit), Sink::new(tail_limit)];
        let read = self.read_into(store, &mut sinks);
        let [stdout, stderr] = sinks;
        match read {
            Ok(()) => {
                let stdout = stdout.store(store);
                let stderr = stderr.store(store);
                Ok((stdout?, stderr?))
            }
            Err(e) => {
                stdout.discard(store);
                stderr.discard(store);
                Err(e)
            }
        }
    }

    fn read_into(&self, store: &Store, sinks: &mut [Sink; 2]) -> io::Result<()> {
        let mut buffer = vec![0u8; 64 * 1024];
        let mut deadline: Option<Instant> = None;
        let interval = Timespec::try_from(POLL_INTERVAL).map_err(io::Error::other)?;
        while sinks.iter().any(|sink| sink.open) {
            if deadline.is_none() && self.ended.load(Ordering::Acquire) {
                deadline = Some(Instant::now() + LINGER);
            }
            if deadline.is_some_and(|at| Instant::now() >= at) {
                break;
            }
            let fds = [self.stdout.as_fd(), self.stderr.as_fd()];
            let open: Vec<usize> = (0..2).filter(|index| sinks[*index].open).collect();
            let mut poll_fds: Vec<PollFd<'_>> = open
                .iter()
                .map(|index| PollFd::new(&fds[*index], PollFlags::IN))
                .collect();
            match poll(&mut poll_fds, Some(&interval)) {
                Ok(_) => {}
                Err(rustix::io::Errno::INTR) => continue,
                Err(e) => return Err(e.into()),
            }
            let ready: Vec<usize> = open
                .iter()
                .zip(&poll_fds)
                .filter(|(_, polled)| !polled.revents().is_empty())
                .map(|(index, _)| *index)
                .collect();
            for index in ready {
                match rustix::io::read(fds[index], &mut buffer) {
                    Ok(0) => sinks[index].open = false,
                    Ok(read) => sinks[index].take(store, &buffer[..read])?,
                    Err(rustix::io::Errno::INTR) | Err(rustix::io::Errno::AGAIN) => {}
                    Err(e) => return Err(e.into()),
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(chunks: &[&[u8]], limit: usize, expected: &[u8]) {
        let mut tail = TailWriter::new(limit);
        for chunk in chunks {
            tail.write_all(chunk).expect("kept");
        }
        assert_eq!(tail.into_bytes(), expected);
    }

    #[test]
    fn the_tail_keeps_the_last_bytes_across_chunks() {
        check(&[b"abc", b"def"], 4, b"cdef");
        check(&[b"abcdefgh"], 3, b"fgh");
        check(&[b"ab"], 4, b"ab");
        check(&[], 4, b"");
    }

    fn store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(dir.path()).expect("store");
        (dir, store)
    }

    /// Writes `stdout` and `stderr` from another thread, then closes both ends.
    fn drain_of(stdout: Vec<u8>, stderr: Vec<u8>) -> (CapturedStream, CapturedStream, Store) {
        let (dir, store) = store();
        let (ends, drain, ended) = pipes().expect("pipes");
        let writer = std::thread::spawn(move || {
            let PipeEnds {
                stdout: mut out,
                stderr: mut err,
            } = ends;
            out.write_all(&stdout).expect("write stdout");
            err.write_all(&stderr).expect("write stderr");
        });
        let (out, err) = drain.run(&store, 8).expect("drained");
        writer.join().expect("writer");
        ended.mark();
        std::mem::forget(dir);
        (out, err, store)
    }

    #[test]
    fn streams_larger_than_the_pipe_and_the_spill_limit_are_whole_in_the_store() {
        let big: Vec<u8> = (0..(SPILL_BYTES * 2 + 12345))
            .map(|i| (i % 251) as u8)
            .collect();
        let (out, err, store) = drain_of(big.clone(), b"warning\n".to_vec());
        assert_eq!(out.size, big.len() as u64);
        assert_eq!(out.digest, Some(Sha256Digest::of(&big)));
        assert_eq!(out.tail, big[big.len() - 8..]);
        let stored = store
            .read_blob(&out.digest.expect("a digest"))
            .expect("the blob");
        assert!(stored == big, "the stored stream differs");
        assert_eq!(err.size, 8);
        assert_eq!(err.tail, b"warning\n");
        assert_eq!(
            store.read_blob(&Sha256Digest::of(b"warning\n")).ok(),
            Some(b"warning\n".to_vec())
        );
    }

    #[test]
    fn silent_streams_are_the_empty_blob() {
        let (out, err, store) = drain_of(Vec::new(), Vec::new());
        assert_eq!(out.size, 0);
        assert_eq!(out.digest, Some(Sha256Digest::of(b"")));
        assert_eq!(err.digest, Some(Sha256Digest::of(b"")));
        assert_eq!(
            store.read_blob(&Sha256Digest::of(b"")).ok(),
            Some(Vec::new())
        );
    }

    #[test]
    fn a_writer_that_keeps_the_pipe_open_is_left_after_the_linger() {
        let (_dir, store) = store();
        let (ends, drain, ended) = pipes().expect("pipes");
        let PipeEnds {
            stdout: mut out,
            stderr: _err,
        } = ends;
        out.write_all(b"before the end\n").expect("write");
        ended.mark();
        let started = Instant::now();
        let (captured, _) = drain.run(&store, 64).expect("drained");
        assert!(started.elapsed() < LINGER + Duration::from_secs(2));
        assert_eq!(captured.tail, b"before the end\n");
        // The pipe is closed on the reading side: a later write fails instead of blocking.
        assert!(out.write_all(b"later\n").is_err());
    }
}
