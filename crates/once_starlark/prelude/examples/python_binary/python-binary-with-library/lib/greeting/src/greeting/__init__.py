"""Builds greetings."""

import os


def greet(name: str) -> str:
    """Returns the greeting for `name`, ending with `$GREETING_PUNCTUATION` if set."""
    return f"hello, {name}{os.environ.get('GREETING_PUNCTUATION', '')}"
