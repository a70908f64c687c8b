//! The main loop: the initialize handshake with position-encoding negotiation, document
//! synchronisation through the overlay, diagnostics publishing, and request dispatch.
//!
//! One thread owns the [`AnalysisHost`]: notifications that change documents apply their
//! change events, then diagnostics are recomputed (incrementally, through salsa) and
//! published for every open manifest whose diagnostics differ from what was last sent.
//! Requests are answered from a snapshot, each under `catch_unwind`.
//!
//! The loop ends only on `exit` or when the client hangs up: requests before `initialize`
//! and after `shutdown` get the protocol's errors, and malformed notifications are logged.
//!
//! Loading the workspace (finding the root, the walk, priming the database) runs under
//! `catch_unwind` too: a bug there must not leave a dead server behind an answered
//! `initialize`. The server then stays up without a database, shows the failure once
//! (`window/showMessage`) and answers every request with an internal error saying the
//! load failed, until `shutdown` and `exit`.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::path::PathBuf;
use std::sync::Arc;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, RequestId, Response};
use lsp_types::notification::{
    DidChangeTextDocument, DidChangeWatchedFiles, DidCloseTextDocument, DidOpenTextDocument,
    Notification as _, PublishDiagnostics, ShowMessage,
};
use lsp_types::request::{RegisterCapability, Request as _};
use lsp_types::{
    CodeActionProviderCapability, CompletionOptions, DidChangeWatchedFilesRegistrationOptions,
    FileChangeType, FileSystemWatcher, GlobPattern, HoverProviderCapability, InitializeParams,
    InitializeResult, MessageType, OneOf, PositionEncodingKind, PublishDiagnosticsParams,
    Registration, RegistrationParams, ServerCapabilities, ServerInfo, ShowMessageParams,
    TextDocumentSyncCapability, TextDocumentSyncKind, TextDocumentSyncOptions,
    TextDocumentSyncSaveOptions, Uri,
};
use once_analysis::{
    AnalysisHost, ChangeEvent, LineIndex, OsSystem, System, default_prime_threads,
    find_workspace_root,
};
use once_watch::WorkspaceWatcher;

use crate::convert::{self, Encoding};
use crate::handlers::{RequestError, Snapshot};
use crate::overlay::Overlay;

type Error = Box<dyn std::error::Error + Send + Sync>;

/// Serves one client on `connection` until `shutdown`/`exit` or the client hangs up.
/// `root` overrides the workspace the client names; `threads` compute the packages when
/// the workspace loads.
pub fn run(connection: &Connection, root: Option<PathBuf>, threads: usize) -> Result<(), Error> {
    serve(connection, root, Arc::new(OsSystem), true, threads)
}

/// [`run`] over any base system (tests use a `MemorySystem`); disk changes arrive only
/// through `workspace/didChangeWatchedFiles`.
pub fn run_with_system(
    connection: &Connection,
    root: Option<PathBuf>,
    base: Arc<dyn System>,
) -> Result<(), Error> {
    serve(connection, root, base, false, default_prime_threads())
}

fn serve(
    connection: &Connection,
    root: Option<PathBuf>,
    base: Arc<dyn System>,
    watch_disk: bool,
    threads: usize,
) -> Result<(), Error> {
    let Some((id, params)) = initialize_request(connection)? else {
        return Ok(());
    };
    let encoding = negotiate_encoding(&params);
    let start = root
        .or_else(|| client_root(&params))
        .or_else(|| std::env::current_dir().ok())
        .unwrap_or_else(|| PathBuf::from("/"));
    let overlay = Overlay::new(base);
    let result = InitializeResult {
        capabilities: capabilities(encoding),
        server_info: Some(ServerInfo {
            name: "once".into(),
            version: Some(env!("CARGO_PKG_VERSION").into()),
        }),
    };
    // `initialized` is then handled (ignored) by the main loop like any notification.
    connection
        .sender
        .send(Response::new_ok(id, serde_json::to_value(result)?).into())?;
    let watch_registration = params
        .capabilities
        .workspace
        .as_ref()
        .and_then(|w| w.did_change_watched_files)
        .and_then(|w| w.dynamic_registration)
        .unwrap_or(false);
    let loaded = std::panic::catch_unwind(AssertUnwindSafe(|| {
        let root = find_workspace_root(&overlay, &start);
        // Clients that cannot register file watchers get the server's own watcher, whose
        // walk (each directory watched before it is read) is also the one the database
        // loads from.
        let (host, disk_events) = if watch_disk && !watch_registration {
            let (watcher, files) = WorkspaceWatcher::watch_and_walk(&root);
            let files = files.unwrap_or_default();
            let host = AnalysisHost::load_walked(Arc::new(overlay.clone()), root.clone(), &files);
            (host, Some(spawn_watcher(watcher)))
        } else {
            (
                AnalysisHost::load(Arc::new(overlay.clone()), root.clone()),
                None,
            )
        };
        // The first publish reads every package: compute them on every core first.
        let _ = host.analysis().prime(threads);
        (root, host, disk_events)
    }));
    let (root, host, disk_events) = match loaded {
        Ok(loaded) => loaded,
        Err(panic) => return serve_without_workspace(connection, &panic_message(&*panic)),
    };
    let mut server = Server {
        connection,
        host,
        overlay,
        root,
        encoding,
        docs: HashMap::new(),
        published: HashMap::new(),
        disk_events: disk_events.unwrap_or_else(crossbeam_channel::never),
    };
    if watch_registration {
        server.register_watchers()?;
    }
    server.main_loop()
}

/// Serves a client whose workspace failed to load (a panic, `what`): shows the failure
/// once, then answers `shutdown` and errors for every other request, until `exit`.
fn serve_without_workspace(connection: &Connection, what: &str) -> Result<(), Error> {
    let message = format!(
        "once could not load the workspace: internal error, this is a bug in once {}: {what}. \
         Restart the language server to retry; please report it with the workspace if you can share it",
        env!("CARGO_PKG_VERSION")
    );
    let params = ShowMessageParams {
        typ: MessageType::ERROR,
        message: message.clone(),
    };
    connection
        .sender
        .send(Notification::new(ShowMessage::METHOD.into(), params).into())?;
    for incoming in &connection.receiver {
        let response = match incoming {
            Message::Request(request) if request.method == "shutdown" => {
                Response::new_ok(request.id, ())
            }
            Message::Request(request) => {
                Response::new_err(request.id, ErrorCode::InternalError as i32, message.clone())
            }
            Message::Notification(notification) if notification.method == "exit" => {
                return Ok(());
            }
            Message::Notification(_) | Message::Response(_) => continue,
        };
        connection.sender.send(response.into())?;
    }
    Ok(())
}

/// A panic's message, when it carries one.
fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| panic.downcast_ref::<&str>().map(|s| (*s).to_owned()))
        .unwrap_or_else(|| "internal error".into())
}

/// Waits for a valid `initialize` request, answering every other request with the
/// protocol's error; `None` when the client exits or hangs up first.
fn initialize_request(
    connection: &Connection,
) -> Result<Option<(RequestId, InitializeParams)>, Error> {
    for message in &connection.receiver {
        match message {
            Message::Request(request) if request.method == "initialize" => {
                match serde_json::from_value(request.params) {
                    Ok(params) => return Ok(Some((request.id, params))),
                    Err(error) => connection.sender.send(
                        Response::new_err(
                            request.id,
                            ErrorCode::InvalidParams as i32,
                            format!("invalid `initialize` params: {error}"),
                        )
                        .into(),
                    )?,
                }
            }
            Message::Request(request) => connection.sender.send(
                Response::new_err(
                    request.id,
                    ErrorCode::ServerNotInitialized as i32,
                    format!("`{}` before `initialize`", request.method),
                )
                .into(),
            )?,
            Message::Notification(notification) if notification.method == "exit" => {
                return Ok(None);
            }
            Message::Notification(_) | Message::Response(_) => {}
        }
    }
    Ok(None)
}

fn negotiate_encoding(params: &InitializeParams) -> Encoding {
    let offered = params
        .capabilities
        .general
        .as_ref()
        .and_then(|g| g.position_encodings.as_ref());
    match offered {
        Some(kinds) if kinds.contains(&PositionEncodingKind::UTF8) => Encoding::Utf8,
        _ => Encoding::Utf16,
    }
}

fn client_root(params: &InitializeParams) -> Option<PathBuf> {
    if let Some(folder) = params.workspace_folders.as_ref().and_then(|f| f.first()) {
        return convert::uri_to_path(&folder.uri);
    }
    #[allow(deprecated, reason = "older clients send only rootUri")]
    params.root_uri.as_ref().and_then(convert::uri_to_path)
}

fn capabilities(encoding: Encoding) -> ServerCapabilities {
    ServerCapabilities {
        position_encoding: Some(match encoding {
            Encoding::Utf8 => PositionEncodingKind::UTF8,
            Encoding::Utf16 => PositionEncodingKind::UTF16,
        }),
        text_document_sync: Some(TextDocumentSyncCapability::Options(
            TextDocumentSyncOptions {
                open_close: Some(true),
                change: Some(TextDocumentSyncKind::INCREMENTAL),
                save: Some(TextDocumentSyncSaveOptions::Supported(true)),
                ..Default::default()
            },
        )),
        completion_provider: Some(CompletionOptions {
            trigger_characters: Some(vec!["\"".into(), "/".into(), "[".into(), ".".into()]),
            ..Default::default()
        }),
        hover_provider: Some(HoverProviderCapability::Simple(true)),
        definition_provider: Some(OneOf::Left(true)),
        references_provider: Some(OneOf::Left(true)),
        document_symbol_provider: Some(OneOf::Left(true)),
        code_action_provider: Some(CodeActionProviderCapability::Simple(true)),
        document_formatting_provider: Some(OneOf::Left(true)),
        ..Default::default()
    }
}

/// An open document.
struct Document {
    uri: Uri,
    version: i32,
    text: String,
}

struct Server<'c> {
    connection: &'c Connection,
    host: AnalysisHost,
    overlay: Overlay,
    root: PathBuf,
    encoding: Encoding,
    /// Open documents by workspace-relative path.
    docs: HashMap<String, Document>,
    /// What was last published, by workspace-relative path.
    published: HashMap<String, Vec<lsp_types::Diagnostic>>,
    /// Changes seen by the server's own file watcher (when the client watches nothing).
    disk_events: crossbeam_channel::Receiver<Vec<ChangeEvent>>,
}

/// Syncs the watcher on a thread of its own, forwarding every batch of changes.
fn spawn_watcher(mut watcher: WorkspaceWatcher) -> crossbeam_channel::Receiver<Vec<ChangeEvent>> {
    let (sender, receiver) = crossbeam_channel::unbounded();
    std::thread::spawn(move || {
        if !watcher.is_active() {
            return;
        }
        loop {
            std::thread::sleep(std::time::Duration::from_millis(200));
            let events = watcher.sync();
            if !events.is_empty() && sender.send(events).is_err() {
                return;
            }
        }
    });
    receiver
}

impl Server<'_> {
    fn main_loop(&mut self) -> Result<(), Error> {
        let mut shut_down = false;
        loop {
            let message = crossbeam_channel::select! {
                recv(self.connection.receiver) -> message => match message {
                    Ok(message) => message,
                    Err(_) => return Ok(()),
                },
                recv(self.disk_events) -> events => {
                    if let Ok(mut events) = events {
                        // Batches that queued up while the server was busy are applied
                        // (and published) once.
                        events.extend(self.disk_events.try_iter().flatten());
                        self.host.apply_changes(&events);
                        self.publish()?;
                    }
                    continue;
                }
            };
            match message {
                Message::Request(request) if shut_down => {
                    let response = Response::new_err(
                        request.id,
                        ErrorCode::InvalidRequest as i32,
                        format!("`{}` after `shutdown`", request.method),
                    );
                    self.connection.sender.send(response.into())?;
                }
                Message::Request(request) if request.method == "shutdown" => {
                    shut_down = true;
                    let response = Response::new_ok(request.id, ());
                    self.connection.sender.send(response.into())?;
                }
                Message::Request(request) => {
                    let response = self.on_request(request);
                    self.connection.sender.send(response.into())?;
                }
                Message::Notification(notification) if notification.method == "exit" => {
                    return Ok(());
                }
                Message::Notification(_) if shut_down => {}
                Message::Notification(notification) => {
                    // A malformed notification is the client's bug; log it and keep serving.
                    // A bug while handling one is logged, never a dead server.
                    let method = notification.method.clone();
                    let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
                        self.on_notification(notification)
                    }));
                    let problem = match outcome {
                        Ok(Ok(())) => None,
                        Ok(Err(error)) => Some(error.to_string()),
                        Err(_) => Some("internal error (panic)".to_owned()),
                    };
                    if let Some(problem) = problem {
                        use std::io::Write as _;
                        let _ = writeln!(std::io::stderr(), "once lsp: {method}: {problem}");
                    }
                }
                Message::Response(_) => {}
            }
        }
    }

    /// Asks the client to report every file of the workspace: sources matter as much as
    /// manifests and modules (`missing_source`, affected tests, digests). The walk's
    /// exclusions (hidden entries, `.once`, `target`, `node_modules`, `.gitignore`) are
    /// applied to the events on our side.
    fn register_watchers(&self) -> Result<(), Error> {
        let watchers = vec![FileSystemWatcher {
            glob_pattern: GlobPattern::String("**/*".into()),
            kind: None,
        }];
        let params = RegistrationParams {
            registrations: vec![Registration {
                id: "once-watched-files".into(),
                method: DidChangeWatchedFiles::METHOD.into(),
                register_options: Some(serde_json::to_value(
                    DidChangeWatchedFilesRegistrationOptions { watchers },
                )?),
            }],
        };
        let request = Request::new(
            RequestId::from("once-register-watchers".to_owned()),
            RegisterCapability::METHOD.into(),
            params,
        );
        self.connection.sender.send(request.into())?;
        Ok(())
    }

    fn relative(&self, uri: &Uri) -> Option<String> {
        convert::relative_path(&self.root, uri)
    }

    fn on_notification(&mut self, notification: Notification) -> Result<(), Error> {
        match notification.method.as_str() {
            DidOpenTextDocument::METHOD => {
                let params: lsp_types::DidOpenTextDocumentParams =
                    serde_json::from_value(notification.params)?;
                let item = params.text_document;
                let Some(path) = self.relative(&item.uri) else {
                    return Ok(());
                };
                self.docs.insert(
                    path.clone(),
                    Document {
                        uri: item.uri,
                        version: item.version,
                        text: item.text,
                    },
                );
                self.sync_buffer(&path);
                self.publish()?;
            }
            DidChangeTextDocument::METHOD => {
                let params: lsp_types::DidChangeTextDocumentParams =
                    serde_json::from_value(notification.params)?;
                let Some(path) = self.relative(&params.text_document.uri) else {
                    return Ok(());
                };
                let encoding = self.encoding;
                let Some(doc) = self.docs.get_mut(&path) else {
                    return Ok(());
                };
                for change in params.content_changes {
                    match change.range {
                        Some(range) => {
                            let index = LineIndex::new(doc.text.as_str().into());
                            let start = convert::offset(&index, encoding, range.start);
                            let end = convert::offset(&index, encoding, range.end).max(start);
                            doc.text.replace_range(start..end, &change.text);
                        }
                        None => doc.text = change.text,
                    }
                }
                doc.version = params.text_document.version;
                self.sync_buffer(&path);
                self.publish()?;
            }
            DidCloseTextDocument::METHOD => {
                let params: lsp_types::DidCloseTextDocumentParams =
                    serde_json::from_value(notification.params)?;
                let Some(path) = self.relative(&params.text_document.uri) else {
                    return Ok(());
                };
                if let Some(doc) = self.docs.remove(&path) {
                    let absolute = self.root.join(&path);
                    self.overlay.remove(&absolute);
                    let event = if self.overlay.exists_on_disk(&absolute) {
                        ChangeEvent::Changed(absolute)
                    } else {
                        ChangeEvent::Deleted(absolute)
                    };
                    self.host.apply_changes(&[event]);
                    if self.published.remove(&path).is_some_and(|d| !d.is_empty()) {
                        self.send_diagnostics(doc.uri, Vec::new(), None)?;
                    }
                    self.publish()?;
                }
            }
            DidChangeWatchedFiles::METHOD => {
                let params: lsp_types::DidChangeWatchedFilesParams =
                    serde_json::from_value(notification.params)?;
                let events: Vec<ChangeEvent> = params
                    .changes
                    .iter()
                    .filter_map(|change| {
                        let path = convert::uri_to_path(&change.uri)?;
                        let relative = path.strip_prefix(&self.root).ok()?;
                        if once_analysis::is_excluded_from_walk(relative) {
                            return None;
                        }
                        Some(match change.typ {
                            FileChangeType::CREATED => ChangeEvent::Created(path),
                            FileChangeType::DELETED => ChangeEvent::Deleted(path),
                            _ => ChangeEvent::Changed(path),
                        })
                    })
                    .collect();
                if !events.is_empty() {
                    self.host.apply_changes(&events);
                    self.publish()?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Puts an open document's text in the overlay and tells the database.
    fn sync_buffer(&mut self, path: &str) {
        let Some(doc) = self.docs.get(path) else {
            return;
        };
        let absolute = self.root.join(path);
        self.overlay.set(absolute.clone(), doc.text.clone());
        self.host.apply_changes(&[ChangeEvent::Changed(absolute)]);
    }

    /// Publishes diagnostics for every open document whose diagnostics changed.
    fn publish(&mut self) -> Result<(), Error> {
        let analysis = self.host.analysis();
        let Ok(by_file) = analysis.diagnostics_by_file() else {
            return Ok(());
        };
        let mut outgoing = Vec::new();
        for (path, doc) in &self.docs {
            let script_diagnostics;
            let located = if once_analysis::Analysis::is_script_path(path) {
                script_diagnostics = analysis.script_diagnostics(path).unwrap_or_default();
                script_diagnostics.as_slice()
            } else {
                by_file.get(path).map(Vec::as_slice).unwrap_or_default()
            };
            // One index per document: each diagnostic's conversion is then a lookup.
            let index = LineIndex::new(doc.text.as_str().into());
            let diagnostics: Vec<lsp_types::Diagnostic> = located
                .iter()
                .map(|d| convert::to_diagnostic(&doc.uri, &index, self.encoding, d))
                .collect();
            if self.published.get(path) != Some(&diagnostics) {
                self.published.insert(path.clone(), diagnostics.clone());
                outgoing.push((doc.uri.clone(), diagnostics, Some(doc.version)));
            }
        }
        for (uri, diagnostics, version) in outgoing {
            self.send_diagnostics(uri, diagnostics, version)?;
        }
        Ok(())
    }

    fn send_diagnostics(
        &self,
        uri: Uri,
        diagnostics: Vec<lsp_types::Diagnostic>,
        version: Option<i32>,
    ) -> Result<(), Error> {
        let params = PublishDiagnosticsParams::new(uri, diagnostics, version);
        self.connection
            .sender
            .send(Notification::new(PublishDiagnostics::METHOD.into(), params).into())?;
        Ok(())
    }

    fn on_request(&mut self, request: Request) -> Response {
        let id = request.id.clone();
        let snapshot = Snapshot {
            analysis: self.host.analysis(),
            root: self.root.clone(),
            encoding: self.encoding,
            docs: self
                .docs
                .iter()
                .map(|(path, doc)| (path.clone(), doc.text.clone()))
                .collect(),
        };
        let method = request.method.clone();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            snapshot.dispatch(&method, request.params)
        }));
        match outcome {
            Ok(Ok(Ok(value))) => Response::new_ok(id, value),
            Ok(Ok(Err(_cancelled))) => Response::new_err(
                id,
                ErrorCode::ContentModified as i32,
                "content modified".into(),
            ),
            Ok(Err(RequestError::NotFound)) => Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("unhandled method {method}"),
            ),
            Ok(Err(RequestError::BadParams(message))) => {
                Response::new_err(id, ErrorCode::InvalidParams as i32, message)
            }
            Err(panic) => {
                Response::new_err(id, ErrorCode::InternalError as i32, panic_message(&*panic))
            }
        }
    }
}
