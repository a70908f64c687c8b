//! Request handlers: one per LSP request, each over a [`Snapshot`] of the database and the
//! open documents. A handler turns the request's parameters into an analysis call and its
//! answer into the protocol's result through [`crate::convert`], which owns every
//! conversion.

use std::collections::HashMap;
use std::path::PathBuf;

use lsp_types::request::{
    CodeActionRequest, Completion, DocumentSymbolRequest, Formatting, GotoDefinition, HoverRequest,
    References, Request,
};
use lsp_types::{
    CodeActionParams, CodeActionResponse, CompletionParams, CompletionResponse,
    DocumentFormattingParams, DocumentSymbolParams, DocumentSymbolResponse, GotoDefinitionParams,
    GotoDefinitionResponse, Hover, HoverParams, Location, ReferenceParams,
    TextDocumentPositionParams, Uri,
};
use once_analysis::{Analysis, Cancellable, FileRange, LineCol, LineIndex};
use serde_json::Value;

use crate::convert::{self, Encoding};

/// Why a request got no answer from its handler.
pub(crate) enum RequestError {
    NotFound,
    BadParams(String),
}

/// What a request handler sees: a database snapshot and the open documents' texts.
pub(crate) struct Snapshot {
    pub(crate) analysis: Analysis,
    pub(crate) root: PathBuf,
    pub(crate) encoding: Encoding,
    pub(crate) docs: HashMap<String, String>,
}

/// A handler: the request's typed parameters in, its typed result out.
type Handler<R> = fn(
    &Snapshot,
    <R as Request>::Params,
) -> Result<Cancellable<<R as Request>::Result>, RequestError>;

impl Snapshot {
    /// Answers the request `method` with JSON `params`.
    pub(crate) fn dispatch(
        &self,
        method: &str,
        params: Value,
    ) -> Result<Cancellable<Value>, RequestError> {
        match method {
            Completion::METHOD => self.on::<Completion>(params, Self::handle_completion),
            HoverRequest::METHOD => self.on::<HoverRequest>(params, Self::handle_hover),
            GotoDefinition::METHOD => self.on::<GotoDefinition>(params, Self::handle_definition),
            References::METHOD => self.on::<References>(params, Self::handle_references),
            DocumentSymbolRequest::METHOD => {
                self.on::<DocumentSymbolRequest>(params, Self::handle_document_symbols)
            }
            CodeActionRequest::METHOD => {
                self.on::<CodeActionRequest>(params, Self::handle_code_actions)
            }
            Formatting::METHOD => self.on::<Formatting>(params, Self::handle_formatting),
            _ => Err(RequestError::NotFound),
        }
    }

    /// Parses the parameters of `R`, runs its handler and serialises the result.
    fn on<R: Request>(
        &self,
        params: Value,
        handler: Handler<R>,
    ) -> Result<Cancellable<Value>, RequestError> {
        let params: R::Params =
            serde_json::from_value(params).map_err(|e| RequestError::BadParams(e.to_string()))?;
        Ok(
            handler(self, params)?
                .map(|result| serde_json::to_value(result).unwrap_or(Value::Null)),
        )
    }

    fn handle_completion(
        &self,
        params: CompletionParams,
    ) -> Result<Cancellable<Option<CompletionResponse>>, RequestError> {
        let (path, index, at) = self.position(&params.text_document_position)?;
        Ok(self.analysis.completions(&path, at).map(|items| {
            let items = items
                .into_iter()
                .map(|item| convert::to_completion_item(&index, self.encoding, item))
                .collect();
            Some(CompletionResponse::Array(items))
        }))
    }

    fn handle_hover(
        &self,
        params: HoverParams,
    ) -> Result<Cancellable<Option<Hover>>, RequestError> {
        let (path, index, at) = self.position(&params.text_document_position_params)?;
        Ok(self
            .analysis
            .hover(&path, at)
            .map(|hover| hover.map(|h| convert::to_hover(&index, self.encoding, h))))
    }

    fn handle_definition(
        &self,
        params: GotoDefinitionParams,
    ) -> Result<Cancellable<Option<GotoDefinitionResponse>>, RequestError> {
        let (path, _, at) = self.position(&params.text_document_position_params)?;
        Ok(self
            .locations(self.analysis.definition(&path, at))
            .map(|l| Some(GotoDefinitionResponse::Array(l))))
    }

    fn handle_references(
        &self,
        params: ReferenceParams,
    ) -> Result<Cancellable<Option<Vec<Location>>>, RequestError> {
        let include = params.context.include_declaration;
        let (path, _, at) = self.position(&params.text_document_position)?;
        Ok(self
            .locations(self.analysis.references(&path, at, include))
            .map(Some))
    }

    fn handle_document_symbols(
        &self,
        params: DocumentSymbolParams,
    ) -> Result<Cancellable<Option<DocumentSymbolResponse>>, RequestError> {
        let (path, index) = self.document(&params.text_document.uri)?;
        Ok(self.analysis.document_symbols(&path).map(|symbols| {
            let symbols = symbols
                .into_iter()
                .map(|s| convert::to_document_symbol(&index, self.encoding, s))
                .collect();
            Some(DocumentSymbolResponse::Nested(symbols))
        }))
    }

    fn handle_code_actions(
        &self,
        params: CodeActionParams,
    ) -> Result<Cancellable<Option<CodeActionResponse>>, RequestError> {
        let uri = &params.text_document.uri;
        let (path, index) = self.document(uri)?;
        let range = convert::from_range(&index, self.encoding, params.range);
        let sent = &params.context.diagnostics;
        Ok(self.analysis.code_actions(&path, range).map(|actions| {
            let actions = actions
                .into_iter()
                .map(|a| convert::to_code_action(&index, self.encoding, uri, sent, a))
                .collect();
            Some(actions)
        }))
    }

    fn handle_formatting(
        &self,
        params: DocumentFormattingParams,
    ) -> Result<Cancellable<Option<Vec<lsp_types::TextEdit>>>, RequestError> {
        let (path, index) = self.document(&params.text_document.uri)?;
        Ok(self.analysis.format(&path).map(|edit| {
            let edits = edit
                .into_iter()
                .map(|e| convert::to_text_edit(&index, self.encoding, e))
                .collect();
            Some(edits)
        }))
    }

    /// The workspace-relative path of the document a request names, and the line index of
    /// its open text (empty when it is not open).
    fn document(&self, uri: &Uri) -> Result<(String, LineIndex), RequestError> {
        let path = convert::relative_path(&self.root, uri)
            .ok_or_else(|| RequestError::BadParams("document outside the workspace".into()))?;
        let text = self.docs.get(&path).map(String::as_str).unwrap_or_default();
        Ok((path, LineIndex::new(text.into())))
    }

    /// The document of a position request, its open text, and the position in the analysis'
    /// terms.
    fn position(
        &self,
        params: &TextDocumentPositionParams,
    ) -> Result<(String, LineIndex, LineCol), RequestError> {
        let (path, index) = self.document(&params.text_document.uri)?;
        let at = convert::from_position(&index, self.encoding, params.position);
        Ok((path, index, at))
    }

    /// The line index of a workspace file: the open buffer, else what the database read.
    fn text_index(&self, path: &str) -> Cancellable<LineIndex> {
        if let Some(text) = self.docs.get(path) {
            return Ok(LineIndex::new(text.as_str().into()));
        }
        Ok(LineIndex::new(
            self.analysis.file_text(path)?.unwrap_or_default().into(),
        ))
    }

    fn locations(&self, ranges: Cancellable<Vec<FileRange>>) -> Cancellable<Vec<Location>> {
        let mut out = Vec::new();
        for range in ranges? {
            let index = self.text_index(&range.file)?;
            let uri = convert::path_to_uri(&self.root.join(&range.file));
            out.extend(uri.map(|uri| Location {
                uri,
                range: convert::to_range(&index, self.encoding, range.range),
            }));
        }
        Ok(out)
    }
}
