"""`once_exec_script` with the official SDK on a workspace served with `once mcp
--allow-run`: the seed's return shape, a miss then a hit with identical stdout and the
output restored, the output of a need that ran leading stderr (none on a hit), a `needs` dependency rebuilt into an identical output leaving the script a
hit, progress per finished script, evidence whose subject is the action digest, a failing
script as a normal result, an invalid header as a tool error, cancelling a `sleep 600`
script (no `sleep` survives, the server keeps answering), and the gating.
"""

from pathlib import Path

import anyio
import pytest
from mcp import Client

from test_build_run import sleeping_in
from test_mcp_sdk import call, server

pytestmark = pytest.mark.anyio

FILES = {
    "once.toml": "[workspace]\n",
    "scripts/gen.sh": (
        '#!/bin/sh\n# once input "../data/in.txt"\n# once output "../gen/table.txt"\n'
        "mkdir -p ../gen\ntr a-z A-Z < ../data/in.txt > ../gen/table.txt\necho generated\n"
    ),
    "scripts/build.sh": (
        '#!/usr/bin/env bash\n# once needs "gen.sh"\n# once output "../dist/out.txt"\n'
        'mkdir -p ../dist\ncat ../gen/table.txt > ../dist/out.txt\necho "built $1"\n'
    ),
    "scripts/fail.sh": '#!/bin/sh\n# once input "fail.sh"\necho broken >&2\nexit 3\n',
    "scripts/broken.sh": '#!/bin/sh\n# once inputs "x"\n',
    "scripts/slow.sh": '#!/bin/sh\n# once input "slow.sh"\nsleep 600\n',
    "data/in.txt": "hello\n",
}


@pytest.fixture
def workspace(make_workspace) -> Path:
    return make_workspace(FILES)


async def test_a_script_misses_then_hits_with_the_seed_shape(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        first = (await call(client, "once_exec_script", {"path": "scripts/build.sh", "args": ["x"]}))["result"]
        assert list(first) == [
            "path", "success", "exit_code", "stdout", "stderr", "record", "evidence_subject", "evidence",
        ]
        assert (first["path"], first["success"], first["exit_code"]) == ("scripts/build.sh", True, 0)
        assert first["stdout"] == "built x\n"
        # The need ran: its output leads stderr, under a header (stdout is the script's).
        need_output = "once: output of `scripts/gen.sh`, needed by `scripts/build.sh` (cache miss):\ngenerated\n"
        assert first["stderr"] == need_output
        assert first["record"]["cache"] == "miss" and first["record"]["exit_code"] == 0
        digest = first["record"]["action_digest"]
        assert first["evidence_subject"] == digest
        assert [(e["cache"], e["status"], e["subject"]["id"]) for e in first["evidence"]] == [
            ("miss", "passed", digest)
        ]
        assert (workspace / "dist/out.txt").read_text() == "HELLO\n"

        (workspace / "dist/out.txt").unlink()
        second = (await call(client, "once_exec_script", {"path": "scripts/build.sh", "args": ["x"]}))["result"]
        assert (second["record"]["cache"], second["stdout"], second["stderr"]) == ("hit", "built x\n", "")
        assert second["record"]["action_digest"] == digest
        assert (workspace / "dist/out.txt").read_text() == "HELLO\n"

        # The dependency runs again into the same output: the script is still a hit.
        (workspace / "data/in.txt").write_text("HELLO\n")
        cutoff = (await call(client, "once_exec_script", {"path": "scripts/build.sh", "args": ["x"]}))["result"]
        assert (cutoff["record"]["cache"], cutoff["stderr"]) == ("hit", need_output)

        evidence = (await call(client, "once_query_evidence", {"subject": digest}))["result"]
        assert [e["cache"] for e in evidence] == ["hit", "hit", "miss"]


async def test_progress_failure_and_invalid_headers(once_binary, workspace):
    updates = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        result = await client.call_tool("once_exec_script", {"path": "scripts/build.sh"}, progress_callback=on_progress)
        assert not result.is_error
        assert updates == [(1, 2, "miss scripts/gen.sh"), (2, 2, "miss scripts/build.sh")]

        failed = (await call(client, "once_exec_script", {"path": "scripts/fail.sh"}))["result"]
        assert (failed["success"], failed["exit_code"], failed["stderr"]) == (False, 3, "broken\n")
        assert failed["record"]["cache"] == "miss"

        broken = await client.call_tool("once_exec_script", {"path": "scripts/broken.sh"})
        assert broken.is_error
        assert "inputs" in broken.content[0].text


@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_cancelling_a_script_kills_its_processes(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        async with anyio.create_task_group() as group:

            async def slow() -> None:
                await client.call_tool("once_exec_script", {"path": "scripts/slow.sh"})

            group.start_soon(slow)
            with anyio.fail_after(20):
                while not sleeping_in(workspace / "scripts"):
                    await anyio.sleep(0.05)
            group.cancel_scope.cancel()
        with anyio.fail_after(20):
            while sleeping_in(workspace / "scripts"):
                await anyio.sleep(0.05)
        await client.send_ping()


async def test_without_allow_run_the_tool_is_absent(once_binary, workspace):
    async with Client(server(once_binary, workspace), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert "once_exec_script" not in names
        result = await client.call_tool("once_exec_script", {"path": "scripts/build.sh"})
        assert result.is_error
        assert "--allow-run" in result.content[0].text
