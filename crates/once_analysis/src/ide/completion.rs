//! Completion: table headers, keys, kinds, attribute values and dependency labels, chosen
//! by where the cursor is in the manifest's CST ([`super::cursor`]).

use once_graph::{
    KindCatalog, TargetDecl, kind_catalog, parse_manifest, target_summaries, workspace_packages,
};
use once_model::vocabulary::table_headers;
use once_model::{AttrSpec, AttrType, KindSchema, LineCol, ManifestTable, TargetLabel, TextRange};

use super::context::Ctx;
use super::cursor::{Place, cursor_at};
use super::hover::{attr_markdown, backticked, kind_markdown};
use super::{CompletionItem, CompletionKind};

pub(crate) fn completions(ctx: &Ctx<'_>, position: LineCol) -> Vec<CompletionItem> {
    let offset = ctx.offset(position);
    let root = parse_manifest(ctx.db, ctx.file).syntax();
    let Some(cursor) = cursor_at(&root, offset) else {
        return Vec::new();
    };
    let catalog = kind_catalog(ctx.db, ctx.ws);
    let decl = ctx.target_at(offset);
    let site = Site {
        ctx,
        offset,
        catalog,
        decl,
        schema: decl
            .and_then(|d| d.kind.as_ref())
            .and_then(|k| catalog.get(&k.value)),
    };
    let table: Vec<&str> = cursor.table.iter().map(String::as_str).collect();
    match cursor.place {
        Place::Header { from } => site.headers(from),
        Place::Key { from, present } => site.keys(&table, from, &present),
        Place::Value { key, string, from } => site.values(&table, &key, string, from),
    }
}

/// What completion knows at the cursor: the target around it and its kind.
struct Site<'a> {
    ctx: &'a Ctx<'a>,
    offset: u32,
    catalog: &'a KindCatalog,
    decl: Option<&'a TargetDecl>,
    schema: Option<&'a KindSchema>,
}

impl Site<'_> {
    /// An item inserting and sorting by its label, replacing the text from `from` to the
    /// cursor.
    fn item(&self, label: impl Into<String>, kind: CompletionKind, from: u32) -> CompletionItem {
        let label = label.into();
        CompletionItem {
            insert_text: label.clone(),
            sort_text: label.clone(),
            label,
            kind,
            detail: None,
            documentation: None,
            replace: self.ctx.range(TextRange {
                start: from,
                end: self.offset,
            }),
        }
    }

    fn headers(&self, from: u32) -> Vec<CompletionItem> {
        table_headers()
            .into_iter()
            .enumerate()
            .map(|(i, (header, key))| CompletionItem {
                documentation: Some(key.docs.to_owned()),
                sort_text: format!("{i:02}"),
                ..self.item(header, CompletionKind::Table, from)
            })
            .collect()
    }

    fn keys(&self, table: &[&str], from: u32, present: &[String]) -> Vec<CompletionItem> {
        match table {
            ["target", "attrs"] => self.attr_keys(from),
            ["target", "dependencies"] => self.role_keys(from),
            [_, ..] => match ManifestTable::at(table) {
                Some(table) => self.vocabulary_keys(table, from, present),
                None => Vec::new(),
            },
            // Top-level keys are tables: they are written as headers.
            [] => Vec::new(),
        }
    }

    /// The keys of a manifest table not yet written, in write order.
    fn vocabulary_keys(
        &self,
        table: ManifestTable,
        from: u32,
        present: &[String],
    ) -> Vec<CompletionItem> {
        table
            .keys()
            .enumerate()
            .filter(|(_, key)| !present.iter().any(|p| p == key.name))
            .map(|(i, key)| CompletionItem {
                detail: Some(key.shape.describe().to_owned()),
                documentation: Some(key.docs.to_owned()),
                insert_text: format!("{} = ", key.name),
                sort_text: format!("{i:02}"),
                ..self.item(key.name, CompletionKind::Key, from)
            })
            .collect()
    }

    fn attr_keys(&self, from: u32) -> Vec<CompletionItem> {
        let Some(schema) = self.schema else {
            return Vec::new();
        };
        let present: Vec<&str> = self
            .decl
            .map(|d| d.attrs.iter().map(|(k, _)| k.value.as_str()).collect())
            .unwrap_or_default();
        schema
            .attrs
            .iter()
            .filter(|a| !present.contains(&a.name.as_str()))
            .map(|a| CompletionItem {
                detail: Some(format!(
                    "{}{}",
                    a.ty,
                    if a.required { " (required)" } else { "" }
                )),
                documentation: Some(attr_markdown(schema, a)),
                insert_text: format!("{} = ", a.name),
                sort_text: format!("{}{}", if a.required { "0" } else { "1" }, a.name),
                ..self.item(a.name.clone(), CompletionKind::Attribute, from)
            })
            .collect()
    }

    fn role_keys(&self, from: u32) -> Vec<CompletionItem> {
        let Some(schema) = self.schema else {
            return Vec::new();
        };
        schema
            .dependencies
            .iter()
            .filter(|r| r.name != "deps")
            .map(|r| CompletionItem {
                detail: Some(backticked(&r.providers)),
                documentation: Some(r.docs.clone()),
                insert_text: format!("{} = [", r.name),
                ..self.item(r.name.clone(), CompletionKind::Key, from)
            })
            .collect()
    }

    /// Values of `key` in `table`: inside an open string (content from `string`), or a
    /// literal written whole from `from`.
    fn values(
        &self,
        table: &[&str],
        key: &str,
        string: Option<u32>,
        from: u32,
    ) -> Vec<CompletionItem> {
        match (table, key, string) {
            (["target"], "kind", _) => self.kinds(string, from),
            (["target"], "visibility", Some(from)) => ["public", "private"]
                .iter()
                .map(|v| self.item(*v, CompletionKind::Value, from))
                .collect(),
            (["target"], "deps", Some(from)) => self.labels("deps", from),
            (["target", "dependencies"], role, Some(from)) => self.labels(role, from),
            (["target", "attrs"], attr, _) => self.attr_values(attr, string, from),
            _ => Vec::new(),
        }
    }

    fn kinds(&self, string: Option<u32>, from: u32) -> Vec<CompletionItem> {
        self.catalog
            .kinds
            .iter()
            .map(|k| CompletionItem {
                detail: Some(first_line(&k.docs)),
                documentation: Some(kind_markdown(k)),
                insert_text: match string {
                    Some(_) => k.name.clone(),
                    None => format!("\"{}\"", k.name),
                },
                ..self.item(k.name.clone(), CompletionKind::Kind, string.unwrap_or(from))
            })
            .collect()
    }

    fn labels(&self, role: &str, from: u32) -> Vec<CompletionItem> {
        label_completions(self.ctx, self.decl, self.schema, role)
            .into_iter()
            .map(|(label, detail)| CompletionItem {
                detail: Some(detail),
                ..self.item(label, CompletionKind::Label, from)
            })
            .collect()
    }

    fn attr_values(&self, attr: &str, string: Option<u32>, from: u32) -> Vec<CompletionItem> {
        let Some(spec) = self.schema.and_then(|s| s.attr(attr)) else {
            return Vec::new();
        };
        let from = string.unwrap_or(from);
        literal_values(spec, string.is_some())
            .into_iter()
            .map(|(label, insert)| CompletionItem {
                detail: Some(spec.ty.to_string()),
                insert_text: insert,
                ..self.item(label, CompletionKind::Value, from)
            })
            .collect()
    }
}

/// (label, inserted text) pairs for an attribute's value: inside an open string only the
/// allowed strings, else literals written whole.
fn literal_values(spec: &AttrSpec, in_string: bool) -> Vec<(String, String)> {
    if in_string {
        return spec
            .allowed_values
            .iter()
            .map(|v| (v.clone(), v.clone()))
            .collect();
    }
    let mut values = Vec::new();
    if spec.ty == AttrType::Bool {
        values.push(("true".into(), "true".into()));
        values.push(("false".into(), "false".into()));
    }
    for v in &spec.allowed_values {
        values.push((v.clone(), format!("\"{v}\"")));
    }
    values
}

fn first_line(docs: &str) -> String {
    docs.trim().lines().next().unwrap_or("").to_owned()
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
