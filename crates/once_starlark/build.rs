//! Embeds every file under `prelude/` (the built-in `.star` modules and the starter
//! example trees) into the crate: writes `$OUT_DIR/prelude_files.rs`, a path-sorted table
//! of `(relative path, include_bytes!(…))` pairs.
//!
//! Hidden entries and `target/` directories (left behind when someone builds an example
//! in place) are skipped.

#![allow(
    clippy::disallowed_methods,
    clippy::disallowed_types,
    reason = "a build script reads its inputs and writes OUT_DIR directly; it runs at build time, not in once"
)]

use std::fmt::Write as _;
use std::io;
use std::path::{Path, PathBuf};

fn main() -> io::Result<()> {
    let manifest_dir = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").unwrap_or_default());
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").unwrap_or_default());
    let root = manifest_dir.join("prelude");
    println!("cargo:rerun-if-changed=prelude");

    let mut files = Vec::new();
    collect(&root, &root, &mut files)?;
    files.sort();

    let mut out = String::from(
        "/// Every file under `prelude/`, sorted by `/`-separated relative path.\n\
         pub(crate) static PRELUDE_FILES: &[(&str, &[u8])] = &[\n",
    );
    for (relative, absolute) in &files {
        println!("cargo:rerun-if-changed={}", absolute.display());
        let absolute = absolute.to_str().ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidData,
                format!("non-UTF-8 path {absolute:?}"),
            )
        })?;
        let _ = writeln!(out, "    ({relative:?}, include_bytes!({absolute:?})),");
    }
    out.push_str("];\n");
    std::fs::write(out_dir.join("prelude_files.rs"), out)?;

    // The digest the checked-in kind catalog (`src/prelude_catalog.json`) must name to be
    // used instead of evaluating the prelude: FNV-1a over every file's path, length and
    // bytes. Not adversarial: it only tells a stale catalog from a fresh one.
    let mut digest = Fnv1a::default();
    for (relative, absolute) in &files {
        let contents = std::fs::read(absolute)?;
        digest.update(relative.as_bytes());
        digest.update(&[0]);
        digest.update(&(contents.len() as u64).to_le_bytes());
        digest.update(&contents);
    }
    std::fs::write(
        out_dir.join("prelude_digest.rs"),
        format!(
            "/// The digest of the embedded prelude files (see `build.rs`).\n\
             pub(crate) const PRELUDE_DIGEST: &str = \"fnv1a64:{:016x}\";\n",
            digest.0
        ),
    )
}

/// 64-bit FNV-1a.
struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Fnv1a {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv1a {
    fn update(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
}

fn collect(root: &Path, dir: &Path, files: &mut Vec<(String, PathBuf)>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name();
        let name = name.to_string_lossy();
        if name.starts_with('.') {
            continue;
        }
        let path = entry.path();
        let file_type = entry.file_type()?;
        if file_type.is_dir() {
            if name == "target" {
                continue;
            }
            collect(root, &path, files)?;
        } else if file_type.is_file() {
            let relative = path
                .strip_prefix(root)
                .map_err(|e| io::Error::other(e.to_string()))?
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            files.push((relative, path));
        }
    }
    Ok(())
}
