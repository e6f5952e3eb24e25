"""GL703's fix: a warm-up on a side stream inserted before a ``with torch.cuda.graph``
capture, running a copy of the captured statements a few times, as PyTorch's CUDA
Graphs notes do before whole-network capture."""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from graphlint.facts.positions import positions_of

# statements that do not mean the same run again in a loop before the capture: they
# leave the function (``return``), declare a name that the copy would bind first
# (``global``, ``nonlocal``: a syntax error), or undo what a second run needs (``del``)
_ONCE = (cst.Return, cst.Global, cst.Nonlocal, cst.Del)
_NEWLINE = re.compile(r"\r\n?|\n")  # as LibCST counts lines
# the clauses of a compound statement that hold blocks of their own
_CLAUSES = (
    cst.If,  # an ``elif``
    cst.Else,
    cst.ExceptHandler,
    cst.ExceptStarHandler,
    cst.Finally,
    cst.MatchCase,
)


def captured_statements(capture: cst.With) -> Sequence[cst.BaseStatement] | None:
    """The statements of a capture's body, when a copy of them can run in a warm-up
    loop as they are; None otherwise (see ``_ONCE``; also a definition, which the
    copy would make again, a ``yield``, which would hand the caller more values,
    and a ``break`` or ``continue`` outside the body's own loops: the warm-up loop
    would take it)."""
    statements = _suite(capture.body)
    return statements if all(_repeatable(s) for s in statements) else None


def _repeatable(statement: cst.BaseStatement, in_loop: bool = False) -> bool:
    """Whether ``statement``, and the statements of its blocks, are none of those
    ``captured_statements`` refuses: a look at statements only, not expressions."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return False
    if isinstance(statement, cst.SimpleStatementLine):
        return not any(_once(small, in_loop) for small in statement.body)
    if isinstance(statement, (cst.For, cst.While)):  # its ``else`` is not in it
        orelse = _blocks(statement.orelse) if statement.orelse else []
        return all(_repeatable(s, True) for s in _suite(statement.body)) and all(
            _repeatable(s, in_loop) for s in orelse
        )
    return all(_repeatable(s, in_loop) for s in _blocks(statement))


def _once(small: cst.BaseSmallStatement, in_loop: bool) -> bool:
    if isinstance(small, _ONCE) or (
        isinstance(small, (cst.Break, cst.Continue)) and not in_loop
    ):
        return True
    value = getattr(small, "value", None)  # ``yield x``, ``y = yield x``
    return isinstance(value, cst.Yield)


def _suite(body: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(body, cst.SimpleStatementSuite):  # ``with g: y = f(x)``
        return [cst.SimpleStatementLine(body.body)]
    assert isinstance(body, cst.IndentedBlock)
    return body.body


def _blocks(node: cst.CSTNode) -> list[cst.BaseStatement]:
    """The statements of a compound statement's blocks: its own, and those of its
    ``elif``, ``else``, ``except``, ``finally`` and ``case`` clauses."""
    found: list[cst.BaseStatement] = []
    pending = [node]
    while pending:
        for child in pending.pop().children:
            if isinstance(child, cst.BaseSuite):
                found.extend(_suite(child))
            elif isinstance(child, _CLAUSES):
                pending.append(child)
    return found


def warmup_text(
    module: cst.Module,
    capture: cst.With,
    statements: Sequence[cst.BaseStatement],
    *,
    indent: str,
    cuda: str,
    stream: str,
    step: str,
    count: int,
) -> str:
    """The text that replaces ``capture`` (which starts its line after ``indent``):
    the warm-up, then the capture as it is written, each line indented as the
    capture is, the file's indentation unit for the new blocks."""
    unit = module.default_indent
    config = module.config_for_parsing
    warmup = [
        cst.parse_statement(f"{stream} = {cuda}.Stream()\n", config),
        cst.parse_statement(f"{stream}.wait_stream({cuda}.current_stream())\n", config),
        cst.parse_statement(
            f"with {cuda}.stream({stream}):\n"
            f"{unit}for {step} in range({count}):\n"
            f"{unit}{unit}pass\n",
            config,
        ),
        cst.parse_statement(f"{cuda}.current_stream().wait_stream({stream})\n", config),
    ]
    side = warmup[2]
    assert isinstance(side, cst.With) and isinstance(side.body, cst.IndentedBlock)
    loop = side.body.body[0]
    assert isinstance(loop, cst.For) and isinstance(loop.body, cst.IndentedBlock)
    # the captured statements with their own layout, without comments: a copied
    # suppression comment would suppress nothing outside the capture
    uncommented = _Uncommented()
    copied = [s.visit(uncommented) for s in statements]
    if isinstance(capture.body, cst.IndentedBlock):  # with its own indentation
        inner = capture.body.with_changes(
            header=loop.body.header, body=copied, footer=()
        )
    else:
        inner = loop.body.with_changes(body=copied)
    loop = loop.with_changes(body=inner)
    warmup[2] = side.with_changes(body=side.body.with_changes(body=[loop]))
    capture = capture.with_changes(leading_lines=())
    body = [*warmup, capture]
    # rendered in a block indented as the capture is (the module itself at the top
    # level): each line a statement starts gets that indentation, and the lines
    # of a multi-line string keep theirs
    top = (
        [cst.If(cst.Name("True"), cst.IndentedBlock(body, indent=indent))]
        if indent
        else body
    )
    rendered = module.with_changes(header=(), body=top, footer=())
    code = rendered.code
    # from the first new statement to where the capture ends as positions have
    # it, which is where the replaced span ends (before a comment on its last line)
    positions = positions_of(rendered)
    starts = [0, *(m.end() for m in _NEWLINE.finditer(code))]
    first, last = positions[warmup[0]].start, positions[capture].end
    text = code[
        starts[first.line - 1] + first.column : starts[last.line - 1] + last.column
    ]
    return text.replace(module.default_newline, "\n")


class _Uncommented(cst.CSTTransformer):
    """A copy of a statement without its comments."""

    def leave_TrailingWhitespace(
        self,
        original_node: cst.TrailingWhitespace,
        updated_node: cst.TrailingWhitespace,
    ) -> cst.TrailingWhitespace:
        if updated_node.comment is None:
            return updated_node
        return updated_node.with_changes(
            whitespace=cst.SimpleWhitespace(""), comment=None
        )

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine | cst.RemovalSentinel:
        return updated_node if updated_node.comment is None else cst.RemoveFromParent()
