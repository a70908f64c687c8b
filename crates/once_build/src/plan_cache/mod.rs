//! The plan cache, in one module: where plans come from, through one call, [`plan`],
//! with two sources.
//!
//! - [`PlanSource::Cold`]: a one-shot command (`once build`, `run`, `test`, `runtime
//!   start`). The plan the same request made last time is reused while nothing it was
//!   planned from changed ([`last_plan`]): then no manifest is parsed and
//!   nothing planned. Otherwise the workspace is loaded with the store's plan memo lent
//!   to the database (plans an earlier process made from the same inputs come from it,
//!   without starting Starlark), the request is planned and remembered, the memo and the
//!   digest index saved. The database is gone on return.
//! - [`PlanSource::Warm`]: a snapshot of a host that stays (the MCP server, the
//!   workspace server): planned from what the database holds; only the digest index is
//!   saved.
//!
//! A request is a capability of target patterns, or a test selection
//! ([`TestRequest`]): one rule for every front end.
//!
//! Its parts:
//! - [`last_plan`]: when a remembered plan of a request counts, and what it keeps;
//! - [`last_plan_file`]: its bytes in the store, one file per workspace and request;
//! - [`memo`]: the plan memo of one-shot commands (each target's plan by a key over
//!   everything its kind's implementation observes), in the store's `plans` file.
//!
//! The memo's key and value encoding belong to planning (`once_graph::plan_memo`, the
//! one place that knows what an implementation can observe); the keyed-entries body and
//! the program salt the files share are the store's (`once_exec::store::keyed`); the
//! encoding is `once_model::codec`'s.

pub mod last_plan;
pub mod last_plan_file;
pub mod memo;

use std::path::Path;
use std::sync::Arc;

use once_analysis::{Analysis, AnalysisHost, Cancellable, Listing, OsSystem};
use once_exec::Store;

use self::memo::PlanMemoFile;

use crate::Plan;
use crate::testing::{Request, Selection};

/// How a front end lists the candidates of a name that matched nothing (see
/// `once_analysis::NotFound::with_hint`).
pub type ListingHint = fn(Listing) -> &'static str;

/// Where a plan is made.
pub enum PlanSource<'a> {
    /// A one-shot command's: the workspace at `root` is loaded for it (unless the last
    /// plan holds), with the store's persisted caches.
    Cold {
        root: &'a Path,
        store: &'a Store,
        /// Threads resolving every package when a pattern names every target below one.
        threads: usize,
        /// The process exits once the plan ran (`once build`, `once test`): the database
        /// is left to the exit instead of freed ([`leave_to_exit`]).
        ends_with_process: bool,
    },
    /// A warm host's snapshot.
    Warm(&'a Analysis),
}

/// Which tests to run, as every front end asks: named targets (`ID`, `PKG/...`; each
/// once, in order) win; else the targets the changed paths affect; else the tests of
/// `directory`'s package and of the packages below it (`once test` in a subdirectory);
/// else every test.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TestRequest {
    pub targets: Vec<String>,
    pub changed_paths: Vec<String>,
    /// Workspace-relative, `/`-separated; `""` (the root) selects every test.
    pub directory: String,
}

impl TestRequest {
    /// The request of a command line or tool call: `target` and `targets` together,
    /// duplicates dropped.
    pub fn new(
        targets: impl IntoIterator<Item = String>,
        changed_paths: Vec<String>,
    ) -> TestRequest {
        let mut unique: Vec<String> = Vec::new();
        for target in targets {
            if !unique.contains(&target) {
                unique.push(target);
            }
        }
        TestRequest {
            targets: unique,
            changed_paths,
            directory: String::new(),
        }
    }

    /// The request made in `directory` (workspace-relative, `/`-separated, `""` for the
    /// root): without targets or changed paths, it selects the tests of the directory's
    /// package and of the packages below the directory.
    pub fn in_directory(self, directory: String) -> TestRequest {
        TestRequest { directory, ..self }
    }

    fn selection_request(&self) -> Request<'_> {
        if !self.targets.is_empty() {
            Request::Targets(&self.targets)
        } else if !self.changed_paths.is_empty() {
            Request::Changed(&self.changed_paths)
        } else if !self.directory.is_empty() {
            Request::Directory(&self.directory)
        } else {
            Request::All
        }
    }

    /// The canonical spelling under which the last plan of this selection is kept.
    fn last_plan_request(&self) -> String {
        match self.selection_request() {
            Request::Targets(targets) => {
                let mut parts = vec!["targets".to_owned()];
                parts.extend(targets.iter().cloned());
                last_plan::request(&parts, "test")
            }
            Request::Changed(paths) => {
                let mut parts = vec!["changed".to_owned()];
                parts.extend(paths.iter().cloned());
                last_plan::request(&parts, "test")
            }
            Request::Directory(directory) => {
                last_plan::request(&["directory".to_owned(), directory.to_owned()], "test")
            }
            Request::All => last_plan::request(&["all".to_owned()], "test"),
        }
    }
}

/// What to plan.
pub enum PlanRequest<'a> {
    /// `capability` of the targets `patterns` name (`crate::resolve_targets`).
    Capability {
        patterns: &'a [String],
        capability: &'a str,
    },
    /// The `test` capability of the tests the request selects.
    Tests(&'a TestRequest),
}

/// A plan, and for tests what was selected and why.
#[derive(Clone, Debug)]
pub struct Planned {
    pub plan: Plan,
    pub selection: Option<Selection>,
}

/// Plans `request` from `source`. An error is a request that names nothing plannable
/// (an unknown target, a pattern without the capability); planning problems (manifest
/// errors, failed implementations, cycles) are the plan's `problems`.
pub fn plan(
    source: PlanSource<'_>,
    request: &PlanRequest<'_>,
    hint: ListingHint,
) -> Cancellable<Result<Planned, String>> {
    match source {
        PlanSource::Warm(analysis) => {
            let planned = plan_from(analysis, request, hint)?;
            let _ = analysis.save_digest_index();
            Ok(planned)
        }
        PlanSource::Cold {
            root,
            store,
            threads,
            ends_with_process,
        } => plan_cold(root, store, threads, ends_with_process, request, hint),
    }
}

/// Plans `request` from `analysis`.
fn plan_from(
    analysis: &Analysis,
    request: &PlanRequest<'_>,
    hint: ListingHint,
) -> Cancellable<Result<Planned, String>> {
    let (ids, capability, selection) = match request {
        PlanRequest::Capability {
            patterns,
            capability,
        } => {
            let ids = match crate::resolve_targets(analysis, patterns, capability, hint)? {
                Ok(ids) => ids,
                Err(message) => return Ok(Err(message)),
            };
            if ids.is_empty() {
                return Ok(Err(format!(
                    "{} names no target with a `{capability}` capability",
                    patterns.join(" ")
                )));
            }
            (ids, *capability, None)
        }
        PlanRequest::Tests(tests) => {
            let selection =
                match crate::testing::select(analysis, &tests.selection_request(), hint)? {
                    Ok(selection) => selection,
                    Err(message) => return Ok(Err(message)),
                };
            let ids = selection.tests.iter().map(|t| t.id.clone()).collect();
            (ids, "test", Some(selection))
        }
    };
    Ok(crate::plan(analysis, &ids, capability)?.map(|plan| Planned { plan, selection }))
}

/// The canonical spelling of a request, for its last plan.
fn last_plan_request(request: &PlanRequest<'_>) -> String {
    match request {
        PlanRequest::Capability {
            patterns,
            capability,
        } => last_plan::request(patterns, capability),
        PlanRequest::Tests(tests) => tests.last_plan_request(),
    }
}

/// A plan memo with more entries than this is a large workspace's (about 1,000 targets).
const LARGE_MEMO_ENTRIES: usize = 1000;

fn plan_cold(
    root: &Path,
    store: &Store,
    threads: usize,
    ends_with_process: bool,
    request: &PlanRequest<'_>,
    hint: ListingHint,
) -> Cancellable<Result<Planned, String>> {
    let spelled = last_plan_request(request);
    // The last plan is read while the workspace is walked; without one (a first build,
    // or after `once cache clean`) the plan memo is read then too, as it will be needed.
    let (last, memo, host) = std::thread::scope(|scope| {
        let stored = scope.spawn(|| {
            let last = last_plan::Stored::load(store, root, &spelled);
            let memo = if last.is_none() {
                Some(PlanMemoFile::load(store).map(Arc::new))
            } else {
                None
            };
            (last, memo)
        });
        let host = AnalysisHost::load(Arc::new(OsSystem), root.to_path_buf());
        // A file that could not be read (a panic is a bug) only costs planning again.
        let (last, memo) = stored.join().unwrap_or((None, None));
        (last, memo, host)
    });
    let analysis = host.analysis();
    let key = last_plan::key_of(&analysis, &spelled)?;
    if let (Some(last), Some(key)) = (last, &key)
        && let Some((plan, selection)) = last.reuse(&analysis, store, key)?
    {
        // Digests stamped anew (a file touched, its content the same) only save work
        // next time.
        note_digest_index_damage(&analysis, store);
        let _ = analysis.save_digest_index();
        drop(analysis);
        leave(host, ends_with_process);
        return Ok(Ok(Planned { plan, selection }));
    }
    drop(analysis);
    decode_kind_catalog_in_background();
    let memo = memo.unwrap_or_else(|| PlanMemoFile::load(store).map(Arc::new));
    let mut host = host;
    if let Some(memo) = &memo {
        host.set_plan_memo(memo.clone());
    }
    let analysis = host.analysis();
    // A pattern of every target below a package (or every test) lists the workspace's
    // targets: every package's manifest and targets are resolved on every core first,
    // as for `once query targets` (on one thread this was a seventh of a no-op build of
    // 10,000 targets). Only a head start: resolving below computes whatever it did not.
    //
    // With a large memo (a large workspace) the digest index is read meanwhile (else
    // planning's first digest reads it while the other planning threads' first digests
    // wait), then the dependency graph made as the packages are resolved.
    let large = memo
        .as_ref()
        .is_some_and(|memo| memo.stored_len() > LARGE_MEMO_ENTRIES);
    let every_target = match request {
        PlanRequest::Capability { patterns, .. } => patterns
            .iter()
            .any(|pattern| pattern.trim().ends_with(crate::RECURSIVE_SUFFIX)),
        PlanRequest::Tests(tests) => tests.targets.is_empty(),
    };
    std::thread::scope(|scope| {
        if large {
            let snapshot = analysis.clone();
            scope.spawn(move || {
                snapshot.prepare_digest_index();
                if every_target {
                    let _ = snapshot.prime_dependency_graph();
                }
            });
        }
        if every_target {
            let _ = analysis.prime_targets(threads);
        }
    });
    let planned = match plan_from(&analysis, request, hint)? {
        Ok(planned) => planned,
        Err(message) => return Ok(Err(message)),
    };
    // The digest index, the plan memo and the last plan only save work next time;
    // failing to write them changes nothing.
    if let Some(key) = &key {
        last_plan::remember(
            &analysis,
            store,
            root,
            &spelled,
            key,
            &planned.plan,
            planned.selection.as_ref(),
        )?;
    }
    note_digest_index_damage(&analysis, store);
    let _ = analysis.save_digest_index();
    drop(analysis);
    leave(host, ends_with_process);
    if let Some(memo) = memo {
        let _ = memo.save(store);
    }
    Ok(Ok(planned))
}

/// Keeps the warning of a damaged digest index with the store's, so the execution's
/// report carries it to the user (`crate::execution_warnings`).
fn note_digest_index_damage(analysis: &Analysis, store: &Store) {
    if let Some(warning) = analysis.digest_index_damage() {
        store.warn(warning);
    }
}

/// Frees the database, unless the process ends next (see [`leave_to_exit`]).
fn leave(host: AnalysisHost, ends_with_process: bool) {
    if ends_with_process {
        leave_to_exit(host);
    } else {
        drop(host);
    }
}

/// Leaves `value` to the process's exit instead of freeing it: for what a one-shot
/// command holds until it ends (the database holds every file, manifest and plan of the
/// workspace, and freeing it took a no-op build of 10,000 targets about a quarter of a
/// second on the path to the first action; the plan, results and records of 10,000
/// actions took another twentieth). Only for a process that exits right after.
pub fn leave_to_exit<T>(value: T) {
    std::mem::forget(value);
}

/// Starts decoding the built-in kind catalog (once per process) on its own thread, so it
/// overlaps opening the store and loading the workspace: resolving targets needs it, and
/// decoding it is a measurable part of a short `once build` or `once test`.
pub fn decode_kind_catalog_in_background() {
    std::thread::spawn(|| {
        let _ = once_analysis::prelude_catalog();
    });
}
