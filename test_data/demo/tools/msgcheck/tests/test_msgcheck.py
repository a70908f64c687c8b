"""Tests of the message checks."""

import pytest

from msgcheck import check_catalog, check_message


def test_a_greeting_on_one_line_is_fine():
    assert check_message("Hello, World!\n") == []


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "the message is empty"),
        ("Hello!\nBye!\n", "expected one line, found 2"),
        ("Hello!", "the last line has no newline"),
        (" Hello!\n", "the message has leading or trailing spaces"),
        ("Hello\n", "a greeting ends with `!`"),
    ],
)
def test_reports_each_problem(text, problem):
    assert problem in check_message(text)


def test_a_good_catalog_has_no_problem(catalog):
    assert check_catalog(catalog) == {}


def test_names_the_faulty_file(catalog):
    (catalog / "de.txt").write_text("Hallo\n", encoding="utf-8")
    assert check_catalog(catalog) == {"de.txt": ["a greeting ends with `!`"]}


def test_an_empty_directory_is_a_problem(tmp_path):
    assert check_catalog(tmp_path) == {str(tmp_path): ["no message file (*.txt)"]}
