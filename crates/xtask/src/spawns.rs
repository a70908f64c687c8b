//! The one-runner rule, as a tidy lint: processes start only in `once_exec`.
//!
//! Issue 31 point 6: every process `once` starts goes through `once_exec`'s runner, so that
//! the environment scrub, process groups and the reaper apply to all of them. This lint
//! reports every `std::process::Command` / `tokio::process::Command` constructed in a
//! crate's `src/` outside `once_exec`, except in the files of [`OPT_OUT_FILES`], each with
//! its reason. Tests under a crate's `tests/` are not checked (they drive the real binary).

/// Source files outside `once_exec` that may still construct a process `Command`.
/// None today: every process starts in `once_exec::launch`.
pub const OPT_OUT_FILES: &[(&str, &str)] = &[];

/// Whether `path` (workspace-relative) is checked by the lint.
fn in_scope(path: &str) -> bool {
    let Some(rest) = path.strip_prefix("crates/") else {
        return false;
    };
    let Some((krate, inner)) = rest.split_once('/') else {
        return false;
    };
    krate != "once_exec"
        && krate != "xtask"
        && inner.starts_with("src/")
        && !OPT_OUT_FILES.iter().any(|(file, _)| *file == path)
}

/// Whether the file brings a process `Command` into scope under its short name.
fn imports_process_command(text: &str) -> bool {
    text.lines().any(|line| {
        let line = line.trim_start();
        line.starts_with("use ")
            && line.contains("process::")
            && (line.contains("process::Command;")
                || line.contains("process::Command as")
                || (line.contains("process::{") && line.contains("Command")))
    })
}

/// Reports each process `Command` constructed in `text` outside the runner.
pub fn check_spawns(path: &str, text: &str) -> Vec<String> {
    if !in_scope(path) {
        return Vec::new();
    }
    let short = imports_process_command(text);
    text.lines()
        .enumerate()
        .filter(|(_, line)| {
            line.contains("process::Command::new")
                || (short && line.contains("Command::new(") && !line.contains("::Command::new"))
        })
        .map(|(index, _)| {
            format!(
                "{path}:{}: processes start only through `once_exec`'s runner; a new \
                 exception joins OPT_OUT_FILES (crates/xtask/src/spawns.rs) with its reason",
                index + 1
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_new_process_command_outside_once_exec_is_reported() {
        let full = "//! x\nfn f() { let _ = std::process::Command::new(\"sh\"); }\n";
        assert_eq!(
            check_spawns("crates/once_cli/src/main.rs", full),
            [
                "crates/once_cli/src/main.rs:2: processes start only through `once_exec`'s \
              runner; a new exception joins OPT_OUT_FILES (crates/xtask/src/spawns.rs) with \
              its reason"
            ]
        );
        let short =
            "//! x\nuse std::process::{Command, Stdio};\nfn f() { Command::new(\"sh\"); }\n";
        assert_eq!(check_spawns("crates/once_mcp/src/lib.rs", short).len(), 1);
        let tokio = "//! x\nuse tokio::process::Command;\nfn f() { Command::new(\"sh\"); }\n";
        assert_eq!(check_spawns("crates/once_lsp/src/lib.rs", tokio).len(), 1);
    }

    #[test]
    fn the_runner_tests_and_model_commands_are_not_reported() {
        let full = "//! x\nfn f() { let _ = std::process::Command::new(\"sh\"); }\n";
        assert!(check_spawns("crates/once_exec/src/runner.rs", full).is_empty());
        assert!(check_spawns("crates/once_cli/tests/build.rs", full).is_empty());
        assert!(check_spawns("crates/xtask/src/bench.rs", full).is_empty());
        // No file is exempt today (OPT_OUT_FILES is empty).
        assert_eq!(check_spawns("crates/once_db/src/system.rs", full).len(), 1);
        // once_model's action `Command` is not a process.
        let model = "//! x\nuse once_model::action::Command;\nfn f() { Command::new(argv); }\n";
        assert!(check_spawns("crates/once_analysis/src/script_plan.rs", model).is_empty());
    }
}
