//! Diagnostics are data: a stable code, a severity, a message, where, and repairs.
//!
//! Every code is declared once in the table below, with its default severity and the
//! explanation that `docs/diagnostics.md` is generated from.

use std::fmt;

use crate::text::TextRange;

/// How serious a diagnostic is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Severity {
    Error,
    Warning,
    Info,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Error => "error",
            Severity::Warning => "warning",
            Severity::Info => "info",
        }
    }
}

impl fmt::Display for Severity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How many diagnostics of each severity a list holds: the one count every answer
/// (validation records, workspace summaries, human output) reports.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SeverityCounts {
    pub errors: usize,
    pub warnings: usize,
    pub infos: usize,
}

impl SeverityCounts {
    pub fn of(severities: impl IntoIterator<Item = Severity>) -> SeverityCounts {
        let mut counts = SeverityCounts::default();
        for severity in severities {
            match severity {
                Severity::Error => counts.errors += 1,
                Severity::Warning => counts.warnings += 1,
                Severity::Info => counts.infos += 1,
            }
        }
        counts
    }
}

macro_rules! diagnostic_codes {
    ($( $(#[doc = $doc:literal])* $variant:ident = $code:literal, $severity:ident; )*) => {
        /// Every diagnostic code `once` emits.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum DiagnosticCode {
            $( $(#[doc = $doc])* $variant, )*
        }

        impl DiagnosticCode {
            /// All codes, in documentation order.
            pub const ALL: &'static [DiagnosticCode] = &[$(DiagnosticCode::$variant,)*];

            /// The stable snake_case code.
            pub fn as_str(self) -> &'static str {
                match self { $(DiagnosticCode::$variant => $code,)* }
            }

            pub fn default_severity(self) -> Severity {
                match self { $(DiagnosticCode::$variant => Severity::$severity,)* }
            }

            /// The user-facing explanation, in Markdown.
            pub fn explanation(self) -> &'static str {
                match self { $(DiagnosticCode::$variant => concat!($($doc, "\n"),*),)* }
            }

            pub fn from_code(code: &str) -> Option<DiagnosticCode> {
                match code { $($code => Some(DiagnosticCode::$variant),)* _ => None }
            }
        }
    };
}

diagnostic_codes! {
    /// The file is not valid TOML. The range points at the offending text; the rest of the
    /// file is still read as far as the parser could recover, and other files are unaffected.
    SyntaxError = "syntax_error", Error;
    /// The file could not be read (permissions, not UTF-8, vanished while loading).
    FileUnreadable = "file_unreadable", Error;
    /// A key that `once.toml` does not define at this place, such as `label` in a
    /// `[[target]]` table or `inlcude` in `[workspace]`. The repair names the closest key.
    UnknownKey = "unknown_key", Error;
    /// A manifest field has the wrong TOML type, for example `srcs = "src/main.rs"`
    /// instead of a list, or `[[target]]` written as `[target]`, or a number outside the
    /// field's range (`[workspace] test_attempts = 0`).
    InvalidFieldType = "invalid_field_type", Error;
    /// A table that only the root `once.toml` may hold (`[workspace]`, `[modules]`)
    /// appears in a package manifest, where it would be ignored.
    MisplacedTable = "misplaced_table", Error;
    /// `[workspace.configuration]` holds an empty `os`, `arch` or token.
    InvalidConfiguration = "invalid_configuration", Error;
    /// A glob pattern (in `srcs`, `[workspace] include/exclude` or `[modules] paths`)
    /// does not parse, or is absolute or escapes its directory; for an exclusion
    /// (`!pattern`), the pattern after the `!`, which must not be empty.
    InvalidGlob = "invalid_glob", Error;
    /// A `[[target]]` table has no `name`.
    TargetNameRequired = "target_name_required", Error;
    /// A target name must be one path segment: not empty, `.` or `..`, and without `/`,
    /// `\`, `:` or whitespace.
    InvalidTargetName = "invalid_target_name", Error;
    /// Two targets of one package share a name, so their id is ambiguous. Reported on
    /// the second and later declarations.
    DuplicateTarget = "duplicate_target", Error;
    /// An edit creates a target, or renames one, with a name the package already uses.
    TargetAlreadyExists = "target_already_exists", Error;
    /// An edit updates or deletes a target the package does not declare. The message
    /// names the closest existing targets.
    TargetNotFound = "target_not_found", Error;
    /// An edit cannot be applied to this manifest as written: it has syntax errors, or
    /// the target is declared in an inline `target = [...]` array. Fix or rewrite the
    /// manifest by hand first.
    EditNotApplicable = "edit_not_applicable", Error;
    /// A `[[target]]` table has no `kind`.
    TargetKindRequired = "target_kind_required", Error;
    /// The kind is neither built in nor declared by a project module. Repairs list the
    /// closest known kinds; `once query target-kinds` lists them all.
    UnknownTargetKind = "unknown_target_kind", Error;
    /// The kind requires an attribute the target does not set in `attrs`.
    MissingRequiredAttr = "missing_required_attr", Error;
    /// The kind does not declare this attribute. The repair names the closest one.
    UnknownAttr = "unknown_attr", Error;
    /// The value does not have the attribute's declared type; the message says where
    /// inside the value: element [2] of a list, entry `k` of a table, or select branch
    /// `linux`. The range points at that element.
    AttrTypeMismatch = "attr_type_mismatch", Error;
    /// The attribute only allows certain values and this is not one of them, or an `int`
    /// attribute's value is outside the kind's bounds (`attempts = 30` where 1 to 20 are
    /// allowed). The range points at the value; the fix replaces it with the nearest
    /// allowed one.
    AttrValueNotAllowed = "attr_value_not_allowed", Error;
    /// A `{ select = { … } }` value on an attribute the kind does not mark configurable.
    SelectOnNonConfigurableAttr = "select_on_non_configurable_attr", Error;
    /// A `select` table has no branch for any token of the configuration and no
    /// `default` branch.
    SelectNoMatchingBranch = "select_no_matching_branch", Error;
    /// A malformed `select` value: not a table of token → value, or with extra keys.
    InvalidSelect = "invalid_select", Error;
    /// A target reference cannot be parsed: Bazel syntax (`//a:b`, `:b`, with the
    /// rewrite), a leading `/`, empty segments, or a path escaping the workspace root.
    InvalidLabel = "invalid_label", Error;
    /// A dependency names a target that does not exist.
    MissingDependency = "missing_dependency", Error;
    /// A dependency role the kind does not declare: a key of the `dependencies` table
    /// the kind has no role for, `deps` inside `dependencies` (it belongs in the
    /// top-level `deps` field), or a top-level `deps` on a kind without a `deps` role.
    UnknownDependencyRole = "unknown_dependency_role", Error;
    /// The dependency emits none of the providers this role accepts.
    IncompatibleDependencyProvider = "incompatible_dependency_provider", Error;
    /// The role needs at least or at most a number of dependencies.
    DependencyCountMismatch = "dependency_count_mismatch", Error;
    /// A `visibility` entry is none of `public`, `private`, `package:<pkg>`,
    /// `subtree:<pkg>` or a target reference.
    InvalidVisibility = "invalid_visibility", Error;
    /// The dependency's `visibility` does not include the depending target.
    DependencyNotVisible = "dependency_not_visible", Error;
    /// Targets depend on each other in a loop. Each cycle is reported once, with its path.
    DependencyCycle = "dependency_cycle", Error;
    /// A `srcs` pattern matches no file of the package. Files of nested packages do not
    /// count: they belong to those packages.
    MissingSource = "missing_source", Warning;
    /// An exclusion (a `!pattern` entry of `srcs`, `[workspace] include` or `exclude`, or
    /// `[modules] paths`) leaves nothing out: no entry before it selects anything it
    /// matches. Entries apply in order and the last one matching a file decides, so an
    /// exclusion must come after the patterns whose files it takes back; a list made only
    /// of exclusions selects nothing.
    UnusedExclusion = "unused_exclusion", Warning;
    /// A `path` attribute (`inputs`, `hdrs`, `script_path`, `main`, …) names a file or
    /// directory the package does not have, or a path that leaves the package. Unlike a
    /// `srcs` pattern that matches nothing, this is an error: the kind reads what the
    /// attribute names, and a build without it would run with something missing.
    MissingFile = "missing_file", Error;
    /// A source (matched by `srcs` or named by a `path` attribute) is a symbolic link once
    /// does not follow: one leading out of the workspace, to nothing, to a directory, to a
    /// file the workspace walk does not list (hidden, ignored, below `.once`, `target` or
    /// `node_modules`) or to something that is not a regular file. A link to a file of the
    /// workspace is followed, and actions reading it are keyed by that file.
    InvalidSourceLink = "invalid_source_link", Error;
    /// The Python interpreter a built-in Python target's `python` attribute or the root
    /// manifest's `[workspace] python` names cannot run: the value is empty or leaves the
    /// workspace (a relative path is relative to the workspace root; name a place outside
    /// it by its absolute path), nothing is there, the interpreter is not an executable
    /// file, or a directory (a virtual environment or installation) has no executable
    /// `bin/python3`. Checked on disk when the workspace is validated and before the
    /// targets that would run it are planned; the targets that use another interpreter
    /// still build.
    InvalidInterpreter = "invalid_interpreter", Error;
    /// A project module (a `.star` file matched by `[modules] paths`) failed to evaluate:
    /// a Starlark syntax or runtime error, a broken declaration-helper rule, a failed
    /// `load()` of another module, or a step or memory limit. The range is the failing
    /// statement or call; kinds the module declared before the error stay available.
    InvalidModule = "invalid_module", Error;
    /// A `[modules] paths` pattern matches no `.star` file of the workspace (hidden,
    /// ignored and symlinked files are not candidates), or a `load()` names a module that
    /// does not exist.
    ModuleNotFound = "module_not_found", Error;
    /// A `[modules] paths` pattern or a module path leaves the workspace: an absolute
    /// path or a `..` segment.
    InvalidModulePath = "invalid_module_path", Error;
    /// A project module declares a target kind whose name is built in or already declared
    /// by another module (modules are read in path order; the first declaration wins).
    DuplicateKind = "duplicate_kind", Error;
    /// Planning a target's capability failed: the kind's implementation raised an error,
    /// returned something other than `None` or a list of paths, or declared an invalid
    /// action (an output outside the target's build directory, a path with `..`, an
    /// output declared twice). The range is the failing line of the implementation's
    /// module (`prelude/<file>.star` for a built-in kind).
    ImplementationError = "implementation_error", Error;
    /// An annotated script's header is not a valid contract: the first line is not a
    /// shebang naming a runtime, or a `once` directive is misspelled. Directives are
    /// singular keywords followed by exactly one double-quoted value, one per line, right
    /// after the shebang: `# once input "data.csv"`. Plural keywords (`inputs`), colon
    /// syntax (`input: "a"`), unquoted or single-quoted values and several values on one
    /// line are errors whose fix shows the right spelling.
    InvalidScriptContract = "invalid_script_contract", Error;
    /// A path in a script's directives cannot be used: it is absolute, leaves the
    /// workspace, points into `.once`, or is a pattern where only a path is allowed (an
    /// `output`, a `needs`, the `cwd`). Paths are relative to the script's directory.
    InvalidScriptPath = "invalid_script_path", Error;
    /// A `once` directive below the first line of code is not part of the header, so it
    /// is ignored. Move it up, right after the shebang and before any code.
    ScriptDirectiveIgnored = "script_directive_ignored", Warning;
    /// A file has more diagnostics of one code than are worth reading: only the first 100
    /// of each code per file are reported (like a compiler's error limit), and this one,
    /// placed at the first left out, says how many more there are. Its severity is that of
    /// the most severe diagnostic it stands for. Fix the reported ones and validate again.
    DiagnosticsOmitted = "diagnostics_omitted", Warning;
}

impl fmt::Display for DiagnosticCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One problem found in the workspace.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Diagnostic {
    pub code: DiagnosticCode,
    pub severity: Severity,
    pub message: String,
    /// Workspace-relative path with `/` separators.
    pub file: Option<String>,
    /// Byte range into `file` covering the offending key or value itself.
    pub range: Option<TextRange>,
    /// Canonical id of the target the problem belongs to.
    pub target: Option<String>,
    /// The attribute path (`deps`, `attrs.edition`, `dependencies.proc_macros`).
    pub attribute: Option<String>,
    /// Concrete edits that would fix the problem, as sentences.
    pub repairs: Vec<String>,
    /// Machine-applicable fixes, best first: text edits in `file`.
    pub fixes: Vec<Fix>,
}

/// A machine-applicable fix of a diagnostic: edits of the diagnostic's file.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Fix {
    /// What the fix does, as a short imperative sentence.
    pub title: String,
    /// Whether this is the fix to apply unattended (`validate-workspace --fix`); at most
    /// one fix of a diagnostic is preferred.
    pub preferred: bool,
    /// Non-overlapping edits of the diagnostic's file.
    pub edits: Vec<FixEdit>,
}

/// Replace the bytes of `range` with `new_text` (an empty range inserts).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct FixEdit {
    pub range: TextRange,
    pub new_text: String,
}

impl Fix {
    /// A fix made of one edit.
    pub fn replace(
        title: impl Into<String>,
        preferred: bool,
        range: TextRange,
        new_text: impl Into<String>,
    ) -> Fix {
        Fix {
            title: title.into(),
            preferred,
            edits: vec![FixEdit {
                range,
                new_text: new_text.into(),
            }],
        }
    }
}

impl Diagnostic {
    /// A diagnostic with the code's default severity and nothing else set.
    pub fn new(code: DiagnosticCode, message: impl Into<String>) -> Diagnostic {
        Diagnostic {
            code,
            severity: code.default_severity(),
            message: message.into(),
            file: None,
            range: None,
            target: None,
            attribute: None,
            repairs: Vec::new(),
            fixes: Vec::new(),
        }
    }

    pub fn at(mut self, file: impl Into<String>, range: TextRange) -> Diagnostic {
        self.file = Some(file.into());
        self.range = Some(range);
        self
    }

    pub fn in_file(mut self, file: impl Into<String>) -> Diagnostic {
        self.file = Some(file.into());
        self
    }

    pub fn with_target(mut self, target: impl Into<String>) -> Diagnostic {
        self.target = Some(target.into());
        self
    }

    pub fn with_attribute(mut self, attribute: impl Into<String>) -> Diagnostic {
        self.attribute = Some(attribute.into());
        self
    }

    pub fn with_repair(mut self, repair: impl Into<String>) -> Diagnostic {
        self.repairs.push(repair.into());
        self
    }

    /// The fix to apply unattended, if there is one.
    pub fn preferred_fix(&self) -> Option<&Fix> {
        self.fixes.iter().find(|f| f.preferred)
    }

    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_documented() {
        for &code in DiagnosticCode::ALL {
            assert_eq!(DiagnosticCode::from_code(code.as_str()), Some(code));
            assert!(
                !code.explanation().trim().is_empty(),
                "{code} has no explanation"
            );
        }
    }
}
