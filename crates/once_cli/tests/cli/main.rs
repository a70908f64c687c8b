//! Tests of the real `once` binary: fixture workspaces and every `once query` command.

mod commands;
mod digests;
mod evidence;
mod fixtures;
mod modules;
mod scripts;
mod support;
mod test_adapter;
mod test_results;
mod writes;
