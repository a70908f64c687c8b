//! The [`PlanMemo`] trait: answers of planning remembered across processes.
//!
//! Planning a target calls its kind's Starlark implementation; in a new process salsa
//! remembers nothing, so every `once build` would plan every target again. A front end
//! that runs one command per process installs a memo ([`crate::RootDatabase::set_plan_memo`]);
//! the planning query (`once_graph::actions`) then looks its answer up by a key over
//! everything the implementation can observe, and records what it planned. The memo
//! stores opaque bytes: the key and the value's encoding belong to the planner, the
//! storage to the front end (`once_build::plan_cache::memo` keeps it in the store). Servers with
//! a warm database (`once lsp`, `once mcp`) install none.

pub use once_model::plan_memo::PlanMemo;
