//! The editor configurations under `editors/` agree with `docs/editors.md`: the Neovim
//! configuration checks the minimum version the docs state before it uses any API that
//! needs it, and says so in one message instead of a Lua traceback.

use std::path::PathBuf;

fn repo_file(relative: &str) -> String {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The `0.N` in `## Neovim (0.N+)`.
fn documented_neovim_minimum(docs: &str) -> String {
    let heading = docs
        .lines()
        .find_map(|line| line.strip_prefix("## Neovim ("))
        .expect("docs/editors.md has a `## Neovim (0.N+)` section");
    heading
        .strip_suffix("+)")
        .expect("the Neovim heading names a minimum version as `(0.N+)`")
        .to_owned()
}

#[test]
fn neovim_config_guards_the_documented_minimum_version() {
    let docs = repo_file("docs/editors.md");
    let lua = repo_file("editors/neovim/once.lua");
    let minimum = documented_neovim_minimum(&docs);

    // The first statement is the guard: nothing before it may touch a newer API.
    let first_statement = lua
        .lines()
        .map(str::trim)
        .find(|line| !line.is_empty() && !line.starts_with("--"))
        .expect("once.lua has code");
    assert_eq!(
        first_statement,
        format!("if vim.fn.has(\"nvim-{minimum}\") == 0 then"),
        "once.lua must start by checking the version docs/editors.md states"
    );
    let guard_end = lua.find("\nend\n").expect("the guard block ends");
    let guard = &lua[..guard_end];
    assert!(
        guard.contains(&format!("Neovim {minimum} or newer is required")),
        "the guard names the minimum version: {guard}"
    );
    assert!(
        guard.contains("nvim_err_writeln") && guard.contains("return"),
        "the guard reports one message and stops: {guard}"
    );
    for api in ["vim.fs.", "vim.lsp.start(", "nvim_create_autocmd"] {
        let used = lua
            .find(api)
            .unwrap_or_else(|| panic!("once.lua uses {api}"));
        assert!(used > guard_end, "{api} is used before the version guard");
    }
    assert!(
        lua.starts_with(&format!("-- once.toml support in Neovim ({minimum}+)")),
        "the file's header names the same minimum"
    );
}
