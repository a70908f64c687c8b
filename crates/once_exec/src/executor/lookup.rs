//! Per action, before anything runs: its key completed with the identity of the program
//! it runs and its producers' outputs, then the cache looked up: a hit in place, a hit
//! restored from the store, or a miss left to [`super::steps`].

use super::*;

pub(super) struct Prepared<'p> {
    pub(super) program: Option<&'p Path>,
    /// The fingerprint of `program` its identity in the key was read with.
    pub(super) fingerprint: Option<&'p Fingerprint>,
    pub(super) environment: Option<&'p std::collections::BTreeMap<String, String>>,
    /// The content digest the key holds for a host file the action materializes.
    pub(super) host_file: Option<Sha256Digest>,
    /// The outputs of other actions the action consumes (keyed by their digests).
    pub(super) produced: &'p [&'p str],
}

/// A record found for a key: when it was last used, and whether it came from the
/// workspace's index (`crate::record_index`) rather than its record file.
pub(super) struct Found {
    pub(super) record: ActionRecord,
    pub(super) used: SystemTime,
    pub(super) indexed: bool,
}

/// What [`Executor::hit_in_place`] found.
pub(super) enum InPlace {
    Hit,
    /// No complete record of the key.
    NoRecord,
    /// A record, but a hit is not proved without the lock.
    NotSure,
}

/// Whether `record` lists every output `action` declares (a search per output in a small
/// record, a set of the record's paths in a large one: thousands of declared outputs
/// over a directory of many files would be quadratic).
pub(super) fn covers(action: &Action, record: &ActionRecord) -> bool {
    if action.outputs.len().saturating_mul(record.outputs.len()) <= 256 {
        return action
            .outputs
            .iter()
            .all(|output| record.outputs.iter().any(|entry| entry.path == *output));
    }
    let listed: rustc_hash::FxHashSet<&str> = record
        .outputs
        .iter()
        .map(|entry| entry.path.as_str())
        .collect();
    action
        .outputs
        .iter()
        .all(|output| listed.contains(output.as_str()))
}

impl<'a> Executor<'a> {
    pub(super) fn process(
        &self,
        run: &Run<'_>,
        index: usize,
        dependency_outputs: &[(String, Sha256Digest)],
    ) -> ActionResult {
        let started = Instant::now();
        let planned = &run.plan[index];
        let mut result = ActionResult::new(&planned.action.id, ActionStatus::Failed);
        if let Err(message) = self.process_action(run, index, dependency_outputs, &mut result) {
            result.status = ActionStatus::Failed;
            result.message = Some(message);
        }
        if result.status == ActionStatus::Failed && self.cancel.is_cancelled() {
            result.status = ActionStatus::Cancelled;
            result.message = Some("cancelled".to_owned());
        }
        result.duration = started.elapsed();
        result
    }

    pub(super) fn process_action(
        &self,
        run: &Run<'_>,
        index: usize,
        dependency_outputs: &[(String, Sha256Digest)],
        result: &mut ActionResult,
    ) -> Result<(), String> {
        let planned = &run.plan[index];
        let action = &planned.action;
        let host = &self.options.host_env;
        let mut program = None;
        let mut environment = None;
        let mut keyed_variables = Vec::new();
        let mut tool: Option<ToolIdentity> = None;
        let mut tool_fingerprint = None;
        let mut probe_results = Vec::new();
        if let ActionStep::Run(command) = &action.step {
            // The variables the key and the program's lookup need, without the complete
            // environment: only running the action (or a probe) needs that.
            let variable = |name| host.action_variable(&command.env, name, &self.workspace_root);
            keyed_variables = KEYED_VARIABLES
                .iter()
                .filter_map(|name| variable(name).map(|value| (*name, value)))
                .collect();
            let path_variable = variable("PATH").unwrap_or(Cow::Borrowed(DEFAULT_PATH));
            let cwd = absolute(&self.workspace_root, &command.cwd);
            let argv0 = command.argv.first().map_or("", String::as_str);
            let found = match (&self.options.once_program, argv0) {
                (Some(once), ONCE_PROGRAM) => once.clone(),
                _ => self.resolve(run, argv0, &path_variable, &cwd)?,
            };
            let (identity, fingerprint) = self.identify(run, &found)?;
            tool = Some(identity);
            tool_fingerprint = Some(fingerprint);
            program = Some(found);
            if !command.probes.is_empty() {
                let env = host.action_environment(&command.env, &self.workspace_root);
                for probe in &command.probes {
                    probe_results.push(run.probes.result(self.store, probe, &env, &cwd)?);
                }
                environment = Some(env);
            }
        }
        if let ActionStep::MaterializeHostFile { source, .. } = &action.step {
            // Keyed by its content, as a program is, and watched the same way: one that
            // changes while the build runs is not recorded.
            let source = std::path::PathBuf::from(source);
            let (identity, fingerprint) = self.identify(run, &source)?;
            tool = Some(identity);
            tool_fingerprint = Some(fingerprint);
            program = Some(source);
        }
        let key = action_key(
            action,
            &planned.static_key,
            &KeyParts {
                host_env: keyed_variables
                    .iter()
                    .map(|(name, value)| (*name, value.as_ref()))
                    .collect(),
                tool: tool.as_ref(),
                dependency_outputs: dependency_outputs
                    .iter()
                    .map(|(path, digest)| (path.as_str(), *digest))
                    .collect(),
                probe_results,
                sandbox: self.options.sandbox,
            },
        );
        result.key = Some(key);
        let give_up = || self.cancel.is_cancelled();
        // The common hit (a no-op build) first, without the output lock: see
        // `hit_in_place`. Anything it is not sure of takes the locked path below.
        let mut recorded = true;
        if action.cacheable && !self.options.validate {
            match self.hit_in_place(run, action, &key, result)? {
                InPlace::Hit => return Ok(()),
                InPlace::NoRecord => recorded = false,
                InPlace::NotSure => {}
            }
        }
        if let (ActionStep::Run(command), None) = (&action.step, &environment) {
            environment = Some(host.action_environment(&command.env, &self.workspace_root));
        }
        let produced: Vec<&str> = dependency_outputs
            .iter()
            .map(|(path, _)| path.as_str())
            .collect();
        let host_file = match &action.step {
            ActionStep::MaterializeHostFile { .. } => tool.as_ref().map(|tool| tool.digest),
            _ => None,
        };
        let prepared = Prepared {
            program: program.as_deref(),
            fingerprint: tool_fingerprint.as_ref(),
            environment: environment.as_ref(),
            host_file,
            produced: &produced,
        };
        // Each pass takes the locks and looks for a hit again; an action that must run
        // while inputs of its are still in the remote cache ([`Executor::deferrable`])
        // lets go of its locks, brings them in place and tries once more.
        loop {
            // An action without outputs writes nothing another could clash with: taking
            // the lock of the empty set would serialise every such action in the
            // workspace.
            let _outputs_lock = if action.outputs.is_empty() {
                None
            } else {
                let Some(lock) = run
                    .workspace
                    .lock_outputs(&action.outputs, give_up)
                    .map_err(|e| format!("cannot lock the action's outputs: {e}"))?
                else {
                    return Err("cancelled".to_owned());
                };
                Some(lock)
            };
            if !action.cacheable || self.options.validate {
                if self.has_deferred_inputs(run, index) {
                    drop(_outputs_lock);
                    self.materialize_inputs(run, index)?;
                    continue;
                }
                let Some(_slot) = self.start_step(run, index) else {
                    self.not_started(run, result);
                    return Ok(());
                };
                return self.execute(run, action, &prepared, None, result);
            }
            // Without a record a moment ago, the look under the key's lock below is the
            // one that matters (a record written meanwhile is found there).
            if recorded && self.try_hit(run, action, &key, result)? {
                return Ok(());
            }
            let Some(_lock) = self
                .store
                .lock_key(&key, give_up)
                .map_err(|e| format!("cannot lock the action's key in the store: {e}"))?
            else {
                return Err("cancelled".to_owned());
            };
            // Another thread or process may have run it while this one waited.
            if self.try_hit(run, action, &key, result)? {
                return Ok(());
            }
            if self.try_remote_hit(run, action, &key, result)? {
                return Ok(());
            }
            if self.has_deferred_inputs(run, index) {
                drop(_lock);
                drop(_outputs_lock);
                self.materialize_inputs(run, index)?;
                recorded = true;
                continue;
            }
            let Some(_slot) = self.start_step(run, index) else {
                self.not_started(run, result);
                return Ok(());
            };
            return self.execute(run, action, &prepared, Some(&key), result);
        }
    }

    /// Whether an action producing an input of action `index` left its outputs in the
    /// remote cache.
    pub(super) fn has_deferred_inputs(&self, run: &Run<'_>, index: usize) -> bool {
        let deferred = run.deferred.lock().unwrap_or_else(|e| e.into_inner());
        !deferred.is_empty()
            && run.graph.dependencies[index]
                .iter()
                .any(|(producer, _)| deferred.contains_key(&run.plan[*producer].action.id))
    }

    /// Brings the outputs of the deferred producers of action `index` in place: their
    /// blobs from the remote cache (checked), then restored under each producer's output
    /// lock, as a hit restores them. One at a time: a second consumer waits for the first
    /// to finish.
    pub(super) fn materialize_inputs(&self, run: &Run<'_>, index: usize) -> Result<(), String> {
        let _one_at_a_time = run.materializing.lock().unwrap_or_else(|e| e.into_inner());
        for (producer, _) in &run.graph.dependencies[index] {
            let action = &run.plan[*producer].action;
            let Some(key) = run
                .deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(&action.id)
                .copied()
            else {
                continue;
            };
            let give_up = || self.cancel.is_cancelled();
            let _lock = match run.workspace.lock_outputs(&action.outputs, give_up) {
                Ok(Some(lock)) => lock,
                Ok(None) => return Err("cancelled".to_owned()),
                Err(e) => return Err(format!("cannot lock the outputs of `{}`: {e}", action.id)),
            };
            let record = match self.store.read_record_used(&key) {
                RecordRead::Found(record, _) => record,
                _ => {
                    return Err(format!(
                        "the result of `{}` (from the remote cache) is no longer in the store",
                        action.id
                    ));
                }
            };
            self.fetch_missing(action, &record, true).map_err(|why| {
                format!(
                    "cannot bring the outputs of `{}` from the remote cache: {why}",
                    action.id
                )
            })?;
            run.workspace
                .restore(&record.outputs, self.store, &run.stamps)
                .map_err(|e| match e {
                    RestoreError::Blob(digest, error) => {
                        format!(
                            "cannot restore the output {digest} of `{}`: {error}",
                            action.id
                        )
                    }
                    RestoreError::Io(error) => {
                        format!("cannot restore the outputs of `{}`: {error}", action.id)
                    }
                })?;
            run.deferred
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&action.id);
        }
        Ok(())
    }

    /// Brings the blobs of `record` the store lacks from the remote cache: its streams,
    /// and with `outputs` its files too.
    pub(super) fn fetch_missing(
        &self,
        action: &Action,
        record: &ActionRecord,
        outputs: bool,
    ) -> Result<(), crate::remote::FetchError> {
        let Some(remote) = self.remote_for(action) else {
            return Err(crate::remote::FetchError::Failed(
                "no remote cache".to_owned(),
            ));
        };
        let empty = Sha256Digest::of(b"");
        let mut needed: Vec<(Sha256Digest, u64)> = Vec::new();
        let blobs = record_blobs(record);
        let wanted = if outputs { &blobs[..] } else { &blobs[..2] };
        for &(digest, size) in wanted {
            if digest != empty && !needed.contains(&(digest, size)) && !self.store.has_blob(&digest)
            {
                needed.push((digest, size));
            }
        }
        for (digest, size) in needed {
            remote.fetch_blob(self.store, &digest, size)?;
        }
        if self.store.has_blob(&empty) || self.store.put_hashed_blob(b"", &empty).is_ok() {
            Ok(())
        } else {
            Err(crate::remote::FetchError::Failed(
                "cannot store the empty blob".to_owned(),
            ))
        }
    }

    /// The identity of the program at `found` for an action's key, with the fingerprint
    /// of the file it was read from. A program outside the workspace is identified once
    /// per execution; one of the workspace (the plan may build it) for every action, and
    /// named relative to the workspace, so checkouts at different places share results.
    pub(super) fn identify(
        &self,
        run: &Run<'_>,
        found: &Path,
    ) -> Result<(ToolIdentity, Fingerprint), String> {
        let outside = !found.starts_with(&self.workspace_root);
        if outside
            && let Some(known) = run
                .identities
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .get(found)
        {
            return Ok(known.clone());
        }
        let (mut identity, fingerprint) = run
            .tools
            .identity(self.store, found)
            .map_err(|e| format!("cannot read the program `{}`: {e}", found.display()))?;
        if let Ok(relative) = found.strip_prefix(&self.workspace_root) {
            identity.path = format!("$WORKSPACE/{}", relative.to_string_lossy());
        }
        if outside {
            run.identities
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .insert(found.to_path_buf(), (identity.clone(), fingerprint));
        }
        Ok((identity, fingerprint))
    }

    /// Finds the program `argv0` runs ([`resolve_program`]). A name looked up on a `PATH`
    /// with no directory in the workspace is found once per execution (nothing the plan
    /// builds can appear there), and so is its identity ([`Executor::identify`]).
    pub(super) fn resolve(
        &self,
        run: &Run<'_>,
        argv0: &str,
        path_variable: &str,
        cwd: &Path,
    ) -> Result<PathBuf, String> {
        // Only names found outside the workspace are remembered: one remembered is found.
        if let Some(found) = run
            .programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(path_variable)
            .and_then(|programs| programs.get(argv0))
        {
            return Ok(found.clone());
        }
        let outside = !argv0.contains('/')
            && path_variable
                .split(':')
                .all(|directory| !Path::new(directory).starts_with(&self.workspace_root));
        let found = resolve_program(argv0, path_variable, cwd)?;
        if outside {
            run.programs
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .entry(path_variable.to_owned())
                .or_default()
                .insert(argv0.to_owned(), found.clone());
        }
        Ok(found)
    }

    /// A hit whose outputs are all in place already, decided without taking the output
    /// lock ([`WorkspaceRoot::in_place`]: metadata only, nothing written). It writes no
    /// output, so it cannot disturb an executor holding the lock; and what it accepts
    /// is exactly what the locked path's restore would leave untouched. Anything else
    /// (no complete record, an output missing, changed or only provable by hashing it)
    /// is [`InPlace::NotSure`], and the caller takes the locked path, which looks again.
    pub(super) fn hit_in_place(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        result: &mut ActionResult,
    ) -> Result<InPlace, String> {
        // The workspace's index first: one file for the whole execution instead of one
        // per action (`crate::record_index`); what it does not hold recently, the file.
        let (record, used, indexed) = match run.index.recent(key, SystemTime::now()) {
            Some((record, used)) => (record, used, true),
            None => match self.store.read_record_used(key) {
                RecordRead::Found(record, used) => (record, used, false),
                RecordRead::Absent => return Ok(InPlace::NoRecord),
                RecordRead::Damaged(damage) => {
                    warn_damaged_record(result, damage);
                    return Ok(InPlace::NoRecord);
                }
            },
        };
        if !covers(action, &record)
            || !run
                .workspace
                .in_place(&record.outputs, self.store, &run.stamps)
        {
            return Ok(InPlace::NotSure);
        }
        let found = Found {
            record,
            used,
            indexed,
        };
        Ok(if self.finish_hit(run, action, key, found, result) {
            InPlace::Hit
        } else {
            InPlace::NotSure
        })
    }

    /// Reuses the record of `key` when there is one whose blobs are all sound.
    pub(super) fn try_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        result: &mut ActionResult,
    ) -> Result<bool, String> {
        let (record, used) = match self.store.read_record_used(key) {
            RecordRead::Found(record, used) => (record, used),
            RecordRead::Absent => return Ok(false),
            RecordRead::Damaged(damage) => {
                warn_damaged_record(result, damage);
                return Ok(false);
            }
        };
        if !covers(action, &record) {
            return Ok(false);
        }
        // A result an earlier command took from the remote cache without its outputs:
        // they stay there while nothing that runs needs them.
        if self.remote_for(action).is_some()
            && record_blobs(&record)[2..]
                .iter()
                .any(|(digest, _)| !self.store.has_blob(digest))
        {
            let deferred = self.deferrable(action);
            if self.fetch_missing(action, &record, !deferred).is_ok() && deferred {
                return Ok(self.defer_hit(run, action, key, record, result));
            }
        }
        match run
            .workspace
            .restore(&record.outputs, self.store, &run.stamps)
        {
            Ok(_) => {}
            Err(RestoreError::Blob(digest, error)) => {
                warn(
                    result,
                    format!(
                        "the stored output {digest} could not be used ({error}); running the action again"
                    ),
                );
                return Ok(false);
            }
            Err(RestoreError::Io(error)) => {
                return Err(format!("cannot restore the action's outputs: {error}"));
            }
        }
        let found = Found {
            record,
            used,
            indexed: false,
        };
        Ok(self.finish_hit(run, action, key, found, result))
    }

    /// Looks `key` up in the remote cache (when the action's result may be shared):
    /// a record found there has its missing blobs brought into the store, each checked
    /// against its digest, and is then recorded locally and restored as a local hit
    /// would be. A blob the server sends wrong is a miss with a warning; any other
    /// failure is a miss the remote cache counts.
    pub(super) fn try_remote_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        result: &mut ActionResult,
    ) -> Result<bool, String> {
        let Some(remote) = self.remote_for(action) else {
            return Ok(false);
        };
        let Some(record) = remote.lookup(key) else {
            return Ok(false);
        };
        if !covers(action, &record) {
            return Ok(false);
        }
        let deferred = self.deferrable(action);
        match self.fetch_missing(action, &record, !deferred) {
            Ok(()) => {}
            Err(crate::remote::FetchError::Corrupt(why)) => {
                warn(
                    result,
                    format!(
                        "the remote cache's copy of an output could not be used ({why}); running the action again"
                    ),
                );
                return Ok(false);
            }
            Err(_) => return Ok(false),
        }
        self.store
            .write_record(key, &record)
            .map_err(|e| format!("cannot write the action's record to the store: {e}"))?;
        if deferred {
            return Ok(self.defer_hit(run, action, key, record, result));
        }
        if self.try_hit(run, action, key, result)? {
            result.remote_hit = true;
            return Ok(true);
        }
        Ok(false)
    }

    /// A hit whose outputs stay in the remote cache until an action that runs needs them
    /// (its streams are in the store).
    pub(super) fn defer_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        record: ActionRecord,
        result: &mut ActionResult,
    ) -> bool {
        let found = Found {
            record,
            used: SystemTime::now(),
            indexed: false,
        };
        if !self.finish_hit(run, action, key, found, result) {
            return false;
        }
        result.remote_hit = true;
        run.deferred
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(action.id.clone(), *key);
        true
    }

    /// Replays the streams of the record `found` (whose outputs are in place) into
    /// `result` and makes it a hit; `false` (with a warning) when a stream's blob cannot
    /// be used.
    pub(super) fn finish_hit(
        &self,
        run: &Run<'_>,
        action: &Action,
        key: &Sha256Digest,
        found: Found,
        result: &mut ActionResult,
    ) -> bool {
        let Found {
            record,
            used,
            indexed,
        } = found;
        let limit = self.options.stream_memory_limit;
        let mut streams = Vec::new();
        for stream in [&record.stdout, &record.stderr] {
            // An empty stream has nothing to read back or check.
            if stream.size == 0 && stream.digest == Sha256Digest::of(b"") {
                streams.push(CapturedStream {
                    digest: Some(stream.digest),
                    size: 0,
                    tail: Vec::new(),
                });
                continue;
            }
            let mut tail = crate::capture::TailWriter::new(limit);
            match self.store.copy_blob_to(&stream.digest, &mut tail) {
                Ok(_) => streams.push(CapturedStream {
                    digest: Some(stream.digest),
                    size: stream.size,
                    tail: tail.into_bytes(),
                }),
                Err(error) => {
                    warn(
                        result,
                        format!(
                            "the stored stream {} could not be used ({error}); running the action again",
                            stream.digest
                        ),
                    );
                    return false;
                }
            }
        }
        let now_used = self.store.touch_record_if_stale(key, used);
        if !indexed || now_used != used {
            run.index.remember(key, &record, now_used);
        }
        result.stderr = streams.pop().unwrap_or_default();
        result.stdout = streams.pop().unwrap_or_default();
        result.status = ActionStatus::Succeeded;
        result.cache = Some(CacheState::Hit);
        result.exit_code = Some(record.exit_code);
        result.outputs = declared_outputs(action, &record.outputs);
        result.entries = record.outputs;
        true
    }

    /// Runs every distinct toolchain probe of the plan at once, in parallel (a probe such
    /// as `rustc -vV` takes tens of milliseconds; one after the other they would add up),
    /// so the actions find their results memoised. A probe's failure is memoised too and
    /// reported by the action that needs it.
    pub(super) fn prefetch_probes(&self, run: &Run<'_>) {
        let mut distinct = std::collections::BTreeSet::new();
        for planned in run.plan {
            let ActionStep::Run(command) = &planned.action.step else {
                continue;
            };
            if command.probes.is_empty() {
                continue;
            }
            let env = self
                .options
                .host_env
                .action_environment(&command.env, &self.workspace_root);
            let cwd = absolute(&self.workspace_root, &command.cwd);
            for probe in &command.probes {
                distinct.insert((probe.clone(), env.clone(), cwd.clone()));
            }
        }
        // A probe whose stored answer holds costs a few `stat`s: only the rest are worth
        // a thread (a cached build would otherwise start one per probe to read a file).
        let resolve = |argv0: &str, path_variable: &str, cwd: &Path| {
            self.resolve(run, argv0, path_variable, cwd)
        };
        distinct.retain(|(probe, env, cwd)| {
            !run.probes
                .is_answered(self.store, probe, env, cwd, &resolve)
        });
        if distinct.len() < 2 {
            return;
        }
        std::thread::scope(|scope| {
            for (probe, env, cwd) in &distinct {
                scope.spawn(move || {
                    let _ = run.probes.result(self.store, probe, env, cwd);
                });
            }
        });
    }
}

/// Every blob a record names, with its size: its streams, then its files.
pub(super) fn record_blobs(record: &ActionRecord) -> Vec<(Sha256Digest, u64)> {
    let mut blobs = vec![
        (record.stdout.digest, record.stdout.size),
        (record.stderr.digest, record.stderr.size),
    ];
    for entry in &record.outputs {
        if let crate::record::OutputKind::File { digest, size, .. } = &entry.kind {
            blobs.push((*digest, *size));
        }
    }
    blobs
}
