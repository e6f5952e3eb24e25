"""``graphlint server``: a language server over stdio (LSP, with pygls).

- A document is checked when it opens, when it changes (its unsaved text, once typing
  has paused for ``DEBOUNCE`` seconds) and when it is saved. The analysis reads every
  open document's unsaved text instead of the disk's (``read.overlay``) and checks a
  document within its project, as ``graphlint check FILE`` does: a model file that a
  region elsewhere captures shows the hazards that region makes, with the region and
  each call on the way as ``relatedInformation``.
- Saving any file, or a change of configuration (``workspace/didChangeConfiguration``,
  a watched ``pyproject.toml`` or ``graphlint.toml``), checks every open document
  again: what one file does changes what another file's regions reach.
- Code actions: "Ignore GLxxx on this line" for each graphlint diagnostic in range.
- Hover on a diagnostic: the rule's summary, the fix and the rule's page.
- Closing a document clears its diagnostics.

Checks run one at a time, off the event loop; a result for a version of a document
that has changed since is dropped (the newer check publishes). Nothing but the
protocol is written to stdout; what goes wrong is logged to the client.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from lsprotocol import types
from lsprotocol.converters import get_converter
from pygls.lsp.server import LanguageServer
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from graphlint import __version__
from graphlint.codes import CODES
from graphlint.comments import add_ignore
from graphlint.diagnostics import Diagnostic
from graphlint.docs import doc_path
from graphlint.lint import LintError, lint
from graphlint.output.lsp import diagnostic_to_lsp
from graphlint.read import overlay

DEBOUNCE = 0.25  # seconds without a change before a changed document is checked
CONFIGURATION = frozenset({"pyproject.toml", "graphlint.toml", ".graphlint.toml"})
SOURCE = "graphlint"


class GraphlintServer(LanguageServer):
    """The server, with what it knows between requests."""

    def __init__(self) -> None:
        super().__init__("graphlint", __version__)
        self.pending: dict[str, asyncio.Task[None]] = {}  # uri: its debounced check
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.one_at_a_time = asyncio.Lock()
        self.converter = get_converter()
        self.said: set[str] = set()  # errors shown to the user already

    def document(self, uri: str) -> TextDocument | None:
        document = self.workspace.text_documents.get(uri)
        return document if isinstance(document, TextDocument) else None

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Check ``uri`` after ``delay`` seconds, replacing a check not yet started."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(
            self._check_later(uri, delay)
        )

    def schedule_all(self) -> None:
        for uri in list(self.workspace.text_documents):
            self.schedule(uri)

    async def _check_later(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        async with self.one_at_a_time:
            self.pending.pop(uri, None)
            document = self.document(uri)
            path = to_fs_path(uri) if uri.startswith("file:") else None
            if document is None or path is None:
                return
            version = document.version
            buffers = self._buffers()
            loop = asyncio.get_running_loop()
            found = await loop.run_in_executor(None, self._check, path, buffers)
            if found is None:
                return
            document = self.document(uri)
            if document is None or document.version != version:
                return  # changed or closed meanwhile: a newer check publishes
            diagnostics = [self._to_lsp(d, document) for d in found]
            self.published[uri] = diagnostics
            self.text_document_publish_diagnostics(
                types.PublishDiagnosticsParams(uri, diagnostics, version=version)
            )

    def _buffers(self) -> dict[str, bytes]:
        """Every open file document's text, as the analysis should read it."""
        buffers = {}
        for uri, document in self.workspace.text_documents.items():
            path = to_fs_path(uri) if uri.startswith("file:") else None
            if path is not None:
                buffers[path] = document.source.encode("utf-8", "surrogateescape")
        return buffers

    def _check(self, path: str, buffers: dict[str, bytes]) -> list[Diagnostic] | None:
        """The diagnostics located in ``path``; None when the check could not run
        (said to the client)."""
        try:
            with overlay(buffers):
                checked = lint([Path(path)], warn=self._warn)
        except LintError as error:  # shown once, not at every keystroke
            if str(error) not in self.said:
                self.said.add(str(error))
                message = types.ShowMessageParams(
                    types.MessageType.Error, f"graphlint: {error}"
                )
                self.window_show_message(message)
            return None
        except Exception:  # a bug: the editor keeps working, the log says what
            self._log(types.MessageType.Error, traceback.format_exc())
            return None
        self.said.clear()  # a later error is news again
        real = os.path.realpath(path)
        return [
            d
            for result in checked.results
            if os.path.realpath(result.path) == real
            for d in result.diagnostics
        ]

    def _warn(self, message: str) -> None:
        self._log(types.MessageType.Warning, f"graphlint: {message}")

    def _log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(kind, message))

    def _to_lsp(self, d: Diagnostic, document: TextDocument) -> types.Diagnostic:
        item: dict[str, Any] = diagnostic_to_lsp(d)
        item["message"] = d.describe()
        found = self.converter.structure(item, types.Diagnostic)
        assert isinstance(found, types.Diagnostic)
        codec = document.position_codec
        found.range = codec.range_to_client_units(document.lines, found.range)
        return found


server = GraphlintServer()


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def _opened(ls: GraphlintServer, params: types.DidOpenTextDocumentParams) -> None:
    ls.schedule(params.text_document.uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def _changed(
    ls: GraphlintServer, params: types.DidChangeTextDocumentParams
) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def _saved(ls: GraphlintServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.schedule_all()


@server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
async def _closed(
    ls: GraphlintServer, params: types.DidCloseTextDocumentParams
) -> None:
    uri = params.text_document.uri
    waiting = ls.pending.pop(uri, None)
    if waiting is not None:
        waiting.cancel()
    ls.published.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def _configured(
    ls: GraphlintServer, params: types.DidChangeConfigurationParams
) -> None:
    ls.schedule_all()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def _watched(
    ls: GraphlintServer, params: types.DidChangeWatchedFilesParams
) -> None:
    if any(Path(to_fs_path(c.uri) or "").name in CONFIGURATION for c in params.changes):
        ls.schedule_all()


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix]),
)
def _code_actions(
    ls: GraphlintServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    document = ls.document(params.text_document.uri)
    if document is None:
        return []
    return [
        action
        for d in params.context.diagnostics
        if d.source == SOURCE and isinstance(d.code, str)
        for action in [_fix(document, d), _ignore(document, d)]
        if action is not None
    ]


def _fix(document: TextDocument, d: types.Diagnostic) -> types.CodeAction | None:
    """The rule's own fix, where it is a mechanical edit (``data.edits``)."""
    data = d.data if isinstance(d.data, dict) else {}
    edits = data.get("edits") or []
    if not edits:
        return None
    codec, lines = document.position_codec, document.lines
    changes = []
    for edit in edits:
        start, end = edit["range"]["start"], edit["range"]["end"]
        span = types.Range(
            types.Position(start["line"], start["character"]),
            types.Position(end["line"], end["character"]),
        )
        changes.append(
            types.TextEdit(codec.range_to_client_units(lines, span), edit["newText"])
        )
    return types.CodeAction(
        title=f"Fix {d.code}: {data.get('fix') or 'apply the fix'}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[d],
        is_preferred=True,
        edit=types.WorkspaceEdit(changes={document.uri: changes}),
    )


def _ignore(document: TextDocument, d: types.Diagnostic) -> types.CodeAction | None:
    """ "Ignore GL101 on this line": a ``# graphlint: ignore[GL101]`` comment on the
    line where the diagnostic starts, or the code added to the one there."""
    number = d.range.start.line
    lines: Sequence[str] = document.lines
    if number >= len(lines) or not isinstance(d.code, str):
        return None
    line = lines[number].rstrip("\r\n")
    changed = add_ignore(line, d.code)
    if changed is None:
        return None
    end = document.position_codec.position_to_client_units(
        lines, types.Position(number, len(line))
    )
    edit = types.TextEdit(types.Range(types.Position(number, 0), end), changed)
    return types.CodeAction(
        title=f"Ignore {d.code} on this line",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[d],
        edit=types.WorkspaceEdit(changes={document.uri: [edit]}),
    )


@server.feature(types.TEXT_DOCUMENT_HOVER)
def _hover(ls: GraphlintServer, params: types.HoverParams) -> types.Hover | None:
    at = params.position
    shown = [
        d
        for d in ls.published.get(params.text_document.uri, [])
        if _contains(d.range, at) and isinstance(d.code, str) and d.code in CODES
    ]
    if not shown:
        return None
    parts = []
    for d in shown:
        assert isinstance(d.code, str)
        found = CODES[d.code]
        text = f"**{d.code}** `{found.name}`: {found.summary}"
        fix = d.data.get("fix") if isinstance(d.data, dict) else None
        if fix:
            text += f"\n\nFix: {fix}"
        page = doc_path(d.code)
        if page is not None:
            text += f"\n\n[{d.code} documentation]({page.as_uri()})"
        parts.append(text)
    return types.Hover(
        types.MarkupContent(types.MarkupKind.Markdown, "\n\n---\n\n".join(parts))
    )


def _contains(span: types.Range, at: types.Position) -> bool:
    start, end = span.start, span.end
    return (
        (start.line, start.character)
        <= (at.line, at.character)
        <= (
            end.line,
            end.character,
        )
    )


def serve() -> None:
    """Serve one client over stdin and stdout until it exits; pygls's own errors go
    to stderr, which editors keep in their log."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr)
    server.start_io()
