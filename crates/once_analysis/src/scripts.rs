//! Annotated scripts: `Analysis::script` validates one script's header (`once query
//! script`, MCP `once_validate_script`) from the tracked `script_contract` query, so a
//! warm server re-parses a script only after it changed.

use once_db::{Db as _, LineIndex, RootDatabase, Workspace};
use once_graph::script::{DirectiveSpan, script_contract};
use once_model::script::ScriptContract;
use once_model::{Diagnostic, DiagnosticCode};

use crate::{Analysis, Cancellable, LocatedDiagnostic};

/// A script's contract and what is wrong with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScriptValidation {
    /// No error among the diagnostics.
    pub valid: bool,
    /// The workspace-relative path, normalised.
    pub path: String,
    /// Whether the script has any `once` directive at all.
    pub has_directives: bool,
    /// The contract as far as it could be read (complete when `valid`).
    pub contract: ScriptContract,
    pub directives: Vec<DirectiveSpan>,
    pub diagnostics: Vec<LocatedDiagnostic>,
}

impl Analysis {
    /// Validates the annotated script at the workspace-relative `path`. `Err` when the
    /// path cannot name a file of the workspace.
    pub fn script(&self, path: &str) -> Cancellable<Result<ScriptValidation, String>> {
        let path = path.to_owned();
        self.with_db(move |db, ws| validate_script(db, ws, &path))
    }
}

impl Analysis {
    /// What an editor shows for a script it has open: the header's diagnostics when the
    /// file has `once` directives; nothing for an ordinary program (not even a missing
    /// shebang), nor for a path that cannot name a workspace file.
    pub fn script_diagnostics(&self, path: &str) -> Cancellable<Vec<LocatedDiagnostic>> {
        Ok(match self.script(path)? {
            Ok(validation) if validation.has_directives => validation.diagnostics,
            _ => Vec::new(),
        })
    }
}

/// The repair every script diagnostic that concerns the path carries.
const REPAIR: &str = "Fix the script path, shebang, or `once` directives and validate again";

pub(crate) fn validate_script(
    db: &RootDatabase,
    workspace: Workspace,
    path: &str,
) -> Result<ScriptValidation, String> {
    let trimmed = path.trim().replace('\\', "/");
    let trimmed = trimmed.strip_prefix("./").unwrap_or(&trimmed).to_owned();
    if trimmed.is_empty() {
        return Err("the script path is empty".to_owned());
    }
    if trimmed.starts_with('/') {
        return Err(format!(
            "script path `{trimmed}` is absolute; script paths are relative to the workspace root"
        ));
    }
    if trimmed.split('/').any(|part| part == "..") {
        return Err(format!(
            "script path `{trimmed}` leaves the workspace with `..`"
        ));
    }
    let normal = trimmed
        .split('/')
        .filter(|part| !part.is_empty() && *part != ".")
        .collect::<Vec<_>>()
        .join("/");
    let refused = |message: String| ScriptValidation {
        valid: false,
        path: normal.clone(),
        has_directives: false,
        contract: ScriptContract {
            path: normal.clone(),
            ..ScriptContract::default()
        },
        directives: Vec::new(),
        diagnostics: vec![LocatedDiagnostic::unlocated(
            Diagnostic::new(DiagnosticCode::InvalidScriptPath, message)
                .in_file(normal.clone())
                .with_target(normal.clone())
                .with_attribute("path")
                .with_repair(REPAIR),
        )],
    };
    if normal == ".once" || normal.starts_with(".once/") {
        return Ok(refused(format!(
            "`{normal}` is inside `.once`, which holds once's own state"
        )));
    }
    let root = workspace.root(db).clone();
    let system = db.system_arc();
    if let (Ok(real), Ok(real_root)) = (
        system.canonicalize(&root.join(&normal)),
        system.canonicalize(&root),
    ) && !real.starts_with(&real_root)
    {
        return Ok(refused(format!(
            "the script `{normal}` resolves outside the workspace (through a symlink)"
        )));
    }
    let file = db.file_for_path(&normal);
    let parse = script_contract(db, file).clone();
    let index: &LineIndex = once_db::line_index(db, file);
    let diagnostics: Vec<LocatedDiagnostic> = parse
        .diagnostics
        .into_iter()
        .map(|diagnostic| LocatedDiagnostic::new(diagnostic, Some(index)))
        .collect();
    Ok(ScriptValidation {
        valid: !diagnostics.iter().any(|d| d.diagnostic.is_error()),
        path: normal,
        has_directives: parse.has_directives,
        contract: parse.contract,
        directives: parse.directives,
        diagnostics,
    })
}

/// What `once exec -- CMD` needs to know of a file named on its command line: whether it
/// has `once` directives (it is then the script to run) and the runtime its shebang names
/// (empty when it has no valid shebang).
pub fn script_header(path: &str, text: &str) -> (bool, String) {
    let parse = once_graph::script::parse_script(path, text);
    (parse.has_directives, parse.contract.runtime)
}
