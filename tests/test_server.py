"""``graphlint server`` end to end over stdio, driven as an editor drives it."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Awaitable, Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from lsprotocol import types
from pygls.workspace import Workspace

import graphlint.files
import graphlint.lint
import graphlint.server
from graphlint.diagnostics import Checked
from graphlint.lint import Plan
from graphlint.server import (
    PLANS_KEPT,
    CheckProgress,
    GraphlintServer,
    _changes_checks,
)
from tests.lsp_client import Client, Message
from tests.test_cli import MODEL, TRAIN, _package

CLEAN = "def step(x):\n    return x\n"
WATCHING = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
MADE, CHANGED, REMOVED = 1, 2, 3  # FileChangeType


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return _package(tmp_path)


@pytest.fixture
def client(project: Path) -> Iterator[Client]:
    client = Client(project)
    client.initialize(project)
    yield client
    client.dispose()


def test_initialize_says_what_the_server_does(project: Path) -> None:
    client = Client(project)
    capabilities = client.initialize(project)["capabilities"]
    assert capabilities["hoverProvider"]
    assert capabilities["codeActionProvider"]["codeActionKinds"] == [
        "quickfix",
        "source.fixAll.graphlint",
    ]
    assert capabilities["textDocumentSync"]["openClose"]
    assert client.close() == 0


def test_the_server_starts_without_the_command_line_or_what_checks_need() -> None:
    """``graphlint server`` answers ``initialize`` before importing typer, the
    command line's modules or those only a check needs (``server.LATER``, imported
    once the client has its answer): the editor waits for less."""
    script = (
        "import sys\n"
        "import graphlint.server\n"
        "graphlint.server.serve = lambda: None\n"
        "graphlint.runner.keep_workers = lambda start=0: None\n"
        "sys.argv = ['graphlint', 'server']\n"
        "from graphlint.entry import main\n"
        "main()\n"
        "loaded = [*graphlint.server.LATER, 'graphlint.cli', 'typer']\n"
        "print(sorted(m for m in loaded if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.splitlines()[-1] == "[]"


def test_other_server_command_lines_are_the_command_lines() -> None:
    """Only ``graphlint server`` itself skips the command line: ``--help`` is
    typer's, an unknown option is a usage error."""
    for arguments, code, said in (
        (["--help"], 0, "language server"),
        (["--stdio"], 2, "No such option"),
    ):
        done = subprocess.run(
            [sys.executable, "-m", "graphlint", "server", *arguments],
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == code, done.stderr
        assert said in done.stdout + done.stderr


def test_configuration_files_are_watched_where_the_client_lets_it(
    project: Path,
) -> None:
    """A client that supports dynamic registration is asked to watch the
    configuration files; one that does not is asked nothing, and then the server
    still answers."""
    client = Client(project)
    client.initialize(project, WATCHING)
    asked = client._until(lambda m: m.get("method") == "client/registerCapability", 60)
    (registration,) = asked["params"]["registrations"]
    assert registration["method"] == "workspace/didChangeWatchedFiles"
    watchers = registration["registerOptions"]["watchers"]
    assert [(w["globPattern"], w.get("kind")) for w in watchers] == [
        ("**/.gitignore", None),
        ("**/.graphlint.toml", None),
        ("**/graphlint.toml", None),
        ("**/pyproject.toml", None),
        ("**/*", 1 | 4),  # made or removed
    ]
    assert client.close() == 0
    client = Client(project)
    client.initialize(project)
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(uri, version=1)) == 1
    assert not any(
        m.get("method") == "client/registerCapability" for m in client.received
    )
    assert client.close() == 0


def test_a_file_made_or_removed_on_disk_is_seen_by_a_watching_server(
    project: Path,
) -> None:
    """A server whose client watches the files keeps each check's plan between
    edits; a region file made on disk, or removed, is told of and planned again:
    the open model file shows the hazard it makes, then no longer."""
    train = project / "pkg" / "train.py"
    train.unlink()
    client = Client(project)
    client.initialize(project, WATCHING)
    client._until(lambda m: m.get("method") == "client/registerCapability", 60)
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert client.diagnostics(uri, version=1) == []
    client.change(uri, MODEL + "# edited\n", version=2)  # planned once already
    assert client.diagnostics(uri, version=2) == []
    train.write_text(TRAIN)
    client.notify(
        "workspace/didChangeWatchedFiles",
        {"changes": [{"uri": train.as_uri(), "type": 1}]},
    )
    (found,) = client.diagnostics(uri, version=2)
    assert found["code"] == "GL101"
    train.unlink()
    client.notify(
        "workspace/didChangeWatchedFiles",
        {"changes": [{"uri": train.as_uri(), "type": 3}]},
    )
    assert client.diagnostics(uri, version=2) == []
    assert client.close() == 0


def test_a_watching_server_keeps_the_newest_plans(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each set of documents checked together has its plan, kept while the client
    watches the workspace that holds what the plan read, up to ``PLANS_KEPT``:
    the oldest go first. A plan made while the plans were dropped, or of files
    outside the workspace, is not kept."""
    checked: list[Plan] = []

    def lint(targets: list[Path], *, planned: Plan, **_: object) -> Checked:
        checked.append(planned)
        return Checked([])

    monkeypatch.setattr(graphlint.lint, "lint", lint)  # the server imports it late
    workspace, elsewhere = tmp_path / "ws", tmp_path / "elsewhere"
    for folder in (workspace, elsewhere):
        folder.mkdir()
        (folder / "pyproject.toml").write_text("")
    ls = GraphlintServer()
    ls.protocol._workspace = Workspace(workspace.as_uri())
    ls.watching = True
    paths = [str(workspace / f"m{n}.py") for n in range(PLANS_KEPT + 2)]
    for path in [*paths, paths[-1]]:
        Path(path).write_text("x = 1\n")
        assert ls._check(path, {}) == {os.path.realpath(path): []}
    assert list(ls.plans) == [(path,) for path in paths[2:]]
    assert checked[-1] is checked[-2]  # the same files: planned once
    ls.forget_plans()
    assert ls.plans == {}
    outside = elsewhere / "m.py"
    outside.write_text("x = 1\n")
    ls._check(str(outside), {})
    assert ls.plans == {}
    made = graphlint.lint.plan

    def dropped_meanwhile(*args: Any, **kwargs: Any) -> Plan:
        ls.forget_plans()  # a watched change while the check plans
        return made(*args, **kwargs)

    monkeypatch.setattr(graphlint.lint, "plan", dropped_meanwhile)
    ls._check(paths[0], {})
    assert ls.plans == {}


def test_opening_another_file_takes_the_walk_the_last_plan_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file opened later is planned (its own set of documents) from the
    folders' listings the project's last walk kept, by their stamps, as the
    command line's runs are: the project is not walked again."""
    monkeypatch.setattr(graphlint.files, "RACY_NS", 0)  # folders made just now
    monkeypatch.setenv("GRAPHLINT_CACHE_DIR", str(tmp_path / "cache"))
    workspace = tmp_path / "ws"
    (workspace / "pkg").mkdir(parents=True)
    (workspace / "pyproject.toml").write_text("")
    paths = [workspace / "pkg" / f"m{n}.py" for n in range(2)]
    for path in paths:
        path.write_text("x = 1\n")
    ls = GraphlintServer()
    ls.protocol._workspace = Workspace(workspace.as_uri())
    assert ls._check(str(paths[0]), {}) == {os.path.realpath(paths[0]): []}
    scandir = os.scandir

    def refuse(path: str) -> object:  # the cache's own folders it may list
        assert not os.fspath(path).startswith(os.fspath(workspace)), path
        return scandir(path)

    monkeypatch.setattr(os, "scandir", refuse)
    assert ls._check(str(paths[1]), {}) == {os.path.realpath(paths[1]): []}


def test_a_check_whose_modules_fail_to_import_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The modules a check needs are imported late (``server.LATER``); where one
    cannot be (a broken install), the check says why in the log and gives no
    diagnostics, as a bug does, rather than ending its task in silence."""
    said: list[str] = []
    ls = GraphlintServer()
    monkeypatch.setattr(ls, "_log", lambda kind, message: said.append(message))
    monkeypatch.setitem(sys.modules, "graphlint.lint", None)  # import fails
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    assert ls._check(str(path), {}) is None
    assert "graphlint.lint" in said[-1]  # ModuleNotFoundError, with the traceback


@pytest.mark.parametrize(
    ("path", "change", "rechecks"),
    [
        ("pkg/model.py", MADE, True),
        ("notes.ipynb", MADE, True),
        ("incoming.d", MADE, True),  # a folder moved in: its files are not told of
        ("incoming.d", REMOVED, True),
        ("README.md", MADE, False),
        ("README.md", REMOVED, True),  # it might have been a folder
        ("pkg/model.py", CHANGED, False),  # a save says it
        ("sub/pyproject.toml", CHANGED, True),
        ("setup.cfg", MADE, True),  # a project marker
        (".git", MADE, True),  # a repository made
        (".gitignore", CHANGED, True),
        (".git/index.lock", MADE, False),
        (".git/index.lock", REMOVED, False),
        ("__pycache__/m.cpython-311.pyc", MADE, False),
        ("__pycache__", REMOVED, False),
        (".venv/lib/site.py", MADE, False),
    ],
)
def test_which_watched_changes_recheck(
    tmp_path: Path, path: str, change: int, rechecks: bool
) -> None:
    (tmp_path / "incoming.d").mkdir()
    kind = types.FileChangeType(change)
    assert _changes_checks(str(tmp_path / path), kind) is rechecks


def test_an_unsaved_edit_updates_the_other_open_files(
    client: Client, project: Path
) -> None:
    """Taking the capture out of train.py's unsaved buffer updates model.py, open
    beside it, whose hazard no region reaches any more; putting it back restores
    it. Nothing is saved."""
    model = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(model, version=1)) == 1
    train = client.open(project / "pkg" / "train.py", TRAIN)
    client.diagnostics(train, version=1)
    client.change(train, TRAIN.replace("y = step(x)", "y = x * 2"), version=2)
    assert client.diagnostics(model, version=1) == []
    client.change(train, TRAIN, version=3)
    assert len(client.diagnostics(model, version=1)) == 1
    assert client.close() == 0


def test_a_file_that_a_region_elsewhere_reaches(client: Client, project: Path) -> None:
    """Opening the model file shows the hazard the region in train.py makes, with
    the region and the call as related locations."""
    uri = client.open(project / "pkg" / "model.py", MODEL)
    (found,) = client.diagnostics(uri, version=1)
    assert found["code"] == "GL101" and found["source"] == "graphlint"
    assert found["range"] == {
        "start": {"line": 1, "character": 11},
        "end": {"line": 1, "character": 25},
    }
    assert "region at pkg/train.py:6, reached from pkg/train.py:7" in found["message"]
    related = [
        (r["location"]["uri"], r["location"]["range"]["start"]["line"])
        for r in found["relatedInformation"]
    ]
    assert related == [((project / "pkg" / "train.py").resolve().as_uri(), 6)]
    assert found["codeDescription"]["href"].endswith("GL101-device-to-host-copy.md")


def test_unsaved_changes_are_checked(client: Client, project: Path) -> None:
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(uri, version=1)) == 1
    client.change(uri, CLEAN, version=2)
    assert client.diagnostics(uri, version=2) == []
    assert (project / "pkg" / "model.py").read_text() == MODEL  # the buffer only
    client.change(uri, "def step(x):\n    return x\n\n\n" + MODEL, version=3)
    (found,) = client.diagnostics(uri, version=3)
    assert found["range"]["start"]["line"] == 5


def test_typing_fast_is_checked_once_for_the_last_text(
    client: Client, project: Path
) -> None:
    uri = client.open(project / "pkg" / "model.py", CLEAN)
    assert client.diagnostics(uri, version=1) == []
    for version in range(2, 12):
        client.change(uri, MODEL if version % 2 else CLEAN, version=version)
    assert len(client.diagnostics(uri, version=11)) == 1
    published = [
        n["params"]["version"]
        for n in client.notifications
        if n["method"] == "textDocument/publishDiagnostics"
    ]
    assert published == [1, 11]  # the changes in between were never checked


def test_ignore_code_action_and_hover(client: Client, project: Path) -> None:
    uri = client.open(project / "pkg" / "model.py", MODEL)
    (found,) = client.diagnostics(uri, version=1)
    hover = client.request(
        "textDocument/hover",
        {"textDocument": {"uri": uri}, "position": {"line": 1, "character": 14}},
    )
    assert "**GL101** `device-to-host-copy`" in hover["contents"]["value"]
    assert "Fix: Keep the value on the device" in hover["contents"]["value"]
    assert (
        client.request(
            "textDocument/hover",
            {"textDocument": {"uri": uri}, "position": {"line": 0, "character": 0}},
        )
        is None
    )
    (action,) = client.request(
        "textDocument/codeAction",
        {
            "textDocument": {"uri": uri},
            "range": found["range"],
            "context": {"diagnostics": [found]},
        },
    )
    assert action["title"] == "Ignore GL101 on this line"
    (edit,) = action["edit"]["changes"][uri]
    assert edit["newText"] == (
        "    return x.sum().item() * (x @ x)  # graphlint: ignore[GL101]"
    )
    lines = MODEL.splitlines()
    lines[1] = edit["newText"]
    client.change(uri, "\n".join(lines) + "\n", version=2)
    assert client.diagnostics(uri, version=2) == []


def test_a_syntax_error_is_a_diagnostic_not_a_crash(
    client: Client, project: Path
) -> None:
    uri = client.open(project / "pkg" / "model.py", "def step(x:\n")
    (found,) = client.diagnostics(uri, version=1)
    assert found["code"] == "GL001"
    client.change(uri, MODEL, version=2)
    assert len(client.diagnostics(uri, version=2)) == 1
    assert client.close() == 0


def test_closing_clears_and_a_configuration_change_rechecks(
    client: Client, project: Path
) -> None:
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(uri, version=1)) == 1
    (project / "pyproject.toml").write_text('[tool.graphlint]\nignore = ["GL101"]\n')
    client.notify(
        "workspace/didChangeWatchedFiles",
        {"changes": [{"uri": (project / "pyproject.toml").as_uri(), "type": 2}]},
    )
    assert client.diagnostics(uri, version=1) == []
    (project / "pyproject.toml").write_text("[tool.graphlint]\nselct = 1\n")
    client.notify("workspace/didChangeConfiguration", {"settings": {}})
    message = client._until(lambda m: m.get("method") == "window/showMessage", 60)
    assert "unknown key 'selct'" in message["params"]["message"]
    client.notify("textDocument/didClose", {"textDocument": {"uri": uri}})
    assert client.diagnostics(uri) == []


def test_a_new_file_and_a_region_in_an_unsaved_buffer(
    client: Client, project: Path
) -> None:
    """The train.py buffer captures a function of a file that exists only in the
    editor: both are read from the buffers."""
    new = client.open(project / "pkg" / "new.py", MODEL)
    client.open(project / "pkg" / "train.py", TRAIN.replace("pkg.model", "pkg.new"))
    client.notify("textDocument/didSave", {"textDocument": {"uri": new}})
    found = client.diagnostics(new, version=1)
    while not found:  # the check from didOpen may come first
        found = client.diagnostics(new, version=1)
    assert found[0]["code"] == "GL101"


def _open(client: Client, uri: str, text: str) -> None:
    """Open ``uri`` as given: a URI no ``Path`` makes (``client.open`` makes them)."""
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    client.notify("textDocument/didOpen", {"textDocument": document})


def _checked(client: Client, uri: str, version: int) -> list[Message]:
    """The diagnostics of ``uri`` at ``version``; an error the server logs first
    fails the test at once (a check that broke) rather than at the timeout."""
    found = client._until(
        lambda m: (
            (m.get("method") == "window/logMessage" and m["params"]["type"] == 1)
            or (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == uri
                and m["params"].get("version") == version
            )
        ),
        60,
    )
    assert found["method"] == "textDocument/publishDiagnostics", found["params"]
    diagnostics: list[Message] = found["params"]["diagnostics"]
    return diagnostics


@pytest.mark.parametrize(
    ("name", "text"),
    [
        ("odd.py", "x = '\ud800'\n"),  # JSON sends the text with the escape \ud800
        ("a%00b.py", CLEAN),
        ("\ud800.py", CLEAN),
    ],
    ids=["text-with-a-lone-surrogate", "uri-with-a-nul", "uri-with-a-lone-surrogate"],
)
def test_a_document_no_file_could_hold_stops_no_other(
    client: Client, project: Path, name: str, text: str
) -> None:
    """Every check reads every open document: one that cannot be a file as it is
    (its text cannot be UTF-8, its path cannot be passed to the OS) must not make
    each check fail."""
    odd = (project / "pkg").resolve().as_uri() + "/" + name
    _open(client, odd, text)
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert [d["code"] for d in _checked(client, uri, 1)] == ["GL101"]
    client.change(odd, text + "y = 1\n", version=2)
    client.change(uri, CLEAN, version=2)
    assert _checked(client, uri, 2) == []
    client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
    client.change(uri, MODEL, version=3)
    assert [d["code"] for d in _checked(client, uri, 3)] == ["GL101"]
    assert client.close() == 0


def test_a_lone_surrogate_is_checked_as_the_editor_saves_it(
    client: Client, project: Path
) -> None:
    """An editor saves a lone surrogate as U+FFFD (UTF-8 has no surrogates): the text
    is checked so, one character for one, and the positions stay the editor's."""
    text = "def step(x):\n    s = '\ud800'; return x.sum().item()\n"
    uri = client.open(project / "pkg" / "model.py", text)
    (found,) = _checked(client, uri, 1)
    assert found["code"] == "GL101"
    line = text.splitlines()[1]
    assert found["range"]["start"] == {"line": 1, "character": line.index("x.sum")}


def test_a_path_that_needs_quoting_in_its_uri(tmp_path: Path) -> None:
    """A folder with a space: the editor's URI says %20, pygls keys its documents by
    the unquoted URI, and diagnostics go back under the editor's URI."""
    project = _package(tmp_path / "my project")
    client = Client(project)
    try:
        client.initialize(project)
        uri = client.open(project / "pkg" / "model.py", MODEL)
        assert "%20" in uri
        assert [d["code"] for d in _checked(client, uri, 1)] == ["GL101"]
        client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        assert [d["code"] for d in _checked(client, uri, 1)] == ["GL101"]
        assert client.close() == 0
    finally:
        client.dispose()


PROGRESS = {"window": {"workDoneProgress": True}}


def _progress(client: Client) -> list[Message]:
    return [
        m
        for m in client.received
        if m.get("method") in ("window/workDoneProgress/create", "$/progress")
    ]


def test_a_long_check_is_shown_as_work_in_progress(project: Path) -> None:
    """A client that shows work-done progress sees a check that lasts (here every
    one: ``GRAPHLINT_PROGRESS_AFTER=0``) as one: a token asked for, the work
    begun and ended under it; the diagnostics are published as ever."""
    env = {**os.environ, "GRAPHLINT_PROGRESS_AFTER": "0"}
    client = Client(project, env=env)
    client.initialize(project, PROGRESS)
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(uri, version=1)) == 1

    def ended(m: Message) -> bool:
        return m.get("method") == "$/progress" and m["params"]["value"]["kind"] == "end"

    if not any(ended(m) for m in client.received):  # ends after the diagnostics
        client._until(ended, 60)
    created, *reported = _progress(client)
    token = created["params"]["token"]
    assert created["method"] == "window/workDoneProgress/create"
    assert {m["params"]["token"] for m in reported} == {token}
    kinds = [m["params"]["value"]["kind"] for m in reported]
    assert kinds[0] == "begin" and kinds[-1] == "end"
    assert set(kinds[1:-1]) <= {"report"}
    assert reported[0]["params"]["value"]["title"] == "graphlint"
    assert "model.py" in reported[0]["params"]["value"]["message"]
    assert client.close() == 0


@pytest.mark.parametrize(
    ("capabilities", "after"), [(None, "0"), (PROGRESS, "3600")], ids=["no", "later"]
)
def test_no_progress_where_the_client_has_none_or_the_check_is_short(
    project: Path, capabilities: Message | None, after: str
) -> None:
    """A client that cannot show progress is sent none; nor is one that can, for
    a check shorter than the wait (an hour, here)."""
    env = {**os.environ, "GRAPHLINT_PROGRESS_AFTER": after}
    client = Client(project, env=env)
    client.initialize(project, capabilities)
    uri = client.open(project / "pkg" / "model.py", MODEL)
    assert len(client.diagnostics(uri, version=1)) == 1
    assert client.close() == 0
    assert _progress(client) == []


class _Progress:
    """What a client is sent of the checks' progress, by a fake server: the create
    requests answered as ``answer`` says (None: never)."""

    def __init__(self, answer: str | None = "yes") -> None:
        self.sent: list[tuple[str, str]] = []
        self.answer = answer
        self.tokens: dict[str, object] = {}

    async def create_async(self, token: str) -> None:
        self.sent.append(("create", token))
        if self.answer is None:
            await asyncio.Event().wait()  # never answered
        if self.answer == "no":
            raise RuntimeError("refused")
        self.tokens[token] = object()

    def begin(self, token: str, value: object) -> None:
        self.sent.append(("begin", token))

    def report(self, token: str, value: object) -> None:
        self.sent.append(("report", token))

    def end(self, token: str, value: object) -> None:
        self.sent.append(("end", token))


def _fake_server(answer: str | None = "yes") -> Any:
    window = types.WindowClientCapabilities(work_done_progress=True)
    return SimpleNamespace(
        client_capabilities=types.ClientCapabilities(window=window),
        work_done_progress=_Progress(answer),
        leaving=False,
        progress_asking=False,
        progress_refused=False,
        _log=lambda kind, message: None,
    )


def _checks(ls: Any, steps: Callable[[CheckProgress], Awaitable[None]]) -> None:
    """A check's progress, made on an event loop, taken through ``steps``."""

    async def run() -> None:
        await steps(CheckProgress(ls, "model.py"))
        await asyncio.sleep(0)

    asyncio.run(run())


@pytest.fixture
def at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRAPHLINT_PROGRESS_AFTER", "0")


async def _shown(shown: CheckProgress) -> None:
    for _ in range(3):  # the timer, the token's request, its answer
        await asyncio.sleep(0)


@pytest.mark.usefixtures("at_once")
def test_nothing_is_sent_once_the_client_leaves() -> None:
    """A check that ends after the client asked the server to shut down (or
    exit: its output may be closed) sends no end; a report neither."""
    ls = _fake_server()

    async def steps(shown: CheckProgress) -> None:
        await _shown(shown)
        ls.leaving = True
        shown._told(1, 2)
        shown.end()

    _checks(ls, steps)
    assert [kind for kind, _ in ls.work_done_progress.sent] == ["create", "begin"]
    assert ls.work_done_progress.tokens == {}  # forgotten all the same


@pytest.mark.usefixtures("at_once")
def test_a_refused_token_is_not_asked_for_again() -> None:
    ls = _fake_server("no")

    async def steps(shown: CheckProgress) -> None:
        await _shown(shown)
        shown.end()

    _checks(ls, steps)
    _checks(ls, steps)
    assert [kind for kind, _ in ls.work_done_progress.sent] == ["create"]
    assert ls.progress_refused


@pytest.mark.usefixtures("at_once")
def test_no_token_is_asked_for_while_one_is_not_given() -> None:
    """A client that never answers is asked once, not at every slow check."""
    ls = _fake_server(None)

    async def steps(shown: CheckProgress) -> None:
        await _shown(shown)
        second = CheckProgress(ls, "train.py")
        await _shown(second)
        second.end()
        shown.end()

    _checks(ls, steps)
    assert [kind for kind, _ in ls.work_done_progress.sent] == ["create"]


@pytest.mark.usefixtures("at_once")
def test_a_check_that_ends_before_its_token_is_asked_for_asks_for_none() -> None:
    ls = _fake_server()

    async def steps(shown: CheckProgress) -> None:
        while shown.creating is None:  # the wait is over, the token not asked
            await asyncio.sleep(0)
        shown.end()
        await _shown(shown)

    _checks(ls, steps)
    assert ls.work_done_progress.sent == []


@pytest.mark.parametrize("leaving", [False, True])
def test_a_check_that_ends_after_shutdown_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leaving: bool
) -> None:
    """The client asked the server to shut down (or to exit: its output may be
    closed) while a check ran: the check's diagnostics are not published."""
    path = tmp_path / "m.py"
    path.write_text("x = 1\n")
    ls = GraphlintServer()
    ls.protocol._workspace = Workspace(tmp_path.as_uri())
    ls.protocol.client_capabilities = types.ClientCapabilities()  # as initialized
    uri = path.as_uri()
    ls.workspace.put_text_document(types.TextDocumentItem(uri, "python", 1, "x = 1\n"))
    published: list[object] = []

    def check(*args: Any) -> dict[str, list[object]]:
        ls.leaving = leaving  # while the check runs
        return {os.path.realpath(path): []}

    monkeypatch.setattr(ls, "_check", check)
    monkeypatch.setattr(ls, "text_document_publish_diagnostics", published.append)
    asyncio.run(ls._check_later(uri, 0))
    assert len(published) == (0 if leaving else 1)
