"""Shared helpers for the `once lsp` end-to-end tests: the binary, a demo copy, edits."""

import os
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[4]


def once_binary() -> str:
    binary = os.environ.get("ONCE_BIN") or str(REPO / "target" / "debug" / "once")
    if not Path(binary).exists():
        raise RuntimeError(f"the once binary is missing at {binary}; build it or set ONCE_BIN")
    return binary


def demo_copy(tmp: Path) -> Path:
    """A private copy of test_data/demo, so tests may edit it."""
    target = tmp / "demo"
    shutil.copytree(REPO / "test_data" / "demo", target)
    return target


def offset(text: str, line: int, character: int) -> int:
    """The index of an LSP position in ASCII text."""
    lines = text.split("\n")
    return sum(len(l) + 1 for l in lines[:line]) + character


def apply_edits(text: str, edits) -> str:
    """Applies LSP text edits (non-overlapping), last first."""
    spans = sorted(
        ((offset(text, e.range.start.line, e.range.start.character),
          offset(text, e.range.end.line, e.range.end.character), e.new_text) for e in edits),
        reverse=True,
    )
    for start, end, new in spans:
        text = text[:start] + new + text[end:]
    return text
