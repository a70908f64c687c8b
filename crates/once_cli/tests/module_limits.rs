//! Project modules that would hang, exhaust memory or overflow the stack, and module
//! paths that are not regular files, through the real binary: each is one located
//! `invalid_module` (or unreadable-module) diagnostic in bounded time, and `once query
//! targets` still answers. (`once mcp` with such modules: `mcp_protocol.rs`.)

#![cfg(unix)]

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

/// Far more than the evaluation deadline (3 s) plus process start, far less than "hangs".
const BOUND: Duration = Duration::from_secs(30);

/// Each case: a module, and the 1-based line its diagnostic must point at.
const CASES: &[(&str, &str, u32)] = &[
    // Item 5: `==` on two values sharing themselves 2^40 times never returns.
    (
        "compare_shared",
        "x = []\ny = []\nfor i in range(40):\n    x = [x, x]\n    y = [y, y]\nz = (x == y)\n",
        6,
    ),
    // Item 6: deep values rendered or compared.
    (
        "str_deep",
        "x = []\nfor i in range(1500):\n    x = [x]\ns = str(x)\n",
        4,
    ),
    (
        "json_deep",
        "x = []\nfor i in range(1500):\n    x = [x]\ns = json.encode(x)\n",
        4,
    ),
    // Deeper than starlark's comparison recursion limit (200 in debug, 3000 in release).
    (
        "compare_deep",
        "x = []\ny = []\nfor i in range(3500):\n    x = [x]\n    y = [y]\nz = (x == y)\n",
        6,
    ),
    // Item 7: one statement past the heap limit.
    ("repeat_string", "s = \"x\" * 2000000000\n", 1),
    ("repeat_list", "l = [0] * 2000000000\n", 1),
    ("repeat_computed", "n = 2000000000\nl = [0] * n\n", 2),
    ("sorted_range", "l = sorted(range(300000000))\n", 1),
    ("list_range", "l = list(range(1000000000))\n", 1),
    (
        "str_shared",
        "x = []\nfor i in range(28):\n    x = [x, x]\ns = str(x)\n",
        4,
    ),
];

fn workspace() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("modules")).unwrap();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\ninclude = [\"**\"]\n\n[modules]\npaths = [\"modules/*.star\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/once.toml"),
        "[[target]]\nname = \"Files\"\nkind = \"filegroup\"\nsrcs = []\n",
    )
    .unwrap();
    for (name, source, _) in CASES {
        std::fs::write(root.join(format!("modules/{name}.star")), source).unwrap();
    }
    dir
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success());
}

/// Runs `once` with `args` in `root`; panics if it takes longer than [`BOUND`].
fn once(root: &Path, args: &[&str]) -> (i32, Value) {
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_once"))
        .arg("-C")
        .arg(root)
        .args(args)
        .args(["--format", "json"])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let took = started.elapsed();
    assert!(took < BOUND, "`once {}` took {took:?}", args.join(" "));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let json = serde_json::from_str(&stdout).unwrap_or_else(|e| {
        panic!(
            "`once {}`: no JSON ({e}): {stdout} {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap_or(-1), json)
}

/// The line and message of the one `invalid_module` diagnostic of `file`.
fn module_error(diagnostics: &Value, file: &str) -> (u64, String) {
    let errors: Vec<&Value> = diagnostics
        .as_array()
        .unwrap()
        .iter()
        .filter(|d| d["code"] == "invalid_module" && d["file"] == file)
        .collect();
    let [error] = errors.as_slice() else {
        panic!("expected one invalid_module for {file}: {diagnostics}");
    };
    (
        error["range"]["start"]["line"].as_u64().unwrap(),
        error["message"].as_str().unwrap().to_owned(),
    )
}

#[test]
fn every_runaway_module_is_a_located_diagnostic() {
    let dir = workspace();
    for (name, _, line) in CASES {
        let file = format!("modules/{name}.star");
        let (code, json) = once(dir.path(), &["query", "validate-module", &file]);
        assert_eq!(code, 1, "{json}");
        let (at, message) = module_error(&json["diagnostics"], &file);
        assert_eq!(at, u64::from(*line), "{name}: {message}");
    }
}

#[test]
fn queries_survive_runaway_modules() {
    let dir = workspace();
    let (code, json) = once(dir.path(), &["query", "targets"]);
    assert_eq!(code, 0, "{json}");
    assert!(json.to_string().contains("app/Files"), "{json}");
    let (code, json) = once(dir.path(), &["query", "validate-workspace"]);
    assert_eq!(code, 1, "{json}");
    for (name, _, line) in CASES {
        let (at, _) = module_error(&json["diagnostics"], &format!("modules/{name}.star"));
        assert_eq!(at, u64::from(*line), "{name}");
    }
}

/// Item 8: a FIFO (or a link to one) named as a module is refused at once.
#[test]
fn validate_module_refuses_a_fifo() {
    let dir = workspace();
    mkfifo(&dir.path().join("modules/fifo.star"));
    std::os::unix::fs::symlink("modules/fifo.star", dir.path().join("lib.star")).unwrap();
    for path in ["modules/fifo.star", "lib.star"] {
        let (code, json) = once(dir.path(), &["query", "validate-module", path]);
        assert_eq!(code, 1, "{json}");
        assert!(
            json.to_string().contains("not a regular file")
                || json.to_string().contains("resolves outside"),
            "{json}"
        );
    }
}

/// A kind's implementation that would exhaust memory or never return, planned through the
/// real binary (`once query actions`): the implementation runs in the isolated child too,
/// and the plan is one located `implementation_error` in bounded time.
#[test]
fn runaway_implementations_are_located_diagnostics() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::create_dir_all(root.join("modules")).unwrap();
    std::fs::create_dir_all(root.join("app")).unwrap();
    std::fs::write(
        root.join("once.toml"),
        "[workspace]\n\n[modules]\npaths = [\"modules/*.star\"]\n",
    )
    .unwrap();
    std::fs::write(
        root.join("modules/runaway.star"),
        "def _memory(ctx):\n    n = 2000000000\n    l = [0] * n\n\n\
         def _time(ctx):\n    x = []\n    y = []\n    for i in range(40):\n        x = [x, x]\n        y = [y, y]\n    return [] if x == y else []\n\n\
         target_kind(\"memory\", capabilities = [capability(\"build\")], implementations = {\"build\": _memory})\n\
         target_kind(\"time\", capabilities = [capability(\"build\")], implementations = {\"build\": _time})\n",
    )
    .unwrap();
    std::fs::write(
        root.join("app/once.toml"),
        "[[target]]\nname = \"Memory\"\nkind = \"memory\"\n\n[[target]]\nname = \"Time\"\nkind = \"time\"\n",
    )
    .unwrap();
    for (target, line) in [("app/Memory", 3), ("app/Time", 11)] {
        let (code, json) = once(root, &["query", "actions", target]);
        assert_eq!(code, 0, "{json}");
        let diagnostics = &json["steps"][0]["diagnostics"];
        let [diagnostic] = diagnostics.as_array().unwrap().as_slice() else {
            panic!("one diagnostic expected: {json}");
        };
        assert_eq!(diagnostic["code"], "implementation_error", "{json}");
        assert_eq!(diagnostic["file"], "modules/runaway.star", "{json}");
        assert_eq!(diagnostic["range"]["start"]["line"], line, "{json}");
    }
}
