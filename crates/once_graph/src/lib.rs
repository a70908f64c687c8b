//! The semantic layer: every workspace fact, as a salsa query.
//!
//! The queries build on each other in this order:
//!
//! - [`manifests`]: `manifest` (typed declarations with ranges, structural diagnostics; it
//!   parses and keeps no tree) and `parse_manifest` (the CST, on demand).
//! - [`settings`]: the root manifest's `[workspace]`/`[modules]` tables, the configuration
//!   tokens `select` uses, and `workspace_packages` after include/exclude.
//! - [`kinds`]: `module_files` and `module_kinds` (project modules, one query per `.star`
//!   file) and `kind_catalog`, the prelude plus module kinds targets may use.
//! - [`resolve`]: `target_summaries` (the per-package name table dependents read) and
//!   `resolved_targets` (labels, selects, attribute values resolved).
//! - [`interpreters`]: `interpreter_diagnostics`, the Python interpreters a package
//!   names, checked on disk (an untracked read).
//! - [`validate`]: `file_diagnostics` per package and `workspace_diagnostics`.
//! - [`graph`]: `dependency_graph`, `reverse_deps`, `target_count` and cycles (searched
//!   only in the packages the package-level graph puts on a cycle).
//! - [`affected`]: `test_targets`, `target_inputs` (`package_inputs` for every target of a
//!   package at once), `owners`, `affected_tests`.
//! - [`actions`]: `target_actions` (a kind's Starlark implementation of a capability,
//!   called with the resolved target) and `action_static_keys`.
//! - [`plan_memo`]: the key and value encoding of plans remembered between processes.
//!
//! **Architecture Invariant:** queries are per file (package) wherever possible, so an edit
//! to one manifest re-runs that package's queries and, through backdating, nothing else
//! unless names, kinds or visibility changed. Diagnostics are return values.

pub mod actions;
pub mod affected;
pub mod fixes;
pub mod graph;
pub mod interpreters;
pub mod kinds;
pub mod manifests;
pub mod plan_memo;
pub mod resolve;
pub mod script;
pub mod settings;
pub mod validate;

pub mod text;

pub use actions::{
    ACTION_KEY_FORMAT, PlanKey, SourceInput, TargetPlan, action_static_keys, is_build_output,
    source_input, target_actions,
};
pub use affected::{
    AffectedTest, ChangedPaths, Owner, Ownership, TestTarget, affected_tests, in_some_package,
    normalize_changed_path, owners, package_inputs, target_inputs, test_targets,
};
pub use graph::{
    DependencyGraph, GraphNode, PackageNode, cycle_candidate_packages, dependency_cycles,
    dependency_graph, package_dependencies, package_has_internal_cycle, package_nodes,
    reverse_deps, target_count,
};
pub use interpreters::{PackageInterpreters, interpreter_diagnostics};
pub use kinds::{
    KindCatalog, KindOwner, KindOwners, ModuleFiles, ModuleKinds, evaluate_module_source,
    kind_catalog, kind_owners, module_diagnostics, module_files, module_kinds, module_limits,
    module_path_problem, prelude_catalog,
};
pub use manifests::{
    Configurable, DepList, Manifest, ModulesDecl, Spanned, TargetDecl, WorkspaceDecl, attr_value,
    manifest, parse_manifest, read_manifest_text,
};
pub use resolve::{
    ResolvedDep, ResolvedPackage, ResolvedTarget, SourcePattern, SourceSelection, TargetSummary,
    Visibility, resolve_manifest, resolved_targets, target_summaries,
};
pub use settings::{
    Configuration, WorkspaceSettings, package_by_path, workspace_packages, workspace_settings,
};
pub use validate::{
    MAX_DIAGNOSTICS_PER_CODE, cap_diagnostics, diagnostics_of_file, file_diagnostics,
    workspace_diagnostics, workspace_diagnostics_by_file,
};
