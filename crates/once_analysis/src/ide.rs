//! Editor answers in editor terms: completion, hover, definition, references, document
//! symbols, code actions and formatting for one `once.toml`.
//!
//! Positions are 1-based lines and columns in Unicode scalar values, like
//! [`crate::LocatedDiagnostic`]; protocol crates convert them to their own encoding.
//! Everything here is computed from `once_graph` queries (manifests with ranges, target
//! summaries, the kind catalog) and plain text around the cursor.

use once_db::{File, Package, RootDatabase, Workspace, line_index, source_text};
use once_graph::{
    Configurable, DepList, Spanned, TargetDecl, kind_catalog, manifest, package_by_path,
    target_summaries, workspace_diagnostics, workspace_packages,
};
use once_model::{
    AttrType, DiagnosticCode, KindOrigin, KindSchema, LabelError, LineCol, TargetLabel, TextRange,
    resolve_reference,
};

pub use crate::format::format_manifest;
use crate::{Analysis, Cancellable, LocatedDiagnostic};
pub use once_model::{LineColRange, Severity};

impl Analysis {
    /// The text of a workspace file as the database reads it (open editor buffers included).
    pub fn file_text(&self, path: &str) -> Cancellable<Option<String>> {
        let path = path.to_owned();
        self.with_db(move |db, _| file_text(db, &path))
    }

    /// Diagnostics of the workspace grouped by file (workspace-relative path). Each file's
    /// located diagnostics are a query, so an edit re-locates only the files it changed.
    pub fn diagnostics_by_file(
        &self,
    ) -> Cancellable<std::collections::BTreeMap<String, Vec<LocatedDiagnostic>>> {
        self.with_db(crate::located_diagnostics_by_file)
    }

    /// Completion proposals at a position of a manifest.
    pub fn completions(&self, file: &str, at: LineCol) -> Cancellable<Vec<CompletionItem>> {
        self.with_manifest(file, move |ctx| completions(ctx, at))
    }

    /// Hover documentation at a position of a manifest.
    pub fn hover(&self, file: &str, at: LineCol) -> Cancellable<Option<HoverInfo>> {
        self.with_manifest(file, move |ctx| hover(ctx, at))
    }

    /// Where the label or kind at a position is declared.
    pub fn definition(&self, file: &str, at: LineCol) -> Cancellable<Vec<FileRange>> {
        self.with_manifest(file, move |ctx| definition(ctx, at))
    }

    /// Every dependency entry naming the target at a position (or the label there).
    pub fn references(
        &self,
        file: &str,
        at: LineCol,
        include_declaration: bool,
    ) -> Cancellable<Vec<FileRange>> {
        self.with_manifest(file, move |ctx| references(ctx, at, include_declaration))
    }

    /// The targets of a manifest as symbols.
    pub fn document_symbols(&self, file: &str) -> Cancellable<Vec<TargetSymbol>> {
        self.with_manifest(file, symbols)
    }

    /// Mechanical fixes for the diagnostics overlapping a range.
    pub fn code_actions(&self, file: &str, range: LineColRange) -> Cancellable<Vec<CodeAction>> {
        self.with_manifest(file, move |ctx| code_actions(ctx, range))
    }

    /// The edit that formats a manifest, if it changes anything.
    pub fn format(&self, file: &str) -> Cancellable<Option<TextEdit>> {
        self.with_manifest(file, formatting)
    }

    fn with_manifest<T: Default>(
        &self,
        file: &str,
        f: impl FnOnce(&Ctx<'_>) -> T + std::panic::UnwindSafe,
    ) -> Cancellable<T> {
        let file = file.to_owned();
        self.with_db(move |db, ws| match Ctx::new(db, ws, &file) {
            Some(ctx) => f(&ctx),
            None => T::default(),
        })
    }
}

/// What a completion item inserts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CompletionKind {
    Kind,
    Attribute,
    Value,
    Label,
    Key,
    Table,
}

/// One completion proposal.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompletionItem {
    pub label: String,
    pub kind: CompletionKind,
    pub detail: Option<String>,
    /// Markdown.
    pub documentation: Option<String>,
    /// The text to insert (defaults to `label`).
    pub insert_text: String,
    /// The text this item replaces (the word typed so far).
    pub replace: LineColRange,
    /// Orders items: required attributes first.
    pub sort_text: String,
}

/// Markdown shown on hover, and the range it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HoverInfo {
    pub markdown: String,
    pub range: LineColRange,
}

/// A range in a workspace file.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct FileRange {
    /// Workspace-relative path.
    pub file: String,
    pub range: LineColRange,
}

/// A target as a document symbol.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TargetSymbol {
    pub name: String,
    /// The kind, when written.
    pub detail: Option<String>,
    /// The whole `[[target]]` table.
    pub range: LineColRange,
    /// The name (or the header).
    pub selection_range: LineColRange,
}

/// One text replacement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TextEdit {
    pub range: LineColRange,
    pub new_text: String,
}

/// A mechanical fix for a diagnostic.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CodeAction {
    pub title: String,
    /// The diagnostic code it fixes.
    pub code: String,
    /// The range of the diagnostic it fixes.
    pub diagnostic_range: LineColRange,
    pub file: String,
    pub edits: Vec<TextEdit>,
    pub preferred: bool,
}

/// The keys a `[[target]]` table may hold, with their docs.
pub const TARGET_KEYS: &[(&str, &str)] = &[
    ("name", "The target's name, unique in its package."),
    (
        "kind",
        "The target kind; `once query target-kinds` lists them.",
    ),
    ("srcs", "Package-relative source globs."),
    (
        "deps",
        "Targets this one depends on (the kind's `deps` role).",
    ),
    (
        "dependencies",
        "Dependencies by named role: `{ role = [\"label\"] }`.",
    ),
    (
        "visibility",
        "Who may depend on this target: `public`, `private`, `package:<pkg>`, `subtree:<pkg>` or a target.",
    ),
    (
        "labels",
        "Free-form tags (`integration`, …) used to select tests.",
    ),
    ("attrs", "The kind's attributes."),
];

/// Table headers a manifest may hold.
const TABLE_HEADERS: &[(&str, &str)] = &[
    ("[[target]]", "Declares one target."),
    ("[target.attrs]", "The attributes of the target above."),
    (
        "[target.dependencies]",
        "The named dependency roles of the target above.",
    ),
    (
        "[workspace]",
        "Root manifest only: package include/exclude.",
    ),
    (
        "[workspace.configuration]",
        "Root manifest only: the configuration `select` resolves against.",
    ),
    (
        "[modules]",
        "Root manifest only: project Starlark modules declaring kinds.",
    ),
];

pub(crate) struct Ctx<'a> {
    db: &'a RootDatabase,
    ws: Workspace,
    file: File,
    package: Package,
    text: std::sync::Arc<str>,
}

impl<'a> Ctx<'a> {
    pub(crate) fn new(db: &'a RootDatabase, ws: Workspace, path: &str) -> Option<Ctx<'a>> {
        let package_path = package_of_manifest(path)?;
        let package = package_by_path(db, ws).get(package_path)?;
        let file = package.manifest(db);
        if file.path(db) != path {
            return None;
        }
        let text = source_text(db, file).text.clone();
        Some(Ctx {
            db,
            ws,
            file,
            package,
            text,
        })
    }

    fn offset(&self, position: LineCol) -> u32 {
        line_index(self.db, self.file).offset(position)
    }

    fn range(&self, range: TextRange) -> LineColRange {
        line_index(self.db, self.file).range(range)
    }

    fn package_path(&self) -> &str {
        self.package.path(self.db)
    }

    fn targets(&self) -> &'a [TargetDecl] {
        &manifest(self.db, self.package).targets
    }

    /// The target whose table holds `offset`.
    fn target_at(&self, offset: u32) -> Option<&'a TargetDecl> {
        self.targets()
            .iter()
            .rev()
            .find(|t| t.header_range.start <= offset)
    }
}

/// The package directory of a manifest path (`a/b/once.toml` → `a/b`).
fn package_of_manifest(path: &str) -> Option<&str> {
    if path == "once.toml" {
        return Some("");
    }
    path.strip_suffix("/once.toml")
}

fn contains(range: TextRange, offset: u32) -> bool {
    range.start <= offset && offset <= range.end
}

/// Every dependency entry of a target: (role, entry).
fn dep_entries(decl: &TargetDecl) -> Vec<(&str, &Spanned<String>)> {
    fn entries<'a>(
        role: &'a str,
        list: &'a DepList,
        out: &mut Vec<(&'a str, &'a Spanned<String>)>,
    ) {
        match list {
            Configurable::Value(items) => out.extend(items.iter().map(|e| (role, e))),
            Configurable::Select(branches) => {
                for branch in branches {
                    out.extend(branch.value.iter().map(|e| (role, e)));
                }
            }
        }
    }
    let mut out = Vec::new();
    if let Some(deps) = &decl.deps {
        entries("deps", &deps.value, &mut out);
    }
    for (role, list) in &decl.dependencies {
        entries(&role.value, &list.value, &mut out);
    }
    out
}

fn kind_markdown(kind: &KindSchema) -> String {
    let mut out = format!("**kind** `{}`\n\n{}", kind.name, kind.docs.trim());
    if !kind.capabilities.is_empty() {
        let caps: Vec<String> = kind
            .capabilities
            .iter()
            .map(|c| format!("`{}`", c.name))
            .collect();
        out.push_str(&format!("\n\nCapabilities: {}", caps.join(", ")));
    }
    if !kind.providers.is_empty() {
        out.push_str(&format!("\n\nProvides: {}", backticked(&kind.providers)));
    }
    let required: Vec<String> = kind
        .attrs
        .iter()
        .filter(|a| a.required)
        .map(|a| a.name.clone())
        .collect();
    if !required.is_empty() {
        out.push_str(&format!(
            "\n\nRequired attributes: {}",
            backticked(&required)
        ));
    }
    out
}

fn backticked(items: &[String]) -> String {
    items
        .iter()
        .map(|i| format!("`{i}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn attr_markdown(kind: &KindSchema, attr: &once_model::AttrSpec) -> String {
    let mut out = format!(
        "**attribute** `{}`: `{}`{}\n\n{}",
        attr.name,
        attr.ty,
        if attr.required { " (required)" } else { "" },
        attr.docs.trim()
    );
    if let Some(default) = &attr.default {
        out.push_str(&format!("\n\nDefault: `{default}`"));
    }
    if !attr.allowed_values.is_empty() {
        out.push_str(&format!(
            "\n\nAllowed: {}",
            backticked(&attr.allowed_values)
        ));
    }
    out.push_str(&format!("\n\nOf kind `{}`.", kind.name));
    out
}

/// The summary of a resolved label, as markdown, or `None` when it names nothing.
fn target_markdown(db: &RootDatabase, ws: Workspace, label: &TargetLabel) -> Option<String> {
    let package = package_by_path(db, ws).get(&label.package)?;
    let summaries = target_summaries(db, package);
    let summary = summaries.iter().find(|s| s.name == label.name)?;
    let mut out = format!("**target** `{}`", label.id());
    match &summary.kind {
        Some(kind) => {
            out.push_str(&format!("\n\nKind: `{kind}`"));
            if let Some(schema) = kind_catalog(db, ws).get(kind) {
                let caps: Vec<String> =
                    schema.capabilities.iter().map(|c| c.name.clone()).collect();
                if !caps.is_empty() {
                    out.push_str(&format!("\n\nCapabilities: {}", backticked(&caps)));
                }
            }
        }
        None => out.push_str("\n\nKind: unknown"),
    }
    if !summary.providers.is_empty() {
        out.push_str(&format!("\n\nProvides: {}", backticked(&summary.providers)));
    }
    out.push_str(&format!(
        "\n\nDeclared in `{}`",
        package.manifest(db).path(db)
    ));
    Some(out)
}

pub(crate) fn hover(ctx: &Ctx<'_>, position: LineCol) -> Option<HoverInfo> {
    let offset = ctx.offset(position);
    let decl = ctx.target_at(offset)?;
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let schema = decl.kind.as_ref().and_then(|k| catalog.get(&k.value));
    if let Some(kind) = &decl.kind
        && contains(kind.range, offset)
    {
        let markdown = match schema {
            Some(schema) => kind_markdown(schema),
            None => format!("target kind `{}` is not known", kind.value),
        };
        return Some(HoverInfo {
            markdown,
            range: ctx.range(kind.range),
        });
    }
    for (key, _) in &decl.attrs {
        if contains(key.range, offset)
            && let Some(schema) = schema
            && let Some(spec) = schema.attr(&key.value)
        {
            return Some(HoverInfo {
                markdown: attr_markdown(schema, spec),
                range: ctx.range(key.range),
            });
        }
    }
    for (role, _) in &decl.dependencies {
        if contains(role.range, offset)
            && let Some(schema) = schema
            && let Some(spec) = schema.dependency_role(&role.value)
        {
            let mut markdown = format!(
                "**dependency role** `{}`\n\n{}",
                spec.name,
                spec.docs.trim()
            );
            if !spec.providers.is_empty() {
                markdown.push_str(&format!(
                    "\n\nAccepts targets providing: {}",
                    backticked(&spec.providers)
                ));
            }
            return Some(HoverInfo {
                markdown,
                range: ctx.range(role.range),
            });
        }
    }
    for (_, entry) in dep_entries(decl) {
        if contains(entry.range, offset) {
            let markdown = match resolve_reference(ctx.package_path(), &entry.value) {
                Ok(label) => target_markdown(ctx.db, ctx.ws, &label)
                    .unwrap_or_else(|| format!("no target `{}` in the workspace", label.id())),
                Err(err) => format!("`{}` {err}", entry.value),
            };
            return Some(HoverInfo {
                markdown,
                range: ctx.range(entry.range),
            });
        }
    }
    None
}

/// Where the target a label names is declared.
fn declaration(db: &RootDatabase, ws: Workspace, label: &TargetLabel) -> Option<FileRange> {
    let package = package_by_path(db, ws).get(&label.package)?;
    let decl = manifest(db, package)
        .targets
        .iter()
        .find(|t| t.name.as_ref().is_some_and(|n| n.value == label.name))?;
    let file = package.manifest(db);
    Some(FileRange {
        file: file.path(db).clone(),
        range: line_index(db, file).range(decl.anchor()),
    })
}

pub(crate) fn definition(ctx: &Ctx<'_>, position: LineCol) -> Vec<FileRange> {
    let offset = ctx.offset(position);
    let Some(decl) = ctx.target_at(offset) else {
        return Vec::new();
    };
    if let Some(kind) = &decl.kind
        && contains(kind.range, offset)
    {
        if let Some(schema) = kind_catalog(ctx.db, ctx.ws).get(&kind.value)
            && let KindOrigin::Module(path) = &schema.origin
        {
            // Point at the kind's name in the module (its `target_kind(name = …)`), else
            // at the module's start.
            let range = ctx.db.file(path).map(|file| {
                let text = &source_text(ctx.db, file).text;
                let quoted = [format!("\"{}\"", kind.value), format!("'{}'", kind.value)];
                let found = quoted.iter().find_map(|q| text.find(q.as_str()));
                let start = found.map_or(0, |i| i as u32 + 1);
                let end = start + found.map_or(0, |_| kind.value.len() as u32);
                line_index(ctx.db, file).range(TextRange { start, end })
            });
            let start = LineCol { line: 1, column: 1 };
            return vec![FileRange {
                file: path.clone(),
                range: range.unwrap_or(LineColRange { start, end: start }),
            }];
        }
        return Vec::new();
    }
    for (_, entry) in dep_entries(decl) {
        if contains(entry.range, offset) {
            return resolve_reference(ctx.package_path(), &entry.value)
                .ok()
                .and_then(|label| declaration(ctx.db, ctx.ws, &label))
                .into_iter()
                .collect();
        }
    }
    Vec::new()
}

pub(crate) fn references(
    ctx: &Ctx<'_>,
    position: LineCol,
    include_declaration: bool,
) -> Vec<FileRange> {
    let offset = ctx.offset(position);
    let Some(decl) = ctx.target_at(offset) else {
        return Vec::new();
    };
    // On a dependency entry: the references of the target it names; else of this target.
    let label = dep_entries(decl)
        .into_iter()
        .find(|(_, entry)| contains(entry.range, offset))
        .and_then(|(_, entry)| resolve_reference(ctx.package_path(), &entry.value).ok())
        .or_else(|| {
            decl.name
                .as_ref()
                .map(|n| TargetLabel::new(ctx.package_path(), n.value.clone()))
        });
    let Some(label) = label else {
        return Vec::new();
    };
    let mut out = Vec::new();
    if include_declaration && let Some(declared) = declaration(ctx.db, ctx.ws, &label) {
        out.push(declared);
    }
    for &package in workspace_packages(ctx.db, ctx.ws).iter() {
        let manifest = manifest(ctx.db, package);
        let file = package.manifest(ctx.db);
        let mut index = None;
        for target in &manifest.targets {
            for (_, entry) in dep_entries(target) {
                if resolve_reference(&manifest.package, &entry.value).is_ok_and(|l| l == label) {
                    let index = index.get_or_insert_with(|| line_index(ctx.db, file));
                    out.push(FileRange {
                        file: manifest.file.clone(),
                        range: index.range(entry.range),
                    });
                }
            }
        }
    }
    out
}

pub(crate) fn symbols(ctx: &Ctx<'_>) -> Vec<TargetSymbol> {
    let targets = ctx.targets();
    let len = ctx.text.len() as u32;
    targets
        .iter()
        .enumerate()
        .map(|(i, decl)| {
            let end = targets
                .get(i + 1)
                .map_or(len, |next| next.header_range.start);
            let end = trim_end(&ctx.text, decl.header_range.start, end);
            TargetSymbol {
                name: decl
                    .name
                    .as_ref()
                    .map_or_else(|| "(unnamed target)".to_owned(), |n| n.value.clone()),
                detail: decl.kind.as_ref().map(|k| k.value.clone()),
                range: ctx.range(TextRange {
                    start: decl.header_range.start,
                    end,
                }),
                selection_range: ctx.range(decl.anchor()),
            }
        })
        .collect()
}

/// `end` moved back over trailing whitespace and comment lines.
fn trim_end(text: &str, start: u32, end: u32) -> u32 {
    let slice = &text[start as usize..end as usize];
    let mut rest = slice.trim_end();
    loop {
        match rest.rfind('\n') {
            Some(nl) if rest[nl + 1..].trim_start().starts_with('#') => {
                rest = rest[..nl].trim_end();
            }
            _ => break,
        }
    }
    start + rest.len() as u32
}

/// What the cursor is in, from the text of its line and the table above it.
struct LineContext<'t> {
    /// The enclosing table header (`[[target]]`, `[target.attrs]`, …), trimmed.
    table: Option<&'t str>,
    /// The text of the line before the cursor.
    prefix: &'t str,
    line_start: u32,
}

fn line_context(text: &str, offset: u32) -> LineContext<'_> {
    let offset = (offset as usize).min(text.len());
    let line_start = text[..offset].rfind('\n').map_or(0, |i| i + 1);
    let prefix = &text[line_start..offset];
    let table = text[..line_start]
        .lines()
        .rev()
        .map(str::trim)
        .find(|l| {
            l.starts_with('[')
                && (l.ends_with(']') || l.contains("]#") || l.contains("] #"))
                && !l.contains('=')
        })
        .map(|l| l.split('#').next().unwrap_or(l).trim());
    LineContext {
        table,
        prefix,
        line_start: line_start as u32,
    }
}

/// Whether `prefix` ends inside a basic string; the offset of the string's content start.
fn open_string(prefix: &str) -> Option<usize> {
    let mut open = None;
    let mut escaped = false;
    for (i, c) in prefix.char_indices() {
        match c {
            '\\' if open.is_some() => escaped = !escaped,
            '"' if !escaped => open = if open.is_some() { None } else { Some(i + 1) },
            '#' if open.is_none() => return None,
            _ => escaped = false,
        }
        if c != '\\' {
            escaped = false;
        }
    }
    open
}

pub(crate) fn completions(ctx: &Ctx<'_>, position: LineCol) -> Vec<CompletionItem> {
    let offset = ctx.offset(position);
    let lc = line_context(&ctx.text, offset);
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let decl = ctx.target_at(offset);
    let schema = decl
        .and_then(|d| d.kind.as_ref())
        .and_then(|k| catalog.get(&k.value));
    let in_target = matches!(
        lc.table,
        Some("[[target]]" | "[target.attrs]" | "[target.dependencies]")
    );
    let item = |label: String,
                kind,
                detail: Option<String>,
                docs: Option<String>,
                insert: String,
                from: usize,
                sort: String| {
        CompletionItem {
            label,
            kind,
            detail,
            documentation: docs,
            insert_text: insert,
            replace: ctx.range(TextRange {
                start: lc.line_start + from as u32,
                end: offset,
            }),
            sort_text: sort,
        }
    };
    let trimmed = lc.prefix.trim_start();
    let indent = lc.prefix.len() - trimmed.len();
    // A table header being typed.
    if trimmed.starts_with('[') && !trimmed.contains('=') {
        return TABLE_HEADERS
            .iter()
            .enumerate()
            .map(|(i, (h, docs))| {
                item(
                    h.to_string(),
                    CompletionKind::Table,
                    None,
                    Some(docs.to_string()),
                    h.to_string(),
                    indent,
                    format!("{i:02}"),
                )
            })
            .collect();
    }
    let Some((key, value_prefix)) = trimmed.split_once('=') else {
        // A key being typed.
        if trimmed
            .chars()
            .any(|c| !(c.is_alphanumeric() || c == '_' || c == '-'))
        {
            return Vec::new();
        }
        return key_completions(ctx, &lc, decl, schema, &item, indent);
    };
    let key = key.trim();
    let value_start = lc.prefix.len() - value_prefix.len();
    let string_start = open_string(value_prefix).map(|s| value_start + s);
    match (lc.table, key) {
        (Some("[[target]]"), "kind") => {
            let (from, quote) = match string_start {
                Some(s) => (s, false),
                None => (lc.prefix.len() - value_prefix.trim_start().len(), true),
            };
            catalog
                .kinds
                .iter()
                .map(|k| {
                    let insert = if quote {
                        format!("\"{}\"", k.name)
                    } else {
                        k.name.clone()
                    };
                    item(
                        k.name.clone(),
                        CompletionKind::Kind,
                        Some(first_line(&k.docs)),
                        Some(kind_markdown(k)),
                        insert,
                        from,
                        k.name.clone(),
                    )
                })
                .collect()
        }
        (Some("[[target]]"), "visibility") => match string_start {
            Some(from) => ["public", "private"]
                .iter()
                .map(|v| {
                    item(
                        v.to_string(),
                        CompletionKind::Value,
                        None,
                        None,
                        v.to_string(),
                        from,
                        v.to_string(),
                    )
                })
                .collect(),
            None => Vec::new(),
        },
        (Some("[[target]]"), "deps" | "dependencies") | (Some("[target.dependencies]"), _) => {
            let Some(from) = string_start else {
                return Vec::new();
            };
            let role = if key == "deps" && lc.table == Some("[[target]]") {
                "deps".to_owned()
            } else if key == "dependencies" && lc.table == Some("[[target]]") {
                // `dependencies = { role = ["…` : the last `name =` before the cursor.
                let before = &value_prefix[..value_prefix.rfind('[').unwrap_or(0)];
                let Some(eq) = before.rfind('=') else {
                    return Vec::new();
                };
                before[..eq]
                    .trim_end()
                    .rsplit(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-'))
                    .next()
                    .unwrap_or("")
                    .to_owned()
            } else {
                key.to_owned()
            };
            label_completions(ctx, decl, schema, &role)
                .into_iter()
                .map(|(label, detail)| {
                    item(
                        label.clone(),
                        CompletionKind::Label,
                        Some(detail),
                        None,
                        label.clone(),
                        from,
                        label,
                    )
                })
                .collect()
        }
        (Some("[target.attrs]"), attr) if in_target => {
            let Some(spec) = schema.and_then(|s| s.attr(attr)) else {
                return Vec::new();
            };
            // (label, inserted text) pairs, and where the replaced text starts: inside an
            // open string only the allowed strings, else literals written whole.
            let (values, from): (Vec<(String, String)>, usize) = match string_start {
                Some(from) => (
                    spec.allowed_values
                        .iter()
                        .map(|v| (v.clone(), v.clone()))
                        .collect(),
                    from,
                ),
                None => {
                    let mut values = Vec::new();
                    if spec.ty == AttrType::Bool {
                        values.push(("true".into(), "true".into()));
                        values.push(("false".into(), "false".into()));
                    }
                    for v in &spec.allowed_values {
                        values.push((v.clone(), format!("\"{v}\"")));
                    }
                    (values, lc.prefix.len() - value_prefix.trim_start().len())
                }
            };
            values
                .into_iter()
                .map(|(l, i)| {
                    item(
                        l.clone(),
                        CompletionKind::Value,
                        Some(spec.ty.to_string()),
                        None,
                        i,
                        from,
                        l,
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn first_line(docs: &str) -> String {
    docs.trim().lines().next().unwrap_or("").to_owned()
}

type ItemFn<'f> = dyn Fn(
        String,
        CompletionKind,
        Option<String>,
        Option<String>,
        String,
        usize,
        String,
    ) -> CompletionItem
    + 'f;

fn key_completions(
    _ctx: &Ctx<'_>,
    lc: &LineContext<'_>,
    decl: Option<&TargetDecl>,
    schema: Option<&KindSchema>,
    item: &ItemFn<'_>,
    from: usize,
) -> Vec<CompletionItem> {
    match lc.table {
        Some("[[target]]") => {
            let present: Vec<&str> = decl.map(present_target_keys).unwrap_or_default();
            TARGET_KEYS
                .iter()
                .enumerate()
                .filter(|(_, (k, _))| !present.contains(k))
                .map(|(i, (k, docs))| {
                    item(
                        k.to_string(),
                        CompletionKind::Key,
                        None,
                        Some(docs.to_string()),
                        format!("{k} = "),
                        from,
                        format!("{i:02}"),
                    )
                })
                .collect()
        }
        Some("[target.attrs]") => {
            let Some(schema) = schema else {
                return Vec::new();
            };
            let present: Vec<&str> = decl
                .map(|d| d.attrs.iter().map(|(k, _)| k.value.as_str()).collect())
                .unwrap_or_default();
            schema
                .attrs
                .iter()
                .filter(|a| !present.contains(&a.name.as_str()))
                .map(|a| {
                    let sort = format!("{}{}", if a.required { "0" } else { "1" }, a.name);
                    let detail = format!("{}{}", a.ty, if a.required { " (required)" } else { "" });
                    item(
                        a.name.clone(),
                        CompletionKind::Attribute,
                        Some(detail),
                        Some(attr_markdown(schema, a)),
                        format!("{} = ", a.name),
                        from,
                        sort,
                    )
                })
                .collect()
        }
        Some("[target.dependencies]") => {
            let Some(schema) = schema else {
                return Vec::new();
            };
            schema
                .dependencies
                .iter()
                .filter(|r| r.name != "deps")
                .map(|r| {
                    item(
                        r.name.clone(),
                        CompletionKind::Key,
                        Some(backticked(&r.providers)),
                        Some(r.docs.clone()),
                        format!("{} = [", r.name),
                        from,
                        r.name.clone(),
                    )
                })
                .collect()
        }
        _ => Vec::new(),
    }
}

fn present_target_keys(decl: &TargetDecl) -> Vec<&'static str> {
    let mut out = Vec::new();
    if decl.name.is_some() {
        out.push("name");
    }
    if decl.kind.is_some() {
        out.push("kind");
    }
    if decl.deps.is_some() {
        out.push("deps");
    }
    out
}

/// Labels of every visible target whose providers the role accepts: `(label, detail)`.
fn label_completions(
    ctx: &Ctx<'_>,
    decl: Option<&TargetDecl>,
    schema: Option<&KindSchema>,
    role: &str,
) -> Vec<(String, String)> {
    let accepted: &[String] = schema
        .and_then(|s| s.dependency_role(role))
        .map_or(&[], |r| r.providers.as_slice());
    let consumer_package = ctx.package_path();
    let self_name = decl.and_then(|d| d.name.as_ref()).map(|n| n.value.as_str());
    let consumer = TargetLabel::new(consumer_package, self_name.unwrap_or("")).id();
    let mut out = Vec::new();
    for &package in workspace_packages(ctx.db, ctx.ws).iter() {
        let owner = package.path(ctx.db).as_str();
        for summary in target_summaries(ctx.db, package).iter() {
            if owner == consumer_package && Some(summary.name.as_str()) == self_name {
                continue;
            }
            if !accepted.is_empty() && !summary.providers.iter().any(|p| accepted.contains(p)) {
                continue;
            }
            if !summary
                .visibility
                .allows(owner, consumer_package, &consumer)
            {
                continue;
            }
            let label = if owner == consumer_package {
                format!("./{}", summary.name)
            } else {
                TargetLabel::new(owner, summary.name.clone()).id()
            };
            let detail = match &summary.kind {
                Some(kind) if summary.providers.is_empty() => kind.clone(),
                Some(kind) => format!("{kind} ({})", summary.providers.join(", ")),
                None => "unknown kind".to_owned(),
            };
            out.push((label, detail));
        }
    }
    out
}

/// A TOML literal that type-checks as a placeholder for `ty`.
fn placeholder(spec: &once_model::AttrSpec) -> String {
    if let Some(first) = spec.allowed_values.first() {
        return format!("\"{first}\"");
    }
    match &spec.ty {
        AttrType::Bool => "false".into(),
        AttrType::Int => "0".into(),
        AttrType::Float => "0.0".into(),
        AttrType::List(_) => "[]".into(),
        AttrType::Dict(_) => "{}".into(),
        _ => "\"\"".into(),
    }
}

pub(crate) fn code_actions(ctx: &Ctx<'_>, range: LineColRange) -> Vec<CodeAction> {
    let path = ctx.file.path(ctx.db).clone();
    let start = ctx.offset(range.start);
    let end = ctx.offset(range.end);
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let mut out = Vec::new();
    for diagnostic in workspace_diagnostics(ctx.db, ctx.ws).iter() {
        let (Some(file), Some(drange)) = (&diagnostic.file, diagnostic.range) else {
            continue;
        };
        if *file != path || drange.end < start || drange.start > end {
            continue;
        }
        let diagnostic_range = ctx.range(drange);
        let code = diagnostic.code.as_str().to_owned();
        let action = |title: String, edits: Vec<TextEdit>, preferred: bool| CodeAction {
            title,
            code: code.clone(),
            diagnostic_range,
            file: path.clone(),
            edits,
            preferred,
        };
        let written = ctx
            .text
            .get(drange.start as usize..drange.end as usize)
            .unwrap_or("");
        let unquoted = written.trim_matches('"');
        match diagnostic.code {
            DiagnosticCode::UnknownTargetKind => {
                for (i, name) in once_graph::text::closest(unquoted, catalog.names(), 3)
                    .into_iter()
                    .enumerate()
                {
                    out.push(action(
                        format!("Use kind `{name}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: format!("\"{name}\""),
                        }],
                        i == 0,
                    ));
                }
            }
            DiagnosticCode::UnknownAttr => {
                let schema = ctx
                    .target_at(drange.start)
                    .and_then(|d| d.kind.as_ref())
                    .and_then(|k| catalog.get(&k.value));
                if let Some(schema) = schema
                    && let Some(best) = once_graph::text::closest(
                        written,
                        schema.attrs.iter().map(|a| a.name.as_str()),
                        1,
                    )
                    .into_iter()
                    .next()
                {
                    out.push(action(
                        format!("Rename `{written}` to `{best}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: best,
                        }],
                        true,
                    ));
                }
            }
            DiagnosticCode::InvalidLabel | DiagnosticCode::InvalidVisibility => {
                if let Err(LabelError::BazelSyntax { suggestion }) =
                    resolve_reference(ctx.package_path(), unquoted)
                    && !suggestion.is_empty()
                {
                    out.push(action(
                        format!("Rewrite `{unquoted}` as `{suggestion}`"),
                        vec![TextEdit {
                            range: diagnostic_range,
                            new_text: format!("\"{suggestion}\""),
                        }],
                        true,
                    ));
                }
            }
            DiagnosticCode::MissingRequiredAttr => {
                if let Some(edit) = add_required_attr(ctx, drange, diagnostic.attribute.as_deref())
                {
                    out.push(action(edit.0, vec![edit.1], true));
                }
            }
            _ => {}
        }
    }
    out
}

/// The edit adding the missing required attribute of the target at `at`.
fn add_required_attr(
    ctx: &Ctx<'_>,
    at: TextRange,
    attribute: Option<&str>,
) -> Option<(String, TextEdit)> {
    let name = attribute?.strip_prefix("attrs.")?;
    let decl = ctx.target_at(at.start)?;
    let schema = kind_catalog(ctx.db, ctx.ws).get(&decl.kind.as_ref()?.value)?;
    let spec = schema.attr(name)?;
    let line = format!("{name} = {}", placeholder(spec));
    let targets = ctx.targets();
    let position = targets.iter().position(|t| std::ptr::eq(t, decl))?;
    let section_end = targets
        .get(position + 1)
        .map_or(ctx.text.len() as u32, |next| next.header_range.start);
    let text = &ctx.text;
    // After the last attribute written as a `key = value` line of `[target.attrs]`, else a
    // new `[target.attrs]` table at the end of the target's section.
    if let Some((key, value)) = decl.attrs.last() {
        let key_line_start = text[..key.range.start as usize]
            .rfind('\n')
            .map_or(0, |i| i + 1);
        if !text[key_line_start..key.range.start as usize]
            .trim()
            .is_empty()
        {
            return None;
        }
        let end = text[value.range.end as usize..]
            .find('\n')
            .map_or(text.len(), |i| value.range.end as usize + i) as u32;
        let insert = ctx.range(TextRange { start: end, end });
        return Some((
            format!("Add required attribute `{name}`"),
            TextEdit {
                range: insert,
                new_text: format!("\n{line}"),
            },
        ));
    }
    let end = trim_end(text, decl.header_range.start, section_end);
    let insert = ctx.range(TextRange { start: end, end });
    Some((
        format!("Add required attribute `{name}`"),
        TextEdit {
            range: insert,
            new_text: format!("\n\n[target.attrs]\n{line}"),
        },
    ))
}

pub(crate) fn formatting(ctx: &Ctx<'_>) -> Option<TextEdit> {
    let formatted = format_manifest(&ctx.text)?;
    if *formatted == *ctx.text {
        return None;
    }
    Some(TextEdit {
        range: ctx.range(TextRange {
            start: 0,
            end: ctx.text.len() as u32,
        }),
        new_text: formatted,
    })
}

/// Text of a workspace file as the database sees it (overlays included).
pub(crate) fn file_text(db: &RootDatabase, path: &str) -> Option<String> {
    let file = db.file(path)?;
    Some(source_text(db, file).text.to_string())
}
