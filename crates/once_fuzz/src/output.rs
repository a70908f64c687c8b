//! A writer whose bytes the harness reads afterwards: what a server or transport under
//! test wrote, shared between the thread writing it and the check reading it.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// Bytes written, behind a shared lock (clones write into the same buffer).
#[derive(Clone, Default)]
pub(crate) struct SharedOutput(pub(crate) Arc<Mutex<Vec<u8>>>);

impl Write for SharedOutput {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        let mut output = self.0.lock().unwrap_or_else(|e| e.into_inner());
        output.extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
