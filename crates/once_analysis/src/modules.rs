//! Project modules: the authoring contract (`module-contract`) and validating one module
//! file (`validate-module`).
//!
//! The helper list of the contract comes from `once_starlark::helpers`, which a test
//! keeps equal to the registered globals; the rest is the fixed text of the contract.

use once_db::{LineIndex, RootDatabase, Workspace};
use once_graph::{
    ModuleKinds, evaluate_module_source, kind_owners, module_kinds, module_path_problem,
};
use once_model::{Diagnostic, DiagnosticCode, KindSchema};

use crate::{Analysis, Cancellable, LocatedDiagnostic};

/// One entry of a contract list: a call or field, and what it is for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ContractEntry {
    pub signature: String,
    pub purpose: String,
}

/// Everything a harness needs to write a project-local target kind.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleContract {
    pub language: String,
    /// The `[modules]` snippet for the root `once.toml`.
    pub registration: String,
    /// The declaration helpers as Starlark stubs (signatures, defaults, rules).
    pub declaration_source: String,
    /// Every declaration helper a module can call, with its signature.
    pub helpers: Vec<ContractEntry>,
    /// The attribute types `attr.of` accepts and the constructors that make them.
    pub attribute_types: Vec<ContractEntry>,
    pub schema_invariants: Vec<String>,
    /// How modules load each other.
    pub load_contract: Vec<String>,
    /// The fields of the context an implementation function receives.
    pub context_fields: Vec<ContractEntry>,
    /// The action primitives an implementation may call (the `actions.*` helpers).
    pub action_primitives: Vec<ContractEntry>,
    pub maintenance_loop: Vec<String>,
    /// Where the starter goes, and the starter module itself (it validates).
    pub starter_path: String,
    pub starter: String,
    /// A target using the starter's kind.
    pub starter_target: String,
}

fn entry(signature: &str, purpose: &str) -> ContractEntry {
    ContractEntry {
        signature: signature.to_owned(),
        purpose: purpose.to_owned(),
    }
}

/// The starter module: a `generated_text` kind.
pub const STARTER: &str = r#"# modules/generated_text.star: a text file generated from lines.

def _build(ctx):
    out = ctx.build_dir + "/" + ctx.attrs.output
    actions.write(out, "\n".join(ctx.attrs.lines) + "\n")
    return [out]

target_kind(
    name = "generated_text",
    docs = "A text file generated from a list of lines, for small configuration files.",
    attrs = {
        "output": attr.string("Name of the generated file, relative to the build directory.", required = True, configurable = False),
        "lines": attr.string_list("Lines to write, in order.", required = True),
    },
    providers = ["generated_file"],
    capabilities = [capability("build", "Writes the file.", output_groups = ["default"])],
    implementations = {"build": _build},
    examples = [
        example(
            "generated-text-minimal",
            "Minimal generated text",
            "Start here to generate one small text file.",
            files = {"once.toml": "[[target]]\nname = \"Greeting\"\nkind = \"generated_text\"\nattrs = { output = \"greeting.txt\", lines = [\"hello\"] }\n"},
        ),
    ],
)
"#;

/// The module-authoring contract.
pub fn module_contract() -> ModuleContract {
    let helpers: Vec<ContractEntry> = once_starlark::helpers()
        .into_iter()
        .map(|h| ContractEntry {
            signature: h.signature,
            purpose: h.docs.lines().map(str::trim).collect::<Vec<_>>().join(" "),
        })
        .collect();
    let action_primitives = helpers
        .iter()
        .filter(|h: &&ContractEntry| h.signature.starts_with("actions."))
        .cloned()
        .collect();
    ModuleContract {
        language: "Starlark".to_owned(),
        registration: "[modules]\npaths = [\"modules/*.star\"]\n".to_owned(),
        declaration_source: once_starlark::declaration_source().to_owned(),
        helpers,
        attribute_types: vec![
            entry("string", "attr.string; `values` restricts it to listed strings."),
            entry("bool", "attr.bool."),
            entry("int", "attr.int: a 64-bit integer."),
            entry("float", "attr.float: ints are accepted."),
            entry("label", "attr.label: a target reference, resolved like `deps`."),
            entry("path", "attr.path: a package-relative path of a file (or directory) the package has; a missing one is a `missing_file` error."),
            entry("list[T]", "attr.string_list, attr.label_list, attr.path_list, or attr.of(\"list[T]\")."),
            entry("dict[T]", "attr.string_dict, or attr.of(\"dict[T]\"): string keys."),
            entry("any", "attr.of(\"any\"): any TOML value."),
        ],
        schema_invariants: vec![
            "Kind names are lower-case identifiers, unique across the built-in prelude and every project module; the first module in path order keeps a name.".to_owned(),
            "Attribute, provider, dependency-role and output-group names are lower-case identifiers, unique within their list.".to_owned(),
            "`required = True` and a `default` are mutually exclusive; a default must fit the declared type and any `values`.".to_owned(),
            "`configurable = False` forbids `{ select = { … } }` values; use it when output identity must not vary by configuration.".to_owned(),
            "Dependency roles name the providers they accept; `min` <= `max` bound how many dependencies a role takes.".to_owned(),
            "Capabilities are `build`, `run` or `test`; `requires_outputs` names output groups another capability of the same kind produces; only `test` takes a `runner`.".to_owned(),
            "Example files are relative paths without `.` or `..`, include a `once.toml`, and are not empty.".to_owned(),
            "A capability is implemented by the function `implementations` names for it: it receives the context `ctx`, declares actions with `actions.*` and returns `None` or its default output paths. A capability without an implementation plans no actions.".to_owned(),
            "Every output lies under `ctx.build_dir`; paths are workspace-relative without `.` or `..`; an output has one producer. A broken rule, an error or a limit reached while planning is an `implementation_error` diagnostic at the failing line, with the target's id.".to_owned(),
            "Evaluation stops at the first error; kinds declared before it stay available. Evaluation is bounded (2,000,000 steps, 64 MiB of heap, 200 nested calls, 3 s; `range` no longer than the step limit; `str`, `repr` and `json.encode` of values nested at most 1,000 deep): a module past a limit is one `invalid_module` at the running statement, never a hang or a crash.".to_owned(),
            "Modules are trusted code but have no host access: no `print`, no file or network reads; `load()` reads only workspace `.star` files.".to_owned(),
        ],
        load_contract: vec![
            "`load(\"other.star\", \"symbol\")` reads a module relative to the loading module's directory; `load(\"//lib/x.star\", …)` is relative to the workspace root.".to_owned(),
            "Loaded modules must be `.star` files inside the workspace (not hidden, ignored or symlinked); `..` may not climb above the root; cycles are errors.".to_owned(),
            "Symbols of a loaded module are shared; kinds it declares itself belong to it and are registered only if `[modules] paths` matches it. A kind declared by calling a loaded helper belongs to the caller.".to_owned(),
            "Editing a module re-evaluates it and the modules that load it, nothing else.".to_owned(),
        ],
        context_fields: once_starlark::CONTEXT_FIELDS
            .iter()
            .map(|(field, purpose)| entry(field, purpose))
            .collect(),
        action_primitives,
        maintenance_loop: vec![
            "Read this contract (`once query module-contract`).".to_owned(),
            "Fetch and inspect the authoritative upstream rule (`once query external-source URL`); record it with `source_reference`.".to_owned(),
            "Write or edit the module under a `[modules] paths` pattern.".to_owned(),
            "Validate it: `once query validate-module modules/<name>.star`; repair until valid.".to_owned(),
            "Declare targets of the new kind, then `once query validate-workspace`.".to_owned(),
        ],
        starter_path: "modules/generated_text.star".to_owned(),
        starter: STARTER.to_owned(),
        starter_target: "[[target]]\nname = \"Greeting\"\nkind = \"generated_text\"\nattrs = { output = \"greeting.txt\", lines = [\"hello\"] }\n".to_owned(),
    }
}

/// The outcome of `validate-module`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ModuleValidation {
    pub valid: bool,
    /// The workspace-relative path, as given.
    pub path: String,
    /// The kinds the module declares (also when invalid: those before the error).
    pub target_kinds: Vec<KindSchema>,
    pub diagnostics: Vec<LocatedDiagnostic>,
}

impl Analysis {
    /// The module-authoring contract.
    pub fn module_contract(&self) -> ModuleContract {
        module_contract()
    }

    /// Evaluates one workspace-relative `.star` file (registered or not) and checks its
    /// kind names against the prelude and the other registered modules. `Err` when the
    /// path does not name a Starlark file at all.
    pub fn validate_module(&self, path: &str) -> Cancellable<Result<ModuleValidation, String>> {
        let path = path.to_owned();
        self.with_db(move |db, ws| validate_module(db, ws, &path))
    }
}

fn validate_module(
    db: &RootDatabase,
    workspace: Workspace,
    path: &str,
) -> Result<ModuleValidation, String> {
    let path = path.trim().replace('\\', "/");
    if path.is_empty() {
        return Err("invalid module path: the path is empty".to_owned());
    }
    if !path.ends_with(".star") {
        return Err(format!(
            "module path must name a Starlark file ending in `.star`: `{path}`"
        ));
    }
    let path = path.strip_prefix("./").unwrap_or(&path).to_owned();
    let invalid = |diagnostic: Diagnostic| ModuleValidation {
        valid: false,
        path: path.clone(),
        target_kinds: Vec::new(),
        diagnostics: vec![LocatedDiagnostic::unlocated(diagnostic)],
    };
    if let Some(why) = module_path_problem(&path) {
        return Ok(invalid(
            Diagnostic::new(
                DiagnosticCode::InvalidModulePath,
                format!("module path `{path}` {why}"),
            )
            .with_repair(
                "Pass a workspace-relative path such as `modules/my_kind.star`".to_owned(),
            ),
        ));
    }
    let root = workspace.root(db).clone();
    let absolute = root.join(&path);
    let system = db.system_arc();
    if let (Ok(real), Ok(real_root)) = (system.canonicalize(&absolute), system.canonicalize(&root))
        && !real.starts_with(&real_root)
    {
        return Ok(invalid(
            Diagnostic::new(
                DiagnosticCode::InvalidModulePath,
                format!("module path `{path}` resolves outside the workspace (through a symlink)"),
            )
            .in_file(path.clone())
            .with_repair("Copy the module into the workspace instead of linking to it".to_owned()),
        ));
    }
    let tracked = workspace
        .star_files(db)
        .iter()
        .copied()
        .find(|f| *f.path(db) == path);
    let (evaluated, index): (ModuleKinds, LineIndex) = match tracked {
        Some(file) => (
            module_kinds(db, file).clone(),
            once_db::line_index(db, file).clone(),
        ),
        None => match system.read_to_string(&absolute) {
            Ok(text) => (
                evaluate_module_source(db, workspace, &path, &text),
                LineIndex::new(text.into()),
            ),
            Err(error) => {
                return Ok(invalid(
                    Diagnostic::new(
                        DiagnosticCode::ModuleNotFound,
                        format!("reading module `{path}`: {error}"),
                    )
                    .in_file(path.clone())
                    .with_repair(
                        "Create the module at the requested workspace-relative path".to_owned(),
                    )
                    .with_repair(
                        "Ensure the module is readable UTF-8 text, then validate again".to_owned(),
                    ),
                ));
            }
        },
    };
    let mut diagnostics: Vec<Diagnostic> = evaluated.diagnostics.clone();
    // Kind names must be unique against the prelude and the registered modules: a name
    // another owner keeps is a duplicate here (as in the workspace's module diagnostics).
    let owners = kind_owners(db, workspace);
    match tracked {
        Some(file) => diagnostics.extend(evaluated.kinds_owned_elsewhere(db, file, owners)),
        None => diagnostics.extend(evaluated.kinds.iter().filter_map(|kind| {
            let owner = owners.owner(&kind.name)?;
            Some(evaluated.duplicate_kind(&path, &kind.name, &owner.describe(db)))
        })),
    }
    if evaluated.kinds.is_empty() && diagnostics.is_empty() {
        diagnostics.push(
            Diagnostic::new(
                DiagnosticCode::InvalidModule,
                format!("module `{path}` declares no target kind"),
            )
            .at(path.clone(), once_model::TextRange::empty(0))
            .with_repair(
                "Call `target_kind(…)` at least once; see the module contract (`once query module-contract`, MCP `once_query_module_contract`)".to_owned(),
            ),
        );
    }
    let diagnostics: Vec<LocatedDiagnostic> = diagnostics
        .into_iter()
        .map(|diagnostic| LocatedDiagnostic::new(diagnostic, Some(&index)))
        .collect();
    Ok(ModuleValidation {
        valid: !diagnostics.iter().any(|d| d.diagnostic.is_error()),
        path,
        target_kinds: evaluated.kinds,
        diagnostics,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_starter_evaluates_and_declares_its_kind() {
        let contract = module_contract();
        let evaluation = once_starlark::evaluate_module(
            &contract.starter_path,
            &contract.starter,
            &once_starlark::EvalLimits::default(),
        );
        assert_eq!(evaluation.diagnostics, []);
        let names: Vec<&str> = evaluation.kinds.iter().map(|k| k.name.as_str()).collect();
        assert_eq!(names, ["generated_text"]);
        assert!(contract.starter_target.contains("generated_text"));
    }

    #[test]
    fn the_contract_lists_exactly_the_registered_helpers() {
        let contract = module_contract();
        let mut listed: Vec<String> = contract
            .helpers
            .iter()
            .map(|h| h.signature.split('(').next().unwrap_or_default().to_owned())
            .collect();
        listed.sort();
        assert_eq!(listed, once_starlark::registered_helper_names());
    }
}
