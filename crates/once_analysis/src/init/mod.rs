//! `once init`: describe a repository from its own ecosystem files. Pure: the facts
//! ([`EcosystemFacts`], gathered by the execution layer) become proposed targets
//! ([`propose`]), which are merged into each package's manifest ([`merge`]) as one batch of
//! edit operations per package, planned with the edit machinery ([`crate::edit`]): the
//! same checks, the same format-preserving splices, nothing written here.

mod diff;
pub mod facts;
mod merge;
mod propose;

use std::collections::{BTreeMap, BTreeSet};

use once_db::{Db, FileWrite, RootDatabase, Workspace};
use once_model::value::AttrValue;

use crate::edit::{EditOperation, EditOutcome, EditRequest, manifest_path, plan_edit_from};

pub use diff::unified_diff;
pub use facts::{
    CargoPackage, CargoTarget, EcosystemFacts, GoPackage, NodePackage, PythonProject, PythonRunner,
    ShellTests,
};
use propose::{Proposal, TargetRef, Tree};

/// The text a root manifest `once init` creates starts from.
pub const ROOT_MANIFEST: &str =
    "# The workspace root: `once` finds the workspace by this table.\n[workspace]\n";

/// What `once init` would do to the repository's manifests.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InitPlan {
    /// One entry per manifest `once init` looked at, by package path.
    pub manifests: Vec<ManifestInit>,
    /// What the facts leave out or could not be read.
    pub warnings: Vec<String>,
    /// The text the root manifest starts from when `once init` creates it (`[workspace]`,
    /// with an `exclude` of the nested workspaces): written before the root's batch, which
    /// applies on top of it. `None` when the root manifest exists (it is never rewritten
    /// outside its batch).
    pub root_manifest: Option<String>,
}

/// The batch of one package's manifest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ManifestInit {
    pub package: String,
    /// Workspace-relative manifest path.
    pub path: String,
    /// The manifest's text before; `None` when the file does not exist.
    pub before: Option<String>,
    /// Its text after the batch (the text before when the batch was rejected).
    pub after: String,
    /// The operations, as `once edit apply` and `once_apply_edit` take them. A root
    /// manifest that does not exist starts from [`ROOT_MANIFEST`], which no operation
    /// writes: `create_root` says so.
    pub request: EditRequest,
    pub create_root: bool,
    pub outcome: EditOutcome,
    /// Targets proposed but left as they are: hand-written, or protected by
    /// `# once:keep`.
    pub left_alone: Vec<String>,
}

impl ManifestInit {
    /// Whether the batch changes the file.
    pub fn changed(&self) -> bool {
        self.before.as_deref() != Some(self.after.as_str())
    }

    pub fn rejected(&self) -> bool {
        matches!(self.outcome, EditOutcome::Rejected { .. })
    }

    /// The unified diff of the change (empty when nothing changes).
    pub fn diff(&self) -> String {
        if !self.changed() {
            return String::new();
        }
        unified_diff(&self.path, self.before.as_deref(), &self.after)
    }
}

impl InitPlan {
    /// Whether the manifests already say what the ecosystem files say.
    pub fn in_step(&self) -> bool {
        self.manifests.iter().all(|m| !m.changed() && !m.rejected())
    }

    /// The files to write: every changed manifest of an accepted batch.
    pub fn writes(&self) -> Vec<FileWrite> {
        self.manifests
            .iter()
            .filter(|m| m.changed() && !m.rejected())
            .map(|m| FileWrite {
                path: m.path.clone(),
                contents: m.after.clone().into_bytes(),
            })
            .collect()
    }
}

/// How a proposal meets the package's manifest.
enum Fate {
    Create,
    Update(merge::Existing),
    /// Left alone, with the reason; references to it go to the target named.
    Alone(String, TargetRef),
}

fn read_manifest(
    db: &RootDatabase,
    workspace: Workspace,
    package: &str,
) -> Result<Option<String>, String> {
    let path = manifest_path(package);
    let root = workspace.root(db).clone();
    match db.system().read_confined(&root, &path) {
        Ok(None) => Ok(None),
        Ok(Some(bytes)) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| format!("cannot read `{path}`: it is not UTF-8")),
        Err(e) => Err(format!("cannot read `{path}`: {e}")),
    }
}

/// Plans `once init` for the workspace from `facts`.
pub(crate) fn plan_init(
    db: &RootDatabase,
    workspace: Workspace,
    facts: &EcosystemFacts,
) -> Result<InitPlan, String> {
    // The packages of nested workspaces are theirs: never read, updated or deleted here.
    let nested = &facts.nested_workspaces;
    let existing_packages: BTreeSet<String> = workspace
        .packages(db)
        .iter()
        .map(|p| p.path(db).clone())
        .filter(|p| !nested.iter().any(|n| within(p, n)))
        .collect();
    // Files belong to the deepest package above them: first with every directory the
    // facts describe, then with those that get targets.
    let mut warnings = facts.warnings.clone();
    let first = {
        let mut dirs = existing_packages.clone();
        dirs.extend(propose::described_dirs(facts));
        let tree = Tree::new(&facts.files, dirs);
        propose::propose(facts, &tree, &mut Vec::new())
    };
    let mut dirs = existing_packages.clone();
    dirs.extend(first.iter().map(|p| p.package.clone()));
    let tree = Tree::new(&facts.files, dirs);
    let mut proposals = propose::propose(facts, &tree, &mut warnings);

    let mut packages: BTreeSet<String> = proposals.iter().map(|p| p.package.clone()).collect();
    packages.extend(existing_packages.iter().cloned());
    packages.insert(String::new());
    let mut texts: BTreeMap<String, Option<String>> = BTreeMap::new();
    let mut existing: BTreeMap<String, Vec<merge::Existing>> = BTreeMap::new();
    for package in &packages {
        let text = read_manifest(db, workspace, package)?;
        existing.insert(
            package.clone(),
            text.as_deref()
                .map(merge::existing_targets)
                .unwrap_or_default(),
        );
        texts.insert(package.clone(), text);
    }

    // How each proposal meets its manifest, and where references to it go.
    let mut fates = Vec::with_capacity(proposals.len());
    let mut alias: BTreeMap<TargetRef, TargetRef> = BTreeMap::new();
    for p in &proposals {
        let here = &existing[&p.package];
        let same_kind = proposals
            .iter()
            .filter(|q| q.package == p.package && q.kind == p.kind)
            .count();
        let fate = match here.iter().find(|e| e.name == p.name) {
            Some(e) if e.generated && e.keep => {
                Fate::Alone(format!("`{}`: kept (`# once:keep`)", p.name), p.id())
            }
            Some(e) if e.generated => Fate::Update(e.clone()),
            Some(_) => Fate::Alone(
                format!("`{}`: a hand-written target of this name exists", p.name),
                p.id(),
            ),
            None => match here
                .iter()
                .find(|e| !e.generated && e.kind.as_deref() == Some(p.kind))
                .filter(|_| same_kind == 1)
            {
                Some(e) => Fate::Alone(
                    format!(
                        "`{}`: the hand-written `{}` of kind `{}` describes it",
                        p.name, e.name, p.kind
                    ),
                    TargetRef {
                        package: p.package.clone(),
                        name: e.name.clone(),
                    },
                ),
                None => Fate::Create,
            },
        };
        if let Fate::Alone(_, to) = &fate
            && *to != p.id()
        {
            alias.insert(p.id(), to.clone());
        }
        fates.push(fate);
    }
    let rewrite = |targets: &mut Vec<TargetRef>| {
        for t in targets.iter_mut() {
            if let Some(to) = alias.get(t) {
                *t = to.clone();
            }
        }
    };
    for p in &mut proposals {
        rewrite(&mut p.deps);
        for (_, targets) in &mut p.roles {
            rewrite(targets);
        }
    }

    let mut operations: BTreeMap<String, Vec<EditOperation>> = BTreeMap::new();
    let mut left_alone: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (p, fate) in proposals.iter().zip(fates) {
        match fate {
            Fate::Create => {
                operations
                    .entry(p.package.clone())
                    .or_default()
                    .push(EditOperation::Create {
                        target: merge::target_table(p),
                        comment: Some(merge::provenance(p)),
                    })
            }
            Fate::Update(e) => {
                if let Some(op) = merge::update(&e, p) {
                    operations.entry(p.package.clone()).or_default().push(op);
                }
            }
            Fate::Alone(note, _) => left_alone.entry(p.package.clone()).or_default().push(note),
        }
    }
    let proposed: BTreeSet<TargetRef> = proposals.iter().map(Proposal::id).collect();
    for (package, targets) in &existing {
        for e in targets {
            let id = TargetRef {
                package: package.clone(),
                name: e.name.clone(),
            };
            if e.generated && !proposed.contains(&id) {
                if e.keep {
                    left_alone.entry(package.clone()).or_default().push(format!(
                        "`{}`: its source is gone, kept (`# once:keep`)",
                        e.name
                    ));
                } else {
                    operations
                        .entry(package.clone())
                        .or_default()
                        .push(EditOperation::Delete {
                            target_name: e.name.clone(),
                        });
                }
            }
        }
    }

    let root_manifest = texts
        .get("")
        .is_some_and(Option::is_none)
        .then(|| root_manifest_text(nested));
    if root_manifest.is_none() {
        warnings.extend(nested_not_excluded(db, workspace, facts));
    }
    warnings.extend(left_out(
        db,
        workspace,
        proposals.iter().map(|p| p.package.as_str()),
    ));

    let mut manifests = Vec::new();
    for package in &packages {
        let before = texts[package].clone();
        let create_root = package.is_empty() && before.is_none();
        let ops = operations.remove(package).unwrap_or_default();
        let notes = left_alone.remove(package).unwrap_or_default();
        if ops.is_empty() && notes.is_empty() && !create_root {
            if texts[package].is_some() && proposals.iter().any(|p| p.package == *package) {
                // In step: reported as unchanged.
            } else {
                continue;
            }
        }
        let request = EditRequest {
            package: package.clone(),
            operations: ops,
        };
        let base = if create_root {
            root_manifest.as_deref()
        } else {
            None
        };
        let outcome = plan_edit_from(db, workspace, &request, base)?;
        let after = match &outcome {
            EditOutcome::Applied {
                write: Some(write), ..
            } => String::from_utf8_lossy(&write.contents).into_owned(),
            _ => before.clone().unwrap_or_default(),
        };
        manifests.push(ManifestInit {
            package: package.clone(),
            path: manifest_path(package),
            before,
            after,
            request,
            create_root,
            outcome,
            left_alone: notes,
        });
    }
    Ok(InitPlan {
        manifests,
        warnings,
        root_manifest,
    })
}

/// Whether the package directory `path` is `dir` or lies below it.
fn within(path: &str, dir: &str) -> bool {
    path == dir
        || path
            .strip_prefix(dir)
            .is_some_and(|rest| rest.starts_with('/'))
}

/// The text of a root manifest `once init` creates: [`ROOT_MANIFEST`], with each nested
/// workspace and everything below it excluded.
fn root_manifest_text(nested: &[String]) -> String {
    let mut text = ROOT_MANIFEST.to_owned();
    if nested.is_empty() {
        return text;
    }
    text.push_str(
        "# Workspaces of their own inside this one (once init found them): not loaded here.\nexclude = [\n",
    );
    for dir in nested {
        let (within, below) = nested_excludes(dir);
        text.push_str(&format!("    {within},\n    {below},\n"));
    }
    text.push_str("]\n");
    text
}

/// The two `exclude` entries of the nested workspace `dir`, as TOML strings: the
/// directory and everything below it, its name escaped for globs.
fn nested_excludes(dir: &str) -> (String, String) {
    let pattern = once_db::package_filter::escape_glob(dir);
    let below = format!("{pattern}/**");
    (
        AttrValue::String(pattern).to_string(),
        AttrValue::String(below).to_string(),
    )
}

/// A warning for each nested workspace the existing root manifest does not exclude.
fn nested_not_excluded(
    db: &RootDatabase,
    workspace: Workspace,
    facts: &EcosystemFacts,
) -> Vec<String> {
    let settings = once_graph::workspace_settings(db, workspace);
    let (filter, ..) = once_db::PackageFilter::new(&settings.include, &settings.exclude);
    let packages: Vec<String> = workspace
        .packages(db)
        .iter()
        .map(|p| p.path(db).clone())
        .collect();
    facts
        .nested_workspaces
        .iter()
        .filter(|dir| {
            filter.includes(dir)
                || packages
                    .iter()
                    .any(|p| within(p, dir) && filter.includes(p))
        })
        .map(|dir| {
            let (within, below) = nested_excludes(dir);
            format!(
                "`{dir}` is a workspace of its own, but the root `once.toml` does not exclude it, so its packages are loaded as this workspace's: add `{within}, {below}` to `[workspace] exclude`"
            )
        })
        .collect()
}

/// A warning for each package with generated targets that `[workspace] include/exclude`
/// leave out: its manifest is written, but its targets are not loaded.
fn left_out<'a>(
    db: &RootDatabase,
    workspace: Workspace,
    packages: impl Iterator<Item = &'a str>,
) -> Vec<String> {
    let packages: BTreeSet<&str> = packages.collect();
    let settings = once_graph::workspace_settings(db, workspace);
    let (included, ..) = once_db::PackageFilter::new(&settings.include, &[]);
    let (filter, ..) = once_db::PackageFilter::new(&settings.include, &settings.exclude);
    packages
        .into_iter()
        .filter(|p| !filter.includes(p))
        .map(|p| {
            let reason = if included.includes(p) {
                "matches `[workspace] exclude`"
            } else {
                "is outside `[workspace] include`"
            };
            format!(
                "the package `{p}` {reason} of the root `once.toml`: once init describes it, but the workspace does not load its targets; change `[workspace]` to add it"
            )
        })
        .collect()
}
