"""A module parsed in pieces is the module the whole parse gives."""

from __future__ import annotations

import textwrap
from pathlib import Path

import libcst as cst
import pytest

from graphlint.parsing import parse_module

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


def assert_same(source: str, piece: int = 1) -> None:
    whole = cst.parse_module(source)
    pieces = parse_module(source, piece=piece)
    assert pieces.deep_equals(whole)
    assert pieces.code == whole.code
    for field in ("default_indent", "default_newline", "has_trailing_newline"):
        assert getattr(pieces, field) == getattr(whole, field), field


def parsed_pieces(parses: list[str], source: str, piece: int = 1) -> list[str]:
    """The texts ``parse_module(source, piece=piece)`` hands LibCST (``parses``:
    the ``libcst_parses`` fixture's record)."""
    parses.clear()
    assert parse_module(source, piece=piece).code == source
    return list(parses)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_in_pieces(path: Path) -> None:
    assert_same(path.read_text(encoding="utf-8"))


CASES = {
    "comments": """\
        #!/usr/bin/env python
        \"\"\"Doc.\"\"\"
        # a header comment

        import torch


        def f(x):
            y = x + 1
            # a comment after the block, at its indentation

        # a comment before g
        @decorator
        # between decorator and def
        def g():
            pass
        x = [1]
                 # an indented comment after a simple statement
        y = 2


        class C:
            def m(self):
                return 1



        if x:
            pass
        else:
            pass
        a = 1; b = 2
        """,
    "decorator_parenthesised": """\
        x = 1

        @(
            decorator
        )
        def f():
            pass

        y = 2
        """,
    "blank_lines_with_spaces": "x = 1\n    \n\ny = 2\n  \nz = 3\n",
    "no_trailing_newline": "x = 1\n\ny = 2",
    "trailing_comment": "x = 1\n\ny = 2\n# the end\n    # indented\n",
    "crlf": "x = 1\r\n\r\ndef f():\r\n    return 1\r\n\r\ny = 2\r\n",
    "mixed_newlines": "x = 1\n\ny = 2\r\n\r\nz = 3\r\n",
    "lone_carriage_return": "x = 1\r\ry = 2\nz = 3\n",
    "indent_later": "x = 1\n\ndef f():\n  return 1\n\ndef g():\n\treturn 2\n",
    "form_feed": "x = 1\n\n\x0cdef f():\n    pass\n\ny = 2\n",
    "string_at_column_0": 'x = """\ndef f():\n    pass\n"""\n\ny = 2\n',
    "continuation": "x = 1 + \\\n2\n\ny = (\n3\n)\n",
    "invalid_escape": 'x = "\\d"\n\ny = 1\n',  # a warning from CPython's parser
    "one_statement": "x = 1\n",
    "empty": "",
    "only_comments": "# just a comment\n\n# another\n",
}


@pytest.mark.parametrize("name", CASES)
def test_case_in_pieces(name: str) -> None:
    assert_same(textwrap.dedent(CASES[name]))


def test_cuts_only_before_statements_after_empty_lines(
    libcst_parses: list[str],
) -> None:
    source = "import torch\n\nx = 1\n# about y\ny = 2\n\n\n@d\ndef f():\n    pass\n"
    assert parsed_pieces(libcst_parses, source) == [
        "import torch\n\n",
        "x = 1\n# about y\ny = 2\n\n\n",
        "@d\ndef f():\n    pass\n",
    ]


def test_piece_size(libcst_parses: list[str]) -> None:
    """Pieces end at the first cut after ``piece`` characters; a file no longer
    than ``piece`` is parsed whole."""
    unit = "def f{}():\n    return 1\n\n"
    source = "".join(unit.format(i) for i in range(100, 200))
    texts = parsed_pieces(libcst_parses, source, 500)
    assert len(texts) == 5
    assert all(500 <= len(text) < 500 + len(unit) for text in texts[:-1])
    assert parsed_pieces(libcst_parses, source, len(source)) == [source]


def test_syntax_error_as_the_whole_parse() -> None:
    source = "x = 1\n\ny = (\n"
    with pytest.raises(cst.ParserSyntaxError) as whole:
        cst.parse_module(source)
    with pytest.raises(cst.ParserSyntaxError) as pieces:
        parse_module(source, piece=1)
    assert str(pieces.value) == str(whole.value)


def test_a_piece_libcst_rejects_falls_back_to_the_whole_parse(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = "x = 1\n\ny = 2\n"
    real = cst.parse_module

    def picky(text: str) -> cst.Module:
        if text == "y = 2\n":
            raise cst.ParserSyntaxError("no", lines=[text], raw_line=1, raw_column=0)
        return real(text)

    monkeypatch.setattr(cst, "parse_module", picky)
    assert parse_module(source, piece=1).deep_equals(real(source))


def test_warnings_do_not_keep_a_file_whole(libcst_parses: list[str]) -> None:
    """CPython warns of ``"\\d"`` (pytest makes warnings errors): still cut."""
    source = 'x = "\\d"\n\ny = 1\n'
    assert parsed_pieces(libcst_parses, source) == ['x = "\\d"\n\n', "y = 1\n"]
