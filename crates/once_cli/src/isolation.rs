//! The isolated module evaluator: every project module is evaluated first in a child
//! `once __evaluate-module` process with address-space, CPU and core-dump limits, which
//! is killed at the deadline. Whatever a module does (a statement that never returns, an
//! allocation of gigabytes, a recursion deeper than any stack), the `once` process that
//! asked (a query, `once mcp`, `once lsp`) only sees an `invalid_module` diagnostic at
//! the statement that was running. A module that finishes is then evaluated in-process,
//! with the same outcome, for its kinds.
//!
//! The protocol is JSON lines. Parent to child: one request
//! `{"path", "source", "max_steps", "max_bytes", "max_call_depth", "deadline_ms",
//! "reserved"}` (`reserved`: the prelude's kind names, so the child need not evaluate the
//! prelude again), then
//! one answer per `load()`: `{"text": …}` or `{"error": …}`. Child to parent:
//! `{"load": path}`, `{"at": [line, column, end_line, end_column]}` while statements run,
//! and last `{"done": true}` or `{"stopped": message}`.
//!
//! Planning with a project kind (calling its implementation) goes through the same child:
//! the request then also carries `"plan"`, the implementation's context
//! ([`PlanRequest`]), and the child evaluates the module and calls the implementation.

use std::io::{BufRead, BufReader, Write};
use std::path::PathBuf;
use std::process::{Child, ChildStdin};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use once_model::{AttrValue, Float};
use once_starlark::{
    DEADLINE_GRACE, EVALUATION_STACK_BYTES, EvalLimits, EvaluationProgress, Isolation,
    ModuleDiagnostic, ModuleEvaluation, ModuleSource, PlanDep, PlanRequest, StatementLocation,
};
use serde_json::{Value, json};

/// The child's address space beyond its evaluation stack: room for the binary, the
/// allocators' reservations and a Starlark heap well past its limit, far below what
/// would hurt the machine.
const WORKER_ADDRESS_SPACE: u64 = 768 << 20;

/// How often the child reports the running statement.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(10);

/// Runs module evaluations in `once __evaluate-module` children of `executable`.
pub struct ProcessIsolation {
    executable: PathBuf,
}

impl ProcessIsolation {
    /// Isolation through this very binary, when its path is known.
    pub fn of_current_executable() -> Option<ProcessIsolation> {
        std::env::current_exe()
            .ok()
            .map(|executable| ProcessIsolation { executable })
    }

    fn spawn(&self) -> std::io::Result<Child> {
        once_exec::launch::start_companion(
            &self.executable,
            &["__evaluate-module"],
            // mimalloc reserves 1 GiB of address space up front by default.
            &[("MIMALLOC_ARENA_RESERVE", "64MiB")],
        )
    }
}

fn send(stdin: &mut ChildStdin, message: &Value) -> bool {
    writeln!(stdin, "{message}")
        .and_then(|()| stdin.flush())
        .is_ok()
}

impl Isolation for ProcessIsolation {
    fn check(
        &self,
        path: &str,
        source: &str,
        limits: &EvalLimits,
        modules: &dyn ModuleSource,
    ) -> Option<ModuleEvaluation> {
        self.supervise(request(path, source, limits), path, limits, modules)
    }

    fn check_plan(
        &self,
        path: &str,
        source: &str,
        limits: &EvalLimits,
        modules: &dyn ModuleSource,
        plan: &PlanRequest,
    ) -> Option<ModuleDiagnostic> {
        let mut request = request(path, source, limits);
        request["plan"] = plan_to_json(plan);
        self.supervise(request, path, limits, modules)
            .and_then(|evaluation| evaluation.diagnostics.into_iter().next())
    }
}

/// The request for an evaluation of `source` as `path`.
fn request(path: &str, source: &str, limits: &EvalLimits) -> Value {
    json!({
        "path": path,
        "source": source,
        "max_steps": limits.max_steps,
        "max_bytes": limits.max_bytes,
        "max_call_depth": limits.max_call_depth,
        "deadline_ms": u64::try_from(limits.deadline.as_millis()).unwrap_or(u64::MAX),
        "reserved": once_starlark::reserved_kind_names(),
    })
}

impl ProcessIsolation {
    /// Sends `request` to a child, answers its loads, and returns the verdict: `None`
    /// when it finished, else one diagnostic at the statement it had reached.
    fn supervise(
        &self,
        request: Value,
        path: &str,
        limits: &EvalLimits,
        modules: &dyn ModuleSource,
    ) -> Option<ModuleEvaluation> {
        let started = Instant::now();
        // Without a child (no such executable any more), the in-process guards remain.
        let mut child = self.spawn().ok()?;
        let (Some(mut stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        };
        let (lines, from_child) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let Ok(line) = line else { break };
                if lines.send(line).is_err() {
                    break;
                }
            }
        });
        let progress = EvaluationProgress::default();
        send(&mut stdin, &request);
        let give_up = started.checked_add(limits.deadline.saturating_add(2 * DEADLINE_GRACE));
        let verdict = loop {
            let left = give_up.map_or(Duration::MAX, |at| {
                at.saturating_duration_since(Instant::now())
            });
            let line = match from_child.recv_timeout(left) {
                Ok(line) => line,
                Err(RecvTimeoutError::Timeout) => {
                    let _ = child.kill();
                    break Some(once_starlark::over_deadline(limits));
                }
                Err(RecvTimeoutError::Disconnected) => break Some(crashed(&mut child, limits)),
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else {
                continue;
            };
            if let Some(module) = message.get("load").and_then(Value::as_str) {
                let answer = match modules.read(module) {
                    Ok(text) => json!({ "text": text }),
                    Err(error) => json!({ "error": error }),
                };
                send(&mut stdin, &answer);
            } else if let Some(at) = message.get("at").and_then(location) {
                progress.set(at);
            } else if let Some(stopped) = message.get("stopped").and_then(Value::as_str) {
                break Some(stopped.to_owned());
            } else if message.get("done").is_some() {
                break None;
            }
        };
        drop(stdin);
        let _ = child.kill();
        let _ = child.wait();
        verdict.map(|message| once_starlark::stopped(path, &progress, message))
    }
}

/// Why the child ended without an answer.
fn crashed(child: &mut Child, limits: &EvalLimits) -> String {
    let status = child.wait().ok();
    #[cfg(unix)]
    let signal = status.and_then(|s| std::os::unix::process::ExitStatusExt::signal(&s));
    #[cfg(not(unix))]
    let signal: Option<i32> = None;
    let how = match (signal, status) {
        (Some(signal), _) => format!("was stopped by signal {signal}"),
        (None, Some(status)) => format!("ended with {status}"),
        (None, None) => "ended".to_owned(),
    };
    format!(
        "module evaluation ran out of memory or stack: the isolated evaluator {how} (limits: \
         {} MiB of address space, {} MiB of stack, {} bytes of Starlark heap); this statement \
         allocates too much or nests too deep",
        WORKER_ADDRESS_SPACE >> 20,
        EVALUATION_STACK_BYTES >> 20,
        limits.max_bytes
    )
}

fn at_message(at: StatementLocation) -> Value {
    json!({ "at": [at.line, at.column, at.end_line, at.end_column] })
}

fn location(value: &Value) -> Option<StatementLocation> {
    let numbers: Vec<u32> = value
        .as_array()?
        .iter()
        .filter_map(|n| n.as_u64().and_then(|n| u32::try_from(n).ok()))
        .collect();
    match numbers.as_slice() {
        &[line, column, end_line, end_column] => Some(StatementLocation {
            line,
            column,
            end_line,
            end_column,
        }),
        _ => None,
    }
}

/// The child's stdout, shared by the progress reporter and the main thread.
type Output = Arc<Mutex<std::io::Stdout>>;

fn report(output: &Output, message: &Value) {
    if let Ok(mut out) = output.lock() {
        let _ = writeln!(out, "{message}");
        let _ = out.flush();
    }
}

/// `load()` in the child: asks the parent and waits for its answer.
struct ParentModules {
    output: Output,
    input: Mutex<std::io::StdinLock<'static>>,
}

impl ModuleSource for ParentModules {
    fn read(&self, path: &str) -> Result<String, String> {
        report(&self.output, &json!({ "load": path }));
        let mut line = String::new();
        let mut input = self.input.lock().map_err(|_| "no parent".to_owned())?;
        input
            .read_line(&mut line)
            .map_err(|e| format!("reading the parent's answer: {e}"))?;
        let answer: Value =
            serde_json::from_str(&line).map_err(|_| "the parent did not answer".to_owned())?;
        match (answer.get("text"), answer.get("error")) {
            (Some(Value::String(text)), _) => Ok(text.clone()),
            (_, Some(Value::String(error))) => Err(error.clone()),
            _ => Err("the parent did not answer".to_owned()),
        }
    }
}

/// Limits the child's address space, CPU time and core dumps (a crash is expected, not a
/// bug to dump).
#[cfg(unix)]
fn limit_resources(limits: &EvalLimits) {
    use rustix::process::{Resource, Rlimit, setrlimit};
    let address_space = WORKER_ADDRESS_SPACE + EVALUATION_STACK_BYTES as u64;
    let cpu_seconds = limits.deadline.as_secs().saturating_add(2);
    for (resource, value) in [
        (Resource::As, address_space),
        (Resource::Cpu, cpu_seconds),
        (Resource::Core, 0),
    ] {
        let _ = setrlimit(
            resource,
            Rlimit {
                current: Some(value),
                maximum: Some(value),
            },
        );
    }
}

#[cfg(not(unix))]
fn limit_resources(_limits: &EvalLimits) {}

/// The child side: reads one request, evaluates it on a large-stack thread while a
/// reporter thread sends the running statement, and answers `done` or `stopped`.
pub fn run_worker() -> anyhow::Result<()> {
    let mut input = std::io::stdin().lock();
    let mut line = String::new();
    input.read_line(&mut line)?;
    let request: Value = serde_json::from_str(&line)?;
    let text = |key: &str| {
        request
            .get(key)
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| anyhow::anyhow!("the request has no `{key}`"))
    };
    let number = |key: &str| {
        request
            .get(key)
            .and_then(Value::as_u64)
            .ok_or_else(|| anyhow::anyhow!("the request has no `{key}`"))
    };
    let (path, source) = (text("path")?, text("source")?);
    let limits = EvalLimits {
        max_steps: number("max_steps")?,
        max_bytes: usize::try_from(number("max_bytes")?)?,
        max_call_depth: usize::try_from(number("max_call_depth")?)?,
        deadline: Duration::from_millis(number("deadline_ms")?),
    };
    limit_resources(&limits);
    let reserved = request
        .get("reserved")
        .and_then(Value::as_array)
        .ok_or_else(|| anyhow::anyhow!("the request has no `reserved`"))?;
    once_starlark::preset_reserved_kind_names(
        reserved
            .iter()
            .filter_map(|name| name.as_str().map(str::to_owned)),
    );
    let output: Output = Arc::new(Mutex::new(std::io::stdout()));
    // A statement reached for the first time is reported at once (a crash in it must not
    // lose its location); the reporter thread follows statements run again (loops).
    let progress = EvaluationProgress::with_first_sight({
        let output = output.clone();
        Arc::new(move |at: StatementLocation| report(&output, &at_message(at)))
    });
    let (finished, finishing) = mpsc::channel::<()>();
    let send_location = {
        let (output, progress) = (output.clone(), progress.clone());
        let mut sent = None;
        move || {
            let now = progress.current();
            if now != sent
                && let Some(at) = now
            {
                report(&output, &at_message(at));
                sent = now;
            }
        }
    };
    let reporter = {
        let mut send_location = send_location.clone();
        std::thread::spawn(move || {
            while let Err(RecvTimeoutError::Timeout) = finishing.recv_timeout(PROGRESS_INTERVAL) {
                send_location();
            }
        })
    };
    let modules = ParentModules {
        output: output.clone(),
        input: Mutex::new(input),
    };
    let outcome = match request.get("plan") {
        Some(plan) => {
            let plan = plan_from_json(plan)
                .ok_or_else(|| anyhow::anyhow!("the request's `plan` is malformed"))?;
            once_starlark::plan_module_on_thread(
                &path, &source, &limits, &modules, &plan, &progress,
            )
            .map(drop)
        }
        None => once_starlark::evaluate_on_thread(&path, &source, &limits, &modules, &progress)
            .map(drop)
            .map_err(|stopped| {
                stopped
                    .diagnostics
                    .first()
                    .map_or_else(String::new, |d| d.message.clone())
            }),
    };
    drop(finished);
    let _ = reporter.join();
    let mut send_location = send_location;
    send_location();
    match outcome {
        Ok(()) => report(&output, &json!({ "done": true })),
        Err(message) => report(&output, &json!({ "stopped": message })),
    }
    // An evaluation thread that never ends must not keep the process alive.
    std::process::exit(0)
}

fn strings(items: &[String]) -> Value {
    Value::from(items.to_vec())
}

fn string_list(value: Option<&Value>) -> Option<Vec<String>> {
    value?
        .as_array()?
        .iter()
        .map(|item| item.as_str().map(str::to_owned))
        .collect()
}

/// A [`PlanRequest`] as JSON for the child, attribute values tagged by type.
fn plan_to_json(plan: &PlanRequest) -> Value {
    json!({
        "target": plan.target,
        "package": plan.package,
        "name": plan.name,
        "kind": plan.kind,
        "capability": plan.capability,
        "attrs": plan.attrs.iter().map(|(name, value)| json!([name, attr_to_json(value)])).collect::<Vec<_>>(),
        "srcs": strings(&plan.srcs),
        "build_dir": plan.build_dir,
        "deps": plan.deps.iter().map(|dep| json!({
            "target": dep.target,
            "kind": dep.kind,
            "role": dep.role,
            "providers": strings(&dep.providers),
            "outputs": strings(&dep.outputs),
        })).collect::<Vec<_>>(),
        "tools": strings(&plan.tools),
        "workspace_inputs": strings(&plan.workspace_inputs),
        "toolchains": plan.toolchains.iter().map(|(name, value)| json!([name, value])).collect::<Vec<_>>(),
    })
}

fn plan_from_json(value: &Value) -> Option<PlanRequest> {
    let text = |v: &Value, key: &str| v.get(key)?.as_str().map(str::to_owned);
    Some(PlanRequest {
        target: text(value, "target")?,
        package: text(value, "package")?,
        name: text(value, "name")?,
        kind: text(value, "kind")?,
        capability: text(value, "capability")?,
        attrs: value
            .get("attrs")?
            .as_array()?
            .iter()
            .map(|pair| {
                Some((
                    pair.get(0)?.as_str()?.to_owned(),
                    attr_from_json(pair.get(1)?)?,
                ))
            })
            .collect::<Option<_>>()?,
        srcs: string_list(value.get("srcs"))?,
        build_dir: text(value, "build_dir")?,
        deps: value
            .get("deps")?
            .as_array()?
            .iter()
            .map(|dep| {
                Some(PlanDep {
                    target: text(dep, "target")?,
                    kind: text(dep, "kind")?,
                    role: text(dep, "role")?,
                    providers: string_list(dep.get("providers"))?,
                    outputs: string_list(dep.get("outputs"))?,
                })
            })
            .collect::<Option<_>>()?,
        tools: string_list(value.get("tools"))?,
        workspace_inputs: string_list(value.get("workspace_inputs"))?,
        toolchains: value
            .get("toolchains")?
            .as_array()?
            .iter()
            .map(|pair| {
                Some((
                    pair.get(0)?.as_str()?.to_owned(),
                    pair.get(1)?.as_str()?.to_owned(),
                ))
            })
            .collect::<Option<_>>()?,
    })
}

fn attr_to_json(value: &AttrValue) -> Value {
    match value {
        AttrValue::String(s) => json!({ "string": s }),
        AttrValue::Int(i) => json!({ "int": i }),
        AttrValue::Float(f) => json!({ "float": f.0 }),
        AttrValue::Bool(b) => json!({ "bool": b }),
        AttrValue::Datetime(s) => json!({ "datetime": s }),
        AttrValue::List(items) => {
            json!({ "list": items.iter().map(attr_to_json).collect::<Vec<_>>() })
        }
        AttrValue::Dict(entries) => json!({
            "dict": entries.iter().map(|(k, v)| json!([k, attr_to_json(v)])).collect::<Vec<_>>()
        }),
    }
}

fn attr_from_json(value: &Value) -> Option<AttrValue> {
    let (tag, inner) = value.as_object()?.iter().next()?;
    Some(match tag.as_str() {
        "string" => AttrValue::String(inner.as_str()?.to_owned()),
        "int" => AttrValue::Int(inner.as_i64()?),
        "float" => AttrValue::Float(Float(inner.as_f64()?)),
        "bool" => AttrValue::Bool(inner.as_bool()?),
        "datetime" => AttrValue::Datetime(inner.as_str()?.to_owned()),
        "list" => AttrValue::List(
            inner
                .as_array()?
                .iter()
                .map(attr_from_json)
                .collect::<Option<_>>()?,
        ),
        "dict" => AttrValue::Dict(
            inner
                .as_array()?
                .iter()
                .map(|pair| {
                    Some((
                        pair.get(0)?.as_str()?.to_owned(),
                        attr_from_json(pair.get(1)?)?,
                    ))
                })
                .collect::<Option<_>>()?,
        ),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_requests_survive_the_trip_to_the_child() {
        let plan = PlanRequest {
            target: "a/T".to_owned(),
            package: "a".to_owned(),
            name: "T".to_owned(),
            kind: "k".to_owned(),
            capability: "build".to_owned(),
            attrs: vec![
                ("s".to_owned(), AttrValue::String("x".to_owned())),
                ("i".to_owned(), AttrValue::Int(-3)),
                ("f".to_owned(), AttrValue::Float(Float(1.5))),
                ("b".to_owned(), AttrValue::Bool(true)),
                ("d".to_owned(), AttrValue::Datetime("1979-05-27".to_owned())),
                (
                    "l".to_owned(),
                    AttrValue::List(vec![AttrValue::Dict(vec![(
                        "k".to_owned(),
                        AttrValue::String("v".to_owned()),
                    )])]),
                ),
            ],
            srcs: vec!["a/x".to_owned()],
            build_dir: ".once/out/a/T".to_owned(),
            deps: vec![PlanDep {
                target: "b/U".to_owned(),
                kind: "filegroup".to_owned(),
                role: "deps".to_owned(),
                providers: vec!["files".to_owned()],
                outputs: vec!["b/y".to_owned()],
            }],
            tools: vec!["sh".to_owned()],
            workspace_inputs: vec!["Cargo.toml".to_owned()],
            toolchains: vec![("python".to_owned(), ".venv".to_owned())],
        };
        assert_eq!(plan_from_json(&plan_to_json(&plan)), Some(plan));
    }
}
