"""Counts words and lines in a piece of text."""

from textstats.counting import line_count, word_count

__all__ = ["line_count", "word_count"]
