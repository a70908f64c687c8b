//! Resolving declarations against kinds and the configuration, one package at a time.
//!
//! [`resolved_targets`] turns a package's `[[target]]` tables into [`ResolvedTarget`]s and
//! reports every problem that needs no other package: names, kinds, attributes, selects,
//! label syntax, dependency roles and counts, visibility syntax and source patterns.
//! [`target_summaries`] is the small name table other packages read when they check
//! their dependencies, so that an edit which keeps names, kinds and visibility
//! re-validates no dependent.

use std::sync::Arc;

use once_db::{Db, GlobEffect, GlobEntry, GlobList, Package, Workspace};
use once_model::{
    AttrType, AttrValue, Diagnostic, DiagnosticCode, Fix, KindSchema, TargetLabel, TextRange,
    escape_invisible, first_invisible, is_invisible, is_valid_target_name, resolve_reference,
};
use rustc_hash::FxHashSet;

use crate::kinds::{KindCatalog, kind_catalog};
use crate::manifests::{AttrLiteral, Configurable, Manifest, Spanned, TargetDecl, manifest};
use crate::settings::{Configuration, workspace_settings};
use crate::text::closest;

mod attrs;
mod dependencies;
mod patterns;
mod sources;
pub use patterns::{SourcePattern, SourceSelection};
pub use sources::PackageFiles;
use sources::refused_links;

/// One visibility rule.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum VisibilityRule {
    Public,
    Private,
    Package(String),
    Subtree(String),
    Target(String),
}

/// Who may depend on a target. No rules means public.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct Visibility {
    pub rules: Vec<VisibilityRule>,
}

impl Visibility {
    /// Whether a target `consumer` in package `consumer_package` may depend on a target of
    /// `owner_package` with this visibility. The same package always may.
    pub fn allows(&self, owner_package: &str, consumer_package: &str, consumer: &str) -> bool {
        if owner_package == consumer_package || self.rules.is_empty() {
            return true;
        }
        self.rules.iter().any(|rule| match rule {
            VisibilityRule::Public => true,
            VisibilityRule::Private => false,
            VisibilityRule::Package(p) => p == consumer_package,
            VisibilityRule::Subtree(p) => {
                consumer_package == p || consumer_package.starts_with(&format!("{p}/"))
            }
            VisibilityRule::Target(id) => id == consumer,
        })
    }
}

/// What other packages need to know about a target.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct TargetSummary {
    pub name: String,
    /// `None` when the kind is missing or unknown.
    pub kind: Option<String>,
    pub providers: Vec<String>,
    pub visibility: Visibility,
}

/// The targets of a package by name (first declaration wins), sorted by name.
#[salsa::tracked(returns(ref))]
pub fn target_summaries(db: &dyn Db, package: Package) -> Vec<TargetSummary> {
    let mut summaries: Vec<TargetSummary> = resolved_targets(db, package)
        .targets
        .iter()
        .map(|t| TargetSummary {
            name: t.label.name.clone(),
            kind: t.kind_known.then(|| t.kind.clone()),
            providers: t.providers.clone(),
            visibility: t.visibility.clone(),
        })
        .collect();
    summaries.sort_by(|a, b| a.name.cmp(&b.name));
    summaries
}

/// A dependency edge as written, resolved to a label.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedDep {
    /// `deps` or a `dependencies` role.
    pub role: String,
    pub label: TargetLabel,
    /// The reference's text in the manifest.
    pub range: TextRange,
}

/// A target with references, selects and kind data resolved.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ResolvedTarget {
    pub label: TargetLabel,
    pub kind: String,
    /// Whether `kind` names a kind of the catalog.
    pub kind_known: bool,
    /// Index of the declaration in the manifest's `targets`.
    pub declaration: usize,
    pub srcs: Vec<String>,
    pub deps: Vec<ResolvedDep>,
    pub visibility: Visibility,
    pub visibility_text: Vec<String>,
    pub labels: Vec<String>,
    /// Attribute values as set (selects resolved), in declaration order.
    pub attrs: Vec<(String, AttrValue)>,
    /// Providers the kind emits.
    pub providers: Vec<String>,
}

/// A package's resolved targets plus the diagnostics found without other packages.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct ResolvedPackage {
    pub targets: Vec<ResolvedTarget>,
    pub diagnostics: Vec<Diagnostic>,
}

/// Resolves every target of a package.
#[salsa::tracked(returns(ref))]
pub fn resolved_targets(db: &dyn Db, package: Package) -> ResolvedPackage {
    let Some(workspace) = Workspace::try_get(db) else {
        return ResolvedPackage::default();
    };
    let manifest = manifest(db, package);
    let catalog = kind_catalog(db, workspace);
    let configuration = &workspace_settings(db, workspace).configuration;
    let files = PackageFiles {
        files: package.files(db),
        refused_links: refused_links(db, package),
    };
    resolve_manifest(manifest, catalog, configuration, Some(files))
}

/// Resolves every target of a manifest. `files` are the package's files for source and
/// path checks; `None` skips those checks.
pub fn resolve_manifest(
    manifest: &Manifest,
    catalog: &KindCatalog,
    configuration: &Configuration,
    files: Option<PackageFiles<'_>>,
) -> ResolvedPackage {
    let mut out = ResolvedPackage::default();
    let mut seen: FxHashSet<String> = FxHashSet::default();
    for (index, decl) in manifest.targets.iter().enumerate() {
        let mut checker = TargetChecker {
            manifest,
            decl,
            catalog,
            configuration,
            diagnostics: &mut out.diagnostics,
            id: None,
        };
        let resolved = checker.check(index, files);
        if let Some(resolved) = resolved {
            if seen.contains(&resolved.label.name) {
                let name = decl.name.as_ref().map_or(decl.header_range, |n| n.range);
                out.diagnostics.push(
                    Diagnostic::new(
                        DiagnosticCode::DuplicateTarget,
                        format!(
                            "target `{}` is declared more than once",
                            resolved.label.id()
                        ),
                    )
                    .at(manifest.file.clone(), name)
                    .with_target(resolved.label.id())
                    .with_attribute("name")
                    .with_repair("Rename this target or remove one of the declarations"),
                );
                continue;
            }
            seen.insert(resolved.label.name.clone());
            out.targets.push(resolved);
        }
    }
    // Kept (and cloned by every reader) only as far as they are reported.
    out.diagnostics = crate::validate::cap_diagnostics(out.diagnostics);
    out
}

struct TargetChecker<'a> {
    manifest: &'a Manifest,
    decl: &'a TargetDecl,
    catalog: &'a KindCatalog,
    configuration: &'a Configuration,
    diagnostics: &'a mut Vec<Diagnostic>,
    id: Option<String>,
}

impl TargetChecker<'_> {
    fn report(
        &mut self,
        code: DiagnosticCode,
        message: String,
        range: TextRange,
        attribute: Option<&str>,
    ) -> &mut Diagnostic {
        let mut diagnostic = Diagnostic::new(code, message).at(self.manifest.file.clone(), range);
        diagnostic.target = self.id.clone();
        diagnostic.attribute = attribute.map(str::to_owned);
        self.diagnostics.push(diagnostic);
        let last = self.diagnostics.len() - 1;
        &mut self.diagnostics[last]
    }

    /// A `select` with no branch for the configuration and no `default`.
    fn report_no_matching_branch(&mut self, attribute: &str, range: TextRange, example: &str) {
        let message = format!(
            "`{attribute}` select has no branch for configuration {} and no `default`",
            self.configuration.describe()
        );
        self.report(
            DiagnosticCode::SelectNoMatchingBranch,
            message,
            range,
            Some(attribute),
        )
        .repairs
        .push(format!("Add a `default = {example}` branch"));
    }

    fn check(&mut self, index: usize, files: Option<PackageFiles<'_>>) -> Option<ResolvedTarget> {
        let package = self.manifest.package.as_str();
        // Name.
        let name = match &self.decl.name {
            None => {
                self.report(
                    DiagnosticCode::TargetNameRequired,
                    "this `[[target]]` has no `name`".into(),
                    self.decl.header_range,
                    Some("name"),
                )
                .repairs
                .push("Add `name = \"…\"`, one path segment such as `Core`".into());
                None
            }
            Some(name) if let Some((offset, c)) = first_invisible(&name.value) => {
                let message = format!(
                    "target name `{}` contains U+{:04X}, an invisible or bidirectional control character",
                    escape_invisible(&name.value),
                    u32::from(c)
                );
                let repair = format!(
                    "Remove the invisible characters: `{}`",
                    suggest_name(&name.value)
                );
                let range = character_range(name, offset, c);
                self.report(
                    DiagnosticCode::InvalidTargetName,
                    message,
                    range,
                    Some("name"),
                )
                .repairs
                .push(repair);
                None
            }
            Some(name) if !is_valid_target_name(&name.value) => {
                let message = format!("target name `{}` must be a single path segment", name.value);
                let repair = format!(
                    "Use a name without `/`, `\\`, `:` or spaces, such as `{}`",
                    suggest_name(&name.value)
                );
                self.report(
                    DiagnosticCode::InvalidTargetName,
                    message,
                    name.range,
                    Some("name"),
                )
                .repairs
                .push(repair);
                None
            }
            Some(name) => Some(name.value.clone()),
        };
        let label = name.map(|n| TargetLabel::new(package, n));
        self.id = label.as_ref().map(TargetLabel::id);

        // Kind.
        let kind: Option<&KindSchema> = match &self.decl.kind {
            None => {
                let anchor = self.decl.anchor();
                self.report(
                    DiagnosticCode::TargetKindRequired,
                    "this target has no `kind`".into(),
                    anchor,
                    Some("kind"),
                )
                .repairs
                .push("Add `kind = \"…\"`; the kind list (`once query target-kinds`, MCP `once_list_target_kinds`) names them".into());
                None
            }
            Some(kind) => match self.catalog.get(&kind.value) {
                Some(schema) => Some(schema),
                None => {
                    let suggestions = closest(&kind.value, self.catalog.names(), 3);
                    let message = format!("target kind `{}` is not known", kind.value);
                    let range = kind.range;
                    let diagnostic = self.report(
                        DiagnosticCode::UnknownTargetKind,
                        message,
                        range,
                        Some("kind"),
                    );
                    for (i, suggestion) in suggestions.iter().enumerate() {
                        let title = format!("Use kind `{suggestion}`");
                        diagnostic.fixes.push(Fix::replace(
                            &title,
                            i == 0,
                            range,
                            format!("\"{suggestion}\""),
                        ));
                        diagnostic.repairs.push(title);
                    }
                    diagnostic
                        .repairs
                        .push("List every kind with `once query target-kinds` (MCP `once_list_target_kinds`)".into());
                    None
                }
            },
        };

        let visibility = self.check_visibility();
        let srcs = self.check_srcs(files);
        let deps = self.check_dependencies(kind);
        let attrs = match kind {
            Some(kind) => self.check_attrs(kind, files),
            None => self
                .decl
                .attrs
                .iter()
                .filter_map(|(name, value)| match &value.value {
                    Configurable::Value(v) => Some((name.value.clone(), v.value.clone())),
                    Configurable::Select(_) => None,
                })
                .collect(),
        };
        let label = label?;
        Some(ResolvedTarget {
            label,
            kind: self
                .decl
                .kind
                .as_ref()
                .map_or(String::new(), |k| k.value.clone()),
            kind_known: kind.is_some(),
            declaration: index,
            srcs,
            deps,
            visibility,
            visibility_text: self
                .decl
                .visibility
                .iter()
                .map(|v| v.value.clone())
                .collect(),
            labels: self.decl.labels.iter().map(|l| l.value.clone()).collect(),
            attrs,
            providers: kind.map(|k| k.providers.clone()).unwrap_or_default(),
        })
    }

    fn check_visibility(&mut self) -> Visibility {
        let package = self.manifest.package.clone();
        let mut rules = Vec::new();
        for entry in &self.decl.visibility {
            let text = entry.value.as_str();
            let rule = if text == "public" {
                Ok(VisibilityRule::Public)
            } else if text == "private" {
                Ok(VisibilityRule::Private)
            } else if let Some(p) = text.strip_prefix("package:") {
                valid_package_path(p).map(|()| VisibilityRule::Package(p.to_owned()))
            } else if let Some(p) = text.strip_prefix("subtree:") {
                valid_package_path(p).map(|()| VisibilityRule::Subtree(p.to_owned()))
            } else {
                resolve_reference(&package, text)
                    .map(|label| VisibilityRule::Target(label.id()))
                    .map_err(|e| format!("is not `public`, `private`, `package:<pkg>`, `subtree:<pkg>` or a target ({e})"))
            };
            match rule {
                Ok(rule) => rules.push(rule),
                Err(why) => {
                    let message = format!("visibility entry `{text}` {why}");
                    let rewrite = resolve_reference(&package, text)
                        .err()
                        .and_then(|e| e.suggestion().map(str::to_owned));
                    let diagnostic = self.report(
                        DiagnosticCode::InvalidVisibility,
                        message,
                        entry.range,
                        Some("visibility"),
                    );
                    match rewrite {
                        Some(rewrite) => suggest_label(diagnostic, text, &rewrite, entry.range),
                        None => diagnostic.repairs.push(
                            "Use `public`, `private`, `package:apps/cli`, `subtree:apps` or a target id".into(),
                        ),
                    }
                }
            }
        }
        Visibility { rules }
    }

    /// Checks `srcs` in written order: each pattern compiles (`invalid_glob`), matches a
    /// file of the package (`missing_source`, selecting entries only) and selects no link
    /// once does not follow (`invalid_source_link`); each exclusion leaves out a file the
    /// entries before it select (`unused_exclusion`).
    fn check_srcs(&mut self, files: Option<PackageFiles<'_>>) -> Vec<String> {
        let package = self.manifest.package.clone();
        let decl = self.decl;
        let entries = &decl.srcs;
        let compiled: Vec<(GlobEntry<'_>, Result<Arc<SourcePattern>, String>)> = entries
            .iter()
            .map(|written| {
                let entry = GlobEntry::parse(&written.value);
                (entry, SourcePattern::cached(entry.pattern))
            })
            .collect();
        let list = GlobList::new(
            compiled
                .iter()
                .enumerate()
                .filter_map(|(index, (entry, matcher))| {
                    Some((index, entry.effect, matcher.as_ref().ok()?.clone()))
                })
                .collect(),
        );
        // The exclusions that leave out a file of the package, when its files are known.
        let effective = files.map(|files| {
            list.effective_exclusions(files.files, |pattern, file| pattern.matches(file))
        });
        let place = if package.is_empty() {
            "the root package".to_owned()
        } else {
            format!("package `{package}`")
        };
        for (index, (written, (entry, matcher))) in entries.iter().zip(&compiled).enumerate() {
            let text = &written.value;
            let matcher = match matcher {
                Ok(matcher) => matcher,
                Err(why) => {
                    let message = match entry.effect {
                        GlobEffect::Select => format!("source pattern `{text}` is invalid: {why}"),
                        GlobEffect::Exclude => format!("exclusion `{text}` is invalid: {why}"),
                    };
                    self.report(
                        DiagnosticCode::InvalidGlob,
                        message,
                        written.range,
                        Some("srcs"),
                    );
                    continue;
                }
            };
            if entry.is_exclusion() {
                let effective = effective.as_deref();
                self.check_exclusion(&list, index, text, written.range, effective, &place);
                continue;
            }
            if let Some(files) = files {
                for (link, why) in files.refused_links {
                    if matcher.matches(link) && list.selects(|p| p.matches(link)) {
                        self.report_refused_link(&package, link, why, written.range, "srcs");
                    }
                }
            }
            if let Some(files) = files
                && !matcher.matches_any(files.files)
            {
                let message = format!("source pattern `{text}` matches no file in {place}");
                self.report(
                    DiagnosticCode::MissingSource,
                    message,
                    written.range,
                    Some("srcs"),
                )
                .repairs
                .push("Create the file, fix the pattern, or remove it from `srcs`".into());
            }
        }
        entries
            .iter()
            .map(|written| written.value.clone())
            .collect()
    }

    /// `unused_exclusion` for the exclusion written at `index` of `srcs` when it leaves
    /// out nothing: no entry before it selects anything, or none of the files they select
    /// matches it (`effective`: the exclusions that leave out a file of the package in
    /// `place`, when its files are known).
    fn check_exclusion(
        &mut self,
        list: &GlobList<Arc<SourcePattern>>,
        index: usize,
        text: &str,
        range: TextRange,
        effective: Option<&[usize]>,
        place: &str,
    ) {
        let (message, repair) = if !list.has_selections() {
            (
                format!(
                    "exclusion `{text}` excludes nothing: `srcs` holds only exclusions, so it selects no file"
                ),
                "List the files to select before the exclusions, as in `[\"*.go\", \"!*_test.go\"]`",
            )
        } else if !list.selects_before(index) {
            (
                format!(
                    "exclusion `{text}` excludes nothing: no entry before it selects a file, and entries apply in order"
                ),
                "Move the exclusion after the patterns whose files it leaves out",
            )
        } else if effective.is_some_and(|effective| !effective.contains(&index)) {
            (
                format!(
                    "exclusion `{text}` excludes no file that the entries before it select in {place}"
                ),
                "Fix the pattern, or remove the exclusion from `srcs`",
            )
        } else {
            return;
        };
        self.report(
            DiagnosticCode::UnusedExclusion,
            message,
            range,
            Some("srcs"),
        )
        .repairs
        .push(repair.into());
    }
}

/// The strings of a string or list-of-strings value, each with its own range.
pub(crate) fn string_elements(value: &AttrLiteral) -> Vec<(&str, TextRange)> {
    match &value.value {
        AttrValue::String(s) => vec![(s.as_str(), value.range)],
        AttrValue::List(items) => items
            .iter()
            .enumerate()
            .filter_map(|(i, item)| item.as_str().map(|s| (s, value.range_at(&[i]))))
            .collect(),
        _ => Vec::new(),
    }
}

pub(crate) fn is_label_type(ty: &AttrType) -> bool {
    match ty {
        AttrType::Label => true,
        AttrType::List(inner) => **inner == AttrType::Label,
        _ => false,
    }
}

fn valid_package_path(path: &str) -> Result<(), String> {
    if path.is_empty() {
        return Err("names an empty package".into());
    }
    if path.starts_with('/') || path.ends_with('/') {
        return Err("must not start or end with `/`".into());
    }
    if path
        .split('/')
        .any(|s| s.is_empty() || s == "." || s == "..")
    {
        return Err("has an empty, `.` or `..` segment".into());
    }
    Ok(())
}

/// The source range of character `c` at byte `offset` of a string value: exact when the
/// string is written on one line without escapes (its text is then the value between two
/// quotes: every escape is longer than what it stands for), else the whole value.
fn character_range(value: &Spanned<String>, offset: usize, c: char) -> TextRange {
    let written = value.range.end.saturating_sub(value.range.start) as usize;
    if written != value.value.len() + 2 {
        return value.range;
    }
    let start = value.range.start + 1 + offset as u32;
    TextRange {
        start,
        end: start + c.len_utf8() as u32,
    }
}

fn suggest_name(name: &str) -> String {
    let cleaned: String = name
        .chars()
        .filter(|&c| !is_invisible(c))
        .map(|c| {
            if matches!(c, '/' | '\\' | ':') || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect();
    let cleaned = cleaned.trim_matches('.').to_owned();
    if cleaned.is_empty() {
        "Core".into()
    } else {
        cleaned
    }
}

/// The repair and the fix rewriting the label `written` (a string at `range`) as
/// `suggestion`.
fn suggest_label(diagnostic: &mut Diagnostic, written: &str, suggestion: &str, range: TextRange) {
    let title = format!("Replace `{written}` with `{suggestion}`");
    if !suggestion.is_empty() {
        diagnostic.fixes.push(Fix::replace(
            &title,
            true,
            range,
            format!("\"{suggestion}\""),
        ));
    }
    diagnostic.repairs.push(title);
}
