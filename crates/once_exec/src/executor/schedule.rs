//! Scheduling: the workers, the ready queue by priority, what a failure skips, and the
//! calls to the front end (`on_start`, `on_progress`) and their panics.

use super::*;

pub(super) struct Scheduler {
    pub(super) ready: BinaryHeap<(u64, Reverse<usize>)>,
    pub(super) waiting_for: Vec<usize>,
    pub(super) results: Vec<Option<ActionResult>>,
    /// The declared outputs' digests of each succeeded action.
    pub(super) digests: Vec<Vec<DeclaredOutput>>,
    pub(super) running: usize,
    pub(super) done: usize,
    pub(super) stop: bool,
    /// Workers waiting for `wake` (notifying none is a system call per action saved).
    pub(super) waiting: usize,
    /// Slots free to run a step in: `jobs` in all ([`Executor::take_slot`]).
    pub(super) free_slots: usize,
    /// The actions waiting for a slot, by priority.
    pub(super) slot_queue: BinaryHeap<(u64, Reverse<usize>)>,
}

/// What one execution shares between its workers.
pub(super) struct Run<'r> {
    pub(super) plan: &'r [PlannedAction],
    pub(super) graph: Graph,
    pub(super) workspace: WorkspaceRoot,
    pub(super) stamps: OutputStamps,
    pub(super) index: RecordIndex,
    pub(super) tools: ToolDigests,
    pub(super) probes: crate::probes::Probes,
    /// Programs found on a `PATH` outside the workspace, by `PATH` and name.
    pub(super) programs: Mutex<HashMap<String, HashMap<String, PathBuf>>>,
    /// The identities of programs outside the workspace, read at their first use in the
    /// execution (nothing the plan builds can change them; an action that ran one is
    /// recorded only if the file is still the one identified).
    pub(super) identities: Mutex<HashMap<PathBuf, (ToolIdentity, Fingerprint)>>,
    pub(super) scheduler: Mutex<Scheduler>,
    pub(super) wake: Condvar,
    /// Told when a slot is given back, or the execution stops.
    pub(super) slot_freed: Condvar,
    /// The build directories of the plan's targets, sorted: made at the first sandboxed
    /// action (a sandboxed action may list the build directory its generated inputs
    /// come from).
    pub(super) build_dirs: std::sync::OnceLock<Vec<String>>,
    /// Actions whose result came from the remote cache with their outputs left there
    /// (by id: their key), until an action that runs needs them.
    pub(super) deferred: Mutex<FxHashMap<String, Sha256Digest>>,
    /// Held while a deferred action's outputs are brought in place.
    pub(super) materializing: Mutex<()>,
}

impl Run<'_> {
    /// [`Run::build_dirs`], made on first use.
    pub(super) fn build_dirs(&self) -> &[String] {
        self.build_dirs.get_or_init(|| {
            let mut directories: Vec<String> = self
                .plan
                .iter()
                .map(|planned| {
                    let label = TargetLabel::from_id(&planned.action.target);
                    build_dir(&label.package, &label.name)
                })
                .collect();
            directories.sort_unstable();
            directories.dedup();
            directories
        })
    }
}

/// The id of the first failed action among `results`.
fn first_failure(results: &[Option<ActionResult>]) -> Option<String> {
    results
        .iter()
        .flatten()
        .find(|r| r.status == ActionStatus::Failed)
        .map(|r| r.id.clone())
}

/// Makes `result` an action that never started: cancelled, or skipped after a failure
/// (`first_failure`, its cause).
fn mark_not_started(result: &mut ActionResult, cancelled: bool, first_failure: Option<String>) {
    if cancelled {
        result.status = ActionStatus::Cancelled;
        result.message = Some("cancelled before it started".to_owned());
    } else {
        result.status = ActionStatus::Skipped;
        result.message = Some("not started: another action failed".to_owned());
        result.cause = first_failure;
    }
}

/// A slot to run one action's step in, given back when dropped.
pub(super) struct Slot<'s, 'r> {
    run: &'s Run<'r>,
}

impl Drop for Slot<'_, '_> {
    fn drop(&mut self) {
        let mut scheduler = self.run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
        scheduler.free_slots += 1;
        if !scheduler.slot_queue.is_empty() {
            self.run.slot_freed.notify_all();
        }
    }
}

/// A step that holds a slot; dropped, it tells the front end the step ended and then
/// frees the slot (fields drop after [`Drop::drop`]), so the next step's start is told
/// after this one's end.
pub(super) struct RunningStep<'s, 'a, 'r> {
    executor: &'s Executor<'a>,
    id: &'s str,
    _slot: Slot<'s, 'r>,
}

impl Drop for RunningStep<'_, '_, '_> {
    fn drop(&mut self) {
        if let Some(step_ended) = self.executor.step_ended {
            self.executor.call_front_end(|| step_ended(self.id));
        }
    }
}

/// From how many actions a plan's output stamps and record index are read on two
/// threads.
pub(super) const PARALLEL_LOAD_ACTIONS: usize = 1000;

impl<'a> Executor<'a> {
    /// Runs `plan` to its end; a plan it cannot run is refused before anything starts.
    /// Problems of single actions (a failure, a missing output, an unwritable output) are
    /// in their results.
    pub fn run(&self, plan: &[PlannedAction]) -> Result<ExecutionReport, ExecError> {
        let graph = plan_graph(plan, self.scope, &self.order).map_err(ExecError::Plan)?;
        let _in_use = self.store.start_use().map_err(ExecError::Store)?;
        let workspace = WorkspaceRoot::open(&self.workspace_root).map_err(ExecError::Workspace)?;
        // Both files are read before the first action; for a large plan (each holds an
        // entry per output or action) at once.
        let (stamps, index) = if plan.len() < PARALLEL_LOAD_ACTIONS {
            (
                OutputStamps::load(&workspace),
                RecordIndex::load(self.store, &self.workspace_root),
            )
        } else {
            std::thread::scope(|scope| {
                let index = scope.spawn(|| RecordIndex::load(self.store, &self.workspace_root));
                let stamps = OutputStamps::load(&workspace);
                let index = index
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
                (stamps, index)
            })
        };
        let waiting_for = graph.waiting_for.clone();
        let ready = (0..plan.len())
            .filter(|&i| waiting_for[i] == 0)
            .map(|i| (graph.priority[i], Reverse(i)))
            .collect();
        let jobs = match plan.len() {
            0 | 1 => 1,
            many => self
                .options
                .jobs
                .unwrap_or_else(machine_parallelism)
                .clamp(1, many),
        };
        // A remote lookup waits on the network: as many workers again look actions up
        // while `jobs` of them run steps, so that a miss's lookup is off the critical path.
        let workers = if self.shares_results() {
            (2 * jobs).min(plan.len()).max(jobs)
        } else {
            jobs
        };
        let run = Run {
            plan,
            workspace,
            stamps,
            index,
            tools: ToolDigests::default(),
            probes: crate::probes::Probes::default(),
            programs: Mutex::new(HashMap::new()),
            identities: Mutex::new(HashMap::new()),
            build_dirs: std::sync::OnceLock::new(),
            deferred: Mutex::new(FxHashMap::default()),
            materializing: Mutex::new(()),
            scheduler: Mutex::new(Scheduler {
                ready,
                waiting_for,
                results: vec![None; plan.len()],
                digests: vec![Vec::new(); plan.len()],
                running: 0,
                done: 0,
                stop: false,
                waiting: 0,
                free_slots: jobs,
                slot_queue: BinaryHeap::new(),
            }),
            wake: Condvar::new(),
            slot_freed: Condvar::new(),
            graph,
        };
        self.prefetch_probes(&run);
        if workers == 1 {
            // One at a time (a single script, `-j 1`): on this thread, no pool to start.
            self.work(&run);
        } else {
            // This thread is one of the workers: one thread fewer to start per execution.
            std::thread::scope(|scope| {
                for _ in 1..workers {
                    scope.spawn(|| self.work(&run));
                }
                self.work(&run);
            });
        }
        let mut scheduler = run
            .scheduler
            .into_inner()
            .unwrap_or_else(|e| e.into_inner());
        let cancelled = self.cancel.is_cancelled();
        let first_failure = first_failure(&scheduler.results);
        for index in 0..plan.len() {
            if scheduler.results[index].is_none() {
                let mut result = ActionResult::new(&plan[index].action.id, ActionStatus::Failed);
                mark_not_started(&mut result, cancelled, first_failure.clone());
                scheduler.done += 1;
                self.report(&scheduler, plan.len(), &result);
                scheduler.results[index] = Some(result);
            }
        }
        // Both files are caches: failing to save them costs time, never correctness.
        let _ = run.stamps.save(&run.workspace);
        let _ = run.index.save(self.store, SystemTime::now());
        let _ = run.tools.save(self.store);
        let _ = run.probes.save(self.store);
        let panic = self
            .callback_panic
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(panic) = panic {
            std::panic::resume_unwind(panic);
        }
        if let Some(warning) = run.stamps.damage() {
            self.store.warn(warning);
        }
        Ok(ExecutionReport {
            results: scheduler.results.into_iter().flatten().collect(),
            warnings: self.store.take_warnings(),
        })
    }

    pub(super) fn report(&self, scheduler: &Scheduler, total: usize, result: &ActionResult) {
        let Some(progress) = self.progress else {
            return;
        };
        let message = match (result.status, result.cache) {
            (ActionStatus::Succeeded, Some(cache)) => format!("{} {}", cache.as_str(), result.id),
            (ActionStatus::Succeeded, None) => format!("done {}", result.id),
            (ActionStatus::Failed, _) => format!(
                "failed {}: {}",
                result.id,
                result.message.as_deref().unwrap_or("failed")
            ),
            (ActionStatus::Skipped, _) => format!("skipped {}", result.id),
            (ActionStatus::Cancelled, _) => format!("cancelled {}", result.id),
        };
        self.call_front_end(|| {
            progress(&Progress {
                done: scheduler.done,
                total,
                message,
                result,
            });
        });
    }

    /// Tells the front end an action was taken up.
    pub(super) fn announce_start(&self, id: &str) {
        if let Some(started) = self.started {
            self.call_front_end(|| started(id));
        }
    }

    /// Waits for a slot for action `index`'s step ([`Executor::take_slot`]) and tells
    /// the front end the step starts; `None` when the execution stopped first. The
    /// front end hears of the step's end when the answer is dropped.
    pub(super) fn start_step<'s, 'r>(
        &'s self,
        run: &'s Run<'r>,
        index: usize,
    ) -> Option<RunningStep<'s, 'a, 'r>> {
        let slot = self.take_slot(run, index)?;
        let id = run.plan[index].action.id.as_str();
        if let Some(step_started) = self.step_started {
            self.call_front_end(|| step_started(id));
        }
        Some(RunningStep {
            executor: self,
            id,
            _slot: slot,
        })
    }

    /// Calls a front end's callback. Its bug must not leave processes running: a panic
    /// cancels everything, and is re-raised when they are gone.
    pub(super) fn call_front_end(&self, callback: impl FnOnce()) {
        let called = std::panic::catch_unwind(std::panic::AssertUnwindSafe(callback));
        if let Err(panic) = called {
            self.cancel.cancel();
            let mut slot = self
                .callback_panic
                .lock()
                .unwrap_or_else(|e| e.into_inner());
            slot.get_or_insert(panic);
        }
    }

    /// Waits for a slot to run action `index`'s step in (the highest priority first);
    /// `None` when the execution stops first (a failure without `keep_going`, a
    /// cancel): the step is then not started.
    pub(super) fn take_slot<'s, 'r>(&self, run: &'s Run<'r>, index: usize) -> Option<Slot<'s, 'r>> {
        let entry = (run.graph.priority[index], Reverse(index));
        let mut scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
        scheduler.slot_queue.push(entry);
        loop {
            if scheduler.stop || self.cancel.is_cancelled() {
                scheduler.slot_queue.retain(|queued| *queued != entry);
                // The next in the queue may be first now.
                run.slot_freed.notify_all();
                return None;
            }
            if scheduler.free_slots > 0 && scheduler.slot_queue.peek() == Some(&entry) {
                scheduler.slot_queue.pop();
                scheduler.free_slots -= 1;
                if scheduler.free_slots > 0 && !scheduler.slot_queue.is_empty() {
                    run.slot_freed.notify_all();
                }
                return Some(Slot { run });
            }
            scheduler = run
                .slot_freed
                .wait_timeout(scheduler, Duration::from_millis(50))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    /// Marks `result` as not started: its slot never came ([`Executor::take_slot`]).
    pub(super) fn not_started(&self, run: &Run<'_>, result: &mut ActionResult) {
        let first_failure = {
            let scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
            first_failure(&scheduler.results)
        };
        mark_not_started(result, self.cancel.is_cancelled(), first_failure);
    }

    pub(super) fn work(&self, run: &Run<'_>) {
        loop {
            let (index, dependency_outputs) = {
                let mut scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
                let index = loop {
                    let stopping = scheduler.stop || self.cancel.is_cancelled();
                    if !stopping && let Some((_, Reverse(index))) = scheduler.ready.pop() {
                        scheduler.running += 1;
                        break Some(index);
                    }
                    if scheduler.running == 0 && (stopping || scheduler.ready.is_empty()) {
                        break None;
                    }
                    scheduler.waiting += 1;
                    scheduler = run
                        .wake
                        .wait_timeout(scheduler, Duration::from_millis(50))
                        .unwrap_or_else(|e| e.into_inner())
                        .0;
                    scheduler.waiting -= 1;
                };
                let Some(index) = index else {
                    if scheduler.waiting > 0 {
                        run.wake.notify_all();
                    }
                    return;
                };
                let dependency_outputs: Vec<(String, Sha256Digest)> = run.graph.dependencies[index]
                    .iter()
                    .filter_map(|(producer, path)| {
                        scheduler.digests[*producer]
                            .iter()
                            .find(|output| output.path == *path)
                            .map(|output| (path.clone(), output.digest))
                    })
                    .collect();
                (index, dependency_outputs)
            };
            self.announce_start(&run.plan[index].action.id);
            // A bug in one action must not leave the others waiting for it forever.
            let processed = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                self.process(run, index, &dependency_outputs)
            }));
            let result = processed.unwrap_or_else(|panic| {
                let why = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_default();
                let mut failed =
                    ActionResult::new(&run.plan[index].action.id, ActionStatus::Failed);
                failed.message = Some(format!("internal error (a bug in once): {why}"));
                failed
            });
            let mut scheduler = run.scheduler.lock().unwrap_or_else(|e| e.into_inner());
            scheduler.running -= 1;
            scheduler.done += 1;
            self.report(&scheduler, run.plan.len(), &result);
            if result.status == ActionStatus::Succeeded {
                scheduler.digests[index] = result.outputs.clone();
                for &dependent in &run.graph.dependents[index] {
                    scheduler.waiting_for[dependent] -= 1;
                    if scheduler.waiting_for[dependent] == 0 {
                        scheduler
                            .ready
                            .push((run.graph.priority[dependent], Reverse(dependent)));
                    }
                }
            } else {
                if !self.options.keep_going {
                    scheduler.stop = true;
                    run.slot_freed.notify_all();
                }
                let mut stack = run.graph.dependents[index].clone();
                while let Some(dependent) = stack.pop() {
                    if scheduler.results[dependent].is_some() {
                        continue;
                    }
                    let mut skipped =
                        ActionResult::new(&run.plan[dependent].action.id, ActionStatus::Skipped);
                    skipped.message = Some(format!(
                        "not run: it depends on `{}`, which did not succeed",
                        result.id
                    ));
                    skipped.cause = Some(result.cause.clone().unwrap_or(result.id.clone()));
                    scheduler.done += 1;
                    self.report(&scheduler, run.plan.len(), &skipped);
                    scheduler.results[dependent] = Some(skipped);
                    stack.extend(run.graph.dependents[dependent].iter().copied());
                }
            }
            scheduler.results[index] = Some(result);
            if scheduler.waiting > 0 {
                run.wake.notify_all();
            }
        }
    }
}
