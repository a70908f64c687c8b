//! Running a miss: the key's lock, the declared outputs cleared, the step run (a process
//! through the runner, or a step once does itself), the outputs checked, stored and
//! recorded.

use super::*;

/// The absolute path of the workspace-relative `relative` under `root`.
pub(crate) fn absolute(root: &Path, relative: &str) -> PathBuf {
    let mut path = root.to_path_buf();
    for part in relative.split('/').filter(|part| !part.is_empty()) {
        path.push(part);
    }
    path
}

/// Says that the record of the action's key was damaged (and removed by the store).
pub(super) fn warn_damaged_record(result: &mut ActionResult, damage: once_model::framed::Damage) {
    warn(
        result,
        format!(
            "the stored result of the action was damaged ({damage}); it was removed and the action runs again"
        ),
    );
}

/// Adds a warning once (the second look under the key's lock meets the same problem).
pub(super) fn warn(result: &mut ActionResult, warning: String) {
    let known = result.warnings.iter().any(|w| {
        w.split(" could not be used").next() == warning.split(" could not be used").next()
    });
    if !known {
        result.warnings.push(warning);
    }
}

pub(super) fn describe(action: &Action) -> String {
    match &action.step {
        ActionStep::Run(command) => format!("`{}`", command.argv.join(" ")),
        ActionStep::WriteFile { path, .. } => format!("writing `{path}`"),
        ActionStep::Copy { from, to } => format!("copying `{from}` to `{to}`"),
        ActionStep::Symlink { link, .. } => format!("linking `{link}`"),
        ActionStep::MakeDir { path } => format!("making the directory `{path}`"),
        ActionStep::MaterializeHostFile { source, to } => {
            format!("materializing the host file `{source}` as `{to}`")
        }
    }
}

pub(super) fn declared_outputs(action: &Action, entries: &[OutputEntry]) -> Vec<DeclaredOutput> {
    action
        .outputs
        .iter()
        .zip(output_digests(entries, &action.outputs))
        .map(|(path, digest)| DeclaredOutput {
            path: path.clone(),
            digest,
        })
        .collect()
}

pub(super) fn stream_digest(stream: &CapturedStream) -> StreamDigest {
    StreamDigest {
        digest: stream.digest.unwrap_or_else(|| Sha256Digest::of(b"")),
        size: stream.size,
    }
}

impl<'a> Executor<'a> {
    /// Fails the action when its dependency file lists a workspace file it does not
    /// declare (see [`crate::depfile`]).
    pub(super) fn check_depfile(
        &self,
        workspace: &WorkspaceRoot,
        action: &Action,
        cwd: &str,
        depfile: &str,
    ) -> Result<(), String> {
        let (bytes, _mode) = workspace.read_file(depfile).map_err(|e| {
            format!(
                "{} did not leave its dependency file `{depfile}`: {e}",
                describe(action)
            )
        })?;
        let listed = crate::depfile::prerequisites(&String::from_utf8_lossy(&bytes));
        let undeclared = crate::depfile::undeclared(
            &listed,
            &self.workspace_root.to_string_lossy(),
            cwd,
            &action.inputs,
            &action.outputs,
        );
        if undeclared.is_empty() {
            return Ok(());
        }
        Err(format!(
            "{} read {} it does not declare, so a change to {} would not rebuild it: {}. \
             Declare {} (for a C or C++ target: list the headers in its `srcs`, or depend on \
             the library that has them)",
            describe(action),
            if undeclared.len() == 1 {
                "a file"
            } else {
                "files"
            },
            if undeclared.len() == 1 { "it" } else { "them" },
            undeclared.join(", "),
            if undeclared.len() == 1 { "it" } else { "them" },
        ))
    }

    /// Runs a miss ([`Executor::execute_step`]); a failure of a sandboxed action also
    /// names the files the sandbox denied it, as its output shows them.
    pub(super) fn execute(
        &self,
        run: &Run<'_>,
        action: &Action,
        prepared: &Prepared<'_>,
        key: Option<&Sha256Digest>,
        result: &mut ActionResult,
    ) -> Result<(), String> {
        let executed = self.execute_step(run, action, prepared, key, result);
        match (&action.step, executed) {
            (ActionStep::Run(command), Err(message))
                if self.options.sandbox == crate::sandbox::SandboxMode::On && action.cacheable =>
            {
                let streams = [&result.stderr.tail, &result.stdout.tail];
                let denied = crate::sandbox::denied_files(
                    &self.workspace_root,
                    action,
                    &command.cwd,
                    streams.iter().map(|tail| tail.as_slice()),
                );
                let mut message = match crate::sandbox::describe_denials(&denied) {
                    Some(hint) => format!("{message}; {hint}"),
                    None => message,
                };
                let offline = !command.network
                    && streams
                        .iter()
                        .any(|tail| crate::sandbox::mentions_no_network(tail));
                if offline {
                    message.push_str(crate::sandbox::NO_NETWORK_HINT);
                }
                Err(message)
            }
            (_, executed) => executed,
        }
    }

    fn execute_step(
        &self,
        run: &Run<'_>,
        action: &Action,
        prepared: &Prepared<'_>,
        key: Option<&Sha256Digest>,
        result: &mut ActionResult,
    ) -> Result<(), String> {
        let started = Instant::now();
        result.cache = Some(if key.is_some() {
            CacheState::Miss
        } else {
            CacheState::Bypass
        });
        let workspace = &run.workspace;
        for output in &action.outputs {
            workspace
                .remove(output)
                .and_then(|()| workspace.make_parent(output))
                .map_err(|e| format!("cannot prepare the output `{output}`: {e}"))?;
        }
        // What the key says of the sources, to compare with once the action has run (only
        // a result that would be recorded needs it).
        let sources = key.map(|_| {
            crate::inputs::baseline(
                workspace.handle(),
                &action.inputs,
                prepared.produced,
                &self.source_stamps,
            )
        });
        let stream_error =
            |e: io::Error| format!("cannot capture the action's output streams: {e}");
        // What the program attempted, when it runs traced (validation).
        let traced = Mutex::new(Vec::new());
        let (ran, streams) = if matches!(action.step, ActionStep::Run(_)) {
            let (ends, drain, ended) = crate::capture::pipes().map_err(stream_error)?;
            let limit = self.options.stream_memory_limit;
            std::thread::scope(|scope| {
                let reader = scope.spawn(|| drain.run(self.store, limit));
                // `ends` moves into the program's request and is closed when it ends.
                let ran = self.run_step(run, action, prepared, ends, &traced);
                ended.mark();
                let streams = reader
                    .join()
                    .unwrap_or_else(|_| Err(io::Error::other("the stream reader panicked")));
                (ran, streams)
            })
        } else {
            let empty = Sha256Digest::of(b"");
            let silent = self.store.put_hashed_blob(b"", &empty).map(|()| {
                let stream = CapturedStream {
                    digest: Some(empty),
                    size: 0,
                    tail: Vec::new(),
                };
                (stream.clone(), stream)
            });
            (
                self.run_step_in_process(workspace, action, prepared.host_file),
                silent,
            )
        };
        let (stdout, stderr) = streams.map_err(stream_error)?;
        result.stdout = stdout;
        result.stderr = stderr;
        let accesses = traced
            .into_inner()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        result.findings = crate::sandbox::findings(&self.workspace_root, action, &accesses);
        let exit = ran?;
        let success_codes: &[i32] = match &action.step {
            ActionStep::Run(command) => &command.success_exit_codes,
            _ => &[0],
        };
        match exit {
            ProcessExit::Code(code) => {
                result.exit_code = Some(code);
                if !success_codes.contains(&code) {
                    return Err(format!("{} exited with code {code}", describe(action)));
                }
            }
            ProcessExit::Signal(signal) => {
                result.signal = Some(signal);
                return Err(format!(
                    "{} was killed by signal {signal}",
                    describe(action)
                ));
            }
            ProcessExit::TimedOut => {
                result.timed_out = true;
                let seconds = match &action.step {
                    ActionStep::Run(command) => command.timeout_seconds.unwrap_or(0),
                    _ => 0,
                };
                return Err(format!(
                    "{} was killed at its time limit of {seconds} s",
                    describe(action)
                ));
            }
        }
        if self.cancel.is_cancelled() {
            result.status = ActionStatus::Cancelled;
            result.message = Some("cancelled".to_owned());
            return Ok(());
        }
        if let ActionStep::Run(command) = &action.step
            && let Some(depfile) = &command.depfile
        {
            self.check_depfile(workspace, action, &command.cwd, depfile)?;
        }
        if let ActionStep::Run(command) = &action.step
            && command.output_symlinks == OutputSymlinks::MaterializeExternal
        {
            for output in &action.outputs {
                workspace
                    .materialize_external_links(output)
                    .map_err(|e| e.to_string())?;
            }
        }
        let mut entries = Vec::new();
        for output in &action.outputs {
            let captured = workspace
                .capture(output, key.map(|_| self.store), &run.stamps)
                .map_err(|e| e.to_string())?;
            entries.extend(captured);
        }
        // A program replaced since it was identified (an upgrade during the build) ran
        // under a key naming the old one: its result is not recorded.
        let changed_program = match (prepared.program, prepared.fingerprint) {
            (Some(program), Some(fingerprint)) if !ToolDigests::unchanged(program, fingerprint) => {
                Some(program)
            }
            _ => None,
        };
        if let Some(program) = changed_program {
            warn(
                result,
                format!(
                    "the program `{}` changed while the build ran: the result is not cached",
                    program.display()
                ),
            );
        }
        // A source edited since its digest was keyed: the outputs stay for this build, but
        // the result is not recorded under a key that does not describe what was read.
        let changed_sources = sources
            .as_ref()
            .map(|sources| crate::inputs::changed(workspace.handle(), sources))
            .unwrap_or_default();
        if !changed_sources.is_empty() {
            warn(result, crate::inputs::changed_warning(&changed_sources));
        }
        if let Some(key) = key.filter(|_| changed_program.is_none() && changed_sources.is_empty()) {
            let record = ActionRecord {
                exit_code: result.exit_code.unwrap_or(0),
                duration: started.elapsed(),
                stdout: stream_digest(&result.stdout),
                stderr: stream_digest(&result.stderr),
                outputs: entries.clone(),
            };
            self.store
                .write_record(key, &record)
                .map_err(|e| format!("cannot write the action's record to the store: {e}"))?;
            run.index.remember(key, &record, SystemTime::now());
            if let Some(remote) = self.remote_for(action) {
                remote.upload(key, &record);
            }
        }
        result.outputs = declared_outputs(action, &entries);
        result.entries = entries;
        result.status = ActionStatus::Succeeded;
        Ok(())
    }

    /// Runs the program of a [`ActionStep::Run`] action with `streams` as its stdout and
    /// stderr.
    pub(super) fn run_step(
        &self,
        run: &Run<'_>,
        action: &Action,
        prepared: &Prepared<'_>,
        streams: crate::capture::PipeEnds,
        traced: &Mutex<Vec<crate::sandbox::Access>>,
    ) -> Result<ProcessExit, String> {
        let workspace = &run.workspace;
        let ActionStep::Run(command) = &action.step else {
            return self.run_step_in_process(workspace, action, prepared.host_file);
        };
        let (Some(program), Some(environment)) = (prepared.program, prepared.environment) else {
            return Err("the program was not resolved".to_owned());
        };
        let cwd = absolute(&self.workspace_root, &command.cwd);
        let mut sandboxed_environment;
        let mut environment = environment;
        let validate = self.options.validate;
        let sandbox = match self.options.sandbox {
            crate::sandbox::SandboxMode::Off if !validate => None,
            _ => {
                sandboxed_environment = environment.clone();
                let sandboxed = crate::sandbox::SandboxedAction {
                    root: &self.workspace_root,
                    action,
                    command,
                    program,
                    build_dirs: run.build_dirs(),
                    host: &self.options.host_env,
                    traced: validate,
                };
                let sandbox = crate::sandbox::ActionSandbox::prepare(
                    &sandboxed,
                    &self.scratch,
                    &mut sandboxed_environment,
                )
                .map_err(|e| format!("cannot sandbox {}: {e}", describe(action)))?;
                environment = &sandboxed_environment;
                Some(sandbox)
            }
        };
        self.runner
            .run(ProcessRequest {
                program,
                argv: &command.argv,
                env: environment,
                confinement: sandbox.as_ref().map(|sandbox| &sandbox.prepared),
                trace: validate.then_some(traced),
                cwd: &cwd,
                stdout: streams.stdout,
                stderr: streams.stderr,
                cancel: &self.cancel,
                timeout: command.timeout_seconds.map(Duration::from_secs),
            })
            .map_err(|e| {
                format!(
                    "cannot start `{}` in `{}`: {e}",
                    program.display(),
                    cwd.display()
                )
            })
    }

    /// Performs a step that runs no program (writing, copying, linking, making a
    /// directory).
    pub(super) fn run_step_in_process(
        &self,
        workspace: &WorkspaceRoot,
        action: &Action,
        host_file: Option<Sha256Digest>,
    ) -> Result<ProcessExit, String> {
        let done = |written: io::Result<()>| {
            written
                .map(|()| ProcessExit::Code(0))
                .map_err(|e| format!("{} failed: {e}", describe(action)))
        };
        match &action.step {
            ActionStep::Run(_) => Err(format!(
                "{} runs a program: it cannot be performed in process",
                describe(action)
            )),
            ActionStep::WriteFile {
                path,
                content,
                executable,
            } => {
                let mode = if *executable { 0o755 } else { 0o644 };
                done(workspace.write_file(path, content.as_bytes(), mode))
            }
            ActionStep::Copy { from, to } => {
                // Links staged as links must lead inside the staging target's build
                // directory (or, outside one, inside the copy's own directory).
                let label = TargetLabel::from_id(&action.target);
                let directory = build_dir(&label.package, &label.name);
                let boundary = if is_under(to, &directory) {
                    directory.as_str()
                } else {
                    crate::outputs::split(to).0
                };
                done(crate::stage::stage(workspace, from, to, boundary))
            }
            ActionStep::Symlink { to, link } => done(workspace.symlink(to, link)),
            ActionStep::MakeDir { path } => done(workspace.make_directory(path)),
            ActionStep::MaterializeHostFile { source, to } => {
                let Some(expected) = host_file else {
                    return Err(format!("{} has no keyed digest", describe(action)));
                };
                let (content, mode) = read_host_file(Path::new(source))
                    .map_err(|e| format!("{} failed: cannot read it: {e}", describe(action)))?;
                let found = Sha256Digest::of(&content);
                if found != expected {
                    return Err(format!(
                        "{} failed: its content changed after it was keyed (digest {}, keyed {})",
                        describe(action),
                        found.to_hex(),
                        expected.to_hex()
                    ));
                }
                done(workspace.write_file(to, &content, mode))
            }
        }
    }
}

/// The content of the host file `path` and the mode its copy gets (executable when the
/// file is); refuses anything but a regular file.
fn read_host_file(path: &Path) -> io::Result<(Vec<u8>, u32)> {
    use std::os::unix::fs::PermissionsExt as _;
    let metadata = std::fs::metadata(path)?;
    if !metadata.is_file() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "it is not a regular file",
        ));
    }
    let mode = if metadata.permissions().mode() & 0o111 != 0 {
        0o755
    } else {
        0o644
    };
    Ok((std::fs::read(path)?, mode))
}
