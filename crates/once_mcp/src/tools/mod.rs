//! The tool registry: every tool's name, description, schemas, annotations, gating and
//! handler, the tools themselves split by family (`graph`, `edit`, `run`, `modules`).
//!
//! Each tool takes one argument type (`Deserialize + JsonSchema`, unknown fields
//! refused): its input schema is derived from the type, a call's arguments are read into
//! it before anything runs, and the tool's code gets the typed value ([`Query`],
//! [`Edit`], [`Execution`]). Handlers only convert: arguments in, an `Analysis` call, a
//! `once_json` record out.

pub mod arguments;
mod edit;
mod graph;
mod modules;
mod run;

use once_analysis::{Analysis, AnalysisHost, Cancellable};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

pub use edit::{ApplyEdit, MaterializeExample, PlanInit};
pub use graph::*;
pub use modules::{FetchExternalSource, QueryModuleContract, ValidateModule, ValidateScript};
pub use run::{
    BuildTarget, ExecScript, RunTarget, RunTests, RuntimeLogs, RuntimeStatus, StartTarget,
    StopRuntime,
};

/// Behaviour hints; all four are always sent.
#[derive(Clone, Copy, Debug)]
pub struct Annotations {
    pub read_only: bool,
    pub destructive: bool,
    pub idempotent: bool,
    pub open_world: bool,
}

/// Read-only, local, idempotent: every query tool.
const QUERY: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Read-only but reaching outside the workspace (the network): `openWorldHint`.
const EXTERNAL: Annotations = Annotations {
    read_only: true,
    destructive: false,
    idempotent: false,
    open_world: true,
};

/// Rewrites a manifest: destructive, not idempotent (a `create` twice fails).
const EDIT: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: false,
    open_world: false,
};

/// Creates files, never overwrites different content: idempotent, not destructive.
const MATERIALIZE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: true,
    open_world: false,
};

/// Runs processes (builds, runs): not idempotent (a run may do anything), not destructive
/// of the workspace's sources (outputs go to `.once/out`).
const EXECUTE: Annotations = Annotations {
    read_only: false,
    destructive: false,
    idempotent: false,
    open_world: true,
};

/// Ends processes of a runtime session: destructive (the processes are gone),
/// idempotent (a second stop answers the same end), local.
const STOP: Annotations = Annotations {
    read_only: false,
    destructive: true,
    idempotent: true,
    open_world: false,
};

/// What a tool does, which decides how the server runs it and whether it is gated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ToolKind {
    /// Reads the graph from a database snapshot; always available.
    ReadOnly,
    /// Writes manifests or sources through the host (`--allow-run`).
    Editing,
    /// Plans from a snapshot, then runs processes in a background job (`--allow-run`).
    Executing,
}

impl ToolKind {
    /// Whether the tool is listed and callable only with `--allow-run`.
    pub fn gated(self) -> bool {
        self != ToolKind::ReadOnly
    }

    pub fn as_str(self) -> &'static str {
        match self {
            ToolKind::ReadOnly => "read-only",
            ToolKind::Editing => "editing",
            ToolKind::Executing => "executing",
        }
    }
}

/// A read-only tool: its arguments answer from a database snapshot.
pub trait Query: DeserializeOwned + JsonSchema {
    fn answer(self, analysis: &Analysis) -> Cancellable<Result<ToolOutput, ToolError>>;
}

/// A tool that writes files: it gets the host, plans with a snapshot, writes through the
/// host (which applies the changes at once, so the next call sees them) and answers.
pub trait Edit: DeserializeOwned + JsonSchema {
    fn apply(self, host: &mut AnalysisHost) -> Result<ToolOutput, ToolError>;
}

/// A tool that runs processes: it plans from a snapshot; the server runs the job in the
/// background (`crate::execute`) without the database.
pub trait Execution: DeserializeOwned + JsonSchema {
    fn plan(
        self,
        analysis: &Analysis,
    ) -> Cancellable<Result<crate::execute::ExecutionJob, ToolError>>;
}

type QueryHandler =
    fn(&Analysis, &Map<String, Value>) -> Cancellable<Result<ToolOutput, ToolError>>;
type EditHandler = fn(&mut AnalysisHost, &Map<String, Value>) -> Result<ToolOutput, ToolError>;
type ExecuteHandler = fn(
    &Analysis,
    &Map<String, Value>,
) -> Cancellable<Result<crate::execute::ExecutionJob, ToolError>>;

/// How a tool is run; the variant matches its [`ToolKind`]. Each reads the call's
/// arguments into the tool's argument type first.
#[derive(Clone, Copy)]
pub enum ToolHandler {
    ReadOnly(QueryHandler),
    Editing(EditHandler),
    Executing(ExecuteHandler),
}

impl ToolHandler {
    pub fn kind(self) -> ToolKind {
        match self {
            ToolHandler::ReadOnly(_) => ToolKind::ReadOnly,
            ToolHandler::Editing(_) => ToolKind::Editing,
            ToolHandler::Executing(_) => ToolKind::Executing,
        }
    }
}

fn query<A: Query>(
    analysis: &Analysis,
    arguments: &Map<String, Value>,
) -> Cancellable<Result<ToolOutput, ToolError>> {
    match arguments::parse::<A>(arguments) {
        Ok(arguments) => arguments.answer(analysis),
        Err(message) => Ok(Err(message)),
    }
}

fn edit<A: Edit>(
    host: &mut AnalysisHost,
    arguments: &Map<String, Value>,
) -> Result<ToolOutput, ToolError> {
    arguments::parse::<A>(arguments)?.apply(host)
}

fn execution<A: Execution>(
    analysis: &Analysis,
    arguments: &Map<String, Value>,
) -> Cancellable<Result<crate::execute::ExecutionJob, ToolError>> {
    match arguments::parse::<A>(arguments) {
        Ok(arguments) => arguments.plan(analysis),
        Err(message) => Ok(Err(message)),
    }
}

/// What a tool returns when it succeeds.
#[derive(Debug)]
pub struct ToolOutput {
    pub result: Value,
    /// Set when a list was cut: pass it back as `cursor` for the next page.
    pub next_cursor: Option<String>,
    /// Inputs the answer could not use, beside `result` (always set by the tools that
    /// report them, even when empty).
    pub warnings: Option<Vec<String>>,
}

/// Why a tool failed (a tool error: `isError: true` with this message).
pub type ToolError = String;

/// One tool of the registry.
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: String,
    /// Derived from the tool's argument type ([`arguments::input_schema`]).
    pub input_schema: Value,
    /// Reads a call's arguments into the tool's argument type: the problem, if any, in
    /// words that name the argument.
    pub check: fn(&Map<String, Value>) -> Result<(), String>,
    /// The schema of `structuredContent` (`result` is the tool's record), derived from
    /// the record type ([`crate::schema::output_schema`]).
    pub output_schema: Value,
    pub annotations: Annotations,
    /// How it runs; its kind decides whether it needs `--allow-run`.
    pub handler: ToolHandler,
}

impl Tool {
    fn query<A: Query>(
        name: &'static str,
        title: &'static str,
        description: String,
        output_schema: Value,
        annotations: Annotations,
    ) -> Tool {
        Tool::of::<A>(
            name,
            title,
            description,
            output_schema,
            annotations,
            ToolHandler::ReadOnly(query::<A>),
        )
    }

    fn edit<A: Edit>(
        name: &'static str,
        title: &'static str,
        description: String,
        output_schema: Value,
        annotations: Annotations,
    ) -> Tool {
        Tool::of::<A>(
            name,
            title,
            description,
            output_schema,
            annotations,
            ToolHandler::Editing(edit::<A>),
        )
    }

    fn execution<A: Execution>(
        name: &'static str,
        title: &'static str,
        description: String,
        output_schema: Value,
        annotations: Annotations,
    ) -> Tool {
        Tool::of::<A>(
            name,
            title,
            description,
            output_schema,
            annotations,
            ToolHandler::Executing(execution::<A>),
        )
    }

    /// A tool taking `A`, its input schema and check derived from `A`; `handler` reads
    /// the arguments into `A` too.
    fn of<A: DeserializeOwned + JsonSchema>(
        name: &'static str,
        title: &'static str,
        description: String,
        output_schema: Value,
        annotations: Annotations,
        handler: ToolHandler,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            input_schema: arguments::input_schema::<A>(),
            check: arguments::check::<A>,
            output_schema,
            annotations,
            handler,
        }
    }

    pub fn kind(&self) -> ToolKind {
        self.handler.kind()
    }

    /// Listed and callable only with `--allow-run`.
    pub fn gated(&self) -> bool {
        self.kind().gated()
    }

    /// The `tools/list` entry; `modern_fields` adds title and output schema (2025-06-18+),
    /// `annotations` the hints (2025-03-26+).
    pub fn listing(&self, modern_fields: bool, annotations: bool) -> Value {
        let mut entry = json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
        });
        if modern_fields {
            entry["title"] = json!(self.title);
            entry["outputSchema"] = self.output_schema.clone();
        }
        if annotations {
            entry["annotations"] = json!({
                "title": self.title,
                "readOnlyHint": self.annotations.read_only,
                "destructiveHint": self.annotations.destructive,
                "idempotentHint": self.annotations.idempotent,
                "openWorldHint": self.annotations.open_world,
            });
        }
        entry
    }
}

/// Every tool, in the stable order `tools/list` shows.
pub fn registry() -> Vec<Tool> {
    vec![
        graph::workspace(),
        graph::targets(),
        graph::target(),
        graph::capabilities(),
        graph::schema(),
        graph::example(),
        graph::target_kinds(),
        graph::tests(),
        graph::test_results(),
        graph::affected_tests(),
        graph::evidence(),
        graph::validate_workspace(),
        graph::validate_target(),
        edit::plan_init(),
        edit::apply_edit(),
        edit::materialize_example(),
        run::build_target(),
        run::validate_actions(),
        run::run_target(),
        run::exec_script(),
        run::run_tests(),
        run::start_target(),
        run::runtime_status(),
        run::runtime_logs(),
        run::stop_runtime(),
        modules::fetch_external_source(),
        modules::module_contract(),
        modules::validate_script(),
        modules::validate_module(),
    ]
}

fn page_none(result: Value) -> ToolOutput {
    ToolOutput {
        result,
        next_cursor: None,
        warnings: None,
    }
}

/// Cuts `items` to one page of at most `limit` items from the offset `cursor` names, and
/// converts only that page to JSON (converting a 100,000-item list to cut 200 out of it
/// dominated the answer).
fn paginate<T>(
    items: &[T],
    limit: usize,
    cursor: Option<&str>,
    convert: impl Fn(&T) -> Value,
) -> Result<ToolOutput, ToolError> {
    let offset = match cursor {
        None => 0,
        Some(cursor) => parse_cursor(cursor).ok_or_else(|| {
            format!("invalid cursor `{cursor}`: pass the `next_cursor` of a previous page")
        })?,
    };
    if offset > items.len() {
        return Err(format!(
            "cursor `{}` is past the end of the list ({} items); the list changed, start again without a cursor",
            cursor.unwrap_or(""),
            items.len()
        ));
    }
    let end = offset.saturating_add(limit).min(items.len());
    let next_cursor = (end < items.len()).then(|| format!("offset:{end}"));
    Ok(ToolOutput {
        result: Value::Array(items[offset..end].iter().map(convert).collect()),
        next_cursor,
        warnings: None,
    })
}

fn parse_cursor(cursor: &str) -> Option<usize> {
    cursor.strip_prefix("offset:")?.parse().ok()
}

/// A lookup's error with the tool that lists the candidates.
fn not_found_message(not_found: &once_analysis::NotFound) -> String {
    not_found.with_hint(listing_hint)
}

/// The tool that lists the candidates of a failed lookup.
pub(crate) fn listing_hint(listing: once_analysis::Listing) -> &'static str {
    match listing {
        once_analysis::Listing::Targets => "`once_query_targets` lists them",
        once_analysis::Listing::TargetKinds => "`once_list_target_kinds` lists them",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kind decides the gating and agrees with the annotations: read-only tools say
    /// `readOnlyHint: true`, the others need `--allow-run`.
    #[test]
    fn every_tool_kind_agrees_with_its_annotations() {
        for tool in registry() {
            assert_eq!(
                tool.annotations.read_only,
                tool.kind() == ToolKind::ReadOnly,
                "{}",
                tool.name
            );
            assert_eq!(
                tool.gated(),
                tool.kind() != ToolKind::ReadOnly,
                "{}",
                tool.name
            );
        }
        let executing: Vec<&str> = registry()
            .iter()
            .filter(|t| t.kind() == ToolKind::Executing)
            .map(|t| t.name)
            .collect();
        assert_eq!(
            executing,
            [
                "once_build_target",
                "once_validate_actions",
                "once_run_target",
                "once_exec_script",
                "once_run_tests",
                "once_start_target",
                "once_stop_runtime"
            ]
        );
    }
}
