//! The Python interpreters a package names, checked on disk: the `python` attribute of
//! each target of a built-in Python kind, and, in the root package, the root manifest's
//! `[workspace] python` (the interpreter of every such target that sets none).
//!
//! What a value names is read lexically ([`once_model::interpreter`]); whether it is
//! there is a question to the file system: the directory and its `bin/python3`, or the
//! interpreter file, must exist and the program must be an executable file. A virtual
//! environment lives outside the workspace's files (hidden, ignored, or elsewhere on the
//! host), so no file input tracks it: each path looked at is a [`once_db::HostPath`]
//! input, which every change batch looks at again ([`once_db::host_paths`]). The check
//! re-runs when an entry it looked at changed (an environment made, removed, broken),
//! and not for an unrelated edit; a package that names no interpreter never looks.
//!
//! **Architecture Invariant:** a missing interpreter refuses only the targets that would
//! run it ([`crate::actions`] asks [`target_interpreter_errors`]); it is not a planning
//! error of the whole package or, for `[workspace] python`, of the workspace.

use std::path::{Path, PathBuf};

use once_db::{Db, EntryKind, HostEntry, Package, Workspace, host_entry};
use once_model::interpreter::{DIRECTORY_PROGRAM, python_interpreter};
use once_model::{AttrValue, Diagnostic, DiagnosticCode, KindOrigin, TextRange};

use crate::kinds::kind_catalog;
use crate::manifests::{Configurable, manifest};
use crate::resolve::{ResolvedTarget, resolved_targets};
use crate::settings::package_by_path;

/// The prelude file of the built-in Python kinds, whose `python` attribute names the
/// interpreter.
const PYTHON_PRELUDE: &str = "python.star";

/// The attribute naming a target's interpreter.
const ATTRIBUTE: &str = "python";

/// What is wrong with the interpreters a package names.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct PackageInterpreters {
    /// Each target's own `python` attribute's problem, by target name.
    pub targets: Vec<(String, Diagnostic)>,
    /// `[workspace] python`'s (the root package only).
    pub workspace: Option<Diagnostic>,
}

impl PackageInterpreters {
    /// Every diagnostic, the workspace setting's first.
    pub fn diagnostics(&self) -> impl Iterator<Item = &Diagnostic> {
        self.workspace
            .iter()
            .chain(self.targets.iter().map(|(_, diagnostic)| diagnostic))
    }
}

/// The interpreter diagnostics of `package` (see the module doc).
#[salsa::tracked(returns(ref))]
pub fn interpreter_diagnostics(db: &dyn Db, package: Package) -> PackageInterpreters {
    let Some(workspace) = Workspace::try_get(db) else {
        return PackageInterpreters::default();
    };
    let root = workspace.root(db).clone();
    let manifest = manifest(db, package);
    let checker = Checker { db, root: &root };
    let mut found = PackageInterpreters::default();
    if package.path(db).is_empty()
        && let Some(setting) = manifest.workspace.as_ref().and_then(|w| w.python.as_ref())
        && let Some(problem) = checker.check(&setting.value)
    {
        found.workspace = Some(
            Diagnostic::new(
                DiagnosticCode::InvalidInterpreter,
                format!(
                    "`[workspace] python` names `{}`, {}",
                    setting.value, problem.what
                ),
            )
            .at(manifest.file.clone(), setting.range)
            .with_attribute("workspace.python")
            .with_repair(problem.repair),
        );
    }
    for target in &resolved_targets(db, package).targets {
        if !is_python_kind(db, workspace, &target.kind) {
            continue;
        }
        let Some(value) = set_value(target) else {
            continue;
        };
        let Some(problem) = checker.check(value) else {
            continue;
        };
        let range = attribute_range(&manifest.targets, target, value);
        let mut diagnostic = Diagnostic::new(
            DiagnosticCode::InvalidInterpreter,
            format!("attribute `{ATTRIBUTE}` names `{value}`, {}", problem.what),
        )
        .with_attribute(format!("attrs.{ATTRIBUTE}"))
        .with_target(target.label.id())
        .with_repair(problem.repair);
        if let Some(range) = range {
            diagnostic = diagnostic.at(manifest.file.clone(), range);
        }
        found.targets.push((target.label.name.clone(), diagnostic));
    }
    found
}

/// The interpreter errors that keep the target `name` of `package` (of a built-in Python
/// kind) from being planned: its own `python` attribute's, or, when it sets none, those
/// of `[workspace] python`.
pub(crate) fn target_interpreter_errors(
    db: &dyn Db,
    workspace: Workspace,
    package: Package,
    target: &ResolvedTarget,
) -> Vec<Diagnostic> {
    if !is_python_kind(db, workspace, &target.kind) {
        return Vec::new();
    }
    let own = interpreter_diagnostics(db, package);
    if set_value(target).is_some() {
        return own
            .targets
            .iter()
            .filter(|(name, _)| *name == target.label.name)
            .map(|(_, diagnostic)| diagnostic.clone())
            .collect();
    }
    package_by_path(db, workspace)
        .get("")
        .and_then(|root| interpreter_diagnostics(db, root).workspace.clone())
        .into_iter()
        .collect()
}

/// Whether `kind` is a built-in Python kind (a project module's kind of the same
/// attribute name may mean something else by it).
fn is_python_kind(db: &dyn Db, workspace: Workspace, kind: &str) -> bool {
    kind_catalog(db, workspace).get(kind).is_some_and(
        |kind| matches!(&kind.origin, KindOrigin::Prelude(file) if file == PYTHON_PRELUDE),
    )
}

/// The `python` value a target sets (selects resolved), if any.
fn set_value(target: &ResolvedTarget) -> Option<&str> {
    target
        .attrs
        .iter()
        .find(|(name, _)| name == ATTRIBUTE)
        .and_then(|(_, value)| match value {
            AttrValue::String(text) => Some(text.as_str()),
            _ => None,
        })
}

/// Where the target's `python` value is written: the value, or the select branch that
/// gives it.
fn attribute_range(
    declarations: &[crate::manifests::TargetDecl],
    target: &ResolvedTarget,
    value: &str,
) -> Option<TextRange> {
    let declaration = declarations.get(target.declaration)?;
    let (_, written) = declaration
        .attrs
        .iter()
        .find(|(name, _)| name.value == ATTRIBUTE)?;
    Some(match &written.value {
        Configurable::Value(literal) => literal.range,
        Configurable::Select(branches) => branches
            .iter()
            .find(|branch| branch.value.value.as_str() == Some(value))
            .map_or(written.range, |branch| branch.value.range),
    })
}

/// What is wrong with a value, and what to do.
struct Problem {
    /// A clause completing "`python` names `VALUE`, …".
    what: String,
    repair: String,
}

struct Checker<'a> {
    db: &'a dyn Db,
    root: &'a Path,
}

impl Checker<'_> {
    /// What is at the absolute `path` (a tracked read of its [`once_db::HostPath`]).
    fn entry(&self, path: &Path) -> HostEntry {
        *host_entry(self.db, self.db.host_path(path))
    }

    /// What is wrong with the setting `value`; `None` when its interpreter can run.
    fn check(&self, value: &str) -> Option<Problem> {
        let found = match python_interpreter(value) {
            Ok(found) => found,
            Err(why) => {
                return Some(Problem {
                    what: format!("which {why}"),
                    repair: "Name a virtual environment (`.venv`) or an interpreter \
                             (`/usr/bin/python3`), relative to the workspace root or absolute"
                        .to_owned(),
                });
            }
        };
        let place = |path: &str| -> PathBuf {
            if found.absolute {
                PathBuf::from(path)
            } else {
                self.root.join(path)
            }
        };
        let program = found.program();
        let shown = if found.directory {
            format!("{}/{DIRECTORY_PROGRAM}", value.trim_end_matches('/'))
        } else {
            value.to_owned()
        };
        if found.directory {
            let directory = place(&found.path);
            match self.entry(&directory).kind {
                None => {
                    return Some(Problem {
                        what: "which does not exist".to_owned(),
                        repair: format!(
                            "Create the virtual environment (`python3 -m venv {}`), or fix \
                             the path",
                            found.path
                        ),
                    });
                }
                Some(EntryKind::Directory) => {}
                Some(_) => {
                    return Some(Problem {
                        what: "which is a file, not a directory, and its name is not an \
                               interpreter's (`python3`, `python3.12`)"
                            .to_owned(),
                        repair: "Name the virtual environment's directory, or an \
                                 interpreter by a name such as `python3` (a link to it will do)"
                            .to_owned(),
                    });
                }
            }
        }
        let entry = self.entry(&place(&program));
        let Some(kind) = entry.kind else {
            // A `bin` directory named for its environment (`.venv/bin`).
            if found.directory
                && !entry.link
                && let Some(environment) = found.path.strip_suffix("/bin")
                && self.entry(&place(&format!("{}/python3", found.path))).kind
                    == Some(EntryKind::File)
            {
                return Some(Problem {
                    what: format!(
                        "which has no `{DIRECTORY_PROGRAM}`: it is the `bin` directory of one"
                    ),
                    repair: format!(
                        "Name the environment (`{environment}`) or its interpreter (`{}/python3`)",
                        found.path
                    ),
                });
            }
            let dangling = entry.link;
            // `--clear` empties the directory: advised only for a virtual environment
            // (its `pyvenv.cfg` is there), never for a directory of anything else.
            let environment = found.directory && {
                let config = match found.path.as_str() {
                    "" => "pyvenv.cfg".to_owned(),
                    "/" => "/pyvenv.cfg".to_owned(),
                    path => format!("{path}/pyvenv.cfg"),
                };
                self.entry(&place(&config)).kind == Some(EntryKind::File)
            };
            let what = match (dangling, found.directory) {
                (true, _) => format!(
                    "but `{shown}` is a symbolic link to nothing (the interpreter it was \
                     made from is gone)"
                ),
                (false, true) if environment => {
                    format!("a virtual environment without a `{DIRECTORY_PROGRAM}`")
                }
                (false, true) => format!(
                    "which has no `{DIRECTORY_PROGRAM}`: it is not a virtual environment or \
                     a Python installation"
                ),
                (false, false) => "which does not exist".to_owned(),
            };
            let repair = if environment {
                format!(
                    "Recreate the virtual environment (`python3 -m venv --clear {}`), or fix \
                     the path",
                    found.path
                )
            } else if found.directory {
                "Name a virtual environment or a Python installation (a directory with a \
                 `bin/python3`) or an interpreter file, or fix the path"
                    .to_owned()
            } else {
                "Fix the path, or install the interpreter".to_owned()
            };
            return Some(Problem { what, repair });
        };
        if kind == EntryKind::Directory && !found.directory {
            return Some(Problem {
                what: "which is a directory".to_owned(),
                repair: format!(
                    "Write `{}/` to name it as a virtual environment (its `{DIRECTORY_PROGRAM}` \
                     runs)",
                    value.trim_end_matches('/')
                ),
            });
        }
        if kind != EntryKind::File {
            return Some(Problem {
                what: format!("but `{shown}` is not a file"),
                repair: "Name an interpreter file or a virtual environment".to_owned(),
            });
        }
        if !entry.executable {
            return Some(Problem {
                what: format!("but `{shown}` is not executable"),
                repair: format!("Make it executable (`chmod +x {shown}`), or fix the path"),
            });
        }
        None
    }
}
