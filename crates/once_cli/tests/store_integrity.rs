//! The files `once` keeps and reads back to decide a hit, damaged on disk, through the
//! real binary: a record with a bit flipped, an exit code changed or a digest swapped;
//! the record index, the plan memo, the last plans, the tool digests, the digest index
//! `.once/digests` and the output stamps with a byte changed; a blob replaced by a link
//! or a directory. Each time the next build warns, is a miss (or plans, hashes or reads
//! again), leaves exactly what a clean build leaves (modes included), and the damaged
//! file is gone or rewritten: the build after it is quiet. Also the staging of links in
//! a dependency's output (links stay links; one leading out of the output is refused).

use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

#[path = "support/binary.rs"]
mod binary;
use binary::{once, text, write};

use serde_json::Value;

/// `p/Gen`: a command writing a file (0644), an executable (0755) and a line on stdout.
fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"p\"]\n");
    write(
        root,
        "p/once.toml",
        r#"[[target]]
name = "Gen"
kind = "command"
srcs = ["in.txt"]

[target.attrs]
cmd = "cat in.txt > \"$OUT/o.txt\"; printf '#!/bin/sh\\necho hi\\n' > \"$OUT/x.sh\"; chmod 755 \"$OUT/x.sh\"; echo from-gen"
outputs = ["o.txt", "x.sh"]
"#,
    );
    write(root, "p/in.txt", "v1\n");
    dir
}

/// `once build --format json TARGET`: exit code, `p/Gen`'s cache state, stderr.
fn build(root: &Path, target: &str) -> (i32, String, String) {
    let output = once(root, &["build", "--format", "json", target]);
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    let cache = value["targets"][0]["cache"]
        .as_str()
        .unwrap_or("none")
        .to_owned();
    (output.status.code().unwrap(), cache, text(&output.stderr))
}

/// Everything under `.once/out`: each path with its kind, permission bits and content
/// (a link's text), sorted.
fn outputs(root: &Path) -> Vec<String> {
    fn walk(directory: &Path, base: &Path, lines: &mut Vec<String>) {
        for entry in std::fs::read_dir(directory).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(base).unwrap().display().to_string();
            let metadata = std::fs::symlink_metadata(&path).unwrap();
            let mode = metadata.permissions().mode() & 0o7777;
            if metadata.file_type().is_symlink() {
                let target = std::fs::read_link(&path).unwrap();
                lines.push(format!("link {relative} -> {}", target.display()));
            } else if metadata.is_dir() {
                lines.push(format!("dir {relative} {mode:o}"));
                walk(&path, base, lines);
            } else {
                let content = text(&std::fs::read(&path).unwrap());
                lines.push(format!("file {relative} {mode:o} {content:?}"));
            }
        }
    }
    let mut lines = Vec::new();
    walk(&root.join(".once/out"), root, &mut lines);
    lines.sort();
    lines
}

/// The record file of `p/Gen`'s action (the one listing `o.txt`).
fn gen_record(root: &Path) -> PathBuf {
    files_under(&root.join(".once/cache/actions"))
        .into_iter()
        .find(|path| {
            std::fs::read(path)
                .is_ok_and(|bytes| text(&bytes).contains(".once/out/p/Gen/out/o.txt"))
        })
        .expect("a record of p/Gen")
}

fn files_under(directory: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(directory).unwrap() {
        let path = entry.unwrap().path();
        if std::fs::symlink_metadata(&path).unwrap().is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// The blob file holding `content` and its digest (fan-out directory and name).
fn blob_of(root: &Path, content: &[u8]) -> (PathBuf, String) {
    files_under(&root.join(".once/cache/blobs"))
        .into_iter()
        .find(|path| std::fs::read(path).is_ok_and(|bytes| bytes == content))
        .map(|path| {
            let fan = path
                .parent()
                .unwrap()
                .file_name()
                .unwrap()
                .to_string_lossy();
            let digest = format!("{fan}{}", path.file_name().unwrap().to_string_lossy());
            (path, digest)
        })
        .expect("a blob of the content")
}

fn replace_in(path: &Path, from: &str, to: &str) {
    let before = text(&std::fs::read(path).unwrap());
    assert!(
        before.contains(from),
        "`{from}` in {}:\n{before}",
        path.display()
    );
    let after = before.replacen(from, to, 1);
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, after).unwrap();
}

/// An edit of a record: the text replaced and its replacement, from the workspace.
type Edit = fn(&Path) -> (String, String);

/// The files of one kind in a workspace.
type Files = fn(&Path) -> Vec<PathBuf>;

fn assert_quiet_hit(root: &Path) {
    let (code, cache, stderr) = build(root, "p/Gen");
    assert_eq!((code, cache.as_str()), (0, "hit"), "{stderr}");
    assert!(!stderr.contains("warning"), "{stderr}");
}

/// A record with its mode, exit code or a digest changed is not used: the build warns,
/// runs the action again (a miss), leaves the clean build's outputs, replaces the record,
/// and neither the record nor the workspace's record index keeps the bad copy.
#[test]
fn a_changed_record_is_a_miss_with_a_warning_and_is_replaced() {
    let edits: [(&str, Edit); 3] = [
        ("a mode", |_| {
            ("file 644 ".to_owned(), "file 645 ".to_owned())
        }),
        ("the exit code", |_| {
            ("exit 0\n".to_owned(), "exit 1\n".to_owned())
        }),
        ("a digest", |root| {
            // `o.txt`'s digest swapped for that of Gen's stdout, another blob.
            let (_, good) = blob_of(root, b"v1\n");
            let (_, other) = blob_of(root, b"from-gen\n");
            let line = |digest: &str| format!("{digest} 3 .once/out/p/Gen/out/o.txt");
            (line(&good), line(&other))
        }),
    ];
    for (what, edit) in edits {
        let dir = workspace();
        let root = dir.path();
        let (code, cache, stderr) = build(root, "p/Gen");
        assert_eq!((code, cache.as_str()), (0, "miss"), "{stderr}");
        let clean = outputs(root);
        let record = gen_record(root);
        let (from, to) = edit(root);
        replace_in(&record, &from, &to);
        std::fs::remove_dir_all(root.join(".once/out")).unwrap();

        let (code, cache, stderr) = build(root, "p/Gen");
        assert_eq!((code, cache.as_str()), (0, "miss"), "{what}: {stderr}");
        assert!(
            stderr.contains("once: warning: p/Gen#build/")
                && stderr.contains("stored result")
                && stderr.contains("removed"),
            "{what}: {stderr}"
        );
        assert_eq!(outputs(root), clean, "{what}");
        let rewritten = text(&std::fs::read(gen_record(root)).unwrap());
        assert!(!rewritten.contains(&to), "{what}: {rewritten}");

        // Neither the record file nor the index holds the bad copy any more.
        for index in files_under(&root.join(".once/cache")) {
            if index
                .file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with("index-")
            {
                let bytes = text(&std::fs::read(&index).unwrap());
                assert!(!bytes.contains(&to), "{what}: the index keeps the bad copy");
            }
        }
        std::fs::remove_dir_all(root.join(".once/out")).unwrap();
        assert_quiet_hit(root);
        assert_eq!(outputs(root), clean, "{what}");
    }
}

/// Changes one byte in the middle of `path` (a digit becomes another digit, so a text
/// file still parses where no checksum guards it).
fn flip_a_byte(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let middle = bytes.len() / 2;
    let index = (middle..bytes.len())
        .chain(0..middle)
        .find(|&i| bytes[i].is_ascii_digit())
        .unwrap_or(middle);
    bytes[index] = if bytes[index] == b'1' { b'2' } else { b'1' };
    std::fs::remove_file(path).unwrap();
    std::fs::write(path, bytes).unwrap();
}

/// Each file the store or the workspace keeps to decide hits, with a byte changed: the
/// next build warns naming it, leaves the clean build's outputs, and rewrites or removes
/// the file, so the build after that is quiet.
#[test]
fn a_damaged_store_or_workspace_file_is_a_warning_and_is_rebuilt() {
    let kinds: [(&str, Files); 6] = [
        ("plans", |root| vec![root.join(".once/cache/derived/plans")]),
        ("last-plan-", |root| derived_files(root, "last-plan-")),
        ("index-", |root| derived_files(root, "index-")),
        ("tools", |root| vec![root.join(".once/cache/derived/tools")]),
        (".once/digests", |root| vec![root.join(".once/digests")]),
        (".once/output-stamps", |root| {
            vec![root.join(".once/output-stamps")]
        }),
    ];
    for (name, files) in kinds {
        let dir = workspace();
        let root = dir.path();
        if name == ".once/digests" {
            // The index keeps only digests of files that changed more than two seconds
            // before they were read (`once_db::digests::SETTLED_NS`).
            std::thread::sleep(std::time::Duration::from_millis(2_100));
        }
        assert_eq!(build(root, "p/Gen").1, "miss");
        // A second build (a hit) writes what a hit writes (stamps of linked outputs).
        assert_quiet_hit(root);
        let clean = outputs(root);
        let damaged = files(root);
        assert!(!damaged.is_empty(), "{name}: no file");
        for file in &damaged {
            assert!(file.is_file(), "{name}: {} is missing", file.display());
            flip_a_byte(file);
        }
        if name == "plans" {
            // The plan memo is read only when the last plan cannot be reused.
            for last in derived_files(root, "last-plan-") {
                std::fs::remove_file(last).unwrap();
            }
        }

        let (code, _, stderr) = build(root, "p/Gen");
        assert_eq!(code, 0, "{name}: {stderr}");
        assert!(
            stderr.contains("once: warning:") && stderr.contains(name),
            "{name}: {stderr}"
        );
        assert_eq!(outputs(root), clean, "{name}");
        let (code, cache, stderr) = build(root, "p/Gen");
        assert_eq!((code, cache.as_str()), (0, "hit"), "{name}: {stderr}");
        assert!(!stderr.contains("warning"), "{name}: repaired: {stderr}");
        assert_eq!(outputs(root), clean, "{name}");
    }
}

fn derived_files(root: &Path, prefix: &str) -> Vec<PathBuf> {
    std::fs::read_dir(root.join(".once/cache/derived"))
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| {
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(prefix)
        })
        .collect()
}

/// An old digest written into `.once/digests` (over the entry of a file edited since) is
/// not trusted: the edit is seen, the output is the clean build's.
#[test]
fn an_old_digest_written_into_the_digest_index_gives_no_wrong_hit() {
    // The index keeps only digests of files that changed more than two seconds before
    // they were read (`once_db::digests::SETTLED_NS`).
    let settle = || std::thread::sleep(std::time::Duration::from_millis(2_100));
    let dir = workspace();
    let root = dir.path();
    settle();
    assert_eq!(build(root, "p/Gen").1, "miss");
    let index = root.join(".once/digests");
    let old = Sha256::hex(b"v1\n");
    assert!(text(&std::fs::read(&index).unwrap()).contains(&old));
    write(root, "p/in.txt", "v2\n");
    settle();
    assert_eq!(build(root, "p/Gen").1, "miss");
    let new = Sha256::hex(b"v2\n");
    replace_in(&index, &new, &old);

    let (code, _, stderr) = build(root, "p/Gen");
    assert_eq!(code, 0, "{stderr}");
    let o = std::fs::read(root.join(".once/out/p/Gen/out/o.txt")).unwrap();
    assert_eq!(text(&o), "v2\n", "the edit is seen");
    assert!(
        stderr.contains("once: warning:") && stderr.contains(".once/digests"),
        "{stderr}"
    );
}

/// SHA-256 through the system's `sha256sum` (the test crate has no hasher of its own).
struct Sha256;

impl Sha256 {
    fn hex(bytes: &[u8]) -> String {
        use std::io::Write as _;
        let mut child = std::process::Command::new("sha256sum")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(bytes).unwrap();
        let output = child.wait_with_output().unwrap();
        text(&output.stdout)
            .split_whitespace()
            .next()
            .unwrap()
            .to_owned()
    }
}

/// A blob replaced by a symbolic link (or a directory) is removed and stored again: the
/// build that finds it warns and runs the action, and the build after it is a quiet hit.
#[test]
fn a_blob_replaced_by_a_link_or_a_directory_is_repaired() {
    for replacement in ["link", "directory"] {
        let dir = workspace();
        let root = dir.path();
        assert_eq!(build(root, "p/Gen").1, "miss");
        let clean = outputs(root);
        let (blob, digest) = blob_of(root, b"v1\n");
        std::fs::remove_file(&blob).unwrap();
        if replacement == "link" {
            let elsewhere = root.join("elsewhere.txt");
            std::fs::write(&elsewhere, "v1\n").unwrap();
            std::os::unix::fs::symlink(&elsewhere, &blob).unwrap();
        } else {
            std::fs::create_dir(&blob).unwrap();
        }
        std::fs::remove_dir_all(root.join(".once/out")).unwrap();

        let (code, cache, stderr) = build(root, "p/Gen");
        assert_eq!(
            (code, cache.as_str()),
            (0, "miss"),
            "{replacement}: {stderr}"
        );
        assert!(
            stderr.contains(&format!("the stored output {digest} could not be used")),
            "{replacement}: {stderr}"
        );
        let metadata = std::fs::symlink_metadata(&blob).unwrap();
        assert!(
            metadata.is_file(),
            "{replacement}: the blob is a file again"
        );
        assert_eq!(std::fs::read(&blob).unwrap(), b"v1\n");
        assert_eq!(outputs(root), clean, "{replacement}");

        std::fs::remove_dir_all(root.join(".once/out")).unwrap();
        assert_quiet_hit(root);
        assert_eq!(outputs(root), clean, "{replacement}");
    }
}

/// A `command` whose outputs hold links (a file `cfg -> real`, a directory `d` holding
/// `cfg -> real`) is staged by an `sh_binary` with its links as links; a link leading out
/// of the staged output is refused by name.
#[test]
fn links_in_a_dependency_output_are_staged_as_links() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"p\"]\n");
    write(
        root,
        "p/once.toml",
        r#"[[target]]
name = "Gen"
kind = "command"

[target.attrs]
cmd = "echo hello > \"$OUT/real\"; ln -s real \"$OUT/cfg\"; mkdir \"$OUT/d\"; echo inner > \"$OUT/d/real\"; ln -s real \"$OUT/d/cfg\"; ln -s ../real \"$OUT/d/up\""
outputs = ["real", "cfg", "d"]

[[target]]
name = "Bin"
kind = "sh_binary"
srcs = ["run.sh"]
deps = ["./Gen"]

[target.attrs]
main = "run.sh"

[[target]]
name = "Escape"
kind = "command"

[target.attrs]
cmd = "ln -s ../../../../../../etc/hostname \"$OUT/esc\""
outputs = ["esc"]

[[target]]
name = "UsesEscape"
kind = "sh_binary"
srcs = ["run.sh"]
deps = ["./Escape"]

[target.attrs]
main = "run.sh"
"#,
    );
    write(
        root,
        "p/run.sh",
        "here=\"$(dirname \"$0\")\"\ncat \"$here/cfg\" \"$here/d/cfg\" \"$here/d/up\"\n",
    );
    let built = once(root, &["build", "p/Bin"]);
    assert_eq!(built.status.code(), Some(0), "{}", text(&built.stderr));
    let staged = root.join(".once/out/p/Bin");
    for (link, target) in [("cfg", "real"), ("d/cfg", "real"), ("d/up", "../real")] {
        let path = staged.join(link);
        assert!(
            std::fs::symlink_metadata(&path)
                .unwrap()
                .file_type()
                .is_symlink(),
            "{link} is a link"
        );
        assert_eq!(std::fs::read_link(&path).unwrap(), Path::new(target));
    }
    let ran = once(root, &["run", "p/Bin"]);
    assert_eq!(ran.status.code(), Some(0), "{}", text(&ran.stderr));
    assert_eq!(text(&ran.stdout), "hello\ninner\nhello\n");
    // A second build is a hit and leaves the same links.
    let again = once(root, &["build", "p/Bin"]);
    assert_eq!(again.status.code(), Some(0), "{}", text(&again.stderr));
    assert_eq!(
        std::fs::read_link(staged.join("d/cfg")).unwrap(),
        Path::new("real")
    );

    let refused = once(root, &["build", "p/UsesEscape"]);
    assert_eq!(refused.status.code(), Some(1));
    let output = text(&refused.stdout) + &text(&refused.stderr);
    assert!(
        output.contains("esc") && output.contains("out of"),
        "{output}"
    );
    assert!(!output.contains("os error 40"), "{output}");
}

/// `once test` shows the same warnings as `once build`: here, a damaged record index.
#[test]
fn once_test_shows_the_warnings_of_damaged_store_files() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(root, "once.toml", "[workspace]\ninclude = [\"p\"]\n");
    write(
        root,
        "p/once.toml",
        "[[target]]\nname = \"T\"\nkind = \"sh_test\"\nsrcs = [\"t.sh\"]\n\n\
         [target.attrs]\nmain = \"t.sh\"\n",
    );
    write(root, "p/t.sh", "exit 0\n");
    let first = once(root, &["test", "p/T"]);
    assert_eq!(first.status.code(), Some(0), "{}", text(&first.stderr));
    let indexes = derived_files(root, "index-");
    assert!(!indexes.is_empty());
    for index in &indexes {
        flip_a_byte(index);
    }
    let second = once(root, &["test", "p/T"]);
    assert_eq!(second.status.code(), Some(0), "{}", text(&second.stderr));
    let stderr = text(&second.stderr);
    assert!(
        stderr.contains("once: warning:") && stderr.contains("index-"),
        "{stderr}"
    );
}
