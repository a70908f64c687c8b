"""The counting functions."""


def word_count(text: str) -> int:
    """Returns the number of whitespace-separated words in `text`."""
    return len(text.split())


def line_count(text: str) -> int:
    """Returns the number of lines in `text`; a trailing newline ends the last line."""
    return len(text.splitlines())
