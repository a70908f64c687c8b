//! The API boundary front ends call: [`AnalysisHost`] owns the database and applies
//! changes; [`Analysis`] is a cheap snapshot that answers questions in plain data.
//!
//! **API Boundary:** every answer is plain data from `once_model` or this crate, never a
//! salsa or Starlark type; every method returns [`Cancellable`], so a pending write (an
//! edit arriving in a long-running server) interrupts a stale computation instead of
//! blocking behind it.

mod answers;
pub mod edit;
mod format;
pub mod ide;
pub mod init;
pub mod kind_search;
pub mod modules;
mod plans;
mod prime;
pub mod script_plan;
pub mod scripts;

use std::path::PathBuf;
use std::sync::Arc;

use once_db::{RootDatabase, Workspace, apply_changes, line_index};
use once_graph::{
    kind_catalog, manifest, resolved_targets, test_targets, workspace_diagnostics,
    workspace_packages, workspace_settings,
};
use once_model::{Diagnostic, KindSchema, LineColRange};

pub use answers::*;
pub use edit::{EditOperation, EditOutcome, EditRequest, MaterializePlan};
pub use ide::{
    CodeAction, CompletionItem, CompletionKind, FileRange, HoverInfo, TargetSymbol, TextEdit,
    format_manifest,
};
pub use kind_search::search_kinds;
pub use modules::{ContractEntry, ModuleContract, ModuleValidation, module_contract};
pub use once_db::LineIndex;
pub use once_db::{
    ChangeEvent, ColumnUnit, EntryKind, ExecutionLog, FileStamp, HostPlatform, MemorySystem,
    OsSystem, StampedRead, System, Walked, find_workspace_root, is_excluded_from_walk,
};
pub use once_db::{FileWrite, WriteError, WriteLock};
pub use once_graph::kinds::prelude_catalog;
pub use once_graph::{AffectedTest, SourceInput, TestTarget, is_build_output};
pub use once_model::LineCol;
pub use plans::{ActionPlan, PlannedAction, PlannedCapability};
pub use prime::default_prime_threads;
pub use script_plan::{CommandRequest, ScriptPlan, ScriptPlanError, ScriptRequest};
pub use scripts::ScriptValidation;

/// The names closest to `word` (for "did you mean" messages), best first.
pub fn closest_names<'a>(word: &str, names: impl IntoIterator<Item = &'a str>) -> Vec<String> {
    once_graph::text::closest(word, names, 3)
}

/// The target ids closest to `asked` (for "did you mean" messages), best first: the id
/// `asked` spells in another form (a Bazel label `//pkg:Name`, `pkg:Name`, `./Name`),
/// then [`closest_names`], where a bare name ranks the ids ending in it first
/// (`Name` → `pkg/Name`). Every front end's target lookup suggests these.
pub fn closest_targets(asked: &str, ids: &[String]) -> Vec<String> {
    let asked = asked.trim();
    let respelled = match once_model::resolve_reference("", asked) {
        Ok(label) => Some(label.id()),
        Err(error) => error
            .suggestion()
            .map(str::to_owned)
            .or_else(|| asked.contains(':').then(|| asked.replace(':', "/"))),
    };
    let mut suggestions: Vec<String> = respelled
        .filter(|id| id != asked && ids.contains(id))
        .into_iter()
        .collect();
    for id in closest_names(asked, ids.iter().map(String::as_str)) {
        if !suggestions.contains(&id) {
            suggestions.push(id);
        }
    }
    suggestions.truncate(3);
    suggestions
}

/// The answer of a query, or `Cancelled` when an edit arrived meanwhile.
pub type Cancellable<T> = Result<T, salsa::Cancelled>;

/// Owns the database. Changes go in here; snapshots come out.
pub struct AnalysisHost {
    db: RootDatabase,
    workspace: Workspace,
}

impl AnalysisHost {
    /// Loads the workspace at `root` (absolute) through `system`.
    pub fn load(system: Arc<dyn System>, root: PathBuf) -> AnalysisHost {
        let mut db = RootDatabase::new(system);
        let workspace = db.load(root);
        AnalysisHost { db, workspace }
    }

    /// Like [`AnalysisHost::load`], from a walk of `root` that already happened.
    pub fn load_walked(system: Arc<dyn System>, root: PathBuf, walked: &Walked) -> AnalysisHost {
        let mut db = RootDatabase::new(system);
        let workspace = db.load_walked(root, walked);
        AnalysisHost { db, workspace }
    }

    /// Like [`AnalysisHost::load`], logging every query execution (for tests).
    pub fn load_with_execution_log(
        system: Arc<dyn System>,
        root: PathBuf,
    ) -> (AnalysisHost, ExecutionLog) {
        let (mut db, log) = RootDatabase::with_execution_log(system);
        let workspace = db.load(root);
        (AnalysisHost { db, workspace }, log)
    }

    /// Lends planning a memo kept between processes (see [`once_db::PlanMemo`]): a
    /// one-shot command sets it before asking for plans.
    pub fn set_plan_memo(&mut self, memo: Arc<dyn once_db::PlanMemo>) {
        self.db.set_plan_memo(memo);
    }

    pub fn apply_changes(&mut self, changes: &[ChangeEvent]) {
        apply_changes(&mut self.db, changes);
    }

    /// Takes the workspace's write lock; hold it from reading what a write is based on
    /// until the write is done.
    fn lock_writes(&self) -> Result<WriteLock, String> {
        let root = self.workspace.root(&self.db);
        self.db
            .system_arc()
            .lock_writes(root)
            .map_err(|e| format!("cannot lock the workspace for writing: {e}"))
    }

    /// Writes planned files through the `System` (each atomically and confined to the
    /// workspace, every path read before the first write, under the workspace's write
    /// lock) and applies the changes at once, so the next snapshot sees them. Returns the
    /// written workspace-relative paths.
    pub fn write_files(&mut self, writes: &[FileWrite]) -> Result<Vec<String>, WriteError> {
        let lock = self.lock_writes().map_err(|message| WriteError {
            written: Vec::new(),
            message,
        })?;
        self.write_files_locked(&lock, writes)
    }

    fn write_files_locked(
        &mut self,
        lock: &WriteLock,
        writes: &[FileWrite],
    ) -> Result<Vec<String>, WriteError> {
        let root = self.workspace.root(&self.db).clone();
        let system = self.db.system_arc();
        let events = once_db::write_files(&*system, lock, &root, writes)?;
        self.apply_changes(&events);
        Ok(writes.iter().map(|w| w.path.clone()).collect())
    }

    /// Plans a batch of edits and, when every operation passed and the text changed,
    /// writes the manifest. The write lock is held from reading the manifest until it is
    /// written, so concurrent writers (other servers, `once edit apply`) never lose each
    /// other's edits. The next snapshot sees the change.
    pub fn apply_edit(&mut self, request: &EditRequest) -> Result<EditOutcome, String> {
        let lock = self.lock_writes()?;
        let outcome = self
            .analysis()
            .plan_edit(request)
            .map_err(|_| "the edit was cancelled".to_owned())??;
        if let EditOutcome::Applied {
            write: Some(write), ..
        } = &outcome
        {
            self.write_files_locked(&lock, std::slice::from_ref(write))
                .map_err(|e| e.to_string())?;
        }
        Ok(outcome)
    }

    /// Plans `once init` from `facts` and writes every changed manifest of an accepted
    /// batch (under the write lock, like [`AnalysisHost::apply_edit`]: each file
    /// atomically, confined to the workspace). Returns the plan; the next snapshot sees
    /// the written manifests.
    pub fn apply_init(&mut self, facts: &init::EcosystemFacts) -> Result<init::InitPlan, String> {
        let lock = self.lock_writes()?;
        let plan = self
            .analysis()
            .plan_init(facts)
            .map_err(|_| "`once init` was cancelled".to_owned())??;
        let writes = plan.writes();
        if !writes.is_empty() {
            self.write_files_locked(&lock, &writes)
                .map_err(|e| e.to_string())?;
        }
        Ok(plan)
    }

    /// Plans a starter under `destination` and, without conflicts, writes its files (under
    /// the write lock, like [`AnalysisHost::apply_edit`]) and validates the workspace
    /// afterwards.
    pub fn materialize_example(
        &mut self,
        kind: &str,
        slug: &str,
        destination: &str,
    ) -> Result<Materialized, String> {
        let cancelled = |_| "materializing was cancelled".to_owned();
        let lock = self.lock_writes()?;
        let plan = self
            .analysis()
            .plan_materialize(kind, slug, destination)
            .map_err(cancelled)??;
        if !plan.conflicts.is_empty() {
            return Ok(Materialized {
                plan,
                targets: Vec::new(),
                validation: None,
            });
        }
        self.write_files_locked(&lock, &plan.writes)
            .map_err(|e| format!("materializing `{kind}`/`{slug}` failed: {e}"))?;
        drop(lock);
        let analysis = self.analysis();
        let targets = analysis
            .targets(None)
            .map_err(cancelled)?
            .into_iter()
            .filter(|t| plan.packages.contains(&t.package))
            .collect();
        let validation = analysis.validate_workspace().map_err(cancelled)?;
        Ok(Materialized {
            plan,
            targets,
            validation: Some(validation),
        })
    }

    /// Applies the preferred fix of every diagnostic of the workspace and writes the
    /// changed files (confined to the workspace, under its write lock, read and written
    /// while the lock is held). A fix whose edits overlap an edit already chosen for the
    /// same file waits for the next round; rounds repeat, at most [`MAX_FIX_ROUNDS`], while
    /// they fix something, since a fix can uncover a problem that was hidden (an attribute
    /// is only checked once its target's kind is known). The next snapshot sees the
    /// change.
    pub fn apply_preferred_fixes(&mut self) -> Result<Vec<AppliedFix>, String> {
        let lock = self.lock_writes()?;
        let mut fixed = Vec::new();
        for _ in 0..MAX_FIX_ROUNDS {
            let plan = self
                .analysis()
                .with_db(plan_preferred_fixes)
                .map_err(|_| "the fixes were cancelled".to_owned())?;
            if plan.is_empty() {
                break;
            }
            let writes: Vec<FileWrite> = plan
                .iter()
                .map(|(path, text, _)| FileWrite {
                    path: path.clone(),
                    contents: text.clone().into_bytes(),
                })
                .collect();
            self.write_files_locked(&lock, &writes)
                .map_err(|e| e.to_string())?;
            fixed.extend(plan.into_iter().flat_map(|(_, _, applied)| applied));
        }
        Ok(fixed)
    }

    /// A snapshot for answering questions, possibly on another thread.
    pub fn analysis(&self) -> Analysis {
        Analysis {
            db: self.db.clone(),
            workspace: self.workspace,
        }
    }

    /// What the database's memos and inputs hold, per query and per input or tracked
    /// struct, largest first (the workspace server's `once server status`). Waits for
    /// every snapshot to be dropped, as a change does.
    pub fn memory_usage(&mut self) -> Vec<QueryMemory> {
        let info = <dyn salsa::Database>::memory_usage(&mut self.db);
        let bytes = |info: &salsa::IngredientInfo| {
            info.size_of_fields()
                + info.size_of_metadata()
                + info.heap_size_of_fields().unwrap_or(0)
        };
        let mut usage: Vec<QueryMemory> = info
            .queries
            .iter()
            .map(|(name, info)| QueryMemory {
                name: (*name).to_owned(),
                count: info.count(),
                bytes: bytes(info),
                heap_measured: info.heap_size_of_fields().is_some(),
            })
            .chain(info.structs.iter().map(|info| QueryMemory {
                name: info.debug_name().to_owned(),
                count: info.count(),
                bytes: bytes(info),
                heap_measured: info.heap_size_of_fields().is_some(),
            }))
            .filter(|usage| usage.count > 0)
            .collect();
        usage.sort_by(|a, b| b.bytes.cmp(&a.bytes).then_with(|| a.name.cmp(&b.name)));
        usage
    }
}

/// The memory one query's memos (or one input's or struct's values) take.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryMemory {
    pub name: String,
    pub count: usize,
    /// Their size: inline fields and salsa's metadata, plus what their values own on the
    /// heap when the query measures it ([`QueryMemory::heap_measured`]).
    pub bytes: usize,
    pub heap_measured: bool,
}

/// [`Analysis::action_plans`] starts a planning thread per this many ids (up to the
/// cores and [`MAX_PLANNING_THREADS`]): fewer are planned faster than threads start.
const PLANS_PER_THREAD: usize = 256;

/// The most threads [`Analysis::action_plans`] plans on.
const MAX_PLANNING_THREADS: usize = 8;

/// How many times [`AnalysisHost::apply_preferred_fixes`] re-validates and fixes again.
pub const MAX_FIX_ROUNDS: usize = 8;

/// One fix [`AnalysisHost::apply_preferred_fixes`] wrote.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AppliedFix {
    /// Workspace-relative path of the changed file.
    pub file: String,
    /// Where the fixed diagnostic pointed, in the text its round fixed.
    pub range: Option<LineColRange>,
    pub code: once_model::DiagnosticCode,
    pub title: String,
}

/// Per file with a preferred fix: its path, its fixed text, and the fixes applied.
fn plan_preferred_fixes(
    db: &RootDatabase,
    workspace: Workspace,
) -> Vec<(String, String, Vec<AppliedFix>)> {
    let mut plan = Vec::new();
    for (path, group) in once_graph::workspace_diagnostics_by_file(db, workspace) {
        let Some(file) = db.file(path) else { continue };
        let source = once_db::source_text(db, file);
        if source.read_error.is_some() {
            continue;
        }
        let index = line_index(db, file);
        let mut chosen: Vec<&once_model::FixEdit> = Vec::new();
        let mut applied = Vec::new();
        for diagnostic in group.iter() {
            let Some(fix) = diagnostic.preferred_fix() else {
                continue;
            };
            let fits = fix.edits.iter().all(|edit| {
                (edit.range.end as usize) <= source.text.len()
                    && source.text.is_char_boundary(edit.range.start as usize)
                    && source.text.is_char_boundary(edit.range.end as usize)
                    && !chosen.iter().any(|c| overlaps(c.range, edit.range))
            });
            if !fits {
                continue;
            }
            chosen.extend(&fix.edits);
            applied.push(AppliedFix {
                file: path.clone(),
                range: diagnostic.range.map(|r| index.range(r)),
                code: diagnostic.code,
                title: fix.title.clone(),
            });
        }
        if chosen.is_empty() {
            continue;
        }
        chosen.sort_by_key(|edit| std::cmp::Reverse((edit.range.start, edit.range.end)));
        let mut text = source.text.to_string();
        for edit in chosen {
            text.replace_range(
                edit.range.start as usize..edit.range.end as usize,
                &edit.new_text,
            );
        }
        plan.push((path.clone(), text, applied));
    }
    plan
}

/// Whether two edits touch the same text (two insertions at one offset do too, since
/// their order would be arbitrary).
fn overlaps(a: once_model::TextRange, b: once_model::TextRange) -> bool {
    (a.start < b.end && b.start < a.end) || a.start == b.start
}

/// The outcome of [`AnalysisHost::materialize_example`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Materialized {
    pub plan: MaterializePlan,
    /// Targets of the packages the starter's manifests define (after the write).
    pub targets: Vec<TargetSummaryInfo>,
    /// The workspace validation after the write; `None` when conflicts stopped it.
    pub validation: Option<Validation>,
}

/// A lookup that found nothing: what was asked and what is close. When nothing is close,
/// `listing` names what lists the candidates, and each front end adds its own way to list
/// them ([`NotFound::with_hint`]); `Display` is the front-end-neutral message.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NotFound {
    pub message: String,
    pub listing: Option<Listing>,
}

/// What lists the candidates of a failed lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Listing {
    Targets,
    TargetKinds,
}

impl NotFound {
    /// What was not found, with the closest candidates (best first; none: `listing`
    /// names what lists them).
    fn new(what: String, suggestions: &[String], listing: Listing) -> NotFound {
        let quoted: Vec<String> = suggestions.iter().map(|s| format!("`{s}`")).collect();
        match quoted.as_slice() {
            [] => NotFound {
                message: what,
                listing: Some(listing),
            },
            _ => NotFound {
                message: format!("{what}; did you mean {}?", quoted.join(" or ")),
                listing: None,
            },
        }
    }

    /// The message with a front end's way to list the candidates (`hint` of the listing,
    /// such as "`once query targets` lists them"), when there is no closer suggestion.
    pub fn with_hint(&self, hint: impl Fn(Listing) -> &'static str) -> String {
        match self.listing {
            Some(listing) => format!("{}; {}", self.message, hint(listing)),
            None => self.message.clone(),
        }
    }
}

impl std::fmt::Display for NotFound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for NotFound {}

/// Cancels the running query of one [`Analysis`] snapshot.
#[derive(Clone, Debug)]
pub struct CancelHandle(salsa::CancellationToken);

impl CancelHandle {
    pub fn cancel(&self) {
        self.0.cancel();
    }
}

/// A read-only snapshot of the database.
#[derive(Clone)]
pub struct Analysis {
    db: RootDatabase,
    workspace: Workspace,
}

impl Analysis {
    fn with_db<T>(
        &self,
        f: impl FnOnce(&RootDatabase, Workspace) -> T + std::panic::UnwindSafe,
    ) -> Cancellable<T> {
        let db = &self.db;
        let workspace = self.workspace;
        salsa::Cancelled::catch(std::panic::AssertUnwindSafe(|| f(db, workspace)))
    }

    /// The SHA-256 (lower-case hex) of a workspace file's bytes, or why it has none (no
    /// such file, not a regular file, unreadable). `path` is workspace-relative or
    /// absolute inside the root.
    pub fn file_digest(&self, path: &str) -> Cancellable<Result<String, String>> {
        let path = path.to_owned();
        self.with_db(move |db, ws| answers::file_digest(db, ws, &path))
    }

    /// The files a target reads (its manifest and the package files its `srcs` and
    /// path-typed attributes match) with their digests, and one digest over them all;
    /// `None` when the target does not exist.
    pub fn target_inputs(&self, id: &str) -> Cancellable<Option<TargetInputs>> {
        let id = id.to_owned();
        self.with_db(move |db, ws| answers::target_inputs(db, ws, &id))
    }

    /// The actions `capability` of the target `id` plans, after the `build` plans of its
    /// dependency closure, each with its static key; `None` when no target has the id.
    pub fn action_plan(&self, id: &str, capability: &str) -> Cancellable<Option<ActionPlan>> {
        let (id, capability) = (id.to_owned(), capability.to_owned());
        self.with_db(move |db, ws| plans::action_plan(db, ws, &id, &capability))
    }

    /// The plans of `ids` for `capability`, in order, each without the steps an earlier
    /// one of them holds (except its own: `capability` of its target), for a caller that
    /// merges them keeping the first of each action; `None` for an id no target has.
    ///
    /// Many ids are planned on several threads (each on its own snapshot of this one, a
    /// contiguous slice of `ids` each, so the targets of one package mostly share steps
    /// within a slice): a slice leaves out only the steps of its own earlier plans, which
    /// are earlier in `ids` too, so merging the answer in order gives the same result.
    /// Cancelling this snapshot ([`Analysis::cancel_handle`]) cancels every thread before
    /// its next target.
    pub fn action_plans(
        &self,
        ids: &[String],
        capability: &str,
    ) -> Cancellable<Vec<Option<ActionPlan>>> {
        // A few ids (every small workspace) never ask the machine's parallelism.
        let threads = if ids.len() < 2 * PLANS_PER_THREAD {
            1
        } else {
            once_db::system::machine_parallelism()
                .min(ids.len() / PLANS_PER_THREAD)
                .min(MAX_PLANNING_THREADS)
        };
        if threads <= 1 {
            return self.with_db(|db, ws| plans::action_plans(db, ws, ids, capability, &|| {}));
        }
        let own = self.cancel_handle();
        std::thread::scope(|scope| {
            let workers: Vec<_> = ids
                .chunks(ids.len().div_ceil(threads))
                .map(|slice| {
                    let snapshot = self.clone();
                    let own = &own;
                    scope.spawn(move || {
                        let cancel = snapshot.cancel_handle();
                        // A cancellation of this snapshot cancels the worker's before its
                        // next target; its next query then unwinds.
                        let pass_on = || {
                            if own.0.is_cancelled() {
                                cancel.cancel();
                            }
                        };
                        snapshot.with_db(|db, ws| {
                            plans::action_plans(db, ws, slice, capability, &pass_on)
                        })
                    })
                })
                .collect();
            let mut plans = Vec::with_capacity(ids.len());
            for worker in workers {
                let planned = worker
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?;
                plans.extend(planned);
            }
            Ok(plans)
        })
    }

    /// One digest of everything planning reads but the digests of the files actions
    /// read (see [`once_graph::plan_memo::plan_inputs_digest`]): equal digests and equal
    /// [`Analysis::source_inputs`] keys plan alike. `None` when a module names `debug`.
    pub fn plan_inputs_digest(&self) -> Cancellable<Option<once_db::Sha256Digest>> {
        self.with_db(|db, ws| *once_graph::plan_memo::plan_inputs_digest(db, ws))
    }

    /// What an action's static key holds of each workspace file `paths` name (its digest
    /// and permission bits) and the stamp it was read with (see
    /// [`once_graph::source_input`]), on two threads when there are many.
    pub fn source_inputs(&self, paths: &[String]) -> Cancellable<Vec<SourceInput>> {
        let digests = |analysis: &Analysis, paths: &[String]| {
            analysis.with_db(|db, _| {
                paths
                    .iter()
                    .map(|path| once_graph::source_input(db, path))
                    .collect::<Vec<_>>()
            })
        };
        if paths.len() < 2 * PLANS_PER_THREAD || once_db::system::machine_parallelism() < 2 {
            return digests(self, paths);
        }
        let (first, second) = paths.split_at(paths.len() / 2);
        std::thread::scope(|scope| {
            let snapshot = self.clone();
            let other = scope.spawn(move || digests(&snapshot, second));
            let mut answer = digests(self, first)?;
            answer.extend(
                other
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))?,
            );
            Ok(answer)
        })
    }

    /// Computes the workspace's dependency graph now (planning starts from it): a caller
    /// priming the packages on other threads does it beside them, joining their nodes as
    /// they come instead of all of them after.
    pub fn prime_dependency_graph(&self) -> Cancellable<()> {
        self.with_db(|db, ws| {
            once_graph::dependency_graph(db, ws);
        })
    }

    /// Reads the persistent digest index ahead of the first digest (see
    /// [`once_db::RootDatabase::prepare_digest_index`]): a caller with a core to spare
    /// does it while other work goes on.
    pub fn prepare_digest_index(&self) {
        self.db.prepare_digest_index();
    }

    /// The warning to show when the digest index `.once/digests` this process read was
    /// damaged (it was ignored; the next save rewrites it).
    pub fn digest_index_damage(&self) -> Option<String> {
        self.db.digest_index_damage()
    }

    /// Saves the digests this process computed to `.once/digests` (see
    /// [`once_db::digests`]); `Ok(false)` when there was nothing new.
    pub fn save_digest_index(&self) -> std::io::Result<bool> {
        self.db.save_digest_index()
    }

    /// How many bytes this process hashed (files whose digest came from the persistent
    /// index are not hashed).
    pub fn bytes_hashed(&self) -> u64 {
        self.db.bytes_hashed()
    }

    /// A handle that cancels the query this snapshot is running, from another thread;
    /// the cancelled method returns `Err(Cancelled)`.
    pub fn cancel_handle(&self) -> CancelHandle {
        CancelHandle(salsa::Database::cancellation_token(&self.db))
    }

    /// The absolute workspace root.
    pub fn root(&self) -> PathBuf {
        self.workspace.root(&self.db).clone()
    }

    /// Root, configuration, packages and counts.
    pub fn workspace_info(&self) -> Cancellable<WorkspaceInfo> {
        self.with_db(answers::workspace_info)
    }

    /// Every target, optionally only those of one kind, sorted by id.
    pub fn targets(&self, kind: Option<&str>) -> Cancellable<Vec<TargetSummaryInfo>> {
        let kind = kind.map(str::to_owned);
        self.with_db(move |db, ws| answers::targets(db, ws, kind.as_deref()))
    }

    /// The resolved view of one target by canonical id.
    pub fn target(&self, id: &str) -> Cancellable<Option<TargetDetails>> {
        let id = id.to_owned();
        self.with_db(move |db, ws| answers::target(db, ws, &id))
    }

    /// Every kind of the catalog, sorted by name.
    pub fn kinds(&self) -> Cancellable<Vec<KindSchema>> {
        self.with_db(|db, ws| {
            kind_catalog(db, ws)
                .kinds
                .iter()
                .map(|kind| KindSchema::clone(kind))
                .collect()
        })
    }

    /// The resolved view of one target, or an error naming the closest ids.
    pub fn lookup_target(&self, id: &str) -> Cancellable<Result<TargetDetails, NotFound>> {
        let id = id.to_owned();
        self.with_db(move |db, ws| match answers::target(db, ws, &id) {
            Some(target) => Ok(target),
            None => {
                let ids: Vec<String> = answers::targets(db, ws, None)
                    .into_iter()
                    .map(|t| t.id)
                    .collect();
                Err(NotFound::new(
                    format!("no target `{id}` in the workspace"),
                    &closest_targets(&id, &ids),
                    Listing::Targets,
                ))
            }
        })
    }

    /// A kind by name, or an error naming the closest kinds.
    pub fn lookup_kind(&self, name: &str) -> Cancellable<Result<KindSchema, NotFound>> {
        let name = name.to_owned();
        self.with_db(move |db, ws| {
            let catalog = kind_catalog(db, ws);
            match catalog.get(&name) {
                Some(kind) => Ok(kind.clone()),
                None => {
                    let names: Vec<String> = catalog.names().map(str::to_owned).collect();
                    Err(NotFound::new(
                        format!("no target kind `{name}`"),
                        &closest_names(&name, names.iter().map(String::as_str)),
                        Listing::TargetKinds,
                    ))
                }
            }
        })
    }

    /// An example of a kind by slug, or an error listing the kind's examples.
    pub fn lookup_example(
        &self,
        kind: &str,
        slug: &str,
    ) -> Cancellable<Result<once_model::Example, NotFound>> {
        Ok(match self.lookup_kind(kind)? {
            Err(not_found) => Err(not_found),
            Ok(schema) => match schema.example(slug) {
                Some(example) => Ok(example.clone()),
                None => {
                    let slugs: Vec<String> =
                        schema.examples.iter().map(|e| e.slug.clone()).collect();
                    Err(NotFound {
                        message: format!(
                            "kind `{kind}` has no example `{slug}`; its examples are: {}",
                            slugs.join(", ")
                        ),
                        listing: None,
                    })
                }
            },
        })
    }

    pub fn kind(&self, name: &str) -> Cancellable<Option<KindSchema>> {
        let name = name.to_owned();
        self.with_db(move |db, ws| kind_catalog(db, ws).get(&name).cloned())
    }

    /// Kinds matching a discovery query, best first.
    pub fn search_kinds(&self, query: &str) -> Cancellable<Vec<KindSchema>> {
        let query = query.to_owned();
        self.with_db(move |db, ws| {
            search_kinds(&kind_catalog(db, ws).kinds, &query)
                .into_iter()
                .cloned()
                .collect()
        })
    }

    /// Every diagnostic of the workspace.
    pub fn validate_workspace(&self) -> Cancellable<Validation> {
        self.with_db(|db, ws| {
            let diagnostics = workspace_diagnostics(db, ws)
                .iter()
                .map(|d| locate(db, d))
                .collect::<Vec<_>>();
            Validation {
                valid: !diagnostics.iter().any(|d| d.diagnostic.is_error()),
                target_count: *once_graph::target_count(db, ws),
                diagnostics,
            }
        })
    }

    /// Checks one proposed target table locally: name, kind, attributes, label syntax.
    /// No other manifest is read and dependencies are not resolved.
    pub fn validate_target(&self, target: &ProposedTarget) -> Cancellable<Validation> {
        let target = target.clone();
        self.with_db(move |db, ws| answers::validate_target(db, ws, &target))
    }

    /// Plans a batch of target edits on one manifest: every operation is applied to the
    /// text and checked before anything would be written. `Err` refuses the request (a
    /// package outside the workspace, an unreadable manifest).
    pub fn plan_edit(&self, request: &EditRequest) -> Cancellable<Result<EditOutcome, String>> {
        let request = request.clone();
        self.with_db(move |db, ws| edit::plan_edit(db, ws, &request))
    }

    /// Plans `once init`: one batch of edit operations per package that brings its
    /// manifest in step with the ecosystem files `facts` describe. Nothing is written.
    pub fn plan_init(
        &self,
        facts: &init::EcosystemFacts,
    ) -> Cancellable<Result<init::InitPlan, String>> {
        let facts = facts.clone();
        self.with_db(move |db, ws| init::plan_init(db, ws, &facts))
    }

    /// Plans writing a starter's files under `destination`: created, unchanged and
    /// conflicting files. `Err` refuses the request (unknown kind or slug, a destination
    /// outside the workspace).
    pub fn plan_materialize(
        &self,
        kind: &str,
        slug: &str,
        destination: &str,
    ) -> Cancellable<Result<MaterializePlan, String>> {
        let example = match self.lookup_example(kind, slug)? {
            Ok(example) => example,
            Err(not_found) => return Ok(Err(not_found.to_string())),
        };
        let (kind, destination) = (kind.to_owned(), destination.to_owned());
        self.with_db(move |db, ws| edit::plan_materialize(db, ws, &kind, &example, &destination))
    }

    /// Every test target.
    pub fn tests(&self) -> Cancellable<Vec<TestTarget>> {
        self.with_db(|db, ws| test_targets(db, ws).clone())
    }

    /// Tests affected by changed paths (workspace-relative, or absolute inside the
    /// workspace; normalised lexically); none selects every test. Paths outside the
    /// workspace or in no package are warnings.
    pub fn affected_tests(&self, changed_paths: &[String]) -> Cancellable<AffectedTests> {
        let paths = changed_paths.to_vec();
        self.with_db(move |db, ws| answers::affected_tests(db, ws, &paths))
    }

    /// Number of packages after include/exclude, and their paths.
    pub fn packages(&self) -> Cancellable<Vec<String>> {
        self.with_db(|db, ws| {
            workspace_packages(db, ws)
                .iter()
                .map(|p| p.path(db).clone())
                .collect()
        })
    }

    /// The manifest diagnostics and targets of one package, by path (for tests and tools).
    pub fn package_target_names(&self, package: &str) -> Cancellable<Vec<String>> {
        let package = package.to_owned();
        self.with_db(move |db, ws| {
            workspace_packages(db, ws)
                .iter()
                .find(|p| *p.path(db) == package)
                .map(|&p| {
                    resolved_targets(db, p)
                        .targets
                        .iter()
                        .map(|t| t.label.name.clone())
                        .collect()
                })
                .unwrap_or_default()
        })
    }

    /// `[workspace] test_attempts` of the root manifest (a valid value only).
    pub fn workspace_test_attempts(&self) -> Cancellable<Option<u32>> {
        self.with_db(|db, ws| workspace_settings(db, ws).test_attempts)
    }

    /// The root manifest's `[cache]` (the remote cache), as declared.
    pub fn workspace_remote_cache(
        &self,
    ) -> Cancellable<Option<once_model::remote::RemoteCacheDecl>> {
        self.with_db(|db, ws| workspace_settings(db, ws).cache.clone())
    }

    /// The root manifest's `[workspace] sandbox`: `Some(true)` for `"on"`, `Some(false)`
    /// for `"off"`, `None` when it says nothing.
    pub fn workspace_sandbox(&self) -> Cancellable<Option<bool>> {
        self.with_db(|db, ws| workspace_settings(db, ws).sandbox)
    }

    /// The configuration tokens `select` resolves against.
    pub fn configuration_tokens(&self) -> Cancellable<Vec<String>> {
        self.with_db(|db, ws| workspace_settings(db, ws).configuration.tokens.clone())
    }

    /// Whether the package's manifest declares `[workspace]` (used by root discovery).
    pub fn has_workspace_table(&self) -> Cancellable<bool> {
        self.with_db(|db, ws| {
            once_graph::settings::root_package(db, ws)
                .is_some_and(|p| manifest(db, p).workspace.is_some())
        })
    }
}

/// Attaches the 1-based line/column range to a diagnostic.
/// The diagnostics of one file with their line/column ranges. Re-runs only when the
/// file's diagnostics or its text changed, so an edit re-locates only what it touched.
#[salsa::tracked(returns(ref))]
pub(crate) fn located_diagnostics_of_file(
    db: &dyn once_db::Db,
    file: once_db::File,
) -> Box<[LocatedDiagnostic]> {
    let diagnostics = once_graph::diagnostics_of_file(db, file);
    if diagnostics.is_empty() {
        return Box::new([]);
    }
    let index = line_index(db, file);
    diagnostics
        .iter()
        .map(|d| LocatedDiagnostic::new(d.clone(), Some(index)))
        .collect()
}

fn located_diagnostics_by_file(
    db: &RootDatabase,
    workspace: Workspace,
) -> std::collections::BTreeMap<String, Vec<LocatedDiagnostic>> {
    once_graph::workspace_diagnostics_by_file(db, workspace)
        .iter()
        .map(|(path, group)| {
            let located = match db.file(path) {
                Some(file) => located_diagnostics_of_file(db, file).to_vec(),
                None => group.iter().map(|d| locate(db, d)).collect(),
            };
            (path.clone(), located)
        })
        .collect()
}

fn locate(db: &RootDatabase, diagnostic: &Diagnostic) -> LocatedDiagnostic {
    let file = diagnostic.file.as_deref().and_then(|file| db.file(file));
    LocatedDiagnostic::new(diagnostic.clone(), file.map(|f| line_index(db, f)))
}

/// A diagnostic with its 1-based line/column range.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedDiagnostic {
    pub diagnostic: Diagnostic,
    pub range: Option<LineColRange>,
    /// The diagnostic's fixes with line/column ranges (empty when it is not located).
    pub fixes: Vec<LocatedFix>,
}

/// A [`once_model::Fix`] with its edits' line/column ranges in the diagnostic's file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LocatedFix {
    pub title: String,
    pub preferred: bool,
    pub edits: Vec<TextEdit>,
}

impl LocatedDiagnostic {
    /// Locates the range and fixes of `diagnostic` with the line index of its file.
    pub fn new(diagnostic: Diagnostic, index: Option<&LineIndex>) -> LocatedDiagnostic {
        let Some(index) = index else {
            return LocatedDiagnostic {
                diagnostic,
                range: None,
                fixes: Vec::new(),
            };
        };
        let fixes = diagnostic
            .fixes
            .iter()
            .map(|fix| LocatedFix {
                title: fix.title.clone(),
                preferred: fix.preferred,
                edits: fix
                    .edits
                    .iter()
                    .map(|edit| TextEdit {
                        range: index.range(edit.range),
                        new_text: edit.new_text.clone(),
                    })
                    .collect(),
            })
            .collect();
        LocatedDiagnostic {
            range: diagnostic.range.map(|range| index.range(range)),
            diagnostic,
            fixes,
        }
    }

    /// A diagnostic about text that is not a workspace file (a proposed target, a
    /// planned edit): no range, and no fixes, whose byte ranges would point nowhere.
    pub fn unlocated(mut diagnostic: Diagnostic) -> LocatedDiagnostic {
        diagnostic.range = None;
        diagnostic.fixes.clear();
        LocatedDiagnostic {
            diagnostic,
            range: None,
            fixes: Vec::new(),
        }
    }
}
