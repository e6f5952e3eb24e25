"""A file parsed again from kept pieces is the file parsed whole, with the same
positions, whatever was parsed before it."""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping
from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import CodeRange

from graphlint.facts.positions import positions_of
from graphlint.reparse import Pieces

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = sorted((ROOT / "fixtures").rglob("*.py"))


def nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    yield node
    for child in node.children:
        yield from nodes(child)


def assert_whole(pieces: Pieces, source: str) -> cst.Module:
    """``pieces.parse(source)`` against LibCST's whole parse: the same module, and
    each node where the whole parse's is has its range."""
    module, positions = pieces.parse(source)
    whole = cst.parse_module(source)
    expected = positions_of(whole)
    assert module.deep_equals(whole)
    assert module.code == source
    mine, theirs = list(nodes(module)), list(nodes(whole))
    assert len(mine) == len(theirs)
    assert len({id(node) for node in mine}) == len(mine), "a node in two places"
    for got, want in zip(mine, theirs, strict=True):
        assert positions.get(got) == expected.get(want), type(want).__name__
    assert len(positions) == len(expected)
    return module


def edited(source: str, seed: int) -> list[str]:
    """Versions of ``source`` an editor could send: lines added, removed, changed,
    and the text back as it was."""
    lines = source.splitlines(keepends=True)
    pick = random.Random(seed)
    at = pick.randrange(len(lines) + 1)
    added = [*lines[:at], "\n", "x_edit = 1\n", "\n", *lines[at:]]
    changed = list(lines)
    if lines:
        where = pick.randrange(len(lines))
        changed[where] = changed[where].rstrip("\n") + "  # typed\n"
    dropped = [*lines[:at], *lines[at + 1 :]]
    return ["".join(added), "".join(changed), "".join(dropped), source]


def compiles(source: str) -> bool:
    try:
        compile(source, "<edit>", "exec")
        cst.parse_module(source)
    except (SyntaxError, cst.ParserSyntaxError):
        return False
    return True


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(ROOT)))
def test_fixture_edited(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    pieces = Pieces()
    assert_whole(pieces, source)
    for version in edited(source, seed=len(source)):
        if compiles(version):
            assert_whole(pieces, version)


SOURCE = "".join(
    f"def helper_{n}(x):\n    y = x + {n}\n    return y * 2\n\n\n" for n in range(40)
)


def test_only_the_edited_piece_is_parsed() -> None:
    pieces = Pieces()
    assert_whole(pieces, SOURCE)
    assert pieces.parsed == len(SOURCE)
    edit = SOURCE.replace("x + 7\n", "x + 7 + 1\n")
    assert_whole(pieces, edit)
    assert pieces.parsed == len(SOURCE) + len(edit.split("\n\n\n")[7]) + 3


def test_lines_added_above_move_the_pieces_below() -> None:
    pieces = Pieces()
    first = assert_whole(pieces, SOURCE)
    second = assert_whole(pieces, "import torch\n\n" + SOURCE)
    last, before = second.body[-1], first.body[-1]
    assert isinstance(last, cst.FunctionDef) and isinstance(before, cst.FunctionDef)
    assert last.body is before.body  # kept, and placed two lines lower


def test_a_repeated_piece_is_parsed_again() -> None:
    twice = "x = 1\n\n\ny = 2\n\n\nx = 1\n\n\ny = 2\n"
    module = assert_whole(Pieces(), twice)
    assert module.body[0] is not module.body[2]


@pytest.mark.parametrize(
    "source",
    [
        "",
        "\n\n",
        "# only a comment\n",
        "x = 1",  # no newline at the end
        "x = 1\r\n\r\ny = 2\r\n",
        "x = 1\ry = 2\n",  # a lone carriage return: CPython's line end
        "if x:\n  y = 1\n\n\nif z:\n    w = 2\n",  # pieces disagree on indentation
        "x = 1\n\n\n# a trailing comment\n",
        '"""doc"""\n\n\nimport os\n\n\n@d\n# between\ndef f():\n    pass\n',
    ],
)
def test_odd_sources(source: str) -> None:
    pieces = Pieces()
    assert_whole(pieces, source)
    assert_whole(pieces, source + "\n\nz = 3\n")
    assert_whole(pieces, source)


def test_a_syntax_error_raises_as_the_whole_parse_does() -> None:
    pieces = Pieces()
    assert_whole(pieces, SOURCE)
    with pytest.raises(cst.ParserSyntaxError):
        pieces.parse(SOURCE + "\n\ndef broken(:\n    pass\n")
    assert_whole(pieces, SOURCE)


def test_kept_up_to_the_limit() -> None:
    pieces = Pieces(limit=len(SOURCE))
    assert_whole(pieces, SOURCE)
    assert_whole(pieces, SOURCE)
    assert pieces.parsed == len(SOURCE)
    other = SOURCE.replace("helper", "other")
    assert_whole(pieces, other)  # the limit is reached: SOURCE's pieces go
    assert_whole(pieces, other)
    assert pieces.parsed == len(SOURCE) + len(other)
    assert_whole(pieces, SOURCE)
    assert pieces.parsed == 2 * len(SOURCE) + len(other)


def test_a_file_larger_than_the_limit_is_kept_whole() -> None:
    pieces = Pieces(limit=100)
    assert_whole(pieces, SOURCE)
    assert_whole(pieces, "z = 1\n\n\n" + SOURCE)
    assert pieces.parsed == len(SOURCE) + len("z = 1\n\n\n")


def test_two_files_share_a_piece() -> None:
    pieces = Pieces()
    one = assert_whole(pieces, "import torch\n\n\ndef f():\n    pass\n")
    two = assert_whole(pieces, "x = 0\n\n\ndef f():\n    pass\n")
    assert two.body[-1] is not one.body[-1]  # joined: a new node with new lines
    positions: Mapping[cst.CSTNode, CodeRange] = pieces.parse(
        "import torch\n\n\ndef f():\n    pass\n"
    )[1]
    assert positions[one.body[0]].start.line == 1


def test_a_memory_error_while_moving_a_position_leaves_nothing_wrong(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A kept worker survives a memory error (GL0xx for that file); a position that
    failed to move is asked again, and the next parse of the same text still gets
    each node's right lines."""
    from graphlint import reparse  # noqa: PLC0415

    pieces = Pieces()
    assert_whole(pieces, SOURCE)
    moved = "import os\n\n\n" + SOURCE
    module, positions = pieces.parse(moved)
    last = module.body[-1]
    assert isinstance(last, cst.FunctionDef)
    real = reparse._moved

    def failing(where: CodeRange, lines: int) -> CodeRange:
        raise MemoryError

    monkeypatch.setattr(reparse, "_moved", failing)
    with pytest.raises(MemoryError):
        positions[last.body]
    monkeypatch.setattr(reparse, "_moved", real)
    whole = cst.parse_module(moved)
    expected = whole.body[-1]
    assert isinstance(expected, cst.FunctionDef)
    assert positions[last.body] == positions_of(whole)[expected.body]
    assert_whole(pieces, moved)


CLASS = (
    "import torch\n\n\n@dataclass\nclass Runner(Base):\n    '''doc'''\n\n"
    + "".join(
        f"    def step_{n}(self, x):\n        y = x + {n}\n        return y * 2\n\n"
        for n in range(6)
    )
    + "\ndef after():\n    pass\n"
)


def members(module: cst.Module) -> list[cst.BaseStatement]:
    found = [s for s in module.body if isinstance(s, cst.ClassDef)]
    assert len(found) == 1 and isinstance(found[0].body, cst.IndentedBlock)
    return list(found[0].body.body)


@pytest.mark.parametrize("step", [0, 3, 5])
def test_an_edit_in_a_method_parses_that_method_alone(step: int) -> None:
    """The class is parsed again a member at a time: the edited method alone, in
    a class of its own; the others keep their nodes (and what the analysis kept
    for them)."""
    pieces = Pieces()
    before = members(assert_whole(pieces, CLASS))
    parsed = pieces.parsed
    edit = CLASS.replace(f"x + {step}\n", f"x + {step} + 1\n")
    after = members(assert_whole(pieces, edit))
    # the member: from the empty line before it to the next one's (the last: to
    # the next top-level statement)
    start = edit.index(f"\n    def step_{step}")
    end = (
        edit.index("def after")
        if step == 5
        else edit.index(f"\n    def step_{step + 1}")
    )
    assert pieces.parsed - parsed == end - start
    for index, (old, new) in enumerate(zip(before, after, strict=True)):
        assert (new is old) == (index != step + 1), index  # the docstring is first


def test_an_edit_in_the_head_keeps_the_members() -> None:
    pieces = Pieces()
    before = members(assert_whole(pieces, CLASS))
    after = members(assert_whole(pieces, CLASS.replace("'''doc'''", "'''docs'''")))
    assert after[0] is not before[0]
    assert all(new is old for old, new in zip(before[1:], after[1:], strict=True))


def test_a_class_renamed_is_parsed_again() -> None:
    pieces = Pieces()
    before = members(assert_whole(pieces, CLASS))
    after = members(assert_whole(pieces, CLASS.replace("(Base)", "(Base, Mixin)")))
    assert all(new is old for old, new in zip(before[1:], after[1:], strict=True))
    renamed = members(assert_whole(pieces, CLASS.replace("Runner", "Stepper")))
    assert all(new is not old for old, new in zip(before, renamed, strict=True))


def test_both_versions_of_a_class_in_one_source() -> None:
    """A version of a class made of an earlier one's members, and that earlier
    one, in one source: no node is in two places."""
    pieces = Pieces()
    assert_whole(pieces, CLASS)
    edit = CLASS.replace("x + 2\n", "x + 2 + 1\n")
    assert_whole(pieces, edit)
    assert_whole(pieces, CLASS + "\n\n" + edit)
    assert_whole(pieces, edit + "\n\n" + CLASS)


@pytest.mark.parametrize(
    "source",
    [
        CLASS.replace("\n", "\r\n"),
        CLASS.replace("    def step_3", "    # a comment between\n    def step_3"),
        CLASS.replace("        return y * 2\n", "        return y * 2  # end\n"),
        CLASS.replace("\n\ndef after():\n    pass\n", ""),  # the class ends the file
        CLASS.replace("\n\ndef after():\n    pass\n", "    # the end\n"),
        CLASS.replace("    '''doc'''", "    '''doc'''; x = 1"),
        CLASS.replace(
            "    def step_4", "    class Inner:\n        a = 1\n\n    def step_4"
        ),
        CLASS.replace("    ", "\t"),
        "class A:\n  x = 1\n\n  def f(self):\n      pass\n\n  y = 2\n",
        "if True:\n  pass\n\n\nclass A:\n    x = 1\n\n    y = 2\n",  # indents differ
    ],
)
def test_edits_in_odd_classes(source: str) -> None:
    pieces = Pieces()
    assert_whole(pieces, source)
    for version in edited(source, seed=len(source)):
        if compiles(version):
            assert_whole(pieces, version)
    lines = source.splitlines(keepends=True)
    for at in range(len(lines)):  # a line added inside, at each line's indentation
        indent = lines[at][: len(lines[at]) - len(lines[at].lstrip(" \t"))]
        version = "".join([*lines[:at], f"{indent}z_edit = 2\n", *lines[at:]])
        if compiles(version):
            assert_whole(pieces, version)
            assert_whole(pieces, source)


def test_a_version_made_of_members_another_in_the_source_has() -> None:
    """A class made of the members of its last parse, which shares members with
    an earlier version that the same source holds: parsed again."""
    pieces = Pieces()
    assert_whole(pieces, CLASS)
    assert_whole(pieces, CLASS.replace("x + 2\n", "x + 2 + 1\n"))
    third = CLASS.replace("x + 4\n", "x + 4 + 1\n")
    assert_whole(pieces, third + "\n\n" + CLASS)
    assert_whole(pieces, CLASS + "\n\n" + third)


def test_another_class_of_the_same_name_is_parsed_whole(
    libcst_parses: list[str],
) -> None:
    """A class whose last parse by that name has fewer than half of its members
    (another file's ``class Config``) is parsed in one parse, not a member at a
    time."""
    pieces = Pieces()
    assert_whole(pieces, CLASS)
    libcst_parses.clear()
    assert_whole(pieces, CLASS.replace("x + 2\n", "x + 2 + 1\n"))
    assert len(libcst_parses) == 2  # the member alone, and the test's whole parse
    libcst_parses.clear()
    other = CLASS.replace("y = x +", "y = x -")
    assert_whole(pieces, other)
    class_piece = other[other.index("@dataclass") : other.index("def after")]
    assert libcst_parses == [class_piece, other]


def test_a_class_with_lone_carriage_returns() -> None:
    """A lone carriage return ends a line for CPython, not for ``str.split``: such
    a class is parsed whole (no piece is cut in such a file). LibCST's own parse
    drops a last lone one from the code, so the trees are compared."""
    pieces = Pieces()
    alone = "class A(B):\r    x = 1\r\r    def f(self):\r        return 1\r"
    for version in (alone, alone.replace("x = 1", "x = 2"), alone):
        module, positions = pieces.parse(version)
        assert module.deep_equals(cst.parse_module(version))
        assert positions[module.body[0]].start.line == 1


@pytest.mark.parametrize(
    "versions",
    [
        # the class's first newline changes: kept members wrote theirs against it
        [
            "class A:\r\n    x = 1\r\n\r\n    y = 2\r\n",
            "class A:\n    x = 1\r\n\r\n    y = 2\r\n",
        ],
        [
            "import os\n\n\nclass A:\r\n    x = 1\n\n    y = 2\n",
            "import os\n\n\nclass A:\n    x = 1\n\n    y = 2\n",
        ],
        # a backslash ends a member: the empty line after it is that line's
        [
            "class A:\n    x = 1\n\n    y = 2\\\n\n    z = 3\n",
            "class A:\n    x = 1\n\n    y = 2\\\n\n    z = 4\n",
        ],
        [
            "class A:\n    x = 1\n\n    y = 2\\\n\n    z = 3\n",
            "class A:\n    x = 1\n\n    y = 5\n\n    z = 3\n",
            "class A:\n    x = 9\n\n    y = 5\n\n    z = 3\n",
        ],
    ],
)
def test_versions_whose_members_do_not_carry_over(versions: list[str]) -> None:
    pieces = Pieces()
    for version in versions:
        assert_whole(pieces, version)


def test_a_form_feed_in_the_first_indentation_raises_as_the_whole_parse() -> None:
    """The members of the last parse were written against its indentation."""
    pieces = Pieces()
    assert_whole(pieces, "class A:\n    x = 1\n\n    def f(self):\n        pass\n")
    edit = "class A:\n\x0c    x = 1\n\n    def f(self):\n        pass\n"
    with pytest.raises(cst.ParserSyntaxError):
        cst.parse_module(edit)
    with pytest.raises(cst.ParserSyntaxError):
        pieces.parse(edit)


def test_a_line_of_two_statements_keeps_the_members() -> None:
    """``x = 1; y = 2`` is two statements in CPython's tree and one line in
    LibCST's: the members are still counted, and kept."""
    source = CLASS.replace("    def step_1", "    a = 1; b = 2\n\n    def step_1")
    pieces = Pieces()
    before = members(assert_whole(pieces, source))
    after = members(assert_whole(pieces, source.replace("x + 4\n", "x + 4 + 1\n")))
    assert sum(new is old for old, new in zip(before, after, strict=True)) == 7
