//! The execution differential test: an incremental build equals a clean build, always.
//!
//! A small workspace of `filegroup`, `command` and `sh_binary` targets (sources read by
//! content and by mode, globs, a dependency chain, outputs holding a link, a slow action)
//! takes random steps: source edits (often back to an earlier content, so old results
//! are hit again), executable bits set and cleared, sources replaced by symbolic links to
//! other sources and back, renames in and out of a glob, touches, manifest edits (a
//! command changed, a dependency added and removed, a target added and removed), build
//! directories removed, and edits of an input while an action reading it runs (then
//! reverted, or not). After each step `once build ...` in the long-lived workspace and
//! store must give every target the status and every declared output the bytes, mode
//! and link target that a clean build of a copy of the tree, in a fresh store, gives
//! (the two builds run at the same time, each in its own workspace and store).
//!
//! `ONCE_EXEC_DIFF_STEPS` sets the number of steps (default 1,000), `ONCE_EXEC_DIFF_SEED`
//! the seed (default fixed, printed on failure with the steps taken).

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

#[path = "support/binary.rs"]
mod binary;
use binary::{copy_tree, text, write};

use serde_json::Value;

/// A small, seeded PRNG (xorshift64*): the steps are a function of the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// The sources steps edit, chmod, link and touch.
const SOURCES: &[&str] = &[
    "src/a.txt",
    "src/b.txt",
    "gen/in.txt",
    "gen/x.dat",
    "gen/y.dat",
    "bin/tool.sh",
    "bin/helper.txt",
    "slow/in.txt",
];

/// Contents a source takes: few, so that steps come back to earlier contents.
const CONTENTS: &[&str] = &["one\n", "two\n", "three\n", "one\ntwo\n"];
const SCRIPTS: &[&str] = &[
    "#!/bin/bash\necho tool one\n",
    "#!/bin/bash\necho tool two\ncat \"$(dirname \"$0\")/helper.txt\"\n",
];

const ROOT_MANIFEST: &str = "[workspace]\n";

const SRC_MANIFEST: &str = r#"[[target]]
name = "Files"
kind = "filegroup"
srcs = ["*.txt"]
visibility = ["public"]
"#;

/// `gen/Gen` reads its sources by content and by mode (`ls -l` of each), so an edit of
/// either must reach its key. Two variants of the command, and of its dependencies.
fn gen_manifest(variant: usize, with_files: bool) -> String {
    let cmd = [
        r#"for f in in.txt *.dat; do echo \"== $f\"; cat \"$f\"; done > $OUT/gen.txt; ls -l in.txt *.dat | cut -c1-10 >> $OUT/gen.txt"#,
        r#"cat in.txt > $OUT/gen.txt; ls -l in.txt | cut -c1-10 >> $OUT/gen.txt; cat *.dat | sort >> $OUT/gen.txt"#,
    ][variant];
    let deps = if with_files {
        "deps = [\"src/Files\"]\n"
    } else {
        ""
    };
    format!(
        "[[target]]\nname = \"Gen\"\nkind = \"command\"\nsrcs = [\"in.txt\", \"*.dat\"]\n{deps}visibility = [\"public\"]\n\n\
         [target.attrs]\ncmd = \"{cmd}\"\noutputs = [\"gen.txt\"]\n"
    )
}

/// `use/Use` reads `gen/Gen`'s output; `use/Extra` comes and goes.
fn use_manifest(extra: bool) -> String {
    let mut text = String::from(
        r#"[[target]]
name = "Use"
kind = "command"
deps = ["gen/Gen"]

[target.attrs]
cmd = "tr a-z A-Z < ../.once/out/gen/Gen/out/gen.txt > $OUT/use.txt"
outputs = ["use.txt"]
"#,
    );
    if extra {
        text.push_str(
            r#"
[[target]]
name = "Extra"
kind = "command"
deps = ["gen/Gen", "./Use"]

[target.attrs]
cmd = "cat ../.once/out/gen/Gen/out/gen.txt ../.once/out/use/Use/out/use.txt | wc -l > $OUT/count.txt"
outputs = ["count.txt"]
"#,
        );
    }
    text
}

/// `bin/Tool` stages its sources (modes included) and `bin/Links`' output, which holds a
/// link to a file beside it.
const BIN_MANIFEST: &str = r#"[[target]]
name = "Links"
kind = "command"

[target.attrs]
cmd = "echo real > $OUT/real.txt && ln -s real.txt $OUT/cfg"
outputs = ["real.txt", "cfg"]

[[target]]
name = "Tool"
kind = "sh_binary"
srcs = ["tool.sh", "helper.txt"]
deps = ["./Links"]

[target.attrs]
main = "tool.sh"
"#;

/// `slow/Slow` reads its input after a pause, so a step can edit it while it runs.
const SLOW_MANIFEST: &str = r#"[[target]]
name = "Slow"
kind = "command"
srcs = ["in.txt"]

[target.attrs]
cmd = "sleep 0.3; cat in.txt > $OUT/o.txt"
outputs = ["o.txt"]
"#;

/// The manifest choices a step toggles.
#[derive(Clone, Copy, Debug, Default)]
struct Manifests {
    gen_variant: usize,
    gen_with_files: bool,
    extra: bool,
}

impl Manifests {
    fn write(self, root: &Path) {
        write(
            root,
            "gen/once.toml",
            &gen_manifest(self.gen_variant, self.gen_with_files),
        );
        write(root, "use/once.toml", &use_manifest(self.extra));
    }
}

fn initial_workspace(root: &Path) {
    write(root, "once.toml", ROOT_MANIFEST);
    write(root, "src/once.toml", SRC_MANIFEST);
    write(root, "bin/once.toml", BIN_MANIFEST);
    write(root, "slow/once.toml", SLOW_MANIFEST);
    Manifests::default().write(root);
    for source in SOURCES {
        let contents = if source.ends_with(".sh") {
            SCRIPTS[0]
        } else {
            CONTENTS[0]
        };
        write(root, source, contents);
    }
}

/// Starts `once -C root build ... --format json` with the store in the workspace.
fn start_build(root: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["build", "--format", "json", "--keep-going", "..."])
        .env_remove("ONCE_WORKSPACE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

/// The exit code, the JSON answer and the stderr of a build [`start_build`] started.
fn finish_build(build: std::process::Child) -> (i32, Value, String) {
    let output = build.wait_with_output().unwrap();
    let value = serde_json::from_slice(&output.stdout).unwrap_or_else(|e| {
        panic!(
            "not JSON ({e}): {}\n{}",
            text(&output.stdout),
            text(&output.stderr)
        )
    });
    (
        output.status.code().unwrap_or(-1),
        value,
        text(&output.stderr),
    )
}

/// What a build left that a user can observe: each target's status, and each declared
/// output's entries (files with their bytes and modes, links with their targets, below
/// directories too), by target.
#[derive(Debug, PartialEq, Eq)]
struct Observed {
    targets: BTreeMap<String, (String, BTreeMap<String, Entry>)>,
    problems: String,
}

#[derive(Debug, PartialEq, Eq)]
enum Entry {
    /// The bytes as text (every output here is text).
    File {
        mode: u32,
        text: String,
    },
    Link(PathBuf),
    Directory {
        mode: u32,
    },
    Missing,
}

/// The targets on which two observations differ, each side in full.
fn difference(incremental: &Observed, clean: &Observed) -> String {
    let mut out = String::new();
    if incremental.problems != clean.problems {
        out.push_str(&format!(
            "problems: incremental {} clean {}\n",
            incremental.problems, clean.problems
        ));
    }
    let ids: std::collections::BTreeSet<&String> = incremental
        .targets
        .keys()
        .chain(clean.targets.keys())
        .collect();
    for id in ids {
        let (a, b) = (incremental.targets.get(id), clean.targets.get(id));
        if a != b {
            out.push_str(&format!(
                "{id}:\n  incremental {a:?}\n  clean       {b:?}\n"
            ));
        }
    }
    out
}

fn observe(root: &Path, value: &Value) -> Observed {
    let mut targets = BTreeMap::new();
    for record in value["targets"].as_array().into_iter().flatten() {
        let id = record["target"].as_str().unwrap_or_default().to_owned();
        let status = record["status"].as_str().unwrap_or_default().to_owned();
        let mut entries = BTreeMap::new();
        if status == "completed" {
            for output in record["outputs"].as_array().into_iter().flatten() {
                let path = output.as_str().unwrap_or_default();
                collect(root, path, &mut entries);
            }
        }
        targets.insert(id, (status, entries));
    }
    Observed {
        targets,
        problems: value["problems"].to_string(),
    }
}

fn collect(root: &Path, path: &str, entries: &mut BTreeMap<String, Entry>) {
    let full = root.join(path);
    let entry = match std::fs::symlink_metadata(&full) {
        Err(_) => Entry::Missing,
        Ok(meta) if meta.file_type().is_symlink() => {
            Entry::Link(std::fs::read_link(&full).unwrap())
        }
        Ok(meta) if meta.is_dir() => {
            let mut children: Vec<String> = std::fs::read_dir(&full)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect();
            children.sort();
            for child in children {
                collect(root, &format!("{path}/{child}"), entries);
            }
            Entry::Directory {
                mode: meta.permissions().mode() & 0o7777,
            }
        }
        Ok(meta) => Entry::File {
            mode: meta.permissions().mode() & 0o7777,
            text: String::from_utf8_lossy(&std::fs::read(&full).unwrap()).into_owned(),
        },
    };
    entries.insert(path.to_owned(), entry);
}

/// Replaces `path` (a file or link) with a file holding `contents`, keeping its mode when
/// it was a file (a write through a link would edit the link's target instead).
fn replace_file(root: &Path, path: &str, contents: &str) {
    let full = root.join(path);
    let mode = std::fs::symlink_metadata(&full)
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.permissions().mode());
    if mode.is_none() {
        let _ = std::fs::remove_file(&full);
    }
    std::fs::write(&full, contents).unwrap();
    if let Some(mode) = mode {
        std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
    }
}

/// One random step on the live workspace; answers what it did, for the failure report.
fn step(root: &Path, rng: &mut Rng, manifests: &mut Manifests) -> String {
    match rng.below(20) {
        0..=5 => {
            let source = *rng.pick(SOURCES);
            let contents = if source.ends_with(".sh") {
                *rng.pick(SCRIPTS)
            } else {
                *rng.pick(CONTENTS)
            };
            replace_file(root, source, contents);
            format!("write {source} {contents:?}")
        }
        6 | 7 => {
            let source = *rng.pick(SOURCES);
            let full = root.join(source);
            match std::fs::symlink_metadata(&full) {
                Ok(meta) if meta.is_file() => {
                    let mode = meta.permissions().mode() ^ 0o111;
                    std::fs::set_permissions(&full, std::fs::Permissions::from_mode(mode)).unwrap();
                    format!("chmod {source} {:o}", mode & 0o777)
                }
                _ => format!("chmod {source}: not a file, nothing done"),
            }
        }
        8 | 9 => {
            // A source becomes a link to another source of its package, or a file again.
            let source = *rng.pick(SOURCES);
            let full = root.join(source);
            let is_link = std::fs::symlink_metadata(&full).is_ok_and(|m| m.is_symlink());
            if is_link {
                let contents = *rng.pick(CONTENTS);
                replace_file(root, source, contents);
                return format!("unlink {source} (now a file {contents:?})");
            }
            let package = source.split('/').next().unwrap_or_default();
            let others: Vec<&str> = SOURCES
                .iter()
                .copied()
                .filter(|s| *s != source && s.starts_with(&format!("{package}/")))
                .filter(|s| std::fs::symlink_metadata(root.join(s)).is_ok_and(|m| m.is_file()))
                .collect();
            if others.is_empty() || source.ends_with(".sh") {
                return format!("link {source}: no other file, nothing done");
            }
            let target = *rng.pick(&others);
            let name = Path::new(target).file_name().unwrap();
            let _ = std::fs::remove_file(&full);
            std::os::unix::fs::symlink(name, &full).unwrap();
            format!("link {source} -> {}", name.to_string_lossy())
        }
        10 => {
            // In and out of the `*.dat` glob.
            let (from, to) =
                if root.join("gen/x.dat").exists() || root.join("gen/x.dat").is_symlink() {
                    ("gen/x.dat", "gen/x.dot")
                } else {
                    ("gen/x.dot", "gen/x.dat")
                };
            match std::fs::rename(root.join(from), root.join(to)) {
                Ok(()) => format!("rename {from} {to}"),
                Err(err) => format!("rename {from} {to}: {err}"),
            }
        }
        11 => {
            let source = *rng.pick(SOURCES);
            let full = root.join(source);
            let later = std::time::SystemTime::now() + Duration::from_secs(rng.below(100) as u64);
            match std::fs::File::options().append(true).open(&full) {
                Ok(file) => {
                    let _ = file.set_modified(later);
                    format!("touch {source}")
                }
                Err(err) => format!("touch {source}: {err}"),
            }
        }
        12 => {
            manifests.gen_variant = 1 - manifests.gen_variant;
            manifests.write(root);
            format!("gen/Gen's command variant {}", manifests.gen_variant)
        }
        13 => {
            manifests.gen_with_files = !manifests.gen_with_files;
            manifests.write(root);
            format!("gen/Gen depends on src/Files: {}", manifests.gen_with_files)
        }
        14 => {
            manifests.extra = !manifests.extra;
            manifests.write(root);
            format!("use/Extra exists: {}", manifests.extra)
        }
        15 => {
            let dir = *rng.pick(&[
                ".once/out/gen/Gen",
                ".once/out/use/Use",
                ".once/out/bin/Tool",
                ".once/out/bin/Links",
                ".once/out",
            ]);
            let _ = std::fs::remove_dir_all(root.join(dir));
            format!("rm -rf {dir}")
        }
        _ => edit_while_running(root, rng),
    }
}

/// Builds `slow/Slow` in the background and edits its input while its command sleeps,
/// then reverts the edit (still while it runs) or keeps it.
fn edit_while_running(root: &Path, rng: &mut Rng) -> String {
    let input = root.join("slow/in.txt");
    let before = std::fs::read_to_string(&input).unwrap_or_default();
    let during = *rng.pick(CONTENTS);
    let revert = rng.below(2) == 0;
    let mut child = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["build", "slow/Slow"])
        .env_remove("ONCE_WORKSPACE")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(150));
    replace_file(root, "slow/in.txt", during);
    if revert {
        std::thread::sleep(Duration::from_millis(50));
        replace_file(root, "slow/in.txt", &before);
    }
    child.wait().unwrap();
    format!(
        "edit slow/in.txt to {during:?} while slow/Slow runs{}",
        if revert { ", then back" } else { "" }
    )
}

#[test]
fn an_incremental_build_equals_a_clean_build_after_every_step() {
    let steps: usize = std::env::var("ONCE_EXEC_DIFF_STEPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000);
    let seed: u64 = std::env::var("ONCE_EXEC_DIFF_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x005e_ed0f_0ece);
    let live = tempfile::tempdir().unwrap();
    let root = live.path();
    initial_workspace(root);
    let mut rng = Rng(seed | 1);
    let mut manifests = Manifests::default();
    let mut log = vec!["initial workspace".to_owned()];
    for number in 0..=steps {
        if number > 0 {
            log.push(step(root, &mut rng, &mut manifests));
        }
        // The clean build of a copy runs beside the incremental one: the two share no
        // file (the copy leaves `.once` out), and the second core would idle otherwise.
        let clean_dir = tempfile::tempdir().unwrap();
        let clean_root = clean_dir.path().join("w");
        copy_tree(root, &clean_root);
        let clean_build = start_build(&clean_root);
        let (code, value, stderr) = finish_build(start_build(root));
        let incremental = observe(root, &value);
        let (clean_code, clean_value, clean_stderr) = finish_build(clean_build);
        let clean = observe(&clean_root, &clean_value);
        if number == 0 {
            // Else the comparison is vacuous: every target builds from the initial tree.
            assert_eq!(code, 0, "the initial build failed: {value}\n{stderr}");
            assert_eq!(incremental.targets.len(), 6, "{incremental:#?}");
        }
        if incremental != clean || code != clean_code {
            let recent = log.len().saturating_sub(12);
            panic!(
                "step {number} (seed {seed}): the incremental build differs from a clean build\n\
                 last steps:\n  {}\n\n{}\nincremental: exit {code}, {stderr}\n\
                 clean: exit {clean_code}, {clean_stderr}",
                log[recent..].join("\n  "),
                difference(&incremental, &clean),
            );
        }
    }
}
