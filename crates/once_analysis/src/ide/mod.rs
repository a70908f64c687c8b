//! Editor answers in editor terms, one module per feature: [`completion`], [`hover`],
//! [`navigation`] (definition and references), [`symbols`], [`code_actions`] and
//! [`formatting`], over the shared [`context`] (the manifest under the cursor).
//!
//! Positions are 1-based lines and columns in Unicode scalar values, like
//! [`crate::LocatedDiagnostic`]; protocol crates convert them to their own encoding.
//! Everything here is computed from `once_graph` queries (manifests with ranges, the CST of
//! the manifest, target summaries, the kind catalog).

mod code_actions;
mod completion;
mod context;
mod cursor;
mod formatting;
mod hover;
mod navigation;
mod script;
mod symbols;

use once_db::{RootDatabase, source_text};
use once_model::LineCol;

pub use crate::format::format_manifest;
use crate::{Analysis, Cancellable, LocatedDiagnostic};
use context::Ctx;
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

    /// Whether editor answers treat `path` as an annotated script: any file that is
    /// neither a manifest nor a Starlark module.
    pub fn is_script_path(path: &str) -> bool {
        script::is_script(path)
    }

    /// Completion proposals at a position of a manifest.
    pub fn completions(&self, file: &str, at: LineCol) -> Cancellable<Vec<CompletionItem>> {
        if script::is_script(file) {
            let file = file.to_owned();
            return self.with_db(move |db, _| script::completions(db, &file, at));
        }
        self.with_manifest(file, move |ctx| completion::completions(ctx, at))
    }

    /// Hover documentation at a position of a manifest.
    pub fn hover(&self, file: &str, at: LineCol) -> Cancellable<Option<HoverInfo>> {
        if script::is_script(file) {
            let file = file.to_owned();
            return self.with_db(move |db, _| script::hover(db, &file, at));
        }
        self.with_manifest(file, move |ctx| hover::hover(ctx, at))
    }

    /// Where the label or kind at a position is declared.
    pub fn definition(&self, file: &str, at: LineCol) -> Cancellable<Vec<FileRange>> {
        if script::is_script(file) {
            let file = file.to_owned();
            return self.with_db(move |db, _| script::definition(db, &file, at));
        }
        self.with_manifest(file, move |ctx| navigation::definition(ctx, at))
    }

    /// Every dependency entry naming the target at a position (or the label there).
    pub fn references(
        &self,
        file: &str,
        at: LineCol,
        include_declaration: bool,
    ) -> Cancellable<Vec<FileRange>> {
        self.with_manifest(file, move |ctx| {
            navigation::references(ctx, at, include_declaration)
        })
    }

    /// The targets of a manifest as symbols.
    pub fn document_symbols(&self, file: &str) -> Cancellable<Vec<TargetSymbol>> {
        self.with_manifest(file, symbols::symbols)
    }

    /// Mechanical fixes for the diagnostics overlapping a range.
    pub fn code_actions(&self, file: &str, range: LineColRange) -> Cancellable<Vec<CodeAction>> {
        self.with_manifest(file, move |ctx| code_actions::code_actions(ctx, range))
    }

    /// The edit that formats a manifest, if it changes anything.
    pub fn format(&self, file: &str) -> Cancellable<Option<TextEdit>> {
        self.with_manifest(file, formatting::formatting)
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

/// Text of a workspace file as the database sees it (overlays included).
pub(crate) fn file_text(db: &RootDatabase, path: &str) -> Option<String> {
    let file = db.file(path)?;
    Some(source_text(db, file).text.to_string())
}
