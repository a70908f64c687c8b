//! Tests of the real `once` binary: fixture workspaces and every `once query` command.

mod commands;
mod digests;
mod evidence;
mod fixtures;
mod modules;
#[path = "../support/processes.rs"]
#[allow(
    dead_code,
    reason = "shared with other test binaries; this one needs one helper"
)]
mod processes;
mod scripts;
mod support;
mod test_adapter;
mod test_results;
mod test_selection;
mod writes;
