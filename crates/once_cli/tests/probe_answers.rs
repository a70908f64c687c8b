//! Stored toolchain-probe answers through the real binary: a `c_binary` whose compiler
//! `cc` is a native program on `PATH` that counts its `--version` runs (and hands every
//! other command line to the real compiler). A second `once build` reuses the stored
//! answer (no probe run); touching the compiler (a changed stamp) runs the probe again
//! with the same answer (the build stays a hit); a compiler that answers differently is
//! a miss.

#[path = "support/binary.rs"]
mod binary;
use binary::{text, write};

use std::path::Path;
use std::process::Command;
use std::time::{Duration, SystemTime};

use serde_json::Value;

/// Compiles the counting `cc` into `bin/` with `version` as its answer, its modification
/// time `age_seconds` in the past (answers of files changed in the last two seconds are
/// not stored).
fn fake_compiler(dir: &Path, real: &str, counter: &Path, version: &str, age_seconds: u64) {
    let source = dir.join("fake_cc.c");
    std::fs::write(
        &source,
        format!(
            r#"#include <stdio.h>
#include <string.h>
#include <unistd.h>
int main(int argc, char **argv) {{
    if (argc == 2 && strcmp(argv[1], "--version") == 0) {{
        FILE *counter = fopen("{counter}", "a");
        if (counter) {{ fputs("probe\n", counter); fclose(counter); }}
        puts("{version}");
        return 0;
    }}
    argv[0] = "{real}";
    execv("{real}", argv);
    return 127;
}}
"#,
            counter = counter.display(),
        ),
    )
    .unwrap();
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let built = bin.join("cc.new");
    let status = Command::new(real)
        .arg(&source)
        .arg("-o")
        .arg(&built)
        .status()
        .unwrap();
    assert!(status.success());
    std::fs::File::options()
        .write(true)
        .open(&built)
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(age_seconds))
        .unwrap();
    std::fs::rename(&built, bin.join("cc")).unwrap();
}

fn probe_runs(counter: &Path) -> usize {
    std::fs::read_to_string(counter).map_or(0, |text| text.lines().count())
}

/// `once build --format json //c:Prog` with the fake compiler first on `PATH`: its cache
/// state.
fn build(root: &Path, bin: &Path) -> String {
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(["build", "--format", "json", "c/Prog"])
        .env_remove("ONCE_WORKSPACE")
        .env(
            "PATH",
            format!("{}:/usr/local/bin:/usr/bin:/bin", bin.display()),
        )
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}\n{}",
        text(&output.stdout),
        text(&output.stderr)
    );
    let value: Value = serde_json::from_slice(&output.stdout).unwrap();
    value["targets"][0]["cache"]
        .as_str()
        .unwrap_or_else(|| panic!("{value}"))
        .to_owned()
}

#[test]
fn a_stored_probe_answer_is_reused_until_a_stamp_changes() {
    let real = ["/usr/bin/cc", "/usr/local/bin/cc", "/bin/cc"]
        .into_iter()
        .find(|path| Path::new(path).exists())
        .expect("a C compiler");
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("ws");
    write(&root, "once.toml", "[workspace]\n");
    write(
        &root,
        "c/once.toml",
        "[[target]]\nname = \"Prog\"\nkind = \"c_binary\"\nsrcs = [\"main.c\"]\n",
    );
    write(&root, "c/main.c", "int main(void) { return 0; }\n");
    let counter = dir.path().join("probe-runs");
    let bin = dir.path().join("bin");
    fake_compiler(dir.path(), real, &counter, "fakecc 1.0", 60);

    assert_eq!(build(&root, &bin), "miss");
    assert_eq!(probe_runs(&counter), 1);
    assert_eq!(build(&root, &bin), "hit");
    assert_eq!(
        probe_runs(&counter),
        1,
        "unchanged stamps: the stored answer"
    );

    std::fs::File::options()
        .write(true)
        .open(bin.join("cc"))
        .unwrap()
        .set_modified(SystemTime::now() - Duration::from_secs(120))
        .unwrap();
    assert_eq!(build(&root, &bin), "hit", "the same answer, the same key");
    assert_eq!(probe_runs(&counter), 2, "a changed stamp runs the probe");
    assert_eq!(build(&root, &bin), "hit");
    assert_eq!(probe_runs(&counter), 2);

    fake_compiler(dir.path(), real, &counter, "fakecc 2.0", 60);
    assert_eq!(build(&root, &bin), "miss", "another compiler, another key");
    assert_eq!(probe_runs(&counter), 3);
}
