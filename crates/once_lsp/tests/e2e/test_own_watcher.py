"""`once lsp` with a client that cannot register file watchers: the server watches the disk
itself, so a change another program makes to a manifest still reaches the open files."""

import asyncio
import tempfile
from pathlib import Path

import pytest_lsp
from lsprotocol import types as T
from pytest_lsp import ClientServerConfig, LanguageClient

from conftest import demo_copy, once_binary

WORKSPACE = demo_copy(Path(tempfile.mkdtemp(prefix="once-lsp-watch-e2e-")))
GREETER = WORKSPACE / "apps" / "greeter" / "once.toml"
GREETING = WORKSPACE / "libs" / "greeting" / "once.toml"
NEW_PACKAGE = WORKSPACE / "libs" / "fresh"


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[once_binary(), "lsp"]))
async def client(lsp_client: LanguageClient):
    # No `workspace.didChangeWatchedFiles` capability: nothing to register with.
    await lsp_client.initialize_session(
        T.InitializeParams(
            capabilities=T.ClientCapabilities(),
            root_uri=WORKSPACE.as_uri(),
        )
    )
    yield
    await lsp_client.shutdown_session()


async def diagnostics_of(client: LanguageClient, path: Path, want, timeout: float = 10.0):
    """Waits until the published diagnostics of `path` satisfy `want`."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        current = list(client.diagnostics.get(path.as_uri(), []))
        if want(current):
            return current
        remaining = deadline - asyncio.get_running_loop().time()
        assert remaining > 0, f"diagnostics of {path} never matched; last: {current}"
        try:
            await asyncio.wait_for(
                client.wait_for_notification(T.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), remaining
            )
        except asyncio.TimeoutError:
            pass


async def test_disk_changes_reach_open_files(client: LanguageClient):
    client.text_document_did_open(
        T.DidOpenTextDocumentParams(
            text_document=T.TextDocumentItem(
                uri=GREETER.as_uri(), language_id="toml", version=1, text=GREETER.read_text()
            )
        )
    )
    await diagnostics_of(client, GREETER, lambda d: d == [])

    # Another program renames the target the open manifest depends on.
    original = GREETING.read_text()
    GREETING.write_text(original.replace('name = "Greeting"', 'name = "Greeting2"', 1))
    broken = await diagnostics_of(client, GREETER, lambda d: len(d) > 0)
    assert any("libs/greeting/Greeting" in d.message for d in broken), broken

    # And renames it back.
    GREETING.write_text(original)
    await diagnostics_of(client, GREETER, lambda d: d == [])

    # A package created in new directories after start is seen too (the demo admits
    # `libs/*`): the open manifest may depend on it as soon as it exists.
    text = GREETER.read_text().replace(
        'data = ["data/Messages"]',
        'data = ["data/Messages", "libs/fresh/Fresh"]',
        1,
    )
    client.text_document_did_change(
        T.DidChangeTextDocumentParams(
            text_document=T.VersionedTextDocumentIdentifier(uri=GREETER.as_uri(), version=2),
            content_changes=[T.TextDocumentContentChangeWholeDocument(text=text)],
        )
    )
    await diagnostics_of(client, GREETER, lambda d: any("libs/fresh/Fresh" in x.message for x in d))
    (NEW_PACKAGE / "data" / "nested").mkdir(parents=True)
    (NEW_PACKAGE / "data" / "nested" / "a.txt").write_text("a\n")
    (NEW_PACKAGE / "once.toml").write_text(
        '[[target]]\nname = "Fresh"\nkind = "filegroup"\nsrcs = ["data/**/*.txt"]\n'
        'visibility = ["public"]\n'
    )
    await diagnostics_of(client, GREETER, lambda d: d == [])
