"""`once_run_tests` over MCP with the official SDK, on a workspace of pytest targets
served with `once mcp --allow-run`: a failing test comes back as normal content with
`success: false` and its failing case (name, file, line, message) in the normalized
results, which `once_query_test_results` returns again afterwards; a passing test is a
cache hit the second time; `changed_paths` selects what `once_query_affected_tests`
lists; progress arrives per finished test target; cancelling leaves no test process
alive. pytest must be importable by the `python3` on PATH (`./.ci/test` puts `.venv`
first).
"""

import time
from pathlib import Path

import anyio
import pytest
from mcp import Client

from test_build_run import proc_text, processes_in
from test_mcp_sdk import call, server

pytestmark = pytest.mark.anyio

FILES = {
    "once.toml": '[workspace]\ninclude = ["calc", "slow"]\n',
    "calc/once.toml": (
        '[[target]]\nname = "Calc"\nkind = "python_library"\nsrcs = ["calc/*.py"]\n\n'
        '[[target]]\nname = "CalcTest"\nkind = "pytest_test"\nsrcs = ["tests/test_calc.py"]\ndeps = ["./Calc"]\n\n'
        '[[target]]\nname = "BrokenTest"\nkind = "pytest_test"\nsrcs = ["tests/test_broken.py"]\ndeps = ["./Calc"]\n'
    ),
    "calc/calc/__init__.py": "def add(a, b):\n    return a + b\n",
    "calc/tests/test_calc.py": "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n",
    "calc/tests/test_broken.py": (
        "from calc import add\n\n\ndef test_add():\n    assert add(1, 2) == 3\n\n\n"
        "def test_subtracts():\n    assert add(1, -1) == 2, \"add cannot subtract\"\n"
    ),
    "slow/once.toml": '[[target]]\nname = "SlowTest"\nkind = "pytest_test"\nsrcs = ["test_slow.py"]\n',
    "slow/test_slow.py": "import time\n\n\ndef test_sleeps():\n    time.sleep(600)\n",
}


@pytest.fixture
def workspace(make_workspace) -> Path:
    return make_workspace(FILES)


async def test_a_failing_test_is_content_with_its_failing_case(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        answer = (await call(client, "once_run_tests", {"target": "calc/BrokenTest"}))["result"]
        assert answer["success"] is False
        [run] = answer["runs"]
        assert (run["target"], run["status"], run["success"], run["exit_code"]) == (
            "calc/BrokenTest",
            "failed",
            False,
            1,
        )
        results = run["results"]
        assert results["schema"] == "once.test_results.v1"
        assert results["summary"] == {"total": 2, "passed": 1, "failed": 1, "skipped": 0, "flaky": 0}
        [failed] = [case for case in results["cases"] if case["status"] == "failed"]
        assert failed["id"] == "tests/test_broken.py::test_subtracts"
        # The failing assertion, not the `def` (pytest places a case at its `def`).
        assert (failed["file"], failed["line"]) == ("calc/tests/test_broken.py", 9)
        assert "add cannot subtract" in failed["attempts"][0]["message"]

        again = (await call(client, "once_query_test_results", {"target": "calc/BrokenTest"}))["result"]
        assert again == results
        summary = (
            await call(client, "once_query_test_results", {"target": "calc/BrokenTest", "summary_only": True})
        )["result"]
        assert summary["schema"] == "once.test_results_summary.v1"
        assert (summary["status"], summary["summary"]) == ("failed", results["summary"])
        assert "cases" not in summary

        passing = (await call(client, "once_run_tests", {"targets": ["calc/CalcTest", "calc/CalcTest"]}))["result"]
        assert passing["success"] is True
        assert [(r["target"], r["status"], r["cache"]) for r in passing["runs"]] == [
            ("calc/CalcTest", "passed", "miss")
        ]
        cached = (await call(client, "once_run_tests", {"target": "calc/CalcTest"}))["result"]
        assert [(r["status"], r["cache"]) for r in cached["runs"]] == [("passed", "hit")]
        assert cached["runs"][0]["results"] == passing["runs"][0]["results"] | {
            "cases": cached["runs"][0]["results"]["cases"]
        }

        affected = (await call(client, "once_query_affected_tests", {"changed_paths": ["calc/calc/__init__.py"]}))
        selected = (await call(client, "once_run_tests", {"changed_paths": ["calc/calc/__init__.py"]}))["result"]
        assert [t["id"] for t in selected["selection"]["tests"]] == [t["id"] for t in affected["result"]]
        assert [r["target"] for r in selected["runs"]] == ["calc/BrokenTest", "calc/CalcTest"]

        evidence = (await call(client, "once_query_evidence", {"subject": "calc/CalcTest:test"}))["result"]
        # The runs of the test action itself (the capability also writes pytest's plugin).
        runs = [e["cache"] for e in evidence if e["action"] == "calc/CalcTest#test/test"]
        assert runs == ["hit", "hit", "miss"]


async def test_progress_arrives_per_finished_test_target(once_binary, workspace):
    updates = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        updates.append((progress, total, message))

    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        result = await client.call_tool(
            "once_run_tests",
            {"targets": ["calc/CalcTest", "calc/BrokenTest"]},
            progress_callback=on_progress,
        )
        assert not result.is_error
        assert result.structured_content["result"]["success"] is False
    assert sorted(updates) == [
        (1, 2, "failed calc/BrokenTest"),
        (2, 2, "passed calc/CalcTest"),
    ] or sorted(updates) == [
        (1, 2, "passed calc/CalcTest"),
        (2, 2, "failed calc/BrokenTest"),
    ]


@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_cancelling_kills_the_test_processes(once_binary, workspace):
    async with Client(server(once_binary, workspace, "--allow-run"), mode="legacy") as client:
        outcome = {}

        async def run() -> None:
            outcome["result"] = await client.call_tool("once_run_tests", {"target": "slow/SlowTest"})

        def pytest_running() -> bool:
            return any(
                "pytest" in proc_text(pid, "cmdline")
                for pid in processes_in(workspace / "slow")
            )

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(run)
            with anyio.fail_after(30):
                while not pytest_running():
                    await anyio.sleep(0.02)
            cancelled_at = time.monotonic()
            tasks.cancel_scope.cancel()
        assert "result" not in outcome
        while processes_in(workspace / "slow") and time.monotonic() - cancelled_at < 1.0:
            await anyio.sleep(0.02)
        survivors = processes_in(workspace / "slow")
        assert survivors == [], f"still running after a cancelled test run: {survivors}"
        await client.send_ping()
        answer = await call(client, "once_query_tests", {})
        assert "slow/SlowTest" in [t["id"] for t in answer["result"]]
