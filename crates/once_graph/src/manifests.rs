//! Reading one `once.toml` into typed declarations with ranges.
//!
//! `parse_manifest` is the lossless CST, on demand; `manifest` parses the text itself into
//! [`Manifest`] and keeps no tree (see [`manifest`]): every
//! `[[target]]`, the root-only `[workspace]` and `[modules]` tables, and the structural
//! diagnostics (syntax errors, unknown keys, wrong field types). Semantic checks against
//! kinds and other packages live in [`crate::validate`].

use once_db::{Db, File, Package, source_text};
use once_model::{
    AttrValue, Diagnostic, DiagnosticCode, Fix, Float, ManifestTable, TargetLabel, TextRange,
};
use once_syntax::value::{Entry, Table, Value, ValueKind};

use crate::text::{closest, range};

/// The CST of a manifest file, with its syntax errors, for tools that need the tree itself
/// (trivia, exact token layout). [`manifest`] does not go through it. Trees are large:
/// the least recently used past 128 are dropped when the database moves on.
#[salsa::tracked(returns(ref), lru = 128)]
pub fn parse_manifest(db: &dyn Db, file: File) -> once_syntax::Parse {
    once_syntax::parse(&source_text(db, file).text)
}

/// A value and the range of its text.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Spanned<T> {
    pub value: T,
    pub range: TextRange,
}

/// A value that may instead be a `{ select = { token = value, … } }` table.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Configurable<T> {
    Value(T),
    Select(Vec<SelectBranch<T>>),
}

/// One `token = value` branch of a select.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct SelectBranch<T> {
    pub token: Spanned<String>,
    pub value: T,
}

/// A list of dependency references, possibly selected by configuration.
pub type DepList = Configurable<Vec<Spanned<String>>>;

/// An attribute value as written: possibly a select, each value with its ranges.
pub type AttrDecl = Spanned<Configurable<AttrLiteral>>;

/// An attribute value with the range of its text and of each nested element.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AttrLiteral {
    pub value: AttrValue,
    pub range: TextRange,
    /// Ranges of list elements or table entry values, in order, recursively.
    pub parts: Vec<RangeTree>,
}

/// The range of a nested value and of its own parts.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RangeTree {
    pub range: TextRange,
    pub parts: Vec<RangeTree>,
}

impl AttrLiteral {
    fn new(value: &Value) -> AttrLiteral {
        AttrLiteral {
            value: attr_value(value),
            range: range(value.range),
            parts: range_parts(value),
        }
    }

    /// The range of the nested value at `path` (positions from the outside in), or the
    /// closest enclosing range that exists.
    pub fn range_at(&self, path: &[usize]) -> TextRange {
        let mut current = self.range;
        let mut parts = &self.parts;
        for &position in path {
            let Some(part) = parts.get(position) else {
                break;
            };
            current = part.range;
            parts = &part.parts;
        }
        current
    }
}

fn range_parts(value: &Value) -> Vec<RangeTree> {
    let tree = |v: &Value| RangeTree {
        range: range(v.range),
        parts: range_parts(v),
    };
    match &value.kind {
        ValueKind::Array(items) => items.iter().map(tree).collect(),
        ValueKind::Table(table) => table.entries.iter().map(|e| tree(&e.value)).collect(),
        _ => Vec::new(),
    }
}

/// One `[[target]]` table as written.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetDecl {
    /// The `[[target]]` header (or the inline table).
    pub header_range: TextRange,
    pub name: Option<Spanned<String>>,
    pub kind: Option<Spanned<String>>,
    pub srcs: Vec<Spanned<String>>,
    pub deps: Option<Spanned<DepList>>,
    /// Named roles: role name → references.
    pub dependencies: Vec<(Spanned<String>, Spanned<DepList>)>,
    pub visibility: Vec<Spanned<String>>,
    pub labels: Vec<Spanned<String>>,
    pub attrs: Vec<(Spanned<String>, AttrDecl)>,
}

impl TargetDecl {
    /// The range diagnostics about the whole target point at: its name, else its header.
    pub fn anchor(&self) -> TextRange {
        self.name
            .as_ref()
            .map_or(self.header_range, |name| name.range)
    }
}

/// The root-only `[workspace]` table.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct WorkspaceDecl {
    pub include: Vec<Spanned<String>>,
    pub exclude: Vec<Spanned<String>>,
    pub os: Option<Spanned<String>>,
    pub arch: Option<Spanned<String>>,
    pub tokens: Vec<Spanned<String>>,
    /// `test_attempts`, when it is an integer from 1 to 20.
    pub test_attempts: Option<Spanned<u32>>,
    /// `sandbox`, when it is `"on"` or `"off"`.
    pub sandbox: Option<Spanned<String>>,
    /// `python`, when it is a string (what it names is checked by
    /// `crate::interpreters`).
    pub python: Option<Spanned<String>>,
}

/// The root-only `[modules]` table.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ModulesDecl {
    pub range: TextRange,
    pub paths: Vec<Spanned<String>>,
}

/// Everything one manifest declares, plus its structural diagnostics.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Manifest {
    /// Workspace-relative path of the file.
    pub file: String,
    pub package: String,
    pub targets: Vec<TargetDecl>,
    pub workspace: Option<WorkspaceDecl>,
    pub modules: Option<ModulesDecl>,
    /// The root manifest's `[cache]`, its values checked (a bad one is left out, with a
    /// diagnostic).
    pub cache: Option<once_model::remote::RemoteCacheDecl>,
    pub diagnostics: Vec<Diagnostic>,
}

/// The typed declarations of a package's manifest.
///
/// It parses the text itself and drops the tree once read, instead of reading the memo of
/// [`parse_manifest`]: a memoised tree per package is never read again by anything on the
/// workspace-wide paths, and keeping 10,000 of them alive cost 160 MiB and a fifth of the
/// time of a cold validation at 100,000 targets (docs/benchmarks.md). An edit re-runs this
/// query anyway, so nothing is parsed twice.
#[salsa::tracked(returns(ref))]
pub fn manifest(db: &dyn Db, package: Package) -> Manifest {
    let file = package.manifest(db);
    let source = source_text(db, file);
    let mut reader = Reader {
        file: file.path(db).clone(),
        package: package.path(db).clone(),
        diagnostics: Vec::new(),
    };
    if let Some(error) = &source.read_error {
        reader.diagnostics.push(
            Diagnostic::new(
                DiagnosticCode::FileUnreadable,
                format!("cannot read `{}`: {error}", reader.file),
            )
            .at(reader.file.clone(), TextRange::empty(0)),
        );
        return reader.finish(Vec::new(), None, None, None);
    }
    read_parsed(reader, &once_syntax::parse(&source.text))
}

/// Reads manifest text that is not a workspace file (a proposed target, an edit preview).
pub fn read_manifest_text(file: &str, package: &str, text: &str) -> Manifest {
    let reader = Reader {
        file: file.to_owned(),
        package: package.to_owned(),
        diagnostics: Vec::new(),
    };
    read_parsed(reader, &once_syntax::parse(text))
}

fn read_parsed(mut reader: Reader, parse: &once_syntax::Parse) -> Manifest {
    let document = once_syntax::value::document(parse);
    // Only the syntax errors that will be reported become diagnostics: a broken file can
    // hold millions, and the rest are only counted.
    let cap = crate::validate::MAX_DIAGNOSTICS_PER_CODE;
    let syntax_error = |error: &once_syntax::SyntaxError| {
        Diagnostic::new(DiagnosticCode::SyntaxError, error.message.clone())
            .at(reader.file.clone(), range(error.range))
    };
    let mut diagnostics: Vec<Diagnostic> =
        document.errors.iter().take(cap).map(syntax_error).collect();
    if let Some(first_omitted) = document.errors.get(cap) {
        diagnostics.push(crate::validate::omitted(
            &syntax_error(first_omitted),
            document.errors.len() - cap,
        ));
    }
    reader.diagnostics.extend(diagnostics);
    reader.read_document(&document.root)
}

struct Reader {
    file: String,
    package: String,
    diagnostics: Vec<Diagnostic>,
}

impl Reader {
    fn finish(
        self,
        targets: Vec<TargetDecl>,
        workspace: Option<WorkspaceDecl>,
        modules: Option<ModulesDecl>,
        cache: Option<once_model::remote::RemoteCacheDecl>,
    ) -> Manifest {
        Manifest {
            file: self.file,
            package: self.package,
            targets,
            workspace,
            modules,
            cache,
            // A broken file can hold millions of errors: keep what is worth reading.
            diagnostics: crate::validate::cap_diagnostics(self.diagnostics),
        }
    }

    fn read_document(mut self, root: &Table) -> Manifest {
        let mut targets = Vec::new();
        let mut workspace = None;
        let mut modules = None;
        let mut cache = None;
        for entry in &root.entries {
            if !self.is_known(entry, ManifestTable::TopLevel, None) {
                continue;
            }
            match entry.key.as_str() {
                "target" => self.read_targets(entry, &mut targets),
                "workspace" if self.expect_root_only(entry) => {
                    workspace = self.read_workspace(entry);
                }
                "modules" if self.expect_root_only(entry) => {
                    modules = self.read_modules(entry);
                }
                "cache" if self.expect_root_only(entry) => {
                    cache = self.read_cache(entry);
                }
                _ => {}
            }
        }
        self.finish(targets, workspace, modules, cache)
    }

    fn diagnostic(
        &mut self,
        code: DiagnosticCode,
        message: String,
        at: TextRange,
    ) -> &mut Diagnostic {
        self.diagnostics
            .push(Diagnostic::new(code, message).at(self.file.clone(), at));
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// Whether the vocabulary has the entry's key in `table`; reports `unknown_key` if not,
    /// so the match over known keys that follows never sees a key the vocabulary lacks.
    fn is_known(&mut self, entry: &Entry, table: ManifestTable, target: Option<&str>) -> bool {
        if table.key(&entry.key).is_some() {
            return true;
        }
        let place = match table {
            ManifestTable::TopLevel => "the top level of `once.toml`",
            ManifestTable::Target => "a `[[target]]` table",
            ManifestTable::Workspace => "`[workspace]`",
            ManifestTable::Configuration => "`[workspace.configuration]`",
            ManifestTable::Modules => "`[modules]`",
            ManifestTable::Cache => "`[cache]`",
        };
        self.unknown_key(entry, place, &table.key_names(), target);
        false
    }

    fn unknown_key(&mut self, entry: &Entry, place: &str, known: &[&str], target: Option<&str>) {
        let suggestions = closest(&entry.key, known.iter().copied(), 1);
        let diagnostic = self.diagnostic(
            DiagnosticCode::UnknownKey,
            format!("unknown key `{}` in {place}", entry.key),
            range(entry.key_range),
        );
        if let Some(target) = target {
            diagnostic.target = Some(target.to_owned());
        }
        diagnostic.attribute = Some(entry.key.clone());
        if let Some(best) = suggestions.first() {
            diagnostic.fixes.push(Fix::replace(
                format!("Rename `{}` to `{best}`", entry.key),
                true,
                range(entry.key_range),
                best.as_str(),
            ));
        }
        diagnostic.repairs.push(match suggestions.first() {
            Some(best) => format!("Rename `{}` to `{best}`", entry.key),
            None => format!(
                "Remove `{}`; known keys are {}",
                entry.key,
                backticked(known)
            ),
        });
    }

    /// The value of `entry` when it is an integer from `low` to `high`; anything else is
    /// an `invalid_field_type` error at the value.
    fn bounded_integer(&mut self, entry: &Entry, low: u32, high: u32) -> Option<Spanned<u32>> {
        let expected = format!("an integer from {low} to {high}");
        match &entry.value.kind {
            ValueKind::Integer(number) => match u32::try_from(*number) {
                Ok(number) if (low..=high).contains(&number) => Some(Spanned {
                    value: number,
                    range: range(entry.value.range),
                }),
                _ => {
                    let diagnostic = self.diagnostic(
                        DiagnosticCode::InvalidFieldType,
                        format!("`{}` must be {expected}, not {number}", entry.key),
                        range(entry.value.range),
                    );
                    diagnostic.attribute = Some(entry.key.clone());
                    None
                }
            },
            _ => {
                self.type_error(&entry.key, &expected, &entry.value, None);
                None
            }
        }
    }

    fn type_error(&mut self, what: &str, expected: &str, value: &Value, target: Option<&str>) {
        let actual = kind_name(&value.kind);
        let diagnostic = self.diagnostic(
            DiagnosticCode::InvalidFieldType,
            format!("`{what}` must be {expected}, not {actual}"),
            range(value.range),
        );
        diagnostic.attribute = Some(what.to_owned());
        if let Some(target) = target {
            diagnostic.target = Some(target.to_owned());
        }
    }

    fn expect_root_only(&mut self, entry: &Entry) -> bool {
        if self.package.is_empty() {
            return true;
        }
        let diagnostic = self.diagnostic(
            DiagnosticCode::MisplacedTable,
            format!(
                "`[{}]` is only read from the root `once.toml`; here it has no effect",
                entry.key
            ),
            range(entry.key_range),
        );
        diagnostic.repairs.push(format!(
            "Move `[{}]` to the workspace root's `once.toml`",
            entry.key
        ));
        false
    }

    fn read_targets(&mut self, entry: &Entry, targets: &mut Vec<TargetDecl>) {
        match &entry.value.kind {
            ValueKind::Array(items) => {
                for item in items {
                    match &item.kind {
                        ValueKind::Table(table) => {
                            targets.push(self.read_target(table, item.range))
                        }
                        _ => self.type_error("target", "a table", item, None),
                    }
                }
            }
            ValueKind::Table(_) => {
                let diagnostic = self.diagnostic(
                    DiagnosticCode::InvalidFieldType,
                    "`target` must be an array of tables: write `[[target]]`, not `[target]`"
                        .into(),
                    range(entry.value.range),
                );
                diagnostic
                    .repairs
                    .push("Replace `[target]` with `[[target]]`".into());
            }
            _ => self.type_error(
                "target",
                "an array of tables (`[[target]]`)",
                &entry.value,
                None,
            ),
        }
    }

    fn read_target(&mut self, table: &Table, value_range: once_syntax::TextRange) -> TargetDecl {
        let header_range = range(table.header_range.unwrap_or(value_range));
        let name = table.get("name").and_then(|e| self.string(e, None));
        let id = name
            .as_ref()
            .map(|n| TargetLabel::new(self.package.clone(), n.value.clone()).id());
        let id = id.as_deref();
        let mut target = TargetDecl {
            header_range,
            name,
            kind: None,
            srcs: Vec::new(),
            deps: None,
            dependencies: Vec::new(),
            visibility: Vec::new(),
            labels: Vec::new(),
            attrs: Vec::new(),
        };
        for entry in &table.entries {
            if !self.is_known(entry, ManifestTable::Target, id) {
                continue;
            }
            match entry.key.as_str() {
                "name" => {}
                "kind" => target.kind = self.string(entry, id),
                "srcs" => target.srcs = self.string_list(entry, id),
                "visibility" => target.visibility = self.string_list(entry, id),
                "labels" => target.labels = self.string_list(entry, id),
                "deps" => target.deps = self.dep_list("deps", &entry.value, id),
                "dependencies" => match &entry.value.kind {
                    ValueKind::Table(roles) => {
                        for role in &roles.entries {
                            let attribute = format!("dependencies.{}", role.key);
                            if let Some(list) = self.dep_list(&attribute, &role.value, id) {
                                let role_name = Spanned {
                                    value: role.key.clone(),
                                    range: range(role.key_range),
                                };
                                target.dependencies.push((role_name, list));
                            }
                        }
                    }
                    _ => self.type_error(
                        "dependencies",
                        "a table of role = [labels]",
                        &entry.value,
                        id,
                    ),
                },
                "attrs" => match &entry.value.kind {
                    ValueKind::Table(attrs) => {
                        for attr in &attrs.entries {
                            let name = Spanned {
                                value: attr.key.clone(),
                                range: range(attr.key_range),
                            };
                            let value = self.configurable_attr(
                                &format!("attrs.{}", attr.key),
                                &attr.value,
                                id,
                            );
                            target.attrs.push((name, value));
                        }
                    }
                    _ => self.type_error("attrs", "a table", &entry.value, id),
                },
                _ => {}
            }
        }
        target
    }

    fn read_workspace(&mut self, entry: &Entry) -> Option<WorkspaceDecl> {
        let ValueKind::Table(table) = &entry.value.kind else {
            self.type_error("workspace", "a table", &entry.value, None);
            return None;
        };
        let mut workspace = WorkspaceDecl::default();
        for entry in &table.entries {
            if !self.is_known(entry, ManifestTable::Workspace, None) {
                continue;
            }
            match entry.key.as_str() {
                "include" => workspace.include = self.string_list(entry, None),
                "exclude" => workspace.exclude = self.string_list(entry, None),
                "test_attempts" => {
                    workspace.test_attempts = self.bounded_integer(entry, 1, 20);
                }
                "sandbox" => {
                    workspace.sandbox = self.string(entry, None).and_then(|value| {
                        if matches!(value.value.as_str(), "on" | "off") {
                            return Some(value);
                        }
                        let diagnostic = self.diagnostic(
                            DiagnosticCode::InvalidFieldType,
                            format!("`sandbox` must be \"on\" or \"off\", not {:?}", value.value),
                            value.range,
                        );
                        diagnostic.attribute = Some("sandbox".to_owned());
                        None
                    });
                }
                "server" => {
                    // Read by the CLI itself (`once_cli::server`); only checked here.
                    if let Some(value) = self.string(entry, None)
                        && !matches!(value.value.as_str(), "auto" | "off")
                    {
                        let diagnostic = self.diagnostic(
                            DiagnosticCode::InvalidFieldType,
                            format!(
                                "`server` must be \"auto\" or \"off\", not {:?}",
                                value.value
                            ),
                            value.range,
                        );
                        diagnostic.attribute = Some("server".to_owned());
                    }
                }
                "python" => workspace.python = self.string(entry, None),
                "configuration" => {
                    let ValueKind::Table(configuration) = &entry.value.kind else {
                        self.type_error("configuration", "a table", &entry.value, None);
                        continue;
                    };
                    for entry in &configuration.entries {
                        if !self.is_known(entry, ManifestTable::Configuration, None) {
                            continue;
                        }
                        match entry.key.as_str() {
                            "os" => workspace.os = self.string(entry, None),
                            "arch" => workspace.arch = self.string(entry, None),
                            "tokens" => workspace.tokens = self.string_list(entry, None),
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
        Some(workspace)
    }

    fn read_cache(&mut self, entry: &Entry) -> Option<once_model::remote::RemoteCacheDecl> {
        let ValueKind::Table(table) = &entry.value.kind else {
            self.type_error("cache", "a table", &entry.value, None);
            return None;
        };
        let mut cache = once_model::remote::RemoteCacheDecl::default();
        for entry in &table.entries {
            if !self.is_known(entry, ManifestTable::Cache, None) {
                continue;
            }
            match entry.key.as_str() {
                "remote" => {
                    let Some(url) = self.string(entry, None) else {
                        continue;
                    };
                    match once_model::remote::check_remote_url(&url.value) {
                        Ok(()) => cache.remote = Some(url.value),
                        Err(why) => {
                            let diagnostic = self.diagnostic(
                                DiagnosticCode::InvalidFieldType,
                                format!("`remote` {why}"),
                                url.range,
                            );
                            diagnostic.attribute = Some("remote".to_owned());
                        }
                    }
                }
                "instance_name" => {
                    cache.instance_name = self.string(entry, None).map(|s| s.value);
                }
                "credentials_file" => {
                    cache.credentials_file = self.string(entry, None).map(|s| s.value);
                }
                "read_only" => cache.read_only = self.boolean(entry),
                "max_upload_size" => {
                    let Some(size) = self.string(entry, None) else {
                        continue;
                    };
                    match once_model::remote::parse_size(&size.value) {
                        Some(bytes) => cache.max_upload_size = Some(bytes),
                        None => {
                            let diagnostic = self.diagnostic(
                                DiagnosticCode::InvalidFieldType,
                                format!(
                                    "`max_upload_size` must be a size (`500M`, `2GiB`, bytes), not {:?}",
                                    size.value
                                ),
                                size.range,
                            );
                            diagnostic.attribute = Some("max_upload_size".to_owned());
                        }
                    }
                }
                "upload_jobs" => {
                    cache.upload_jobs = self.bounded_integer(entry, 1, 64).map(|n| n.value);
                }
                "timeout_seconds" => {
                    cache.timeout_seconds = self
                        .bounded_integer(entry, 1, 3600)
                        .map(|n| u64::from(n.value));
                }
                _ => {}
            }
        }
        Some(cache)
    }

    fn boolean(&mut self, entry: &Entry) -> Option<bool> {
        match &entry.value.kind {
            ValueKind::Boolean(value) => Some(*value),
            _ => {
                self.type_error(&entry.key, "`true` or `false`", &entry.value, None);
                None
            }
        }
    }

    fn read_modules(&mut self, entry: &Entry) -> Option<ModulesDecl> {
        let ValueKind::Table(table) = &entry.value.kind else {
            self.type_error("modules", "a table", &entry.value, None);
            return None;
        };
        let mut modules = ModulesDecl {
            range: range(entry.key_range),
            paths: Vec::new(),
        };
        for entry in &table.entries {
            if !self.is_known(entry, ManifestTable::Modules, None) {
                continue;
            }
            if entry.key == "paths" {
                modules.paths = self.string_list(entry, None);
            }
        }
        Some(modules)
    }

    fn string(&mut self, entry: &Entry, target: Option<&str>) -> Option<Spanned<String>> {
        match &entry.value.kind {
            ValueKind::String(s) => Some(Spanned {
                value: s.clone(),
                range: range(entry.value.range),
            }),
            _ => {
                self.type_error(&entry.key, "a string", &entry.value, target);
                None
            }
        }
    }

    fn string_list(&mut self, entry: &Entry, target: Option<&str>) -> Vec<Spanned<String>> {
        self.strings_of(&entry.key, &entry.value, target)
            .unwrap_or_default()
    }

    fn strings_of(
        &mut self,
        what: &str,
        value: &Value,
        target: Option<&str>,
    ) -> Option<Vec<Spanned<String>>> {
        let ValueKind::Array(items) = &value.kind else {
            self.type_error(what, "a list of strings", value, target);
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        for item in items {
            match &item.kind {
                ValueKind::String(s) => out.push(Spanned {
                    value: s.clone(),
                    range: range(item.range),
                }),
                _ => self.type_error(&format!("{what} element"), "a string", item, target),
            }
        }
        Some(out)
    }

    fn dep_list(
        &mut self,
        what: &str,
        value: &Value,
        target: Option<&str>,
    ) -> Option<Spanned<DepList>> {
        let list = match select_branches(value) {
            Some(Ok(branches)) => {
                let mut out = Vec::new();
                for branch in branches {
                    let strings = self.strings_of(
                        &format!("{what} select branch `{}`", branch.0.key),
                        &branch.0.value,
                        target,
                    )?;
                    out.push(SelectBranch {
                        token: Spanned {
                            value: branch.0.key.clone(),
                            range: range(branch.0.key_range),
                        },
                        value: strings,
                    });
                }
                Configurable::Select(out)
            }
            Some(Err(message)) => {
                let diagnostic =
                    self.diagnostic(DiagnosticCode::InvalidSelect, message, range(value.range));
                diagnostic.attribute = Some(what.to_owned());
                diagnostic.target = target.map(str::to_owned);
                return None;
            }
            None => Configurable::Value(self.strings_of(what, value, target)?),
        };
        Some(Spanned {
            value: list,
            range: range(value.range),
        })
    }

    fn configurable_attr(&mut self, what: &str, value: &Value, target: Option<&str>) -> AttrDecl {
        let configurable = match select_branches(value) {
            Some(Ok(branches)) => Configurable::Select(
                branches
                    .into_iter()
                    .map(|branch| SelectBranch {
                        token: Spanned {
                            value: branch.0.key.clone(),
                            range: range(branch.0.key_range),
                        },
                        value: AttrLiteral::new(&branch.0.value),
                    })
                    .collect(),
            ),
            Some(Err(message)) => {
                let diagnostic =
                    self.diagnostic(DiagnosticCode::InvalidSelect, message, range(value.range));
                diagnostic.attribute = Some(what.to_owned());
                diagnostic.target = target.map(str::to_owned);
                Configurable::Select(Vec::new())
            }
            None => Configurable::Value(AttrLiteral::new(value)),
        };
        Spanned {
            value: configurable,
            range: range(value.range),
        }
    }
}

struct Branch<'a>(&'a Entry);

/// `Some` when `value` is a table whose only key is `select`: its branches, or why the
/// select is malformed.
fn select_branches(value: &Value) -> Option<Result<Vec<Branch<'_>>, String>> {
    let ValueKind::Table(table) = &value.kind else {
        return None;
    };
    let select = table.get("select")?;
    if table.entries.len() != 1 {
        return Some(Err(
            "a `select` table must have `select` as its only key".into()
        ));
    }
    let ValueKind::Table(branches) = &select.value.kind else {
        return Some(Err(
            "`select` must be a table of configuration token = value".into(),
        ));
    };
    if branches.entries.is_empty() {
        return Some(Err("`select` has no branches".into()));
    }
    Some(Ok(branches.entries.iter().map(Branch).collect()))
}

/// Converts a TOML value to an attribute value.
pub fn attr_value(value: &Value) -> AttrValue {
    match &value.kind {
        ValueKind::String(s) => AttrValue::String(s.clone()),
        ValueKind::Integer(i) => AttrValue::Int(*i),
        ValueKind::Float(f) => AttrValue::Float(Float(f.0)),
        ValueKind::Boolean(b) => AttrValue::Bool(*b),
        ValueKind::Datetime(d) => AttrValue::Datetime(d.text.clone()),
        ValueKind::Array(items) => AttrValue::List(items.iter().map(attr_value).collect()),
        ValueKind::Table(table) => AttrValue::Dict(
            table
                .entries
                .iter()
                .map(|e| (e.key.clone(), attr_value(&e.value)))
                .collect(),
        ),
    }
}

fn kind_name(kind: &ValueKind) -> &'static str {
    match kind {
        ValueKind::String(_) => "a string",
        ValueKind::Integer(_) => "an integer",
        ValueKind::Float(_) => "a float",
        ValueKind::Boolean(_) => "a boolean",
        ValueKind::Datetime(_) => "a datetime",
        ValueKind::Array(_) => "an array",
        ValueKind::Table(_) => "a table",
    }
}

pub(crate) fn backticked(items: &[&str]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}
