//! The workspace server's wire format over its Unix socket: frames of one tag byte, a
//! little-endian `u32` length and that many bytes.
//!
//! A connection starts with the client's [`HELLO`] (its version and binary identity) and
//! the server's answer (its own, and its process id); then one request: a command
//! ([`REQUEST`], answered by output frames and one [`EXIT`] or one [`DECLINE`]), the
//! planning of `once run` ([`PLAN`], answered by one [`PLANNED`] or [`DECLINE`]: the
//! client runs the program itself, with its terminal), [`STATUS`] or [`STOP`]. While a command runs the server sends [`KEEPALIVE`] every
//! second, so a client can tell a busy server from a hung one; the client may send
//! [`SIGNAL`] (it got SIGINT, say), and closing the connection cancels the command.

use std::ffi::OsString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::{OsStrExt as _, OsStringExt as _};
use std::path::PathBuf;

/// Client: version and identity. Server: version, identity and process id.
pub const HELLO: u8 = b'H';
/// Client: a command to run ([`Request`]).
pub const REQUEST: u8 = b'R';
/// Client: plan `once run`'s command ([`Request`]); answered with one [`PLANNED`] frame
/// or one [`DECLINE`].
pub const PLAN: u8 = b'P';
/// Server: the plan of a [`PLAN`] request (`once_build::plan_cache::last_plan::encode_transfer`).
pub const PLANNED: u8 = b'p';
/// Client: the server's status, answered with one [`STATUS`] frame of JSON.
pub const STATUS: u8 = b'Q';
/// Client: stop the server (answered with [`EXIT`] 0, then the server exits).
pub const STOP: u8 = b'X';
/// Client: a termination signal the client received (4 bytes, little-endian).
pub const SIGNAL: u8 = b'S';
/// Server: bytes for the client's stdout.
pub const STDOUT: u8 = b'o';
/// Server: bytes for the client's stderr.
pub const STDERR: u8 = b'e';
/// Server: still working.
pub const KEEPALIVE: u8 = b'k';
/// Server: the command's exit status (1 byte).
pub const EXIT: u8 = b'x';
/// Server: the server will not run this command (UTF-8 reason); the client computes it.
pub const DECLINE: u8 = b'd';

/// The largest frame either side accepts (a request with a large environment is a few
/// hundred kilobytes at most).
pub const MAX_FRAME: usize = 16 << 20;

pub fn write_frame(out: &mut impl Write, tag: u8, payload: &[u8]) -> io::Result<()> {
    let length = u32::try_from(payload.len()).map_err(|_| io::ErrorKind::InvalidInput)?;
    let mut frame = Vec::with_capacity(5 + payload.len());
    frame.push(tag);
    frame.extend_from_slice(&length.to_le_bytes());
    frame.extend_from_slice(payload);
    out.write_all(&frame)
}

pub fn read_frame(input: &mut impl Read) -> io::Result<(u8, Vec<u8>)> {
    let mut header = [0u8; 5];
    input.read_exact(&mut header)?;
    let length = u32::from_le_bytes([header[1], header[2], header[3], header[4]]) as usize;
    if length > MAX_FRAME {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "frame too large",
        ));
    }
    let mut payload = vec![0u8; length];
    input.read_exact(&mut payload)?;
    Ok((header[0], payload))
}

/// Who is talking: the exact version and the binary's identity (see
/// [`crate::server::identity`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Hello {
    pub version: String,
    pub identity: String,
    /// The server's process id (0 from a client).
    pub pid: u32,
}

impl Hello {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, self.version.as_bytes());
        put(&mut out, self.identity.as_bytes());
        out.extend_from_slice(&self.pid.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Hello> {
        let mut reader = Reader(bytes);
        let version = String::from_utf8(reader.bytes()?.to_vec()).ok()?;
        let identity = String::from_utf8(reader.bytes()?.to_vec()).ok()?;
        let pid = reader.u32()?;
        Some(Hello {
            version,
            identity,
            pid,
        })
    }
}

/// A command as the client would have run it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    /// The workspace root the client found.
    pub root: PathBuf,
    /// The arguments after the program's name.
    pub argv: Vec<OsString>,
    pub cwd: PathBuf,
    pub env: Vec<(OsString, OsString)>,
    pub stdout_terminal: bool,
    pub stderr_terminal: bool,
    /// `anstream`'s choice for the client's stdout: 0 never, 1 always (ANSI), 2 always.
    pub stdout_color: u8,
    /// Whether the client prints output as it comes (builds) rather than at the end.
    pub streamed: bool,
}

impl Request {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        put(&mut out, self.root.as_os_str().as_bytes());
        out.extend_from_slice(&(self.argv.len() as u32).to_le_bytes());
        for arg in &self.argv {
            put(&mut out, arg.as_bytes());
        }
        put(&mut out, self.cwd.as_os_str().as_bytes());
        out.extend_from_slice(&(self.env.len() as u32).to_le_bytes());
        for (name, value) in &self.env {
            put(&mut out, name.as_bytes());
            put(&mut out, value.as_bytes());
        }
        out.push(
            u8::from(self.stdout_terminal)
                | (u8::from(self.stderr_terminal) << 1)
                | (u8::from(self.streamed) << 2),
        );
        out.push(self.stdout_color);
        out
    }

    pub fn decode(bytes: &[u8]) -> Option<Request> {
        let mut reader = Reader(bytes);
        let os = |bytes: &[u8]| OsString::from_vec(bytes.to_vec());
        let root = PathBuf::from(os(reader.bytes()?));
        let count = reader.u32()? as usize;
        let mut argv = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            argv.push(os(reader.bytes()?));
        }
        let cwd = PathBuf::from(os(reader.bytes()?));
        let count = reader.u32()? as usize;
        let mut env = Vec::with_capacity(count.min(4096));
        for _ in 0..count {
            let name = os(reader.bytes()?);
            env.push((name, os(reader.bytes()?)));
        }
        let flags = reader.u8()?;
        let stdout_color = reader.u8()?;
        Some(Request {
            root,
            argv,
            cwd,
            env,
            stdout_terminal: flags & 1 != 0,
            stderr_terminal: flags & 2 != 0,
            streamed: flags & 4 != 0,
            stdout_color,
        })
    }
}

fn put(out: &mut Vec<u8>, bytes: &[u8]) {
    out.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
    out.extend_from_slice(bytes);
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<u8> {
        self.take(1).map(|b| b[0])
    }

    fn u32(&mut self) -> Option<u32> {
        self.take(4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    fn bytes(&mut self) -> Option<&'a [u8]> {
        let n = self.u32()? as usize;
        self.take(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_and_hellos_round_trip_and_truncations_are_refused() {
        let request = Request {
            root: PathBuf::from("/w"),
            argv: vec!["query".into(), OsString::from_vec(vec![0xff, b'x'])],
            cwd: PathBuf::from("/w/a"),
            env: vec![("ONCE_THREADS".into(), "2".into())],
            stdout_terminal: true,
            stderr_terminal: false,
            stdout_color: 2,
            streamed: true,
        };
        let bytes = request.encode();
        assert_eq!(Request::decode(&bytes), Some(request));
        for cut in 0..bytes.len() {
            assert_eq!(Request::decode(&bytes[..cut]), None, "cut at {cut}");
        }
        let hello = Hello {
            version: "0.1.0".into(),
            identity: "abc".into(),
            pid: 7,
        };
        assert_eq!(Hello::decode(&hello.encode()), Some(hello));
        let mut frames = Vec::new();
        write_frame(&mut frames, STDOUT, b"out").unwrap();
        write_frame(&mut frames, EXIT, &[3]).unwrap();
        let mut input = frames.as_slice();
        assert_eq!(read_frame(&mut input).unwrap(), (STDOUT, b"out".to_vec()));
        assert_eq!(read_frame(&mut input).unwrap(), (EXIT, vec![3]));
        assert!(read_frame(&mut input).is_err());
    }
}
