"""Runtime sessions over MCP with the official SDK, served with `once mcp --allow-run`:
`once_start_target` starts a shell service that leaves a grandchild (`sleep 600 &`) and
prints a line on each stream every 200 ms; `once_runtime_status` and `once_runtime_logs`
follow it (cursors resume exactly, a source filter skips nothing of the other stream);
the server is closed and a new one started, which still sees the session running and
stops it with `once_stop_runtime`, after which no process of the session is left.
Without `--allow-run` the start and stop tools are absent and refused, while status and
logs (read-only) still answer.
"""

import os
import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from conftest import REPO
from test_mcp_sdk import call, server

pytestmark = pytest.mark.anyio

SERVICE = 'sleep 600 &\ni=0\nwhile true; do\n  i=$((i+1))\n  echo "out $i"\n  sleep 0.1\n  echo "err $i" >&2\n  sleep 0.1\ndone\n'

FILES = {
    "once.toml": "[workspace]\n",
    "svc/once.toml": '[[target]]\nname = "Svc"\nkind = "script"\n\n[target.attrs]\nscript_path = "svc.sh"\nscript_runtime = "sh"\n',
    "svc/svc.sh": SERVICE,
}

RUNTIME_TOOLS = {"once_start_target", "once_runtime_status", "once_runtime_logs", "once_stop_runtime"}
GATED_RUNTIME_TOOLS = {"once_start_target", "once_stop_runtime"}


@pytest.fixture
def workspace(make_workspace):
    root = make_workspace(FILES)
    yield root
    # Whatever happened, leave no service running.
    binary = os.environ.get("ONCE_BIN") or str(REPO / "target" / "debug" / "once")
    subprocess.run([binary, "-C", str(root), "runtime", "stop", "--all", "--timeout", "0"], capture_output=True)


def session_processes(record: dict) -> list[int]:
    """Live processes of the supervisor's process session or of the program's group."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        state, group, session = fields[0], int(fields[2]), int(fields[3])
        if state != "Z" and (session == record["supervisor_pid"] or group == record["pid"]):
            found.append(int(entry.name))
    return found


def texts(page: dict) -> list[str]:
    return [f'{r["source"]}:{r["message"]}' for r in page["records"]]


async def wait_for(client, session_id: str, done) -> dict:
    with anyio.fail_after(15):
        while True:
            record = (await call(client, "once_runtime_status", {"session_id": session_id}))["result"]
            if done(record):
                return record
            await anyio.sleep(0.05)


async def test_a_session_outlives_its_server_and_is_stopped_by_the_next(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert RUNTIME_TOOLS <= names
        started = (await call(client, "once_start_target", {"target": "svc/Svc"}))["result"]
        assert started["status"] == "starting" and started["target"] == "svc/Svc"
        session_id = started["session_id"]
        assert started["session_dir"] == f".once/runtime/{session_id}"
        assert (workspace / started["session_dir"] / "session.json").is_file()
        running = await wait_for(client, session_id, lambda r: r["status"] == "running")
        assert running["pid"] > 0 and running["supervisor_pid"] > 0
        with anyio.fail_after(15):
            while len((all_ := (await call(client, "once_runtime_logs", {"session_id": session_id}))["result"])["records"]) < 6:
                await anyio.sleep(0.05)
        assert texts(all_)[:4] == ["stdout:out 1", "stderr:err 1", "stdout:out 2", "stderr:err 2"]
        first = (await call(client, "once_runtime_logs", {"session_id": session_id, "limit": 2}))["result"]
        second = (await call(client, "once_runtime_logs", {"session_id": session_id, "limit": 2, "cursor": first["next_cursor"]}))["result"]
        assert texts(first) + texts(second) == texts(all_)[:4]
        out = (await call(client, "once_runtime_logs", {"session_id": session_id, "source": "stdout", "limit": 1}))["result"]
        assert texts(out) == ["stdout:out 1"]
        err = (await call(client, "once_runtime_logs", {"session_id": session_id, "source": "stderr", "cursor": out["next_cursor"]}))["result"]
        assert texts(err)[:3] == ["stderr:err 1", "stderr:err 2", "stderr:err 3"]
    # The first server has exited; the session has not.
    pids = session_processes(running)
    assert len(pids) >= 3, pids
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        still = (await call(client, "once_runtime_status", {"session_id": session_id}))["result"]
        assert still["status"] == "running"
        asked = time.monotonic()
        stopped = (await call(client, "once_stop_runtime", {"session_id": session_id, "timeout_seconds": 5}))["result"]
        assert time.monotonic() - asked < 5
        assert stopped["status"] == "stopped" and stopped["stopped_by"] == "SIGTERM"
        again = (await call(client, "once_stop_runtime", {"session_id": session_id}))["result"]
        assert again == stopped
    assert session_processes(running) == []
    assert all(not Path(f"/proc/{pid}").exists() or "Z" in Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] for pid in pids)


async def test_start_and_stop_need_allow_run_and_status_reads_without(once_binary, workspace):
    async with Client(server(once_binary, workspace), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert not GATED_RUNTIME_TOOLS & names
        assert {"once_runtime_status", "once_runtime_logs"} <= names
        for tool, arguments in [("once_start_target", {"target": "svc/Svc"}), ("once_stop_runtime", {"session_id": "x"})]:
            result = await client.call_tool(tool, arguments)
            assert result.is_error
            assert "--allow-run" in result.content[0].text
        missing = await client.call_tool("once_runtime_status", {"session_id": "nope-1-2"})
        assert missing.is_error and "no runtime session `nope-1-2`" in missing.content[0].text
        escape = await client.call_tool("once_runtime_logs", {"session_id": "../../etc"})
        assert escape.is_error
    assert not (workspace / ".once" / "runtime").exists()
