//! The kind catalog: every kind a target may use.
//!
//! The built-in prelude first, then the kinds of the project modules that the root
//! manifest's `[modules] paths` select, in module path order:
//!
//! - [`module_files`]: the `.star` files the patterns match, with pattern diagnostics.
//! - [`module_kinds`]: one module evaluated (per file), `load()` reading other modules
//!   through [`source_text`], so salsa re-runs it exactly when it or a module it loads
//!   changes.
//! - [`kind_owners`]: who declares each kind name first (prelude, then modules in path
//!   order).
//! - [`kind_catalog`]: prelude + modules, first declaration of a name wins. It holds no
//!   ranges, so an edit that keeps every kind backdates it and nothing downstream re-runs.
//! - [`module_diagnostics`]: everything wrong with the modules, placed in the module or
//!   the root manifest.

use std::sync::Arc;

use once_db::{Db, File, GlobEntry, LineIndex, Workspace, source_text};
use once_model::{Diagnostic, DiagnosticCode, KindSchema, LineCol, TextRange};
use once_starlark::{EvalLimits, KindSite, ModuleErrorKind, ModuleSource};

use crate::manifests::manifest;
use crate::resolve::SourcePattern;
use crate::settings::root_package;

/// The kinds available to a workspace, sorted by name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KindCatalog {
    /// Shared: the prelude's kinds are the process's own, not copies.
    pub kinds: Vec<Arc<KindSchema>>,
    /// Set when the prelude itself failed to evaluate (a bug in `once`).
    pub prelude_error: Option<String>,
}

impl KindCatalog {
    pub fn get(&self, name: &str) -> Option<&KindSchema> {
        self.kinds
            .binary_search_by(|k| k.name.as_str().cmp(name))
            .ok()
            .map(|i| &*self.kinds[i])
    }

    pub fn names(&self) -> impl Iterator<Item = &str> + Clone {
        self.kinds.iter().map(|k| k.name.as_str())
    }
}

/// The built-in kinds: evaluated once per process (they depend on no input), so not a
/// query.
pub fn prelude_catalog() -> &'static Result<Vec<Arc<KindSchema>>, String> {
    once_starlark::prelude_kinds()
}

/// The project modules `[modules] paths` select, and what is wrong with the patterns.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ModuleFiles {
    /// Sorted by path, each once.
    pub files: Vec<File>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Matches the root manifest's `[modules] paths` against the workspace's `.star` files.
#[salsa::tracked(returns(ref))]
pub fn module_files(db: &dyn Db, workspace: Workspace) -> ModuleFiles {
    let mut out = ModuleFiles::default();
    let Some(root) = root_package(db, workspace) else {
        return out;
    };
    let manifest = manifest(db, root);
    let Some(modules) = &manifest.modules else {
        return out;
    };
    let candidates = workspace.star_files(db);
    // Entries apply in order: a pattern adds what it matches, an exclusion takes back what
    // the entries before it added, so the last entry matching a module decides.
    for pattern in &modules.paths {
        let text = pattern.value.as_str();
        let entry = GlobEntry::parse(text);
        let here = |code, message: String| {
            Diagnostic::new(code, message)
                .at(manifest.file.clone(), pattern.range)
                .with_attribute("modules.paths")
        };
        let what = if entry.is_exclusion() {
            "module exclusion"
        } else {
            "module pattern"
        };
        if let Some(why) = module_path_problem(entry.pattern) {
            out.diagnostics.push(
                here(
                    DiagnosticCode::InvalidModulePath,
                    format!("{what} `{text}` {why}"),
                )
                .with_repair(
                    "Use a workspace-relative pattern such as `modules/*.star`".to_owned(),
                ),
            );
            continue;
        }
        let compiled = match SourcePattern::cached(entry.pattern) {
            Ok(compiled) => compiled,
            Err(why) => {
                out.diagnostics.push(here(
                    DiagnosticCode::InvalidGlob,
                    format!("{what} `{text}` is invalid: {why}"),
                ));
                continue;
            }
        };
        if entry.is_exclusion() {
            let before = out.files.len();
            out.files.retain(|file| !compiled.matches(file.path(db)));
            if out.files.len() == before {
                out.diagnostics.push(
                    here(
                        DiagnosticCode::UnusedExclusion,
                        format!(
                            "module exclusion `{text}` excludes no `.star` file that the patterns before it select"
                        ),
                    )
                    .with_repair(
                        "Put the exclusion after the patterns whose modules it leaves out, or remove it"
                            .to_owned(),
                    ),
                );
            }
            continue;
        }
        let before = out.files.len();
        out.files.extend(
            candidates
                .iter()
                .copied()
                .filter(|file| compiled.matches(file.path(db))),
        );
        if out.files.len() == before {
            out.diagnostics.push(
                here(
                    DiagnosticCode::ModuleNotFound,
                    format!("module pattern `{text}` matches no `.star` file"),
                )
                .with_repair(format!(
                    "Create a module matching `{text}`, or fix the pattern"
                )),
            );
        }
    }
    out.files.sort_by(|a, b| a.path(db).cmp(b.path(db)));
    out.files.dedup();
    out
}

/// Why a module path or pattern may not be used, if it may not: it must stay inside
/// the workspace.
pub fn module_path_problem(path: &str) -> Option<&'static str> {
    if path.trim().is_empty() {
        Some("is empty")
    } else if path.starts_with('/') || path.starts_with('\\') || path.get(1..2) == Some(":") {
        Some("is absolute; module paths are relative to the workspace root")
    } else if path.split(['/', '\\']).any(|s| s == "..") {
        Some("leaves the workspace with `..`")
    } else {
        None
    }
}

/// One module, evaluated.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ModuleKinds {
    /// Sorted by name.
    pub kinds: Vec<KindSchema>,
    /// The `target_kind` call of each kind, as byte ranges in the module.
    pub sites: Vec<(String, TextRange)>,
    /// At most one: evaluation stops at the first error.
    pub diagnostics: Vec<Diagnostic>,
    /// Every module it loads, directly or not.
    pub loads: Vec<String>,
}

impl ModuleKinds {
    /// `duplicate_kind` for each kind of this module (at `file`) whose name another owner
    /// keeps: the prelude, or a module earlier in path order.
    pub fn kinds_owned_elsewhere(
        &self,
        db: &dyn Db,
        file: File,
        owners: &KindOwners,
    ) -> Vec<Diagnostic> {
        let path = file.path(db);
        self.kinds
            .iter()
            .filter_map(|kind| match owners.owner(&kind.name) {
                Some(owner) if owner != KindOwner::Module(file) => {
                    Some(self.duplicate_kind(path, &kind.name, &owner.describe(db)))
                }
                _ => None,
            })
            .collect()
    }

    /// `duplicate_kind` on the `target_kind` call of `kind` in the module at `path`, whose
    /// name `owner` (the prelude, another module) declared first.
    pub fn duplicate_kind(&self, path: &str, kind: &str, owner: &str) -> Diagnostic {
        let range = self
            .sites
            .iter()
            .find(|(name, _)| name == kind)
            .map_or(TextRange::empty(0), |(_, range)| *range);
        Diagnostic::new(
            DiagnosticCode::DuplicateKind,
            format!("target kind `{kind}` is already declared by {owner}"),
        )
        .at(path.to_owned(), range)
        .with_repair("Rename one of the kinds; kind names are unique in a workspace".to_owned())
    }
}

/// The resource limits of project modules.
pub fn module_limits() -> EvalLimits {
    EvalLimits::default()
}

/// Reads `load()`ed modules from the workspace's `.star` inputs, so the caller's query
/// depends on exactly the modules it loads.
pub(crate) struct DbModules<'a> {
    pub(crate) db: &'a dyn Db,
    pub(crate) workspace: Workspace,
}

impl ModuleSource for DbModules<'_> {
    fn read(&self, path: &str) -> Result<String, String> {
        let files = self.workspace.star_files(self.db);
        let file = files
            .binary_search_by(|f| f.path(self.db).as_str().cmp(path))
            .map(|i| files[i])
            .map_err(|_| "no such `.star` file in the workspace".to_owned())?;
        let text = source_text(self.db, file);
        match &text.read_error {
            Some(error) => Err(error.clone()),
            None => Ok(text.text.to_string()),
        }
    }
}

/// Evaluates one module file with the declaration helpers and `load()`.
#[salsa::tracked(returns(ref))]
pub fn module_kinds(db: &dyn Db, file: File) -> ModuleKinds {
    let path = file.path(db).clone();
    let text = source_text(db, file);
    if let Some(error) = &text.read_error {
        return ModuleKinds {
            diagnostics: vec![
                Diagnostic::new(
                    DiagnosticCode::FileUnreadable,
                    format!("cannot read module `{path}`: {error}"),
                )
                .at(path, TextRange::empty(0)),
            ],
            ..ModuleKinds::default()
        };
    }
    let Some(workspace) = Workspace::try_get(db) else {
        return ModuleKinds::default();
    };
    evaluate_module_source(db, workspace, &path, &text.text)
}

/// Evaluates module text as if it were the workspace file `path` (used by
/// [`module_kinds`], and by `validate-module` for files the database does not track).
/// `load()` reads the workspace's `.star` inputs.
pub fn evaluate_module_source(
    db: &dyn Db,
    workspace: Workspace,
    path: &str,
    text: &str,
) -> ModuleKinds {
    let path = path.to_owned();
    let modules = DbModules { db, workspace };
    let evaluation =
        once_starlark::evaluate_module_with_loads(&path, text, &module_limits(), &modules);
    let index = LineIndex::new(text.into());
    let range_of = |line: u32, column: u32, end_line: u32, end_column: u32| TextRange {
        start: index.offset(LineCol { line, column }),
        end: index.offset(LineCol {
            line: end_line,
            column: end_column,
        }),
    };
    let site_range =
        |site: &KindSite| range_of(site.line, site.column, site.end_line, site.end_column);
    let diagnostics = evaluation
        .diagnostics
        .iter()
        .map(|d| {
            let code = match d.kind {
                ModuleErrorKind::Invalid => DiagnosticCode::InvalidModule,
                ModuleErrorKind::DuplicateKind => DiagnosticCode::DuplicateKind,
                ModuleErrorKind::LoadNotFound => DiagnosticCode::ModuleNotFound,
            };
            let mut diagnostic = Diagnostic::new(code, d.message.clone()).at(
                path.clone(),
                range_of(d.line, d.column, d.end_line, d.end_column),
            );
            diagnostic.repairs = match d.kind {
                ModuleErrorKind::DuplicateKind => {
                    vec!["Rename the kind; built-in kind names are reserved".to_owned()]
                }
                ModuleErrorKind::LoadNotFound => vec![
                    "Load a workspace `.star` file by a path relative to this module, or `//` + a workspace-relative path".to_owned(),
                ],
                ModuleErrorKind::Invalid => vec![
                    "Compare the module with the module contract (`once query module-contract`, MCP `once_query_module_contract`)".to_owned(),
                    "Fix the reported Starlark or target kind contract error and validate the module again (`once query validate-module`, MCP `once_validate_module`)".to_owned(),
                ],
            };
            diagnostic
        })
        .collect();
    ModuleKinds {
        sites: evaluation
            .sites
            .iter()
            .map(|site| (site.kind.clone(), site_range(site)))
            .collect(),
        kinds: evaluation.kinds,
        diagnostics,
        loads: evaluation.loads,
    }
}

/// Who declares a kind name first.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum KindOwner {
    Prelude,
    Module(File),
}

impl KindOwner {
    /// The owner in a message: "the built-in prelude" or the module's path in backticks.
    pub fn describe(self, db: &dyn Db) -> String {
        match self {
            KindOwner::Prelude => "the built-in prelude".to_owned(),
            KindOwner::Module(file) => format!("`{}`", file.path(db)),
        }
    }
}

/// The owner of every kind name: the prelude first, then the registered modules in path
/// order; the first declaration of a name keeps it. The one answer to "whose kind is
/// this" for the catalog, the module diagnostics and `validate-module`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct KindOwners {
    owners: std::collections::BTreeMap<String, KindOwner>,
}

impl KindOwners {
    pub fn owner(&self, name: &str) -> Option<KindOwner> {
        self.owners.get(name).copied()
    }
}

#[salsa::tracked(returns(ref))]
pub fn kind_owners(db: &dyn Db, workspace: Workspace) -> KindOwners {
    let mut owners = std::collections::BTreeMap::new();
    if let Ok(kinds) = prelude_catalog() {
        for kind in kinds {
            owners.insert(kind.name.clone(), KindOwner::Prelude);
        }
    }
    for &file in &module_files(db, workspace).files {
        for kind in &module_kinds(db, file).kinds {
            owners
                .entry(kind.name.clone())
                .or_insert(KindOwner::Module(file));
        }
    }
    KindOwners { owners }
}

/// The workspace's kind catalog: the prelude, then each module's kinds (a name already
/// taken is skipped and reported by [`module_diagnostics`]).
#[salsa::tracked(returns(ref))]
pub fn kind_catalog(db: &dyn Db, workspace: Workspace) -> KindCatalog {
    let (mut kinds, prelude_error) = match prelude_catalog() {
        Ok(kinds) => (kinds.clone(), None),
        Err(error) => (Vec::new(), Some(error.clone())),
    };
    let owners = kind_owners(db, workspace);
    for &file in &module_files(db, workspace).files {
        for kind in &module_kinds(db, file).kinds {
            if owners.owner(&kind.name) == Some(KindOwner::Module(file)) {
                kinds.push(Arc::new(kind.clone()));
            }
        }
    }
    kinds.sort_by(|a, b| a.name.cmp(&b.name));
    KindCatalog {
        kinds,
        prelude_error,
    }
}

/// Every problem of the project modules: pattern diagnostics (in the root manifest),
/// evaluation errors, and kind names declared twice (in the later module).
#[salsa::tracked(returns(ref))]
pub fn module_diagnostics(db: &dyn Db, workspace: Workspace) -> Box<[Diagnostic]> {
    let selected = module_files(db, workspace);
    let owners = kind_owners(db, workspace);
    let mut diagnostics = selected.diagnostics.clone();
    for &file in &selected.files {
        let evaluated = module_kinds(db, file);
        diagnostics.extend(evaluated.diagnostics.iter().cloned());
        diagnostics.extend(evaluated.kinds_owned_elsewhere(db, file, owners));
    }
    diagnostics.into_boxed_slice()
}
