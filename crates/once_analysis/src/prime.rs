//! Warming the database on several threads before a whole-workspace answer.
//!
//! Every per-package fact (parse, resolution, local diagnostics, graph nodes) is its own
//! query, so the packages of a cold workspace can be computed side by side on database
//! snapshots; the whole-workspace queries that follow then only collect memos. Workers
//! take packages from a shared counter, so a slow package does not leave a thread idle.
//! Salsa makes a worker that needs a query another worker is computing (the kind catalog,
//! a dependency's target table) wait for that result instead of computing it twice.
//!
//! [`Analysis::every_target_inputs`] spreads the digests of every target's inputs over
//! threads the same way: the `stat`s, index lookups and hashing of one package's files are
//! independent of every other package's.

use std::sync::atomic::{AtomicUsize, Ordering};

use once_db::{Package, RootDatabase, Workspace};
use once_graph::{file_diagnostics, kind_catalog, manifest, package_nodes, workspace_packages};

use crate::answers::{TargetInputs, package_target_inputs};
use crate::{Analysis, Cancellable};

/// More threads than this do not pay off: the work per package is small and the rest of a
/// cold start (the directory walk, the final collection) does not scale with them.
const MAX_THREADS: usize = 8;

/// How many workers [`Analysis::prime`] uses on this machine (1 means no extra thread).
pub fn default_prime_threads() -> usize {
    once_db::system::machine_parallelism().min(MAX_THREADS)
}

impl Analysis {
    /// Computes every package's manifest, diagnostics and graph nodes on `threads` threads
    /// (this one included), so that a following whole-workspace query only collects.
    /// With one thread this does nothing: the query computes what it needs itself.
    pub fn prime(&self, threads: usize) -> Cancellable<()> {
        self.prime_packages(threads, true)
    }

    /// Like [`Analysis::prime`], but only every package's manifest and resolved targets:
    /// what a listing of targets, tests or inputs reads, without the diagnostics and graph
    /// nodes a validation needs.
    pub fn prime_targets(&self, threads: usize) -> Cancellable<()> {
        self.prime_packages(threads, false)
    }

    fn prime_packages(&self, threads: usize, check: bool) -> Cancellable<()> {
        if threads <= 1 {
            return Ok(());
        }
        let packages: Vec<Package> = self.with_db(|db, ws| workspace_packages(db, ws).clone())?;
        if packages.len() < 2 {
            return Ok(());
        }
        let parsed = AtomicUsize::new(0);
        let checked = AtomicUsize::new(0);
        let work = Work {
            packages: &packages,
            parsed: &parsed,
            checked: &checked,
            check,
        };
        let workers = threads.min(packages.len());
        std::thread::scope(|scope| {
            let handles: Vec<_> = (1..workers)
                .map(|index| {
                    let snapshot = self.clone();
                    let work = &work;
                    scope.spawn(move || snapshot.with_db(|db, ws| work.run(db, ws, index)))
                })
                .collect();
            let mine = self.with_db(|db, ws| work.run(db, ws, 0));
            // A worker that panicked for another reason than cancellation is a bug; its
            // packages are computed again by the query that follows, which reports it.
            handles
                .into_iter()
                .map(|handle| handle.join().unwrap_or(Ok(())))
                .fold(mine, Result::and)
        })
    }
}

impl Analysis {
    /// The inputs of every target with their digests (what [`Analysis::target_inputs`]
    /// answers for each), sorted by id, computed package by package on `threads` threads
    /// (this one included).
    pub fn every_target_inputs(&self, threads: usize) -> Cancellable<Vec<(String, TargetInputs)>> {
        let packages: Vec<Package> = self.with_db(|db, ws| workspace_packages(db, ws).clone())?;
        let next = AtomicUsize::new(0);
        let work = |db: &RootDatabase, workspace: Workspace| {
            let mut found = Vec::new();
            while let Some(&package) = packages.get(next.fetch_add(1, Ordering::Relaxed)) {
                found.extend(package_target_inputs(db, workspace, package));
            }
            found
        };
        let workers = threads.clamp(1, packages.len().max(1));
        let mut all = std::thread::scope(|scope| {
            let handles: Vec<_> = (1..workers)
                .map(|_| {
                    let snapshot = self.clone();
                    let work = &work;
                    scope.spawn(move || snapshot.with_db(work))
                })
                .collect();
            let mut all = self.with_db(work);
            for handle in handles {
                match handle.join() {
                    Ok(Ok(found)) => {
                        if let Ok(all) = &mut all {
                            all.extend(found);
                        }
                    }
                    Ok(Err(cancelled)) => all = Err(cancelled),
                    // Not a cancellation (that is an `Err` above) but a bug: the answer
                    // would miss the worker's packages, so the panic goes on.
                    Err(panic) => std::panic::resume_unwind(panic),
                }
            }
            all
        })?;
        all.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        Ok(all)
    }
}

/// The packages and the two shared counters the workers take them from.
struct Work<'a> {
    packages: &'a [Package],
    parsed: &'a AtomicUsize,
    checked: &'a AtomicUsize,
    /// Whether to compute diagnostics too (both ways compute the resolved targets and
    /// their graph nodes).
    check: bool,
}

impl Work<'_> {
    fn run(&self, db: &RootDatabase, workspace: Workspace, worker: usize) {
        // Every resolution needs the kind catalog; one worker builds it while the others
        // parse manifests, which need nothing else.
        if worker == 0 {
            kind_catalog(db, workspace);
        }
        while let Some(&package) = self.take(self.parsed) {
            manifest(db, package);
        }
        while let Some(&package) = self.take(self.checked) {
            if self.check {
                file_diagnostics(db, package);
                package_nodes(db, package);
            } else {
                // The graph nodes too: planning starts from the dependency graph, which
                // then only joins them.
                package_nodes(db, package);
            }
        }
    }

    fn take(&self, counter: &AtomicUsize) -> Option<&Package> {
        self.packages.get(counter.fetch_add(1, Ordering::Relaxed))
    }
}
