"""The executing tools over MCP with the official SDK, on a small workspace of `command`
and `script` targets served with `once mcp --allow-run`: a build (records with cache
states, all hits the second time), a run (the program's stdout), the evidence the build
left, progress notifications, cancelling a `sleep 600` build (no `sleep` survives, the
server keeps answering), and the gating: without `--allow-run` the tools are absent and
calling them is an error.
"""

import subprocess
import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from test_mcp_sdk import call, server

pytestmark = pytest.mark.anyio

FILES = {
    "once.toml": '[workspace]\ninclude = ["gen", "use", "tools", "slow"]\n',
    "gen/once.toml": (
        '[[target]]\nname = "Gen"\nkind = "command"\nsrcs = ["in.txt"]\nvisibility = ["public"]\n\n'
        '[target.attrs]\ncmd = "head -n 1 in.txt > \\"$OUT/gen.txt\\""\noutputs = ["gen.txt"]\n'
    ),
    "gen/in.txt": "first\nsecond\n",
    "use/once.toml": (
        '[[target]]\nname = "Use"\nkind = "command"\ndeps = ["gen/Gen"]\n\n'
        '[target.attrs]\ncmd = "tr a-z A-Z < ../.once/out/gen/Gen/out/gen.txt > \\"$OUT/use.txt\\""\n'
        'outputs = ["use.txt"]\n'
    ),
    "tools/once.toml": (
        '[[target]]\nname = "Hello"\nkind = "script"\nsrcs = ["hello.sh"]\n\n'
        '[target.attrs]\nscript_path = "hello.sh"\nscript_runtime = "sh"\nargs = ["agent"]\n'
    ),
    "tools/hello.sh": 'echo "hello $1"\n',
    "slow/once.toml": (
        '[[target]]\nname = "Slow"\nkind = "command"\n\n'
        '[target.attrs]\ncmd = "sleep 600"\noutputs = ["never.txt"]\n'
    ),
}

EXECUTING_TOOLS = {"once_build_target", "once_run_target", "once_run_tests"}


@pytest.fixture
def workspace(make_workspace) -> Path:
    return make_workspace(FILES)


def processes_in(directory: Path) -> list[int]:
    """The live processes (as `ps` lists them, zombies excluded) working in `directory`."""
    directory = directory.resolve()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if Path(entry / "cwd").resolve(strict=True) != directory:
                continue
        except OSError:
            continue
        stat = subprocess.run(["ps", "-o", "stat=", "-p", entry.name], capture_output=True, text=True).stdout
        if stat.strip() and not stat.strip().startswith("Z"):
            found.append(int(entry.name))
    return found


def proc_text(pid: int, name: str) -> str:
    """`/proc/<pid>/<name>` as text, or "" once the process has gone (it may between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/{name}").read_bytes().decode(errors="replace")
    except OSError:
        return ""


def sleeping_in(directory: Path) -> list[int]:
    return [pid for pid in processes_in(directory) if proc_text(pid, "comm").strip() == "sleep"]


async def test_build_hits_runs_and_leaves_evidence(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert EXECUTING_TOOLS <= names

        first = (await call(client, "once_build_target", {"target": "use/Use"}))["result"]
        assert first["success"] is True and first["exit_code"] == 0
        assert first["capability"] == "build"
        record = first["record"]
        assert (record["target"], record["status"], record["cache"]) == ("use/Use", "completed", "miss")
        assert [(a["id"], a["cache"]) for a in record["actions"]] == [("use/Use#build/cmd", "miss")]
        assert record["outputs"] == [".once/out/use/Use/out/use.txt"]
        assert (workspace / ".once/out/use/Use/out/use.txt").read_text() == "FIRST\n"

        second = (await call(client, "once_build_target", {"target": "use/Use"}))["result"]
        assert second["success"] is True
        assert second["record"]["cache"] == "hit"
        assert all(a["cache"] == "hit" for a in second["record"]["actions"])

        run = (await call(client, "once_run_target", {"target": "tools/Hello"}))["result"]
        assert run["success"] is True and run["exit_code"] == 0
        assert run["capability"] == "run"
        assert run["stdout"] == "hello agent\n"
        assert run["record"]["cache"] == "bypass"

        evidence = (await call(client, "once_query_evidence", {"subject": "use/Use", "limit": 100}))["result"]
        assert [(e["action"], e["cache"], e["status"]) for e in evidence] == [
            ("use/Use#build/cmd", "hit", "passed"),
            ("use/Use#build/cmd", "miss", "passed"),
        ]
        assert evidence[1]["action_digest"] == record["action_digest"]
        dependency = (await call(client, "once_query_evidence", {"subject": "gen/Gen:build"}))["result"]
        assert [e["cache"] for e in dependency] == ["hit", "miss"]


async def test_progress_arrives_for_each_finished_action(once_binary, workspace):
    updates = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        result = await client.call_tool("once_build_target", {"target": "use/Use"}, progress_callback=on_progress)
        assert not result.is_error
        assert result.structured_content["result"]["success"] is True
    assert updates == [
        (1, 2, "miss gen/Gen#build/cmd"),
        (2, 2, "miss use/Use#build/cmd"),
    ]


@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_cancelling_a_build_kills_its_processes_and_the_server_answers(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        outcome = {}

        async def build() -> None:
            outcome["result"] = await client.call_tool("once_build_target", {"target": "slow/Slow"})

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(build)
            with anyio.fail_after(20):
                while not (sleeping := sleeping_in(workspace / "slow")):
                    await anyio.sleep(0.02)
            pids = processes_in(workspace / "slow")
            assert sleeping and set(sleeping) <= set(pids)
            # The SDK sends `notifications/cancelled` for a call its caller abandons.
            cancelled_at = time.monotonic()
            tasks.cancel_scope.cancel()
        assert "result" not in outcome
        while processes_in(workspace / "slow") and time.monotonic() - cancelled_at < 1.0:
            await anyio.sleep(0.02)
        survivors = processes_in(workspace / "slow")
        assert survivors == [], f"still running after a cancelled build: {survivors}"
        await client.send_ping()
        answer = await call(client, "once_query_targets", {})
        assert "slow/Slow" in [t["id"] for t in answer["result"]]


async def test_executing_tools_need_allow_run(once_binary, workspace):
    async with Client(server(once_binary, workspace), mode="legacy") as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert not EXECUTING_TOOLS & names
        assert "once_query_evidence" in names
        for tool in sorted(EXECUTING_TOOLS):
            result = await client.call_tool(tool, {"target": "tools/Hello"})
            assert result.is_error
            assert "--allow-run" in result.content[0].text
    assert not (workspace / ".once" / "out").exists()
