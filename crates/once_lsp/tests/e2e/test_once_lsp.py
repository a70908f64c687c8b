"""`once lsp` driven by a real LSP client over stdio (pytest-lsp): diagnostics, completion,
hover, definition across files, code actions and formatting on a copy of the demo."""

import tempfile
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

from conftest import apply_edits, demo_copy, once_binary

WORKSPACE = demo_copy(Path(tempfile.mkdtemp(prefix="once-lsp-e2e-")))
GREETER = WORKSPACE / "apps" / "greeter" / "once.toml"
GREETING = WORKSPACE / "libs" / "greeting" / "once.toml"


def uri(path: Path) -> str:
    return path.as_uri()


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[once_binary(), "lsp"]))
async def client(lsp_client: LanguageClient):
    registrations = []

    @lsp_client.feature(T.CLIENT_REGISTER_CAPABILITY)
    def register(params: T.RegistrationParams):
        # VS Code accepts dynamic registrations; `once lsp` asks to watch manifests.
        registrations.extend(params.registrations)

    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=uri(WORKSPACE),
            workspace_folders=[T.WorkspaceFolder(uri=uri(WORKSPACE), name="demo")],
        )
    )
    yield
    await lsp_client.shutdown_session()


async def open_doc(client: LanguageClient, path: Path, text: str | None = None) -> str:
    text = path.read_text() if text is None else text
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(uri=uri(path), language_id="toml", version=1, text=text)
        )
    )
    await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return text


async def change(client: LanguageClient, path: Path, version: int, start, end, text: str, publishes=True):
    """An incremental edit; diagnostics are published only when they change."""
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri(path), version=version),
            content_changes=[
                T.TextDocumentContentChangePartial(
                    range=T.Range(start=T.Position(*start), end=T.Position(*end)), text=text
                )
            ],
        )
    )
    if publishes:
        await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)


async def complete(client: LanguageClient, path: Path, line: int, character: int) -> list[T.CompletionItem]:
    result = await client.text_document_completion_async(
        T.CompletionParams(text_document=T.TextDocumentIdentifier(uri=uri(path)), position=T.Position(line, character))
    )
    return result.items if isinstance(result, T.CompletionList) else list(result or [])


async def test_demo_manifest_has_no_diagnostics(client: LanguageClient):
    await open_doc(client, GREETER)
    assert list(client.diagnostics[uri(GREETER)]) == []


async def test_broken_kind_is_reported_on_its_exact_range(client: LanguageClient):
    await open_doc(client, GREETER)
    # line 4: kind = "rust_binary"; type `e` over the second `a`.
    await change(client, GREETER, 2, (4, 14), (4, 15), "e")
    diagnostics = client.diagnostics[uri(GREETER)]
    assert [d.code for d in diagnostics] == ["unknown_target_kind"]
    assert diagnostics[0].range == T.Range(start=T.Position(4, 7), end=T.Position(4, 20))
    assert diagnostics[0].severity == T.DiagnosticSeverity.Error
    assert any("rust_binary" in r.message for r in diagnostics[0].related_information)


async def test_code_action_fixes_an_unknown_kind(client: LanguageClient):
    text = await open_doc(client, GREETER)
    await change(client, GREETER, 2, (4, 14), (4, 15), "e")
    text = text.replace('"rust_binary"', '"rust_binery"', 1)
    diagnostics = client.diagnostics[uri(GREETER)]
    actions = await client.text_document_code_action_async(
        T.CodeActionParams(
            text_document=T.TextDocumentIdentifier(uri=uri(GREETER)),
            range=diagnostics[0].range,
            context=T.CodeActionContext(diagnostics=diagnostics),
        )
    )
    fix = next(a for a in actions if a.title == "Use kind `rust_binary`")
    assert fix.kind == T.CodeActionKind.QuickFix and fix.is_preferred
    edits = fix.edit.changes[uri(GREETER)]
    fixed = apply_edits(text, edits)
    assert fixed == GREETER.read_text()
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri(GREETER), version=3),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=fixed)],
        )
    )
    await client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri(GREETER)]) == []


async def test_complete_kind_attribute_and_dependency_label(client: LanguageClient):
    await open_doc(client, GREETER)
    # Inside the kind string: line 4 `kind = "rust_binary"`, after `"rust_`.
    kinds = await complete(client, GREETER, 4, 13)
    by_label = {i.label: i for i in kinds}
    assert "rust_library" in by_label and "sh_test" in by_label
    assert by_label["rust_binary"].documentation.value

    # A new line in `[target.attrs]` of Greeter (after line 15 `profile = …`).
    await change(client, GREETER, 2, (15, 66), (15, 66), "\n", publishes=False)
    attrs = await complete(client, GREETER, 16, 0)
    names = [i.label for i in attrs]
    assert names and "crate_name" not in names, "present attributes are not proposed again"
    ordered = sorted(attrs, key=lambda i: i.sort_text)
    required = [i for i in ordered if "(required)" in (i.detail or "")]
    assert ordered[: len(required)] == required, "required attributes sort first"

    # Inside a new `deps` string: line 6 `deps = ["libs/greeting/Greeting"]`.
    await change(client, GREETER, 3, (6, 32), (6, 32), ', "', publishes=False)
    labels = [i.label for i in await complete(client, GREETER, 6, 35)]
    assert "libs/greeting/Greeting" in labels
    assert "libs/text/Text" not in labels, "visible to libs/greeting only"
    assert "libs/greeting-js/GreetingJs" not in labels, "a js_library provides nothing rust deps accept"
    assert "./GreeterSmokeTest" not in labels, "a sh_test provides nothing rust deps accept"


async def test_hover_on_kind_and_dependency(client: LanguageClient):
    await open_doc(client, GREETER)
    hover = await client.text_document_hover_async(
        T.HoverParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETER)), position=T.Position(4, 10))
    )
    assert "rust_binary" in hover.contents.value
    hover = await client.text_document_hover_async(
        T.HoverParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETER)), position=T.Position(6, 12))
    )
    assert "libs/greeting/Greeting" in hover.contents.value and "rust_library" in hover.contents.value


async def test_definition_across_files_and_references(client: LanguageClient):
    await open_doc(client, GREETER)
    locations = await client.text_document_definition_async(
        T.DefinitionParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETER)), position=T.Position(6, 12))
    )
    assert len(locations) == 1
    assert locations[0].uri == uri(GREETING)
    line = GREETING.read_text().split("\n")[locations[0].range.start.line]
    assert line == 'name = "Greeting"'
    refs = await client.text_document_references_async(
        T.ReferenceParams(
            text_document=T.TextDocumentIdentifier(uri=uri(GREETER)),
            position=T.Position(6, 12),
            context=T.ReferenceContext(include_declaration=False),
        )
    )
    assert uri(GREETER) in {r.uri for r in refs}


async def test_document_symbols(client: LanguageClient):
    await open_doc(client, GREETER)
    symbols = await client.text_document_document_symbol_async(
        T.DocumentSymbolParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETER)))
    )
    assert [s.name for s in symbols] == ["Greeter", "GreeterSmokeTest"]


async def test_formatting_is_idempotent(client: LanguageClient):
    messy = GREETING.read_text().replace('name = "Greeting"', '   name="Greeting"   ').replace("\n\n[[target]]", "\n\n\n\n[[target]]")
    await open_doc(client, GREETING, messy)
    options = T.FormattingOptions(tab_size=4, insert_spaces=True)
    edits = await client.text_document_formatting_async(
        T.DocumentFormattingParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETING)), options=options)
    )
    formatted = apply_edits(messy, edits)
    assert formatted == GREETING.read_text()
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=uri(GREETING), version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=formatted)],
        )
    )
    again = await client.text_document_formatting_async(
        T.DocumentFormattingParams(text_document=T.TextDocumentIdentifier(uri=uri(GREETING)), options=options)
    )
    assert not again
