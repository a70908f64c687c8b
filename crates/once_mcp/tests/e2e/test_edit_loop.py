"""The agent loop over MCP with the official SDK, on a server started with `--allow-run`:
list kinds -> schema -> materialize a starter -> validate the workspace -> apply an edit
adding a dependency -> validate again. Also: without `--allow-run` the editing tools are
not listed and calling them is a tool error that says how to enable them."""

from pathlib import Path

import pytest
from mcp import Client

from test_mcp_sdk import call, server

pytestmark = pytest.mark.anyio


@pytest.fixture
def empty_workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "once.toml").write_text("# An empty workspace.\n[workspace]\n")
    return root


async def test_the_agent_loop_materializes_edits_and_validates(once_binary, empty_workspace):
    async with Client(server(once_binary, empty_workspace, "--allow-run"), mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "once_apply_edit" in names and "once_materialize_example" in names

        kinds = (await call(client, "once_list_target_kinds", {"query": "rust library"}))["result"]
        assert kinds[0]["kind"] == "rust_library"
        schema = (await call(client, "once_query_schema", {"kind": "rust_library"}))["result"]
        slug = schema["examples"][0]["slug"]

        done = (await call(client, "once_materialize_example",
                           {"kind": "rust_library", "slug": slug, "destination": "libs/core"}))["result"]
        assert done["materialized"] is True and done["conflicts"] == []
        assert done["created_files"], done
        assert done["workspace_validation"]["valid"] is True, done["workspace_validation"]
        library = next(t for t in done["targets"] if t["kind"] == "rust_library")

        again = (await call(client, "once_materialize_example",
                            {"kind": "rust_library", "slug": slug, "destination": "libs/core"}))["result"]
        assert again["created_files"] == [] and again["unchanged_files"] == done["created_files"]

        validation = (await call(client, "once_validate_workspace", {}))["result"]
        assert validation["valid"] is True

        edit = (await call(client, "once_apply_edit", {
            "package": "tools",
            "operations": [{"op": "create", "target": {
                "name": "Notes", "kind": "filegroup", "srcs": ["notes.txt"], "deps": [library["id"]]}}],
        }))["result"]
        assert edit == {"applied": True, "changed": True, "path": "tools/once.toml"}
        # The dependency's visibility decides; either way the server already sees the edit.
        after = (await call(client, "once_validate_workspace", {}))["result"]
        assert after["target_count"] == validation["target_count"] + 1
        target = (await call(client, "once_get_target", {"target": "tools/Notes"}))["result"]
        assert target["deps"] == [library["id"]]

        update = (await call(client, "once_apply_edit", {
            "package": "tools",
            "operations": [{"op": "update", "target_name": "Notes", "set": {"deps": []}},
                           {"op": "delete", "target_name": "Missing"}],
        }))["result"]
        assert update["applied"] is False and update["failed_operation"] == 1
        assert update["diagnostics"][0]["code"] == "target_not_found"


async def test_editing_tools_need_allow_run(once_binary, empty_workspace):
    async with Client(server(once_binary, empty_workspace), mode="legacy") as client:
        names = [t.name for t in (await client.list_tools()).tools]
        assert "once_apply_edit" not in names
        result = await client.call_tool("once_apply_edit", {"package": "", "operations": []})
        assert result.is_error
        assert "--allow-run" in result.content[0].text
