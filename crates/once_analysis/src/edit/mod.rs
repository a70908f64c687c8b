//! Editing operations as pure functions: a batch of target edits on one manifest
//! ([`plan_edit`]) and a starter's file tree ([`plan_materialize`]) become planned file
//! writes. Nothing here writes; `AnalysisHost::write_files` does, through `System`.
//!
//! Edits splice text at CST ranges and re-parse after each step, so every byte outside the
//! touched keys survives: comments, blank lines, key order, quoting. Each step's result is
//! checked with the same local checks as `validate_target` ([`check_manifest_text`]); an
//! operation fails when it introduces an error diagnostic.

pub(crate) mod cst;
mod materialize;

use std::collections::HashMap;

use once_db::writes::{FileWrite, normalize_relative};
use once_db::{RootDatabase, Workspace};
use once_graph::{kind_catalog, read_manifest_text, resolve_manifest, workspace_settings};
use once_model::{AttrValue, Diagnostic, DiagnosticCode, ManifestTable, value::write_toml_key};

use crate::LocatedDiagnostic;
use cst::{Layout, splice, text_range, value_from_text};

pub use materialize::{MaterializePlan, plan_materialize};

/// A batch of operations on `<workspace>/<package>/once.toml`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EditRequest {
    /// Workspace-relative package directory; `""` is the root.
    pub package: String,
    pub operations: Vec<EditOperation>,
}

/// One operation of a batch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditOperation {
    /// Appends a `[[target]]` table (a table value of `name`, `kind`, `srcs`, …), with
    /// `comment` (one or more lines, each written as `# line`) directly above its header.
    Create {
        target: AttrValue,
        comment: Option<String>,
    },
    /// Sets fields of a target; `None` removes a field. `attrs` and `dependencies` are
    /// replaced as whole tables, but entries whose value does not change keep their text.
    Update {
        target_name: String,
        set: Vec<(String, Option<AttrValue>)>,
    },
    Delete {
        target_name: String,
    },
}

impl EditOperation {
    fn describe(&self) -> String {
        match self {
            EditOperation::Create { target, .. } => {
                let name = match target {
                    AttrValue::Dict(entries) => entries
                        .iter()
                        .find(|(k, _)| k == "name")
                        .and_then(|(_, v)| v.as_str()),
                    _ => None,
                };
                format!("create `{}`", name.unwrap_or("?"))
            }
            EditOperation::Update { target_name, .. } => format!("update `{target_name}`"),
            EditOperation::Delete { target_name } => format!("delete `{target_name}`"),
        }
    }
}

/// What a batch would do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditOutcome {
    /// Every operation passed. `write` is `None` when the text did not change.
    Applied {
        /// Workspace-relative manifest path.
        path: String,
        changed: bool,
        write: Option<FileWrite>,
    },
    /// Nothing is written. `failed_operation` is the index of the operation that failed
    /// (`None` when the manifest itself cannot be edited).
    Rejected {
        path: String,
        failed_operation: Option<usize>,
        diagnostics: Vec<LocatedDiagnostic>,
    },
}

/// The local checks of one manifest text: structure, kinds, attributes, labels, duplicate
/// names. No other manifest is read; dependencies are not resolved. `validate_target` and
/// every edit use this one function.
pub(crate) fn check_manifest_text(
    db: &RootDatabase,
    workspace: Workspace,
    file: &str,
    package: &str,
    text: &str,
) -> Vec<Diagnostic> {
    let manifest = read_manifest_text(file, package, text);
    let catalog = kind_catalog(db, workspace);
    let configuration = &workspace_settings(db, workspace).configuration;
    let resolved = resolve_manifest(&manifest, catalog, configuration, None);
    manifest
        .diagnostics
        .iter()
        .chain(&resolved.diagnostics)
        .cloned()
        .collect()
}

fn unlocated(diagnostic: Diagnostic) -> LocatedDiagnostic {
    LocatedDiagnostic::unlocated(diagnostic)
}

type Key = (DiagnosticCode, String, Option<String>, Option<String>);

fn key(d: &Diagnostic) -> Key {
    (
        d.code,
        d.message.clone(),
        d.target.clone(),
        d.attribute.clone(),
    )
}

/// Error diagnostics of `after` that `before` does not have (as a multiset).
fn introduced(before: &[Diagnostic], after: Vec<Diagnostic>) -> Vec<Diagnostic> {
    let mut remaining: HashMap<Key, usize> = HashMap::new();
    for d in before {
        *remaining.entry(key(d)).or_default() += 1;
    }
    after
        .into_iter()
        .filter(|d| match remaining.get_mut(&key(d)) {
            Some(count) if *count > 0 => {
                *count -= 1;
                false
            }
            _ => d.is_error(),
        })
        .collect()
}

/// Plans a batch. `Err` is a refused request (a package path outside the workspace, an
/// unreadable manifest); a batch that fails a check is `Ok(Rejected)`.
pub(crate) fn plan_edit(
    db: &RootDatabase,
    workspace: Workspace,
    request: &EditRequest,
) -> Result<EditOutcome, String> {
    plan_edit_from(db, workspace, request, None)
}

/// [`plan_edit`] on `base` instead of the manifest on disk, when given (the text `once
/// init` starts a root manifest from); the planned write is then made even when the
/// operations change nothing.
pub(crate) fn plan_edit_from(
    db: &RootDatabase,
    workspace: Workspace,
    request: &EditRequest,
    base: Option<&str>,
) -> Result<EditOutcome, String> {
    use once_db::Db;
    let package =
        normalize_relative(&request.package).map_err(|e| format!("invalid `package`: {e}"))?;
    let path = if package.is_empty() {
        "once.toml".to_owned()
    } else {
        format!("{package}/once.toml")
    };
    let root = workspace.root(db).clone();
    let system = db.system();
    let original = match base {
        Some(base) => base.to_owned(),
        None => match system
            .read_confined(&root, &path)
            .map_err(|e| format!("invalid `package`: {e}"))?
        {
            None => String::new(),
            Some(bytes) => String::from_utf8(bytes)
                .map_err(|_| format!("cannot read `{path}`: it is not UTF-8"))?,
        },
    };
    let reject = |failed_operation, diagnostics: Vec<Diagnostic>| EditOutcome::Rejected {
        path: path.clone(),
        failed_operation,
        diagnostics: once_graph::cap_diagnostics(diagnostics)
            .into_iter()
            .map(unlocated)
            .collect(),
    };
    let mut previous = check_manifest_text(db, workspace, &path, &package, &original);
    let syntax: Vec<Diagnostic> = previous
        .iter()
        .filter(|d| d.code == DiagnosticCode::SyntaxError)
        .cloned()
        .map(|mut d| {
            d.code = DiagnosticCode::EditNotApplicable;
            d.message = format!("`{path}` has a syntax error, fix it first: {}", d.message);
            d
        })
        .collect();
    if !syntax.is_empty() {
        return Ok(reject(None, syntax));
    }
    let mut text = original.clone();
    for (index, operation) in request.operations.iter().enumerate() {
        let prefix = format!("operations[{index}] ({})", operation.describe());
        let fail = |mut diagnostics: Vec<Diagnostic>| {
            for d in &mut diagnostics {
                d.message = format!("{prefix}: {}", d.message);
                d.file = Some(path.clone());
            }
            reject(Some(index), diagnostics)
        };
        let next = match apply_operation(&text, &package, operation) {
            Ok(next) => next,
            Err(diagnostic) => return Ok(fail(vec![*diagnostic])),
        };
        let after = check_manifest_text(db, workspace, &path, &package, &next);
        let new_errors = introduced(&previous, after.clone());
        if !new_errors.is_empty() {
            return Ok(fail(new_errors));
        }
        previous = after;
        text = next;
    }
    let changed = text != original || base.is_some();
    Ok(EditOutcome::Applied {
        write: changed.then(|| FileWrite {
            path: path.clone(),
            contents: text.into_bytes(),
        }),
        path,
        changed,
    })
}

fn target_id(package: &str, name: &str) -> String {
    if package.is_empty() {
        name.to_owned()
    } else {
        format!("{package}/{name}")
    }
}

fn not_found(layout: &Layout, package: &str, name: &str) -> Box<Diagnostic> {
    let names: Vec<&str> = layout
        .groups
        .iter()
        .filter_map(|g| g.name.as_deref())
        .collect();
    let close = crate::closest_names(name, names.iter().copied());
    let mut message = format!("no target named `{name}` in this manifest");
    if layout.inline_targets {
        message.push_str(" (targets declared in an inline `target = [...]` array cannot be edited; rewrite them as `[[target]]` tables)");
    }
    let mut diagnostic = Diagnostic::new(DiagnosticCode::TargetNotFound, message)
        .with_target(target_id(package, name));
    diagnostic = match close.as_slice() {
        [] if names.is_empty() => diagnostic.with_repair("The manifest declares no targets"),
        [] => diagnostic.with_repair(format!("Targets here: {}", names.join(", "))),
        close => diagnostic.with_repair(format!("Did you mean `{}`?", close.join("` or `"))),
    };
    Box::new(diagnostic)
}

fn already_exists(package: &str, name: &str) -> Box<Diagnostic> {
    Box::new(
        Diagnostic::new(
            DiagnosticCode::TargetAlreadyExists,
            format!("a target named `{name}` already exists in this manifest"),
        )
        .with_target(target_id(package, name))
        .with_attribute("name")
        .with_repair("Choose another name, or update the existing target instead"),
    )
}

fn apply_operation(
    text: &str,
    package: &str,
    operation: &EditOperation,
) -> Result<String, Box<Diagnostic>> {
    let layout = Layout::new(text);
    match operation {
        EditOperation::Create { target, comment } => {
            let AttrValue::Dict(entries) = target else {
                return Err(Box::new(Diagnostic::new(
                    DiagnosticCode::InvalidFieldType,
                    format!(
                        "a target must be a table of `name`, `kind`, …; got {}",
                        target.type_name()
                    ),
                )));
            };
            let name = entries
                .iter()
                .find(|(k, _)| k == "name")
                .and_then(|(_, v)| v.as_str());
            if let Some(name) = name
                && layout.group(name).is_some()
            {
                return Err(already_exists(package, name));
            }
            Ok(append_target(&layout, entries, comment.as_deref()))
        }
        EditOperation::Delete { target_name } => {
            let Some(index) = layout.group(target_name) else {
                return Err(not_found(&layout, package, target_name));
            };
            let group = &layout.groups[index];
            let last = group.subs.last().unwrap_or(&group.main);
            let span = layout.section_span(&group.main, last);
            Ok(remove_span(&layout.text, span))
        }
        EditOperation::Update { target_name, set } => {
            if layout.group(target_name).is_none() {
                return Err(not_found(&layout, package, target_name));
            }
            let mut text = text.to_owned();
            let mut name = target_name.clone();
            for (field, value) in set {
                if field == "name"
                    && let Some(AttrValue::String(new_name)) = value
                    && *new_name != name
                {
                    if Layout::new(&text).group(new_name).is_some() {
                        return Err(already_exists(package, new_name));
                    }
                    text = set_field(&text, &name, field, value.as_ref());
                    name = new_name.clone();
                    continue;
                }
                text = set_field(&text, &name, field, value.as_ref());
            }
            Ok(text)
        }
    }
}

/// Removes `span`; at the end of the text, also the blank lines before it.
fn remove_span(text: &str, span: once_syntax::TextRange) -> String {
    let start = usize::from(span.start());
    let end = usize::from(span.end());
    if end >= text.len() {
        let kept = text[..start].trim_end();
        if kept.is_empty() {
            return String::new();
        }
        return format!("{kept}\n");
    }
    format!("{}{}", &text[..start], &text[end..])
}

fn render_key_value(key: &str, value: &AttrValue) -> String {
    let mut line = String::new();
    let _ = write_toml_key(&mut line, key);
    format!("{line} = {value}\n")
}

fn append_target(
    layout: &Layout,
    entries: &[(String, AttrValue)],
    comment: Option<&str>,
) -> String {
    // Neighbours decide the form of `attrs` and `dependencies`: a `[target.x]` sub-table
    // or an inline table. Without neighbours: `attrs` as a sub-table, `dependencies` inline.
    let uses_subtable = |field: &str| {
        let sub = layout
            .groups
            .iter()
            .any(|g| g.subs.iter().any(|s| s.key == ["target", field]));
        let inline = layout.groups.iter().any(|g| {
            layout
                .key_values(&g.main.node)
                .iter()
                .any(|kv| kv.key == [field])
        });
        sub || (!inline && field == "attrs")
    };
    let mut body = String::new();
    for line in comment.into_iter().flat_map(str::lines) {
        body.push_str(comment_line(line).as_str());
    }
    body.push_str("[[target]]\n");
    let mut subtables = String::new();
    // Fields in the vocabulary's write order, then any others as given.
    let field_order = ManifestTable::Target.key_names();
    let ordered = field_order
        .iter()
        .filter_map(|f| entries.iter().find(|(k, _)| k == f))
        .chain(
            entries
                .iter()
                .filter(|(k, _)| !field_order.contains(&k.as_str())),
        );
    for (key, value) in ordered {
        match value {
            AttrValue::Dict(table)
                if (key == "attrs" || key == "dependencies") && uses_subtable(key) =>
            {
                if table.is_empty() {
                    continue;
                }
                subtables.push_str(&format!("\n[target.{key}]\n"));
                for (k, v) in table {
                    subtables.push_str(&render_key_value(k, v));
                }
            }
            AttrValue::List(items) if items.is_empty() && key != "name" && key != "kind" => {}
            AttrValue::Dict(table) if table.is_empty() => {}
            value => body.push_str(&render_key_value(key, value)),
        }
    }
    body.push_str(&subtables);
    let text = &layout.text;
    if text.trim().is_empty() {
        return body;
    }
    let mut out = text.trim_end_matches(['\n', '\r', ' ', '\t']).to_owned();
    out.push_str("\n\n");
    out.push_str(&body);
    out
}

/// `line` as a TOML comment line: `# line`, control characters (a newline would end the
/// comment) replaced by spaces.
fn comment_line(line: &str) -> String {
    let clean: String = line
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.trim_end();
    if clean.is_empty() {
        "#\n".to_owned()
    } else {
        format!("# {clean}\n")
    }
}

/// Sets (or with `None` removes) one field of the target named `name`.
fn set_field(text: &str, name: &str, field: &str, value: Option<&AttrValue>) -> String {
    let layout = Layout::new(text);
    let Some(index) = layout.group(name) else {
        return text.to_owned();
    };
    let group = &layout.groups[index];
    let main_kvs = layout.key_values(&group.main.node);
    let subtable = group.subs.iter().find(|s| s.key == ["target", field]);

    // A dict field kept in its `[target.field]` sub-table: edit entry by entry.
    if let (Some(AttrValue::Dict(entries)), Some(sub)) = (value, subtable)
        && group
            .subs
            .iter()
            .all(|s| s.key.len() == 2 || s.key[1] != field)
        && !main_kvs
            .iter()
            .any(|kv| kv.key.first().is_some_and(|k| k == field))
    {
        let kvs = layout.key_values(&sub.node);
        let mut edits = Vec::new();
        for kv in &kvs {
            let [key] = kv.key.as_slice() else { continue };
            match entries.iter().find(|(k, _)| k == key) {
                None => edits.push((kv.line, String::new())),
                Some((_, new)) => {
                    if value_from_text(layout.slice(kv.value)).as_ref() != Some(new) {
                        edits.push((kv.value, new.to_string()));
                    }
                }
            }
        }
        let (at, indent) = layout.insertion_point(sub);
        let mut added = String::new();
        for (key, new) in entries {
            if !kvs.iter().any(|kv| kv.key == [key.as_str()]) {
                added.push_str(&indent);
                added.push_str(&render_key_value(key, new));
            }
        }
        if !added.is_empty() {
            edits.push((text_range(at, at), added));
        }
        return splice(text, edits);
    }

    // A plain `field = value` in the target's table: replace the value in place.
    if let Some(new) = value
        && let Some(kv) = main_kvs.iter().find(|kv| kv.key == [field])
        && subtable.is_none()
        && !main_kvs
            .iter()
            .any(|other| other.key.len() > 1 && other.key[0] == field)
    {
        if value_from_text(layout.slice(kv.value)).as_ref() == Some(new) {
            return text.to_owned();
        }
        return splice(text, vec![(kv.value, new.to_string())]);
    }

    // Otherwise remove every form of the field, then add it back.
    let mut edits: Vec<(once_syntax::TextRange, String)> = main_kvs
        .iter()
        .filter(|kv| kv.key.first().is_some_and(|k| k == field))
        .map(|kv| (kv.line, String::new()))
        .collect();
    for sub in group.subs.iter().filter(|s| s.key[1] == field) {
        edits.push((layout.section_span(sub, sub), String::new()));
    }
    let removed_subtable = group.subs.iter().any(|s| s.key[1] == field);
    let empty = match value {
        None => true,
        Some(AttrValue::Dict(d)) => d.is_empty(),
        Some(AttrValue::List(l)) => l.is_empty() && field != "name" && field != "kind",
        Some(_) => false,
    };
    if let Some(new) = value.filter(|_| !empty) {
        match new {
            AttrValue::Dict(entries) if removed_subtable || field == "attrs" => {
                let mut table = format!("[target.{field}]\n");
                for (k, v) in entries {
                    table.push_str(&render_key_value(k, v));
                }
                let first_removed = group.subs.iter().position(|s| s.key[1] == field);
                match first_removed {
                    // In place of the old sub-table, keeping the blank lines after it.
                    Some(position) => {
                        let old = &mut edits[main_kvs
                            .iter()
                            .filter(|kv| kv.key.first().is_some_and(|k| k == field))
                            .count()
                            + group.subs[..position]
                                .iter()
                                .filter(|s| s.key[1] == field)
                                .count()];
                        let old_text = layout.slice(old.0);
                        let trailing = &old_text[old_text.trim_end().len()..];
                        let trailing = if trailing.contains('\n') {
                            trailing
                        } else {
                            "\n"
                        };
                        old.1 = format!("{}{trailing}", table.trim_end());
                    }
                    // After the target's last section.
                    None => {
                        let last = group.subs.last().unwrap_or(&group.main);
                        let span = layout.section_span(last, last);
                        let content_end =
                            usize::from(span.start()) + layout.slice(span).trim_end().len();
                        let table = format!("\n\n{}", table.trim_end());
                        edits.push((text_range(content_end, content_end), table));
                    }
                }
            }
            new => {
                let (at, indent) = layout.insertion_point(&group.main);
                edits.push((
                    text_range(at, at),
                    format!("{indent}{}", render_key_value(field, new)),
                ));
            }
        }
    }
    let out = splice(text, edits);
    if out.ends_with('\n') || out.is_empty() {
        out
    } else {
        format!("{out}\n")
    }
}

/// The workspace-relative path of a package's manifest.
pub fn manifest_path(package: &str) -> String {
    if package.is_empty() {
        "once.toml".to_owned()
    } else {
        format!("{package}/once.toml")
    }
}
