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
    std::fs::write(out_dir.join("prelude_files.rs"), out)
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
