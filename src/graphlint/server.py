"""``graphlint server``: a language server over stdio (LSP, with pygls).

- A document is checked when it opens, when it changes (its unsaved text, once typing
  has paused for ``DEBOUNCE`` seconds) and when it is saved, together with the other
  open documents of its project: their diagnostics are sent again where the edit
  changed them (an unsaved edit to the code a region calls, or to the region). The
  analysis reads every open document's unsaved text instead of the disk's
  (``read.overlay``) and checks a document within its project, as ``graphlint check
  FILE`` does: a model file that a region elsewhere captures shows the hazards that
  region makes, with the region and each call on the way as ``relatedInformation``.
- Saving any file, or a change of configuration (``workspace/didChangeConfiguration``,
  a watched ``pyproject.toml``, ``graphlint.toml`` or ``.gitignore``), or a Python
  file made or removed on disk, checks every open document again: what one file
  does changes what another file's regions reach. The server registers those
  watchers itself when the client supports dynamic registration; then it also keeps
  each check's plan (the configuration and the project's files, ``lint.plan``)
  between edits, planning again only after such a change.
- Code actions: "Ignore GLxxx on this line" for each graphlint diagnostic in range.
- Hover on a diagnostic: the rule's summary, the fix and the rule's page.
- Closing a document clears its diagnostics.
- Jupyter notebooks are not checked: the server offers no notebook document sync,
  and an ``.ipynb`` file an editor opens as text (its JSON) gets no diagnostics
  (graphlint's places in a notebook are cells, which a text document does not
  have; ``graphlint check`` reports them). A notebook in the project is still part
  of the analysis of the files that are checked: a region in it that reaches an
  open file shows there, with the notebook's cell in the related information.

Checks run one at a time, off the event loop; a result for a version of a document
that has changed since is dropped (the newer check publishes). Nothing but the
protocol is written to stdout; what goes wrong is logged to the client.

What an editor sends comes from the repository it opened, and nothing of it may stop
the server:

- A document no file could hold is left out of every check: a ``file:`` URI whose path
  the OS refuses (a NUL byte, a lone surrogate) is not checked and is said once in the
  log. Text with a lone surrogate, which UTF-8 cannot encode, is checked as the editor
  saves it, each lone surrogate as U+FFFD: one character for one, so every position
  stays the editor's.
- JSON-RPC errors are answered as the specification says where pygls drops the
  message (``Protocol``): -32700 for a message that is not JSON, -32602 for a request
  whose params do not fit its method, -32600 for a message that is no request,
  notification or response, and for any request after ``shutdown``.
- The input is read bounded (``Input``): a header line is read up to
  :data:`MAX_HEADER_LINE` bytes, and a message longer than :data:`MAX_MESSAGE` is
  skipped a block at a time, not read into memory, with a line in the log.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import io
import itertools
import json
import logging
import os
import re
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (
    JsonRpcException,
    JsonRpcInvalidRequest,
    JsonRpcParseError,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from graphlint import __version__, progress
from graphlint.codes import CODES
from graphlint.columns import lines_with_breaks
from graphlint.diagnostics import Applicability, Diagnostic
from graphlint.docs import doc_path
from graphlint.notebook import is_notebook
from graphlint.read import overlay, real_path
from graphlint.runner import keep_workers

if TYPE_CHECKING:
    from cattrs import Converter
    from pygls.protocol.json_rpc import MsgId
    from pygls.server import ServerErrors

    from graphlint.lint import Plan

# What checking needs and answering ``initialize`` does not: imported once the client
# has the answer (``_initialized``), or where a handler needs it first (configuration:
# pathspec and the project's file rules; the run: the cache, the plan, the project
# pass). The editor waits for ``initialize``; the first check would wait for these.
LATER = (
    "graphlint.comments",
    "graphlint.config",
    "graphlint.files",
    "graphlint.lint",
    "graphlint.output.lsp",
    "graphlint.project.summary",
)

DEBOUNCE = 0.25  # seconds without a change before a changed document is checked
CONFIGURATION = frozenset({"pyproject.toml", "graphlint.toml", ".graphlint.toml"})
SOURCE = "graphlint"
# plans kept, each for a set of open documents checked together; a large project's
# holds its thousands of paths
PLANS_KEPT = 8

MAX_MESSAGE = 64 * 1_048_576
"""Bytes of one message beyond which it is skipped, not read. The largest file the
analysis reads is 16 MiB (the ceiling of ``max-file-size``): this leaves room for JSON's
escapes of it (a quote or a newline takes two bytes, a non-ASCII character up to three
as UTF-8); only a document past that ceiling, which would be GL003 anyway, or one made
mostly of control characters (six bytes each) reaches it. A message is held in memory
several times over (bytes, the parsed text, the document's lines), so the bound is on
what a client can make the server hold."""
MAX_HEADER_LINE = 1_024
"""Bytes of one header line (LSP's are under 100). A longer line is read in pieces,
none of which is a header; pygls would pass the digits of ``Content-Length`` of any
length to ``int()``, which raises past 4,300 digits and ends the read loop."""
SKIPPED = "$/graphlint/skippedMessage"  # what Input reads in place of a skipped message
_BLOCK = 1_048_576  # bytes read at a time while skipping a message
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class Input(io.BufferedReader):
    """The client's input as pygls's read loop reads it, bounded.

    pygls reads a header line with ``readline()`` and a message with ``read(n)``, ``n``
    as the header says: without a bound, one line without an end or one
    ``Content-Length: 1099511627776`` is that much memory asked for at once."""

    def readline(self, size: int | None = -1, /) -> bytes:
        bound = MAX_HEADER_LINE if size is None or size < 0 else size
        return super().readline(min(bound, MAX_HEADER_LINE))

    def read(self, size: int | None = -1, /) -> bytes:
        """Up to ``size`` bytes; for a message over :data:`MAX_MESSAGE`, its bytes are
        read and dropped (to the end of the input at most: a client may claim more
        than it sends) and a :data:`SKIPPED` notification is read in its place, so
        that the loop goes on with the next message and the server can say why."""
        if size is None or size <= MAX_MESSAGE:
            return super().read(size)
        left = size
        while left > 0 and (block := super().read(min(left, _BLOCK))):
            left -= len(block)
        notice = {"jsonrpc": "2.0", "method": SKIPPED, "params": {"length": size}}
        return json.dumps(notice).encode()


@dataclass(frozen=True)
class _Unreadable:
    """A JSON-RPC message that pygls could not structure (what ``json.loads`` returns
    for it, in place of raising, so that ``handle_message`` can answer it)."""

    data: dict[str, Any]
    error: JsonRpcException


class Protocol(LanguageServerProtocol):
    """pygls's protocol, answering the messages that pygls drops without an answer,
    as JSON-RPC 2.0 and LSP say to answer them."""

    @property
    def converter(self) -> Converter:
        """lsprotocol's converter, the one pygls made for the protocol (making one
        takes 10-30 ms of the server's start)."""
        return self._converter

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as error:  # pygls logged why: InvalidParams mostly
            return _Unreadable(data, error)

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Unreadable):
            self._unreadable(message)
        elif getattr(message, "jsonrpc", None) != self.VERSION:
            # JSON, but not a message (a list, a number, an object without
            # "jsonrpc"), or of another version
            self.refuse(
                _id(message), JsonRpcInvalidRequest("not a JSON-RPC 2.0 message")
            )
        elif getattr(message, "method", None) == SKIPPED:
            length = getattr(message.params, "length", None)  # a pygls Object
            self._log(
                f"graphlint: skipped a message of {length} bytes: over the "
                f"{MAX_MESSAGE} bytes one message may have"
            )
        elif self._shutdown and _is_request(message) and message.method != types.EXIT:
            error = JsonRpcInvalidRequest(f"{message.method}: the server is shut down")
            self.refuse(message.id, error)
        else:
            super().handle_message(message)

    def refuse(self, msg_id: MsgId | None, error: JsonRpcException) -> None:
        """Answer the request ``msg_id`` with ``error``; None: a message whose id is
        unknown (JSON-RPC's "id": null)."""
        # a dict: lsprotocol's ResponseErrorMessage leaves out an id of None, and
        # JSON-RPC wants "id": null
        found = self._converter.unstructure(error.to_response_error())
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id, "error": found})

    def _log(self, message: str) -> None:
        self._server.window_log_message(
            types.LogMessageParams(types.MessageType.Error, message)
        )

    def _unreadable(self, message: _Unreadable) -> None:
        data = message.data
        if "method" not in data or "id" not in data:  # a notification, a response
            kind = f"{data['method']!r}" if "method" in data else "a response"
            self._log(f"graphlint: ignored {kind}: {message.error.message}")
        elif (msg_id := _id(data)) is None:
            self.refuse(None, JsonRpcInvalidRequest("the id is no integer or string"))
        else:
            self.refuse(msg_id, message.error)


def _id(message: object) -> MsgId | None:
    """The id of a message, where it has one that JSON-RPC allows."""
    found = (
        message.get("id") if isinstance(message, dict) else getattr(message, "id", None)
    )
    return (
        found if isinstance(found, (int, str)) and not isinstance(found, bool) else None
    )


def _is_request(message: object) -> bool:
    return hasattr(message, "id") and hasattr(message, "method")


class GraphlintServer(LanguageServer):
    """The server, with what it knows between requests."""

    protocol: Protocol

    def __init__(self) -> None:
        super().__init__("graphlint", __version__, protocol_cls=Protocol)
        self.pending: dict[str, asyncio.Task[None]] = {}  # uri: its debounced check
        self.published: dict[str, list[types.Diagnostic]] = {}
        self.published_version: dict[str, int | None] = {}  # of each document's
        self.one_at_a_time = asyncio.Lock()
        self.said: set[str] = set()  # errors shown to the user already
        # each check's plan (its configuration and files), by the files checked,
        # while the client tells of every file made, removed or renamed
        # (``watching``): an edit then does not walk the project again
        self.plans: dict[tuple[str, ...], Plan] = {}
        self.watching = False
        # the client asked the server to shut down or exit: no progress is sent
        self.leaving = False
        self.progress_asking = False  # a progress token asked for, not yet given
        self.progress_refused = False  # the client refused one: none asked again
        self.forgotten = 0  # how often the plans were dropped: a check's is kept
        # only if none was dropped while it was made (checks run on another thread)
        self.planning = threading.Lock()

    def report_server_error(self, error: Exception, source: ServerErrors) -> None:
        """pygls's read loop reports here what failed on a message it read; a message
        that is not JSON (or not UTF-8, or nested deeper than Python's recursion
        limit) is answered with a Parse error, id null, not a message box."""
        if source is JsonRpcException and isinstance(
            error, (ValueError, RecursionError)
        ):
            self.protocol.refuse(None, JsonRpcParseError(f"Parse error: {error}"))
            return
        super().report_server_error(error, source)

    def _watches(self, planned: Plan) -> bool:
        """Whether the client's watchers cover what ``planned`` read: its
        configuration files, its project and its repository lie in a workspace
        folder. A configuration or ``.gitignore`` above them, or a document opened
        from elsewhere, is planned at every check."""
        from graphlint.config import within  # noqa: PLC0415 - see LATER

        folders = [
            real_path(path)
            for path in [
                self.workspace.root_path,
                *(to_fs_path(f.uri) for f in self.workspace.folders.values()),
            ]
            if path
        ]
        config = planned.config
        read = [
            config.source,  # and those it extends:
            config.exclude_root,
            config.include_root,
            config.per_file_root,
            planned.project,
            planned.tree.top,
        ]
        return all(
            any(within(real_path(path), folder) for folder in folders)
            for path in read
            if path is not None
        )

    def _last_plan(self) -> Plan | None:
        """The plan kept last: kept plans are dropped when a file is made or
        removed, or a configuration changes (``forget_plans``)."""
        with self.planning:
            return next(reversed(self.plans.values()), None)

    def forget_plans(self) -> None:
        """Plan each check again: the files or the configuration may have changed."""
        with self.planning:
            self.forgotten += 1
            self.plans.clear()

    def document(self, uri: str) -> TextDocument | None:
        # pygls keeps documents by their unquoted URI; the client names them quoted
        document = self.workspace.text_documents.get(unquote(uri))
        return document if isinstance(document, TextDocument) else None

    def schedule(self, uri: str, delay: float = 0.0) -> None:
        """Check ``uri`` after ``delay`` seconds, replacing a check not yet started."""
        waiting = self.pending.pop(uri, None)
        if waiting is not None:
            waiting.cancel()
        self.pending[uri] = asyncio.get_running_loop().create_task(
            self._check_later(uri, delay)
        )

    def schedule_all(self, delay: float = 0.0) -> None:
        for document in list(self.workspace.text_documents.values()):
            self.schedule(document.uri, delay)  # as the client names it

    async def _check_later(self, uri: str, delay: float) -> None:
        if delay:
            await asyncio.sleep(delay)
        async with self.one_at_a_time:
            self.pending.pop(uri, None)
            document = self.document(uri)
            path = file_path(uri)
            if document is None or path is None or is_notebook(path):
                return
            versions = {uri: document.version}
            others: dict[str, str] = {}  # open documents of the same project
            for other in list(self.workspace.text_documents.values()):
                other_path = file_path(other.uri)
                if (
                    other.uri != uri
                    and other_path is not None
                    and not is_notebook(other_path)
                ):
                    others[other.uri] = other_path
                    versions[other.uri] = other.version
            buffers = self._buffers()
            loop = asyncio.get_running_loop()
            shown = CheckProgress(self, Path(path).name)
            try:
                found = await loop.run_in_executor(
                    None, self._check, path, buffers, list(others.values()), shown.told
                )
            finally:
                shown.end()
            if found is None or self.leaving:  # the client asked to shut down
                return
            for each, each_path in [(uri, path), *others.items()]:
                document = self.document(each)
                if document is None or document.version != versions[each]:
                    continue  # changed or closed meanwhile: a newer check publishes
                real = os.path.realpath(each_path)
                if each != uri and real not in found:
                    continue  # not checked with it (another project)
                diagnostics = [self._to_lsp(d, document) for d in found.get(real, [])]
                if each != uri and diagnostics == self.published.get(each):
                    continue  # what an edit elsewhere did not change is not sent again
                self.published[each] = diagnostics
                self.published_version[each] = versions[each]
                self.text_document_publish_diagnostics(
                    types.PublishDiagnosticsParams(
                        each, diagnostics, version=versions[each]
                    )
                )

    def _buffers(self) -> dict[str, bytes]:
        """Every open file document's text, as the analysis should read it."""
        buffers = {}
        for document in self.workspace.text_documents.values():
            path = file_path(document.uri)
            if path is not None:
                buffers[path] = as_saved(document.source)
        return buffers

    def _check(
        self,
        path: str,
        buffers: dict[str, bytes],
        others: Sequence[str] = (),
        told: Callable[[int, int], None] | None = None,
    ) -> dict[str, list[Diagnostic]] | None:
        """The diagnostics of ``path``, and of those ``others`` that the same
        configuration governs (one analysis: an unsaved edit to one file updates
        what another open file's regions reach), by real path; None when the check
        could not run (said to the client). ``told``: (jobs done, jobs found) after
        each job."""
        try:  # imported here (see LATER): a broken install is said, as a bug is
            from graphlint.lint import Choices, LintError, lint, plan  # noqa: PLC0415
        except Exception:
            self._log(types.MessageType.Error, traceback.format_exc())
            return None
        chosen = Choices(force_exclude=True)  # an excluded file stays out when opened
        try:
            targets = [path, *_same_project(path, others)]
            with overlay(buffers):
                planned = self.plans.get(tuple(targets))
                if planned is None:
                    before = self.forgotten
                    # the folders' listings that the last walk of the project kept
                    # (by their stamps): opening a file does not walk it again; nor
                    # its project, where a kept plan of it says what it holds
                    planned = plan(
                        [Path(t) for t in targets],
                        chosen,
                        self._warn,
                        keep_listings=True,
                        like=self._last_plan(),
                    )
                    with self.planning:
                        if (
                            self.watching
                            and self.forgotten == before
                            and self._watches(planned)
                        ):
                            self.plans[tuple(targets)] = planned
                            if len(self.plans) > PLANS_KEPT:  # the oldest goes
                                del self.plans[next(iter(self.plans))]
                checked = lint(
                    [Path(t) for t in targets],
                    warn=self._warn,
                    chosen=chosen,
                    planned=planned,
                    progress=told,
                )
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
        found: dict[str, list[Diagnostic]] = {os.path.realpath(t): [] for t in targets}
        for result in checked.results:
            real = os.path.realpath(result.path)
            if real in found:
                found[real].extend(result.diagnostics)
        return found

    def _warn(self, message: str) -> None:
        self._log(types.MessageType.Warning, f"graphlint: {message}")

    def _log(self, kind: types.MessageType, message: str) -> None:
        self.window_log_message(types.LogMessageParams(kind, message))

    def _to_lsp(self, d: Diagnostic, document: TextDocument) -> types.Diagnostic:
        from graphlint.output.lsp import diagnostic_to_lsp  # noqa: PLC0415 - see LATER

        item: dict[str, Any] = diagnostic_to_lsp(d, utf16=False)
        item["message"] = d.describe()
        found = self.protocol.converter.structure(item, types.Diagnostic)
        assert isinstance(found, types.Diagnostic)
        codec = document.position_codec
        found.range = codec.range_to_client_units(_lines(document), found.range)
        return found


class CheckProgress:
    """A check shown in the editor as work in progress (the protocol's work-done
    progress: a spinner and a message in the status bar) once it has taken
    ``progress.after()`` seconds (1 s; ``GRAPHLINT_PROGRESS_AFTER``), where the
    client can show one: the first check of a large project with an empty cache
    takes seconds (Megatron-LM's two, PyTorch's a minute), which an editor showed
    as nothing at all. Made and ended on the server's event loop; ``tell`` is
    called by the check's thread. Nothing is sent once the client has asked the
    server to shut down or exit, nor asked while a token asked for earlier is not
    given yet, nor after the client refused one."""

    def __init__(self, ls: GraphlintServer, name: str) -> None:
        self.ls = ls
        self.name = name
        self.loop = asyncio.get_running_loop()
        self.token = f"graphlint-check-{next(_PROGRESS_TOKENS)}"
        self.counts: tuple[int, int] | None = None  # jobs done, jobs found so far
        self.shown = False  # begun in the client
        self.ended = False
        self.reported = 0.0  # when the last counts were sent
        window = ls.client_capabilities.window
        self.wanted = (
            window is not None
            and bool(window.work_done_progress)
            and not ls.progress_refused
        )
        self.timer = (
            self.loop.call_later(progress.after(), self._start) if self.wanted else None
        )
        # the request for a token, held: a task nothing holds may be collected
        self.creating: asyncio.Task[None] | None = None

    @property
    def told(self) -> Callable[[int, int], None] | None:
        """What the check tells its progress to: nothing where none is shown."""
        return self.tell if self.wanted else None

    def tell(self, done: int, asked: int) -> None:
        """From the check's thread: ``done`` of the ``asked`` jobs found so far."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the server ends
            self.loop.call_soon_threadsafe(self._told, done, asked)

    def _told(self, done: int, asked: int) -> None:
        self.counts = (done, asked)
        now = time.monotonic()
        if (
            self.shown
            and not self.ended
            and not self.ls.leaving
            and now - self.reported >= progress.EVERY
        ):
            self.reported = now
            self.ls.work_done_progress.report(
                self.token, types.WorkDoneProgressReport(message=self._message())
            )

    def _message(self) -> str:
        if self.counts is None:
            return f"checking {self.name}"
        done, asked = self.counts
        return f"checking {self.name} ({done}/{asked})"

    def _start(self) -> None:
        self.timer = None
        if self.ended or self.ls.leaving or self.ls.progress_asking:
            return
        self.creating = asyncio.ensure_future(self._create())

    async def _create(self) -> None:
        if self.ended or self.ls.leaving:  # since the timer went off
            return
        self.ls.progress_asking = True
        try:
            await self.ls.work_done_progress.create_async(self.token)
        except Exception as error:  # a client may refuse it: the checks go on
            self.ls.progress_refused = True  # and are not shown again
            self.ls._log(types.MessageType.Log, f"graphlint: no progress: {error}")
            return
        finally:
            self.ls.progress_asking = False
        if self.ls.leaving:
            return
        self.shown = True
        self.reported = time.monotonic()
        self.ls.work_done_progress.begin(
            self.token,
            types.WorkDoneProgressBegin(title="graphlint", message=self._message()),
        )
        if self.ended:  # while the client made the token: begun, then ended
            self._end()

    def end(self) -> None:
        """The check has ended: what was shown goes."""
        self.ended = True
        if self.timer is not None:
            self.timer.cancel()
        if self.shown:
            self._end()

    def _end(self) -> None:
        if not self.ls.leaving:
            self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd())
        self.ls.work_done_progress.tokens.pop(self.token, None)


_PROGRESS_TOKENS = itertools.count(1)


def _same_project(path: str, others: Sequence[str]) -> list[str]:
    """Those of ``others`` in the project of ``path`` that the same configuration
    governs, as checking them with it still finds (nothing closer to ``path`` that
    their common folder would miss): checked together, they are one project."""
    from graphlint.config import ConfigError, find, folder_of  # noqa: PLC0415 - see LATER
    from graphlint.files import project_root  # noqa: PLC0415 - see LATER

    try:
        mine = find(Path(path))
        root = mine.parent if mine is not None else project_root(folder_of(Path(path)))
        if root is None:
            return []
        near = [
            other
            for other in others
            if Path(os.path.realpath(other)).is_relative_to(root)
            and find(Path(other)) == mine
        ]
        if not near:
            return []
        common = Path(os.path.commonpath([os.path.realpath(p) for p in [path, *near]]))
        return near if find(common) == mine else []
    except (ConfigError, OSError, ValueError):
        return []


def file_path(uri: str) -> str | None:
    """The path of a ``file:`` URI; None for another scheme, or a path no file can
    have: one with a NUL byte or a lone surrogate, which every OS call refuses
    (``ValueError``) wherever the analysis would look the path up."""
    try:
        path = to_fs_path(uri) if uri.startswith("file:") else None
        if path is None or b"\0" in os.fsencode(path):
            return None
    except ValueError:  # UnicodeEncodeError; urlparse's "Invalid IPv6 URL"
        return None
    return path


def as_saved(text: str) -> bytes:
    """A document's text in UTF-8, as an editor saves it: a lone surrogate, which
    UTF-8 cannot encode, as U+FFFD (VS Code's and Node's encoders do so)."""
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError:
        return _LONE_SURROGATE.sub("\ufffd", text).encode("utf-8")


server = GraphlintServer()


@server.feature(types.INITIALIZED)
async def _initialized(ls: GraphlintServer, params: types.InitializedParams) -> None:
    """Ask the client to watch the configuration files and ``.gitignore`` files,
    and to tell of every file made or removed, where it can: most editors send
    ``workspace/didChangeWatchedFiles`` only for the patterns a server registers
    (ruff's server does the same). Once the client has agreed, each check's plan is
    kept until a change says it is out of date."""
    try:  # before the first document is checked; what fails is said by the check
        for name in LATER:
            importlib.import_module(name)
    except Exception:
        ls._log(types.MessageType.Error, traceback.format_exc())
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    watchers = [
        *(
            types.FileSystemWatcher(glob_pattern=f"**/{name}")
            for name in sorted([*CONFIGURATION, ".gitignore"])
        ),
        types.FileSystemWatcher(
            glob_pattern="**/*", kind=types.WatchKind.Create | types.WatchKind.Delete
        ),
    ]
    registration = types.Registration(
        id="graphlint-configuration",
        method=types.WORKSPACE_DID_CHANGE_WATCHED_FILES,
        register_options=types.DidChangeWatchedFilesRegistrationOptions(watchers),
    )
    try:
        await ls.client_register_capability_async(
            types.RegistrationParams([registration])
        )
        ls.watching = True
    except Exception as error:  # a client may refuse it: the checks go on
        ls._log(
            types.MessageType.Log,
            f"graphlint: configuration files are not watched: {error}",
        )


@server.feature(types.SHUTDOWN)
def _shutting_down(ls: GraphlintServer, params: None) -> None:
    """Nothing more is sent of the checks' progress (pygls answers the request)."""
    ls.leaving = True


@server.feature(types.EXIT)
def _exiting(ls: GraphlintServer, params: None) -> None:
    """The client is gone: a check that ends now (cancelled as the server stops)
    sends nothing to a closed output (pygls ends the process)."""
    ls.leaving = True


@server.feature(types.TEXT_DOCUMENT_DID_OPEN)
async def _opened(ls: GraphlintServer, params: types.DidOpenTextDocumentParams) -> None:
    uri = params.text_document.uri
    path = file_path(uri) if uri.startswith("file:") else None
    if uri.startswith("file:") and path is None:
        ls._log(
            types.MessageType.Warning,
            f"graphlint: {uri} is not checked: no file can have its path",
        )
    if path is not None and is_notebook(path):
        ls._log(
            types.MessageType.Log,
            f"graphlint: {uri} is not checked: the server does not check notebooks "
            "(`graphlint check` does)",
        )
        return
    ls.schedule(uri)


@server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
async def _changed(
    ls: GraphlintServer, params: types.DidChangeTextDocumentParams
) -> None:
    ls.schedule(params.text_document.uri, DEBOUNCE)


@server.feature(types.TEXT_DOCUMENT_DID_SAVE)
async def _saved(ls: GraphlintServer, params: types.DidSaveTextDocumentParams) -> None:
    ls.forget_plans()  # "save as" makes a file
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
    ls.published_version.pop(uri, None)
    ls.text_document_publish_diagnostics(types.PublishDiagnosticsParams(uri, []))


@server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
async def _configured(
    ls: GraphlintServer, params: types.DidChangeConfigurationParams
) -> None:
    ls.forget_plans()
    ls.schedule_all()


@server.feature(types.WORKSPACE_DID_CHANGE_WATCHED_FILES)
async def _watched(
    ls: GraphlintServer, params: types.DidChangeWatchedFilesParams
) -> None:
    if any(_changes_checks(file_path(c.uri), c.type) for c in params.changes):
        ls.forget_plans()
        ls.schedule_all(DEBOUNCE)  # a checkout or a move makes many at once


def _changes_checks(path: str | None, change: types.FileChangeType) -> bool:
    """Whether a watched change at ``path`` may change what a check finds or
    plans. Never one inside a folder the project's files never come from (``.git``,
    ``__pycache__``, a virtual environment), which tools fill all the time. Else: a
    configuration file, a project marker (``.git`` itself too) or a ``.gitignore``;
    anything removed (a folder may have held Python files, whatever its name); a
    Python file or notebook made, or a folder (moving one in tells of the folder
    alone)."""
    from graphlint.files import PROJECT_MARKERS, SKIPPED_DIRS  # noqa: PLC0415 - see LATER

    if path is None:
        return False
    found = Path(path)
    if any(part in SKIPPED_DIRS for part in found.parts[:-1]):
        return False
    if found.name in {*CONFIGURATION, *PROJECT_MARKERS, ".gitignore"}:
        return True
    if found.name in SKIPPED_DIRS:
        return False
    if change == types.FileChangeType.Deleted:
        return True
    return change == types.FileChangeType.Created and (
        found.suffix in (".py", ".ipynb") or os.path.isdir(found)
    )


FIX_ALL = (
    f"{types.CodeActionKind.SourceFixAll.value}.{SOURCE}"  # source.fixAll.graphlint
)


@server.feature(
    types.TEXT_DOCUMENT_CODE_ACTION,
    types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL]),
)
def _code_actions(
    ls: GraphlintServer, params: types.CodeActionParams
) -> list[types.CodeAction]:
    document = ls.document(params.text_document.uri)
    if document is None:
        return []
    only = params.context.only
    actions: list[types.CodeAction] = []
    if _wanted(only, types.CodeActionKind.QuickFix.value):
        actions.extend(
            action
            for d in params.context.diagnostics
            if d.source == SOURCE and isinstance(d.code, str)
            for action in [_fix(document, d), _ignore(document, d)]
            if action is not None
        )
    if _wanted(only, FIX_ALL):
        found = ls.published.get(document.uri, [])
        if ls.published_version.get(document.uri) == document.version:
            fix_all = _fix_all(document, found)
            if fix_all is not None:
                actions.append(fix_all)
    return actions


def _lines(document: TextDocument) -> list[str]:
    """The document's lines as Python and graphlint count them: split at ``\\r\\n``,
    ``\\r`` and ``\\n`` only (pygls's ``lines`` also splits at form feeds and the
    other breaks of ``str.splitlines``, which would shift every line after one)."""
    return lines_with_breaks(document.source)


def _wanted(only: Sequence[str] | None, kind: str) -> bool:
    """Whether a request for the kinds ``only`` (none: any) takes ``kind``: kinds
    are hierarchical (``source.fixAll`` takes ``source.fixAll.graphlint``)."""
    return only is None or any(kind == k or kind.startswith(f"{k}.") for k in only)


def _fix(document: TextDocument, d: types.Diagnostic) -> types.CodeAction | None:
    """The rule's own fix, where it is a mechanical edit (``data.edits``); an unsafe
    one says so and is never the preferred action."""
    changes = _edits(document, d)
    if not changes:
        return None
    data = d.data if isinstance(d.data, dict) else {}
    safe = data.get("applicability") == Applicability.SAFE.value
    kind = "" if safe else " (unsafe)"
    return types.CodeAction(
        title=f"Fix {d.code}{kind}: {data.get('fix') or 'apply the fix'}",
        kind=types.CodeActionKind.QuickFix,
        diagnostics=[d],
        is_preferred=safe,
        edit=types.WorkspaceEdit(changes={document.uri: changes}),
    )


def _fix_all(
    document: TextDocument, found: Sequence[types.Diagnostic]
) -> types.CodeAction | None:
    """``source.fixAll.graphlint``: every safe fix of the document whose edits touch
    no span an earlier one's do (what ``check --fix`` applies in its first pass)."""
    taken: list[types.Range] = []
    changes: list[types.TextEdit] = []
    fixed: list[types.Diagnostic] = []
    ordered = sorted(found, key=lambda d: (d.range.start.line, d.range.start.character))
    for d in ordered:
        data = d.data if isinstance(d.data, dict) else {}
        if data.get("applicability") != Applicability.SAFE.value:
            continue
        edits = _edits(document, d)
        spans = [e.range for e in edits]
        if not edits or any(_touch(a, b) for a in spans for b in taken):
            continue
        if any(e in changes for e in edits):
            continue  # the same fix as a finding before it
        taken.extend(spans)
        changes.extend(edits)
        fixed.append(d)
    if not changes:
        return None
    return types.CodeAction(
        title="Fix all graphlint safe fixes",
        kind=FIX_ALL,
        diagnostics=fixed,
        edit=types.WorkspaceEdit(changes={document.uri: changes}),
    )


def _touch(a: types.Range, b: types.Range) -> bool:
    """Whether two ranges share text or start at the same place."""
    start_a, end_a = (a.start.line, a.start.character), (a.end.line, a.end.character)
    start_b, end_b = (b.start.line, b.start.character), (b.end.line, b.end.character)
    return start_a == start_b or (start_a < end_b and start_b < end_a)


def _edits(document: TextDocument, d: types.Diagnostic) -> list[types.TextEdit]:
    """A diagnostic's fix (``data.edits``) as text edits in the client's units."""
    data = d.data if isinstance(d.data, dict) else {}
    codec, lines = document.position_codec, _lines(document)
    changes = []
    for edit in data.get("edits") or []:
        start, end = edit["range"]["start"], edit["range"]["end"]
        span = types.Range(
            types.Position(start["line"], start["character"]),
            types.Position(end["line"], end["character"]),
        )
        changes.append(
            types.TextEdit(codec.range_to_client_units(lines, span), edit["newText"])
        )
    return changes


def _ignore(document: TextDocument, d: types.Diagnostic) -> types.CodeAction | None:
    """ "Ignore GL101 on this line": a ``# graphlint: ignore[GL101]`` comment on the
    line where the diagnostic starts, or the code added to the one there."""
    from graphlint.comments import add_ignore  # noqa: PLC0415 - see LATER

    number = d.range.start.line
    lines: Sequence[str] = _lines(document)
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
    keep_workers()  # started once, fresh interpreters (runner: a server has threads)
    server.start_io(stdin=Input(io.FileIO(sys.stdin.fileno(), closefd=False)))
