"""Checks the greeter's message catalog: one file per language, one greeting per file."""

from pathlib import Path

__all__ = ["check_catalog", "check_message"]


def check_message(text: str) -> list[str]:
    """Returns the problems of one message file's contents; an empty list means it is fine."""
    lines = text.splitlines()
    if not lines or not lines[0].strip():
        return ["the message is empty"]
    problems = []
    if len(lines) > 1:
        problems.append(f"expected one line, found {len(lines)}")
    if not text.endswith("\n"):
        problems.append("the last line has no newline")
    message = lines[0]
    if message != message.strip():
        problems.append("the message has leading or trailing spaces")
    if not message.rstrip().endswith("!"):
        problems.append("a greeting ends with `!`")
    return problems


def check_catalog(directory: Path) -> dict[str, list[str]]:
    """Checks every `*.txt` file of `directory`; returns the problems of each faulty file."""
    paths = sorted(directory.glob("*.txt"))
    if not paths:
        return {str(directory): ["no message file (*.txt)"]}
    report = {}
    for path in paths:
        problems = check_message(path.read_text(encoding="utf-8"))
        if problems:
            report[path.name] = problems
    return report
