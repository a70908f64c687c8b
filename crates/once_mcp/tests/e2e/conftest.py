"""Shared fixtures for the MCP end-to-end tests: the `once` binary and a demo copy."""

import os
import shutil
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="session")
def once_binary() -> str:
    binary = os.environ.get("ONCE_BIN") or str(REPO / "target" / "debug" / "once")
    if not Path(binary).exists():
        pytest.fail(f"the once binary is missing at {binary}; build it with `cargo build` or set ONCE_BIN")
    return binary


@pytest.fixture
def demo(tmp_path: Path) -> Path:
    """A private copy of test_data/demo, so tests may edit it."""
    target = tmp_path / "demo"
    shutil.copytree(REPO / "test_data" / "demo", target)
    return target


@pytest.fixture
def make_workspace(tmp_path: Path):
    """Writes a workspace of {relative path: text} under the test's temporary directory."""

    def write(files: dict[str, str]) -> Path:
        root = tmp_path / "ws"
        for path, text in files.items():
            (root / path).parent.mkdir(parents=True, exist_ok=True)
            (root / path).write_text(text)
        return root

    return write


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
