//! The `copy` step: staging a file, a symbolic link or a directory tree at another path
//! (how `sh_binary`, `script` and `c_binary` put their dependencies' outputs in their
//! runfiles directory).
//!
//! - a regular file is copied with its permission bits;
//! - a symbolic link that is another action's output (under `.once/out`) is staged as a
//!   link with the same text, as outputs keep their links; a source that is a link is
//!   copied from the workspace file it leads to (analysis refuses source links that lead
//!   anywhere else; [`crate::materialize::resolve_source`] resolves it confined);
//! - a directory is copied whole: files with their permission bits, directories, and
//!   links as links.
//!
//! A link is staged only when its text, read from where the staged link is, leads inside
//! the *staging boundary* (the staging target's build directory): a relative text whose
//! `..` components all come first and never climb above the boundary. Anything else (an
//! absolute text, one climbing out, a `..` after a name, which could climb through
//! another link) is refused by name: once staged, the link would point at something the
//! staged output does not hold. Since every staged link leads inside and names only
//! descend, following several staged links in a row stays inside too.
//!
//! Everything goes through directory handles without following links
//! ([`once_host::confined`]); files reach their names by a rename from a temporary file.

use std::fs::File;
use std::io;
use std::os::fd::OwnedFd;

use once_host::confined::create_temporary;
use once_model::action::OUT_DIR;
use rustix::fs::{AtFlags, FileType, Mode, fchmod, readlinkat, renameat, symlinkat, unlinkat};

use crate::handles;
use crate::outputs::{WorkspaceRoot, split};

/// Stages `from` at `to` (both workspace-relative); links must lead inside `boundary`.
pub(crate) fn stage(
    workspace: &WorkspaceRoot,
    from: &str,
    to: &str,
    boundary: &str,
) -> io::Result<()> {
    let missing = || io::Error::new(io::ErrorKind::NotFound, format!("`{from}` does not exist"));
    let (directory, name) = split(from);
    let source = workspace.directory(directory, false)?.ok_or_else(missing)?;
    let stat = handles::stat_entry(&source, name)?.ok_or_else(missing)?;
    match handles::file_type(&stat) {
        FileType::Symlink if once_model::paths::is_under(from, OUT_DIR) => {
            let text = link_text(&source, name, from)?;
            check_link(from, to, &text, boundary)?;
            workspace.symlink(&text, to)
        }
        // A source that is a link: the workspace file it leads to (its key holds that
        // file's digest and mode), found through the root's handle without leaving it.
        FileType::Symlink => {
            let target =
                crate::materialize::resolve_source(workspace.handle(), &workspace.path, from)?;
            let (bytes, mode) = workspace.read_file(&target)?;
            workspace.write_file(to, &bytes, mode)
        }
        FileType::Directory => {
            let inner = handles::open_directory(&source, name)?.ok_or_else(missing)?;
            workspace.remove(to)?;
            workspace.make_directory(to)?;
            let destination = workspace
                .directory(to, false)?
                .ok_or_else(|| io::Error::other(format!("cannot create `{to}`")))?;
            copy_tree(&inner, &destination, from, to, boundary)
        }
        _ => {
            let (bytes, mode) = workspace.read_file(from)?;
            workspace.write_file(to, &bytes, mode)
        }
    }
}

/// Copies what the directory `source` (workspace path `from`) holds into `destination`
/// (workspace path `to`).
fn copy_tree(
    source: &OwnedFd,
    destination: &OwnedFd,
    from: &str,
    to: &str,
    boundary: &str,
) -> io::Result<()> {
    for name in handles::entry_names(source)? {
        let (from_child, to_child) = (format!("{from}/{name}"), format!("{to}/{name}"));
        let Some(stat) = handles::stat_entry(source, &name)? else {
            continue;
        };
        match handles::file_type(&stat) {
            FileType::RegularFile => copy_file(source, &name, destination, &from_child)?,
            FileType::Directory => {
                let inner = handles::open_directory(source, &name)?
                    .ok_or_else(|| io::Error::other(format!("`{from_child}` disappeared")))?;
                let made = handles::make_directory(destination, &name)?;
                copy_tree(&inner, &made, &from_child, &to_child, boundary)?;
            }
            FileType::Symlink => {
                let text = link_text(source, &name, &from_child)?;
                check_link(&from_child, &to_child, &text, boundary)?;
                handles::remove_entry(destination, &name)?;
                symlinkat(text.as_str(), destination, name.as_str())?;
            }
            _ => {
                return Err(io::Error::other(format!(
                    "`{from_child}` is not a regular file, a directory or a symbolic link"
                )));
            }
        }
    }
    Ok(())
}

/// Copies the regular file `name` of `source` into `destination` with its permission
/// bits, through a temporary file renamed into place.
fn copy_file(source: &OwnedFd, name: &str, destination: &OwnedFd, path: &str) -> io::Result<()> {
    let mut input: File = handles::open_file(source, name)?
        .ok_or_else(|| io::Error::other(format!("`{path}` disappeared")))?;
    let mode = rustix::fs::fstat(&input)?.st_mode & 0o777;
    let (temporary, mut output) = create_temporary(destination)?;
    let copied = (|| {
        io::copy(&mut input, &mut output)?;
        fchmod(&output, Mode::from_raw_mode(mode))?;
        renameat(destination, temporary.as_str(), destination, name)?;
        Ok(())
    })();
    if copied.is_err() {
        let _ = unlinkat(destination, temporary.as_str(), AtFlags::empty());
    }
    copied
}

fn link_text(directory: &OwnedFd, name: &str, path: &str) -> io::Result<String> {
    readlinkat(directory, name, Vec::new())?
        .into_string()
        .map_err(|_| io::Error::other(format!("the link `{path}` holds a path that is not UTF-8")))
}

/// Refuses the link `from` (text `text`) staged at `to` unless it leads inside `boundary`.
fn check_link(from: &str, to: &str, text: &str, boundary: &str) -> io::Result<()> {
    if leads_inside(to, text, boundary) {
        return Ok(());
    }
    Err(io::Error::other(format!(
        "the link `{from}` points to `{text}`, which leads out of the staged output \
         `{boundary}` once staged at `{to}`: a staged link must point inside what is staged \
         (a relative path whose `..` come first); copy what it points to into the output, \
         or point it inside"
    )))
}

/// Whether the link at `link` (workspace-relative, inside `boundary`) with text `text`
/// leads inside `boundary` by the rule of the module documentation.
pub(crate) fn leads_inside(link: &str, text: &str, boundary: &str) -> bool {
    if text.is_empty() || text.starts_with('/') {
        return false;
    }
    let components = |path: &str| -> Vec<String> {
        path.split('/')
            .filter(|part| !part.is_empty() && *part != ".")
            .map(str::to_owned)
            .collect()
    };
    let floor = components(boundary);
    let mut at = components(split(link).0);
    if !at.starts_with(&floor) {
        return false;
    }
    let mut named = false;
    for part in text.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if named || at.len() <= floor.len() {
                    return false;
                }
                at.pop();
            }
            name => {
                named = true;
                at.push(name.to_owned());
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links_lead_inside_only_by_relative_texts_climbing_first() {
        let boundary = ".once/out/p/Bin";
        for (link, text, inside) in [
            (".once/out/p/Bin/cfg", "real", true),
            (".once/out/p/Bin/d/cfg", "real", true),
            (".once/out/p/Bin/d/up", "../real", true),
            (".once/out/p/Bin/d/e/up", "../../x/y", true),
            (".once/out/p/Bin/d/root", "..", true),
            (".once/out/p/Bin/d/here", ".", true),
            (".once/out/p/Bin/cfg", "../real", false),
            (".once/out/p/Bin/d/up", "../../Other/x", false),
            (".once/out/p/Bin/cfg", "/etc/hostname", false),
            (".once/out/p/Bin/cfg", "", false),
            // A `..` after a name could climb through a link: refused.
            (".once/out/p/Bin/cfg", "sub/../real", false),
            (".once/out/p/Other/cfg", "real", false),
        ] {
            assert_eq!(
                leads_inside(link, text, boundary),
                inside,
                "{link} -> {text}"
            );
        }
    }
}
