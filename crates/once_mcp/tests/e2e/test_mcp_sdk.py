"""End-to-end tests of `once mcp` driven by the official `mcp` Python SDK.

Every call's structuredContent is validated by the SDK against the tool's outputSchema;
the tests assert the values too. Both connection modes run: `legacy` (initialize
handshake) and `auto` (server/discover probe, then the stateless 2026-07-28 revision).
"""

import json
from pathlib import Path

import pytest
from mcp import Client, StdioServerParameters

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]

EXPECTED_TOOLS = [
    "once_query_workspace",
    "once_query_targets",
    "once_get_target",
    "once_query_capabilities",
    "once_query_schema",
    "once_query_example",
    "once_list_target_kinds",
    "once_query_tests",
    "once_query_test_results",
    "once_query_affected_tests",
    "once_query_evidence",
    "once_validate_workspace",
    "once_validate_target",
    "once_plan_init",
    "once_runtime_status",
    "once_runtime_logs",
    "once_fetch_external_source",
    "once_query_module_contract",
    "once_validate_script",
    "once_validate_module",
]

# Tools that reach outside the workspace (the network): open-world, not idempotent.
OPEN_WORLD_TOOLS = {"once_fetch_external_source"}


def server(once_binary: str, workspace: Path, *extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=once_binary, args=["mcp", "--workspace", str(workspace), *extra])


async def call(client, name: str, arguments: dict):
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content[0].text
    structured = result.structured_content
    assert structured is not None
    assert json.loads(result.content[0].text) == structured, "the text block mirrors structuredContent"
    return structured


@pytest.mark.parametrize("mode", MODES)
async def test_lists_tools_with_schemas_and_annotations(once_binary, demo, mode):
    async with Client(server(once_binary, demo), mode=mode) as client:
        tools = (await client.list_tools()).tools
        assert [t.name for t in tools] == EXPECTED_TOOLS
        for tool in tools:
            assert tool.input_schema["type"] == "object"
            assert tool.input_schema["additionalProperties"] is False
            assert tool.output_schema["required"] == ["result"]
            hints = tool.annotations
            assert hints.read_only_hint is True
            assert hints.destructive_hint is False
            open_world = tool.name in OPEN_WORLD_TOOLS
            assert hints.idempotent_hint is not open_world
            assert hints.open_world_hint is open_world


@pytest.mark.parametrize("mode", MODES)
async def test_every_tool_answers_the_demo(once_binary, demo, mode):
    async with Client(server(once_binary, demo), mode=mode) as client:
        workspace = await call(client, "once_query_workspace", {})
        assert Path(workspace["result"]["root"]) == demo.resolve()
        assert workspace["result"]["target_count"] == 17
        assert workspace["result"]["diagnostics"] == {"errors": 0, "warnings": 0}

        targets = await call(client, "once_query_targets", {})
        ids = [t["id"] for t in targets["result"]]
        assert "apps/greeter/Greeter" in ids and "libs/text/Text" in ids
        assert ids == sorted(ids)

        rust = await call(client, "once_query_targets", {"kind": "rust_library"})
        assert {t["id"] for t in rust["result"]} == {"libs/greeting/Greeting", "libs/text/Text"}

        target = await call(client, "once_get_target", {"target": "apps/greeter/Greeter"})
        assert target["result"]["label"] == {"package": "apps/greeter", "name": "Greeter", "id": "apps/greeter/Greeter"}
        assert target["result"]["kind"] == "rust_binary"
        assert target["result"]["deps"] == ["libs/greeting/Greeting"]

        capabilities = await call(client, "once_query_capabilities", {"target": "apps/greeter/Greeter"})
        assert [c["name"] for c in capabilities["result"]["capabilities"]] == ["build", "run"]

        schema = await call(client, "once_query_schema", {"kind": "rust_binary"})
        assert schema["result"]["kind"] == "rust_binary"
        assert "executable" in schema["result"]["providers"]
        slug = schema["result"]["examples"][0]["slug"]

        example = await call(client, "once_query_example", {"kind": "rust_binary", "slug": slug})
        paths = [f["path"] for f in example["result"]["files"]]
        assert "once.toml" in paths and paths == sorted(paths)

        kinds = await call(client, "once_list_target_kinds", {"query": "rust"})
        assert kinds["result"] and all(k["kind"].startswith("rust_") for k in kinds["result"])

        tests = await call(client, "once_query_tests", {})
        test_ids = [t["id"] for t in tests["result"]]
        assert "libs/text/TextTest" in test_ids
        assert all(t["results_path"].startswith(".once/out/") for t in tests["result"])

        affected = await call(client, "once_query_affected_tests", {"changed_paths": ["libs/text/src/lib.rs"]})
        affected_ids = {t["id"] for t in affected["result"]}
        assert "libs/text/TextTest" in affected_ids and "libs/greeting/GreetingTest" in affected_ids
        assert all(t["reasons"] for t in affected["result"])

        # Nothing has run in the demo: no evidence yet is an empty list, not an error.
        evidence = await call(client, "once_query_evidence", {"subject": "libs/text/TextTest:test", "limit": 100})
        assert evidence["result"] == []
        assert not (demo / ".once" / "once.sqlite").exists()

        validation = await call(client, "once_validate_workspace", {})
        assert validation["result"] == {"valid": True, "target_count": 17, "diagnostics": []}

        proposed = await call(client, "once_validate_target", {"target": {"name": "Core", "kind": "rust_library", "attrs": {"edition": "2020"}}})
        assert proposed["result"]["valid"] is False
        assert [d["code"] for d in proposed["result"]["diagnostics"]] == ["attr_value_not_allowed"]
        contract = await call(client, "once_query_module_contract", {})
        assert contract["result"]["language"] == "Starlark"
        (demo / "modules").mkdir()
        (demo / "modules" / "docs.star").write_text(contract["result"]["starter"])
        module = await call(client, "once_validate_module", {"path": "modules/docs.star"})
        assert module["result"]["valid"] is True and module["result"]["target_kinds"]

        good = await call(client, "once_validate_target", {"target": {"name": "Core", "kind": "rust_library"}})
        assert good["result"] == {"valid": True, "diagnostics": []}

        script = await call(client, "once_validate_script", {"path": "tools/release.sh"})
        assert script["result"]["valid"] is True
        assert script["result"]["contract"]["runtime"] == "bash"
        (demo / "tools" / "gen.sh").write_text('#!/usr/bin/env bash\n# once inputs "a.txt"\necho hi\n')
        broken = await call(client, "once_validate_script", {"path": "tools/gen.sh"})
        assert broken["result"]["valid"] is False and "contract" not in broken["result"]
        [problem] = broken["result"]["diagnostics"]
        assert problem["code"] == "invalid_script_contract"
        assert problem["range"]["start"] == {"line": 2, "column": 3}
        assert problem["fixes"][0]["edits"][0]["new_text"] == 'once input "a.txt"'

        # No test has run in the demo: reading results is a tool error saying what to run.
        not_run = await client.call_tool("once_query_test_results", {"target": "libs/text/TextTest"})
        assert not_run.is_error and "once test libs/text/TextTest" in not_run.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_tool_errors_stay_inside_the_result(once_binary, demo, mode):
    async with Client(server(once_binary, demo), mode=mode) as client:
        missing = await client.call_tool("once_get_target", {"target": "libs/text/Txt"})
        assert missing.is_error
        assert "did you mean `libs/text/Text`" in missing.content[0].text
        bad = await client.call_tool("once_query_targets", {"bogus": 1})
        assert bad.is_error
        assert "unknown argument `bogus`" in bad.content[0].text
        refused = await client.call_tool(
            "once_fetch_external_source", {"url": "https://169.254.169.254/latest/meta-data/"}
        )
        assert refused.is_error
        assert "external source address must be public" in refused.content[0].text
        too_many = await client.call_tool("once_query_evidence", {"limit": 101})
        assert too_many.is_error
        assert "Input validation error" in too_many.content[0].text


@pytest.mark.parametrize("mode", MODES)
async def test_pages_carry_a_cursor(once_binary, demo, mode):
    async with Client(server(once_binary, demo), mode=mode) as client:
        first = await call(client, "once_query_targets", {"limit": 4})
        assert len(first["result"]) == 4
        seen = [t["id"] for t in first["result"]]
        cursor = first.get("next_cursor")
        while cursor:
            page = await call(client, "once_query_targets", {"limit": 4, "cursor": cursor})
            seen += [t["id"] for t in page["result"]]
            cursor = page.get("next_cursor")
        everything = await call(client, "once_query_targets", {})
        assert seen == [t["id"] for t in everything["result"]]


async def test_answers_follow_edits_on_disk(once_binary, demo):
    async with Client(server(once_binary, demo), mode="legacy") as client:
        assert (await call(client, "once_validate_workspace", {}))["result"]["valid"] is True
        manifest = demo / "libs" / "text" / "once.toml"
        original = manifest.read_text()
        manifest.write_text(original + "\n[[target]\n")
        broken = await call(client, "once_validate_workspace", {})
        assert broken["result"]["valid"] is False
        assert {d["file"] for d in broken["result"]["diagnostics"]} == {"libs/text/once.toml"}
        manifest.write_text(original)
        assert (await call(client, "once_validate_workspace", {}))["result"]["valid"] is True
        package = demo / "libs" / "extra"  # inside the demo's [workspace] include
        package.mkdir()
        (package / "data.txt").write_text("x\n")
        (package / "once.toml").write_text('[[target]]\nname = "Data"\nkind = "filegroup"\nsrcs = ["data.txt"]\n')
        targets = await call(client, "once_query_targets", {})
        assert "libs/extra/Data" in [t["id"] for t in targets["result"]]
