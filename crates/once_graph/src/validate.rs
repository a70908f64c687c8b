//! Validation: every diagnostic of a package's manifest, and of the whole workspace.

use std::collections::BTreeMap;

use once_db::{Db, File, GlobEntry, Package, PackageFilter, Workspace, source_text};
use once_model::{
    Diagnostic, DiagnosticCode, Fix, Severity, TargetLabel, TextRange, resolve_reference,
};
use rustc_hash::FxHashMap;

use crate::fixes::add_text_fixes;
use crate::graph::dependency_cycles;
use crate::kinds::{kind_catalog, module_diagnostics};
use crate::manifests::{Configurable, manifest};
use crate::resolve::{
    ResolvedTarget, is_label_type, resolved_targets, string_elements, target_summaries,
};
use crate::settings::package_by_path;
use crate::text::closest;

/// Every diagnostic of one package's manifest: structure, local checks, and checks of its
/// dependencies against the packages they live in.
#[salsa::tracked(returns(ref))]
pub fn file_diagnostics(db: &dyn Db, package: Package) -> Box<[Diagnostic]> {
    let Some(workspace) = Workspace::try_get(db) else {
        return Box::new([]);
    };
    let manifest = manifest(db, package);
    let resolved = resolved_targets(db, package);
    let mut diagnostics: Vec<Diagnostic> = manifest.diagnostics.clone();
    diagnostics.extend(resolved.diagnostics.iter().cloned());
    if package.path(db).is_empty() {
        diagnostics.extend(root_settings_diagnostics(db, package));
    }
    let catalog = kind_catalog(db, workspace);
    diagnostics.extend(package_reference_diagnostics(db, package).iter().cloned());
    diagnostics.extend(
        crate::interpreters::interpreter_diagnostics(db, package)
            .diagnostics()
            .cloned(),
    );
    if diagnostics
        .iter()
        .any(|d| d.code == DiagnosticCode::MissingRequiredAttr)
    {
        let text = &source_text(db, package.manifest(db)).text;
        add_text_fixes(text, manifest, catalog, &mut diagnostics);
    }
    diagnostics.sort_by(|a, b| {
        (a.range.map(|r| r.start), a.code).cmp(&(b.range.map(|r| r.start), b.code))
    });
    cap_diagnostics(diagnostics).into_boxed_slice()
}

/// The errors that keep every target of `package` from being planned: each error
/// validation reports in the package's manifest ([`file_diagnostics`]: syntax, TOML,
/// structure, attributes, references), and those of the root manifest, whose
/// `[workspace]` and `[modules]` tables shape every package. Recovery from a broken
/// manifest is for the editor: a target the parser salvaged from one is never planned,
/// since what it would run is a guess (an unterminated string swallowing the rest of a
/// command, a dependency dropped with its invalid label). An interpreter that cannot run
/// (`invalid_interpreter`) refuses only the targets that would run it
/// (`crate::interpreters::target_interpreter_errors`).
#[salsa::tracked(returns(ref))]
pub(crate) fn planning_errors(db: &dyn Db, package: Package) -> Box<[Diagnostic]> {
    let errors_of = |package: Package| {
        file_diagnostics(db, package)
            .iter()
            .filter(|d| {
                d.severity == Severity::Error && d.code != DiagnosticCode::InvalidInterpreter
            })
            .cloned()
    };
    let mut errors: Vec<Diagnostic> = errors_of(package).collect();
    if !package.path(db).is_empty()
        && let Some(workspace) = Workspace::try_get(db)
        && let Some(root) = package_by_path(db, workspace).get("")
    {
        errors.extend(errors_of(root));
    }
    errors.into_boxed_slice()
}

/// [`reference_diagnostics`] of every target of `package`, in the targets' order: shared
/// by [`file_diagnostics`] (and so by [`planning_errors`]).
#[salsa::tracked(returns(ref))]
fn package_reference_diagnostics(db: &dyn Db, package: Package) -> Box<[Diagnostic]> {
    let Some(workspace) = Workspace::try_get(db) else {
        return Box::new([]);
    };
    resolved_targets(db, package)
        .targets
        .iter()
        .flat_map(|target| reference_diagnostics(db, workspace, package, target))
        .collect()
}

/// The diagnostics of `target`'s references to other targets (its visibility entries
/// naming targets, its dependencies, its label-typed attributes), checked against the
/// packages they name: what [`file_diagnostics`] adds to the package's own for it.
fn reference_diagnostics(
    db: &dyn Db,
    workspace: Workspace,
    package: Package,
    target: &ResolvedTarget,
) -> Vec<Diagnostic> {
    let mut diagnostics = Vec::new();
    let manifest = manifest(db, package);
    let catalog = kind_catalog(db, workspace);
    let index = package_by_path(db, workspace);
    let consumer_package = package.path(db).as_str();
    let consumer = target.label.id();
    let kind = catalog.get(&target.kind);
    let decl = &manifest.targets[target.declaration];
    let exists = |label: &TargetLabel| {
        index.get(&label.package).is_some_and(|p| {
            target_summaries(db, p)
                .binary_search_by(|s| s.name.as_str().cmp(&label.name))
                .is_ok()
        })
    };
    // Visibility entries naming a target must name an existing one.
    for entry in &decl.visibility {
        let text = entry.value.as_str();
        if matches!(text, "public" | "private") || text.contains(':') {
            continue;
        }
        let Ok(label) = resolve_reference(consumer_package, text) else {
            continue;
        };
        if !exists(&label) {
            diagnostics.push(
                Diagnostic::new(
                    DiagnosticCode::InvalidVisibility,
                    format!("visibility entry `{text}` names target `{}`, which does not exist", label.id()),
                )
                .at(manifest.file.clone(), entry.range)
                .with_target(consumer.clone())
                .with_attribute("visibility")
                .with_repair("Name an existing target, or use `package:<pkg>` / `subtree:<pkg>` to grant a package".to_owned()),
            );
        }
    }
    let mut check_reference = |label: &TargetLabel,
                               attribute: String,
                               range: TextRange,
                               role_providers: Option<&[String]>| {
        let summary = index.get(&label.package).and_then(|p| {
            let summaries = target_summaries(db, p);
            summaries
                .binary_search_by(|s| s.name.as_str().cmp(&label.name))
                .ok()
                .map(|i| summaries[i].clone())
        });
        let Some(summary) = summary else {
            let mut diagnostic = Diagnostic::new(
                DiagnosticCode::MissingDependency,
                format!(
                    "target `{consumer}` depends on missing target `{}`",
                    label.id()
                ),
            )
            .at(manifest.file.clone(), range)
            .with_target(consumer.clone())
            .with_attribute(attribute.clone());
            let candidates: Vec<String> = index
                .get(&label.package)
                .map(|p| {
                    target_summaries(db, p)
                        .iter()
                        .map(|s| TargetLabel::new(label.package.clone(), s.name.clone()).id())
                        .collect()
                })
                .unwrap_or_default();
            // A reference without `./` starts at the workspace root (`A` is the root
            // package's): when the same text read from this package names a target
            // (`./A`), that is the likeliest meaning.
            let local = (!consumer_package.is_empty())
                .then(|| TargetLabel::from_id(&format!("{consumer_package}/{}", label.id())))
                .filter(|local| exists(local));
            if let Some(local) = &local {
                let reference = format!("./{}", label.id());
                diagnostic.fixes.push(Fix::replace(
                    format!("Depend on `{reference}`"),
                    true,
                    range,
                    format!("\"{reference}\""),
                ));
                diagnostic.repairs.push(format!(
                    "Did you mean `{reference}`, the target `{}` of this package? A reference without `./` starts at the workspace root",
                    local.id()
                ));
            }
            let suggestions = closest(&label.id(), candidates.iter().map(String::as_str), 2);
            for (i, suggestion) in suggestions.iter().enumerate() {
                let suggested = TargetLabel::from_id(suggestion);
                let reference = if suggested.package == consumer_package {
                    format!("./{}", suggested.name)
                } else {
                    suggestion.clone()
                };
                diagnostic.fixes.push(Fix::replace(
                    format!("Depend on `{reference}`"),
                    i == 0 && local.is_none(),
                    range,
                    format!("\"{reference}\""),
                ));
                diagnostic
                    .repairs
                    .push(format!("Did you mean `{suggestion}`?"));
            }
            diagnostic.repairs.push(format!(
                "Declare target `{}` or remove it from `{attribute}`",
                label.id()
            ));
            diagnostics.push(diagnostic);
            return;
        };
        if let Some(accepted) = role_providers
            && !accepted.is_empty()
            && summary.kind.is_some()
            && !summary.providers.iter().any(|p| accepted.contains(p))
        {
            diagnostics.push(
                Diagnostic::new(
                    DiagnosticCode::IncompatibleDependencyProvider,
                    format!(
                        "dependency `{}` (kind `{}`) provides [{}], but `{attribute}` of `{consumer}` accepts [{}]",
                        label.id(),
                        summary.kind.as_deref().unwrap_or(""),
                        summary.providers.join(", "),
                        accepted.join(", ")
                    ),
                )
                .at(manifest.file.clone(), range)
                .with_target(consumer.clone())
                .with_attribute(attribute.clone())
                .with_repair(format!("Depend on a target that provides one of [{}], or remove `{}`", accepted.join(", "), label.id())),
            );
        }
        if !summary
            .visibility
            .allows(&label.package, consumer_package, &consumer)
        {
            let grant = if consumer_package.is_empty() {
                consumer.clone()
            } else {
                format!("package:{consumer_package}")
            };
            diagnostics.push(
                Diagnostic::new(
                    DiagnosticCode::DependencyNotVisible,
                    format!("target `{consumer}` cannot depend on `{}`: it is not visible to `{consumer}`", label.id()),
                )
                .at(manifest.file.clone(), range)
                .with_target(consumer.clone())
                .with_attribute(attribute.clone())
                .with_repair(format!("Add `{grant}` to the `visibility` of `{}`", label.id())),
            );
        }
    };
    for dep in &target.deps {
        let attribute = if dep.role == "deps" {
            "deps".to_owned()
        } else {
            format!("dependencies.{}", dep.role)
        };
        let providers = kind
            .and_then(|k| k.dependency_role(&dep.role))
            .map(|r| r.providers.as_slice());
        check_reference(&dep.label, attribute, dep.range, providers);
    }
    // Label-typed attributes must name existing targets too.
    let Some(kind) = kind else {
        return diagnostics;
    };
    for (name, value) in &decl.attrs {
        let Some(spec) = kind.attr(&name.value) else {
            continue;
        };
        let is_label = is_label_type(&spec.ty);
        let Configurable::Value(value) = &value.value else {
            continue;
        };
        if !is_label {
            continue;
        }
        for (reference, range) in string_elements(value) {
            if let Ok(label) = resolve_reference(consumer_package, reference) {
                check_reference(&label, format!("attrs.{}", name.value), range, None);
            }
        }
    }
    diagnostics
}

/// How many diagnostics of one code one file reports; the rest are counted in one
/// `diagnostics_omitted` diagnostic.
pub const MAX_DIAGNOSTICS_PER_CODE: usize = 100;

/// Keeps the first [`MAX_DIAGNOSTICS_PER_CODE`] diagnostics of each code in each file, in
/// their order, and puts one `diagnostics_omitted` diagnostic in place of the first one left
/// out, saying how many were (a file of 40,000 broken lines, or 400,000 missing sources,
/// would otherwise answer with that many diagnostics). Applying it twice changes nothing.
pub fn cap_diagnostics(diagnostics: Vec<Diagnostic>) -> Vec<Diagnostic> {
    if diagnostics.len() <= MAX_DIAGNOSTICS_PER_CODE {
        return diagnostics;
    }
    let mut totals: FxHashMap<(Option<&str>, DiagnosticCode), usize> = FxHashMap::default();
    for d in &diagnostics {
        *totals.entry((d.file.as_deref(), d.code)).or_default() += 1;
    }
    if totals
        .values()
        .all(|&total| total <= MAX_DIAGNOSTICS_PER_CODE)
    {
        return diagnostics;
    }
    let totals: FxHashMap<(Option<String>, DiagnosticCode), usize> = totals
        .into_iter()
        .map(|((file, code), total)| ((file.map(str::to_owned), code), total))
        .collect();
    // Per (file, code): how many were seen, and where the summary went.
    let mut seen: FxHashMap<(Option<String>, DiagnosticCode), (usize, Option<usize>)> =
        FxHashMap::default();
    let mut kept = Vec::with_capacity(totals.len() * (MAX_DIAGNOSTICS_PER_CODE + 1));
    for diagnostic in diagnostics {
        let key = (diagnostic.file.clone(), diagnostic.code);
        let total = totals.get(&key).copied().unwrap_or(0);
        let (count, summary) = seen.entry(key).or_insert((0, None));
        *count += 1;
        if *count <= MAX_DIAGNOSTICS_PER_CODE {
            kept.push(diagnostic);
            continue;
        }
        match *summary {
            Some(at) => {
                let summary: &mut Diagnostic = &mut kept[at];
                summary.severity = summary.severity.min(diagnostic.severity);
            }
            None => {
                *summary = Some(kept.len());
                kept.push(omitted(&diagnostic, total - MAX_DIAGNOSTICS_PER_CODE));
            }
        }
    }
    kept
}

/// The `diagnostics_omitted` diagnostic for `omitted` diagnostics of `first`'s code.
pub(crate) fn omitted(first: &Diagnostic, omitted: usize) -> Diagnostic {
    let code = first.code;
    let place = match &first.file {
        Some(_) => " in this file",
        None => "",
    };
    let (plural, verb) = if omitted == 1 {
        ("", "is")
    } else {
        ("s", "are")
    };
    let mut diagnostic = Diagnostic::new(
        DiagnosticCode::DiagnosticsOmitted,
        format!(
            "{omitted} more `{code}` diagnostic{plural}{place} {verb} not shown: only the first {MAX_DIAGNOSTICS_PER_CODE} of each code are reported"
        ),
    )
    .with_repair("Fix the reported ones and validate again to see the rest");
    diagnostic.severity = first.severity;
    diagnostic.file = first.file.clone();
    diagnostic.range = first.range;
    diagnostic
}

/// `unused_exclusion` for each valid exclusion of `[workspace] <name>` (`list`, whose
/// values are `texts`) that takes back none of the discovered packages the entries before
/// it match. Reads the discovered packages only when the list has an exclusion.
fn unused_package_exclusions(
    db: &dyn Db,
    root: Package,
    list: &[crate::Spanned<String>],
    texts: &[String],
    name: &str,
) -> Vec<Diagnostic> {
    let has_exclusions = texts
        .iter()
        .any(|text| GlobEntry::parse(text).is_exclusion());
    let Some(workspace) = Workspace::try_get(db).filter(|_| has_exclusions) else {
        return Vec::new();
    };
    let unused = once_db::package_filter::unused_exclusions(
        texts,
        workspace
            .packages(db)
            .iter()
            .map(|package| package.path(db).as_str()),
    );
    let file = manifest(db, root).file.clone();
    unused
        .into_iter()
        .filter_map(|index| {
            let pattern = list.get(index)?;
            Some(
                Diagnostic::new(
                    DiagnosticCode::UnusedExclusion,
                    format!(
                        "`[workspace] {name}` exclusion `{}` takes back no package that the entries before it match",
                        pattern.value
                    ),
                )
                .at(file.clone(), pattern.range)
                .with_attribute(format!("workspace.{name}"))
                .with_repair(
                    "Put the exclusion after the patterns whose packages it takes back, or remove it"
                        .to_owned(),
                ),
            )
        })
        .collect()
}

/// Diagnostics of the root manifest's `[workspace]` and `[modules]` tables.
fn root_settings_diagnostics(db: &dyn Db, root: Package) -> Vec<Diagnostic> {
    let manifest = manifest(db, root);
    let mut out = Vec::new();
    if let Some(workspace) = &manifest.workspace {
        let include: Vec<String> = workspace.include.iter().map(|s| s.value.clone()).collect();
        let exclude: Vec<String> = workspace.exclude.iter().map(|s| s.value.clone()).collect();
        let (_, include_errors, exclude_errors) = PackageFilter::new(&include, &exclude);
        for (list, errors, name) in [
            (&workspace.include, include_errors, "include"),
            (&workspace.exclude, exclude_errors, "exclude"),
        ] {
            for error in errors {
                let Some(pattern) = list.get(error.index) else {
                    continue;
                };
                let what = if GlobEntry::parse(&pattern.value).is_exclusion() {
                    "exclusion"
                } else {
                    "pattern"
                };
                out.push(
                    Diagnostic::new(
                        DiagnosticCode::InvalidGlob,
                        format!(
                            "`[workspace] {name}` {what} `{}` is invalid: {}",
                            pattern.value, error.message
                        ),
                    )
                    .at(manifest.file.clone(), pattern.range)
                    .with_attribute(format!("workspace.{name}")),
                );
            }
        }
        for (list, texts, name) in [
            (&workspace.include, &include, "include"),
            (&workspace.exclude, &exclude, "exclude"),
        ] {
            out.extend(unused_package_exclusions(db, root, list, texts, name));
        }
        for (field, value) in [("os", &workspace.os), ("arch", &workspace.arch)] {
            if let Some(value) = value
                && value.value.trim().is_empty()
            {
                out.push(
                    Diagnostic::new(
                        DiagnosticCode::InvalidConfiguration,
                        format!("`configuration.{field}` must not be empty"),
                    )
                    .at(manifest.file.clone(), value.range)
                    .with_attribute(format!("workspace.configuration.{field}"))
                    .with_repair(format!(
                        "Remove `{field}` to use the host's, or set a value such as `linux`"
                    )),
                );
            }
        }
        for token in &workspace.tokens {
            if token.value.trim().is_empty() {
                out.push(
                    Diagnostic::new(
                        DiagnosticCode::InvalidConfiguration,
                        "configuration tokens must not be empty".to_owned(),
                    )
                    .at(manifest.file.clone(), token.range)
                    .with_attribute("workspace.configuration.tokens"),
                );
            }
        }
    }
    // `[modules] paths` are checked by `module_diagnostics`.
    out
}

/// The workspace's diagnostics that name a file, grouped by that file's
/// workspace-relative path (each group in [`workspace_diagnostics`] order).
#[salsa::tracked(returns(ref))]
pub fn workspace_diagnostics_by_file(
    db: &dyn Db,
    workspace: Workspace,
) -> BTreeMap<String, Box<[Diagnostic]>> {
    let mut groups: BTreeMap<String, Vec<Diagnostic>> = BTreeMap::new();
    for diagnostic in workspace_diagnostics(db, workspace) {
        if let Some(file) = &diagnostic.file {
            groups
                .entry(file.clone())
                .or_default()
                .push(diagnostic.clone());
        }
    }
    groups
        .into_iter()
        .map(|(file, group)| (file, group.into_boxed_slice()))
        .collect()
}

/// The workspace diagnostics of one file. An edit elsewhere re-runs this lookup, but an
/// unchanged group backdates, so what is derived from it (located ranges) is kept.
#[salsa::tracked(returns(ref))]
pub fn diagnostics_of_file(db: &dyn Db, file: File) -> Box<[Diagnostic]> {
    let Some(workspace) = Workspace::try_get(db) else {
        return Box::new([]);
    };
    workspace_diagnostics_by_file(db, workspace)
        .get(file.path(db))
        .cloned()
        .unwrap_or_default()
}

/// The file diagnostics of one chunk of [`crate::graph::PACKAGE_CHUNK`] packages (in
/// [`workspace_packages`] order): an edit to one package re-runs its chunk, and the
/// workspace-wide query checks one dependency per chunk instead of one per package.
#[salsa::tracked(returns(ref))]
pub fn chunk_diagnostics(db: &dyn Db, workspace: Workspace, chunk: u32) -> Box<[Diagnostic]> {
    crate::graph::chunk_of(db, workspace, chunk)
        .iter()
        .flat_map(|&package| file_diagnostics(db, package).iter().cloned())
        .collect()
}

/// Every diagnostic of the workspace, sorted by file and position.
#[salsa::tracked(returns(ref))]
pub fn workspace_diagnostics(db: &dyn Db, workspace: Workspace) -> Box<[Diagnostic]> {
    let mut diagnostics: Vec<Diagnostic> = Vec::new();
    if let Some(error) = &kind_catalog(db, workspace).prelude_error {
        diagnostics.push(Diagnostic::new(
            DiagnosticCode::UnknownTargetKind,
            format!("the built-in prelude failed to load (a bug in once): {error}"),
        ));
    }
    // The root package is always included, so its settings are always checked.
    for chunk in 0..crate::graph::package_chunks(db, workspace) {
        diagnostics.extend(chunk_diagnostics(db, workspace, chunk).iter().cloned());
    }
    diagnostics.extend(dependency_cycles(db, workspace).iter().cloned());
    diagnostics.extend(module_diagnostics(db, workspace).iter().cloned());
    diagnostics.sort_by(|a, b| {
        (&a.file, a.range.map(|r| r.start), a.code, &a.message).cmp(&(
            &b.file,
            b.range.map(|r| r.start),
            b.code,
            &b.message,
        ))
    });
    diagnostics.dedup();
    cap_diagnostics(diagnostics).into_boxed_slice()
}
