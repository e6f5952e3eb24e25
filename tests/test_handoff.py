"""Hand-offs: code passed, anywhere in the project, to code that captures it (a
wrapper storing a callable, a capture helper, a runner) is followed as captured,
with the hand-off in its chain."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Iterable
from pathlib import Path

import pytest

from graphlint import runner
from graphlint.project import check
from graphlint.project.check import check_project
from graphlint.project.textsearch import DEF, imported_words, installs, names
from graphlint.settings import Settings
from tests.conftest import FIXTURES, expectations
from tests.test_cli import run

HANDOFF = FIXTURES / "_handoff"

WRAPPER = """\
import torch


class Wrapper:
    def __init__(self, fn):
        self.fn = fn
        self.graph = torch.cuda.CUDAGraph()

    def __call__(self, *args):
        with torch.cuda.graph(self.graph):
            out = self.fn(*args)
        return out
"""

STEPS = """\
def step(x):
    return x.sum().item()


def clean(x):
    return x * 2
"""


def _write(root: Path, files: dict[str, str]) -> Path:
    (root / "pyproject.toml").write_text("")
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_the_fixture_reports_exactly_its_markers() -> None:
    """Every shape of hand-off in fixtures/_handoff reaches its hazard, and the good
    twins (clean code handed over, code handed to what never captures it, code run
    after the capture) stay clean."""
    files = sorted(HANDOFF.rglob("*.py"))
    results = check_project(files, Settings(preview=True), 1)
    got = {(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics}
    want = {
        (path.name, line, code)
        for path in files
        for line, code in expectations(path.read_text(encoding="utf-8"))
    }
    assert want, "the fixture marks its hazards"
    assert got == want


@pytest.fixture
def wrapped(tmp_path: Path) -> Path:
    """A wrapper in one package module, given a function in another."""
    return _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/wrap.py": WRAPPER,
            "pkg/steps.py": STEPS,
            "pkg/train.py": """\
                from pkg.steps import clean, step
                from pkg.wrap import Wrapper


                def main(x):
                    fast = Wrapper(step)
                    Wrapper(clean)(x)
                    return fast(x)
                """,
        },
    )


def test_a_wrapper_built_in_another_module_reaches_what_it_stores(
    wrapped: Path,
) -> None:
    code, out, _ = run("check", "--preview", ".", cwd=wrapped)
    assert code == 1
    (finding,) = [line for line in out.splitlines() if "GL101" in line]
    assert finding.startswith("pkg/steps.py:2:12: GL101")
    assert (
        "[torch.cuda.graph region at pkg/wrap.py:10, reached from pkg/wrap.py:11 "
        "via Wrapper(step) at pkg/train.py:6 -> step()]"
    ) in finding


def test_handoffs_are_followed_in_preview_only(wrapped: Path) -> None:
    """Off by default (not yet judged precise on every tree): the region reaches no
    project function; on with ``--preview`` or ``preview = true``, and
    ``--no-preview`` wins over the configuration. (Without hand-offs, the code the
    wrapper captures with no warm-up before it could not be checked: GL703.)"""
    code, out, _ = run("check", ".", cwd=wrapped)
    assert "GL101" not in out and "GL703" in out
    (wrapped / "pyproject.toml").write_text("[tool.graphlint]\npreview = true\n")
    code, out, _ = run("check", ".", cwd=wrapped)
    assert code == 1 and "pkg/steps.py:2:12: GL101" in out
    assert "GL703" not in out  # what it captures is seen whole: no warm-up needed
    code, out, _ = run("check", "--no-preview", ".", cwd=wrapped)
    assert "GL101" not in out and "GL703" in out
    (wrapped / "pyproject.toml").write_text('[tool.graphlint]\npreview = "yes"\n')
    code, _, err = run("check", ".", cwd=wrapped)
    assert code == 2 and "'preview' in [tool.graphlint]" in err
    assert "must be true or false" in err


@pytest.mark.parametrize(
    "annotation",
    ["", ": Callable", ": typing.Callable[..., Any]", ': "Callable"', ": Any"],
)
def test_a_stored_callable_says_why_it_is_not_followed_however_annotated(
    wrapped: Path, annotation: str
) -> None:
    """``fn: Callable`` (or ``Any``) names no class whose code a call runs: the
    wrapper's ``self.fn(*args)`` runs what the callers hand over. By default it is
    listed as not followed, with why; with ``--preview`` it is followed. (An
    annotation of ``Callable`` once typed it as the library's, and the call was
    neither followed nor listed.)"""
    wrap = wrapped / "pkg" / "wrap.py"
    text = WRAPPER.replace(
        "def __init__(self, fn):", f"def __init__(self, fn{annotation}):"
    )
    wrap.write_text("import typing\nfrom typing import Any, Callable\n" + text)
    _, out, _ = run("check", "--show-reach", ".", cwd=wrapped)
    assert (
        "pkg/wrap.py:13:19: `self.fn` not followed, parameter: `fn` is a parameter "
        "of `Wrapper.__init__` (`--preview` follows what callers hand over)"
    ) in out
    _, out, _ = run("check", "--preview", ".", cwd=wrapped)
    assert "pkg/steps.py:2:12: GL101" in out


def test_show_reach_lists_the_handoffs(wrapped: Path) -> None:
    _, out, _ = run("check", "--preview", "--show-reach", ".", cwd=wrapped)
    listing = out.split("Capture regions (1):\n")[1].split("Calls not followed")[0]
    assert listing.splitlines() == [
        "  pkg/wrap.py:10: torch.cuda.graph region",
        "    reaches pkg/steps.py:1 step",
        "    reaches pkg/steps.py:5 clean",
        "    handed over by Wrapper(step) at pkg/train.py:6",
        "    handed over by Wrapper(clean) at pkg/train.py:7",
    ]
    _, out, _ = run(
        "check", "--preview", "--format", "lsp", "--show-reach", ".", cwd=wrapped
    )
    (region,) = json.loads(out)["reach"]["regions"]
    assert [(h["path"], h["line"], h["call"]) for h in region["handoffs"]] == [
        ("pkg/train.py", 6, "Wrapper(step)"),
        ("pkg/train.py", 7, "Wrapper(clean)"),
    ]


def test_lsp_relates_the_handoff_location(wrapped: Path) -> None:
    _, out, _ = run("check", "--preview", "--format", "lsp", ".", cwd=wrapped)
    (found,) = [d for f in json.loads(out) for d in f["diagnostics"]]
    related = [
        (r["location"]["uri"].rsplit("/", 2)[-2:], r["location"]["range"]["start"])
        for r in found["relatedInformation"]
    ]
    messages = [r["message"] for r in found["relatedInformation"]]
    assert related == [
        (["pkg", "train.py"], {"line": 5, "character": 11}),
        (["pkg", "wrap.py"], {"line": 10, "character": 18}),
    ]
    assert messages == [
        "hands the captured code over: Wrapper(step)",
        "calls step() inside the capture region",
    ]


def test_a_cached_run_says_the_same(wrapped: Path) -> None:
    fresh = run("check", "--preview", "--no-cache", ".", cwd=wrapped)
    assert "via Wrapper(step) at pkg/train.py:6" in fresh[1]
    assert run("check", "--preview", ".", cwd=wrapped) == fresh  # written to the cache
    assert run("check", "--preview", ".", cwd=wrapped) == fresh  # read from it


def test_a_helper_that_captures_its_argument_passed_on(tmp_path: Path) -> None:
    """``capture(fn)`` captures ``fn``; ``helper(fn)`` hands its own parameter on to
    it, so what is passed to ``helper`` in another module is captured too."""
    _write(
        tmp_path,
        {
            "lib.py": """\
                import torch

                g = torch.cuda.CUDAGraph()


                def capture(fn, x):
                    with torch.cuda.graph(g):
                        return fn(x)


                def helper(fn, x):
                    return capture(fn, x)
                """,
            "steps.py": STEPS,
            "main.py": """\
                from lib import helper
                from steps import step


                def main(x):
                    return helper(step, x)
                """,
        },
    )
    code, out, _ = run("check", "--preview", ".", cwd=tmp_path)
    assert code == 1
    assert (
        "steps.py:2:12: GL101 `x.sum().item()` copies a device tensor to the host: "
        "fails capture [torch.cuda.graph region at lib.py:7, reached from lib.py:8 "
        "via capture(fn, x) at lib.py:12 -> helper(step, x) at main.py:6 -> step()]"
    ) in out


def test_handed_to_code_that_never_captures_it(tmp_path: Path) -> None:
    """A wrapper that stores a callable but never captures it, and a helper that
    captures something else and runs its argument afterwards: nothing is reached."""
    _write(
        tmp_path,
        {
            "lib.py": """\
                import torch

                g = torch.cuda.CUDAGraph()


                class Keeper:
                    def __init__(self, fn):
                        self.fn = fn

                    def __call__(self, x):
                        return self.fn(x)


                def capture_then(fn, x):
                    with torch.cuda.graph(g):
                        y = x * 2
                    return fn(y)
                """,
            "steps.py": STEPS,
            "main.py": """\
                from lib import Keeper, capture_then
                from steps import step


                def main(x):
                    Keeper(step)(x)
                    return capture_then(step, x)
                """,
        },
    )
    code, out, _ = run("check", "--preview", "--show-reach", ".", cwd=tmp_path)
    assert code == 0
    assert "  lib.py:15: torch.cuda.graph region (reaches no project function)" in out
    assert "handed over" not in out
    assert out.endswith(
        "No CUDA-graph capture hazards found in 1 capture region, 1 reaching no "
        "project function (3 files checked).\n"
    )


def test_a_value_that_cannot_be_resolved_is_not_followed(tmp_path: Path) -> None:
    _write(
        tmp_path,
        {
            "wrap.py": WRAPPER,
            "main.py": """\
                from wrap import Wrapper


                def main(make, x):
                    return Wrapper(make())(x)
                """,
        },
    )
    code, out, _ = run("check", "--preview", "--show-reach", ".", cwd=tmp_path)
    assert code == 0
    assert "  wrap.py:10: torch.cuda.graph region (reaches no project function)" in out
    assert (
        "  wrap.py:11:19: `self.fn` not followed, parameter: `fn` is a parameter of "
        "`Wrapper.__init__`"
    ) in out
    assert "handed over" not in out
    assert out.endswith(
        "No CUDA-graph capture hazards found in 1 capture region, 1 reaching no "
        "project function (2 files checked); 1 call not followed.\n"
    )


def test_a_factory_result_rebound_around_the_wrapper(tmp_path: Path) -> None:
    """In a namespace package (no ``__init__.py`` at its top, imported from the
    project's folder): ``f = get_step()`` returns one of the project's functions,
    ``f = Wrapper(f)`` hands it over, and ``f = Other()`` later in the function is
    not what was handed over."""
    _write(
        tmp_path,
        {
            "proj/core/__init__.py": "",
            "proj/core/wrap.py": WRAPPER,
            "proj/core/steps.py": STEPS
            + textwrap.dedent(
                """\


                def get_step(fast):
                    if fast:
                        chosen = step
                    else:
                        chosen = clean
                    return chosen


                class Other:
                    def __call__(self, x):
                        return x.max().item()
                """
            ),
            "proj/train/__init__.py": "",
            "proj/train/loop.py": """\
                from proj.core.steps import Other, get_step
                from proj.core.wrap import Wrapper


                def main(x, graphs):
                    f = get_step(True)
                    if graphs:
                        f = Wrapper(f)
                    else:
                        f = Other()
                    return f(x)
                """,
        },
    )
    code, out, _ = run("check", "--preview", "--show-reach", ".", cwd=tmp_path)
    assert code == 1
    assert (
        "proj/core/steps.py:2:12: GL101 `x.sum().item()` copies a device tensor to "
        "the host: fails capture [torch.cuda.graph region at proj/core/wrap.py:10, "
        "reached from proj/core/wrap.py:11 via Wrapper(f) at proj/train/loop.py:8 "
        "-> step()]"
    ) in out
    assert "Other.__call__" not in out
    assert "steps.py:22" not in out


def _summarised(monkeypatch: pytest.MonkeyPatch) -> set[str]:
    """The files the resolver has summarised during the test, by name."""
    names: set[str] = set()
    call, prefetch = check._Summaries.__call__, check._Summaries.prefetch

    def called(self: check._Summaries, path: Path, name: str) -> object:
        names.add(path.name)
        return call(self, path, name)

    def fetched(self: check._Summaries, modules: Iterable[tuple[Path, str]]) -> None:
        modules = list(modules)
        names.update(path.name for path, _ in modules)
        prefetch(self, modules)

    monkeypatch.setattr(check._Summaries, "__call__", called)
    monkeypatch.setattr(check._Summaries, "prefetch", fetched)
    return names


def test_only_files_that_import_the_capturing_code_are_summarised(
    wrapped: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file that only names the wrapper (a comment, a word of its own) is not
    summarised in the search for hand-offs: a call from another file imports the
    wrapper or its module."""
    (wrapped / "pkg" / "notes.py").write_text(
        "# Wrapper(step) keeps a step; wrap is a word\n"
        "def Wrapper(step):\n"
        "    return step\n"
    )
    (wrapped / "pkg" / "star.py").write_text(
        "from pkg.wrap import *\n\n\ndef main(fn):\n    return Wrapper(fn)\n"
    )
    summarised = _summarised(monkeypatch)
    results = check_project(sorted(wrapped.rglob("*.py")), Settings(preview=True), 1)
    found = [(Path(r.path).name, d.code) for r in results for d in r.diagnostics]
    assert found == [("steps.py", "GL101")]
    assert "train.py" in summarised and "star.py" in summarised
    assert "notes.py" not in summarised


@pytest.mark.parametrize(
    ("source", "words"),
    [
        ("import a.b.c as d\n", {b"a", b"b", b"c", b"as", b"d"}),
        ("from a.b import c\n", {b"c"}),
        (
            "    from . import (\n        c,\n        d as e,\n    )\n",
            {b"c", b"d", b"as", b"e"},
        ),
        ("from a import b, \\\n    c\n", {b"b", b"c"}),
        ("from a import *\n", {b"*"}),
        ("x = 'import'\nimported = 1\n", set()),
    ],
)
def test_the_words_an_import_names(source: str, words: set[bytes]) -> None:
    assert imported_words(source.encode()) == words


def test_a_self_attribute_hands_over_what_it_holds_at_the_hand_off(
    tmp_path: Path,
) -> None:
    """``self.model = Wrapper(self.model)`` hands over what ``self.model`` holds
    there: the bindings the method made before it (or, where it made none, those of
    the class's other methods), not the alternatives bound after it in that method
    (another wrapper in an ``elif``), nor the wrapper itself."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/wrap.py": WRAPPER,
            "pkg/steps.py": STEPS
            + textwrap.dedent(
                """\


                class Other:
                    def __init__(self, fn):
                        self.fn = fn

                    def __call__(self, x):
                        return x.max().item()
                """
            ),
            "pkg/runner.py": """\
                from pkg.steps import Other, clean, step
                from pkg.wrap import Wrapper


                class Runner:
                    def __init__(self):
                        self.model = clean
                        self.other = clean

                    def load(self, full, split):
                        self.model = step
                        if full:
                            self.model = Wrapper(self.model)
                        elif split:
                            self.model = Other(self.model)

                    def later(self, graphs):
                        if graphs:
                            self.other = Wrapper(self.other)
                        else:
                            self.other = Other(self.other)
                """,
        },
    )
    code, out, _ = run("check", "--preview", "--show-reach", ".", cwd=tmp_path)
    assert code == 1
    found = [line for line in out.splitlines() if ": GL" in line]
    assert len(found) == 1, found
    assert found[0].startswith("pkg/steps.py:2:12: GL101")
    assert "via Wrapper(self.model) at pkg/runner.py:13 -> step()" in found[0]
    listing = out.split("Capture regions (1):\n")[1].split("Calls not followed")[0]
    assert listing.splitlines() == [
        "  pkg/wrap.py:10: torch.cuda.graph region",
        "    reaches pkg/steps.py:1 step",
        "    reaches pkg/steps.py:5 clean",
        "    handed over by Wrapper(self.model) at pkg/runner.py:13",
        "    handed over by Wrapper(self.other) at pkg/runner.py:19",
    ]


def test_a_local_rebound_from_itself_again_and_again_resolves_once(
    tmp_path: Path,
) -> None:
    """``q = q.reshape(...)`` many times over: each binding reads the name it binds,
    and resolving ``q`` anew inside each one grew without bound until the budget
    gave up on the call (GL005)."""
    rebinds = "".join(
        f"    q = q.{m}(2, -1)\n    k = k.{m}(2, -1)\n"
        for m in ["reshape", "view", "flatten", "unflatten"] * 3
    )
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/norm.py": "def norm(q, k):\n"
            + rebinds
            + "    q = q.contiguous()\n    return q.view(-1), k.view(-1).sum().item()\n",
            "pkg/run.py": """\
                import torch

                from pkg.norm import norm


                def main(q, k):
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        norm(q, k)
                """,
        },
    )
    code, out, _ = run("check", "--preview", ".", cwd=tmp_path)
    assert code == 1
    assert "GL005" not in out
    assert "GL101" in out


def test_a_construction_search_summarises_only_files_that_make_the_class(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A parameter annotated with a dataclass holds what the project's constructions
    of it pass: the files that only name the class (annotations, ``isinstance``) are
    not summarised to find them, and the search stops at the first constructions."""
    files = {
        "pkg/__init__.py": "",
        "pkg/spec.py": """\
            from dataclasses import dataclass


            @dataclass
            class Spec:
                step: object = None
            """,
        "pkg/steps.py": STEPS,
        "pkg/make.py": """\
            from pkg.spec import Spec
            from pkg.steps import step

            SPEC = Spec(step=step)
            """,
        "pkg/run.py": """\
            import torch

            from pkg.spec import Spec


            def main(spec: Spec, x):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g):
                    spec.step(x)
            """,
    }
    for i in range(30):  # name the class, never make it
        files[f"pkg/user{i}.py"] = (
            "from pkg.spec import Spec\n\n\ndef use(spec: Spec):\n"
            "    return isinstance(spec, Spec)\n"
        )
    _write(tmp_path, files)
    summarised: list[str] = []
    summarize = runner._summarize

    def counted(job: runner.SummaryJob, settings: Settings) -> runner.Outcome:
        summarised.append(job.module)
        return summarize(job, settings)

    monkeypatch.setattr(runner, "_summarize", counted)
    checked = sorted(tmp_path.rglob("*.py"))
    results = check_project(checked, Settings(preview=True), 1, inline=True)
    found = {(Path(r.path).name, d.code) for r in results for d in r.diagnostics}
    assert ("steps.py", "GL101") in found
    assert "pkg.make" in summarised
    assert not [name for name in summarised if name.startswith("pkg.user")]


def test_the_modules_a_reached_function_calls_into_are_summarised_together(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The walk from a region loads the modules the calls of each level name
    through their imports in one batch, on every worker, instead of one at a time
    as each call is resolved; what it reaches is the same."""
    _write(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": """\
                from pkg import b
                from pkg.c import h


                def f(x):
                    return b.g(x) + h(x)
                """,
            "pkg/b.py": "def g(x):\n    return x.sum().item()\n",
            "pkg/c.py": "def h(x):\n    return x.sum().item()\n",
            "pkg/run.py": """\
                import torch

                from pkg.a import f


                def main(x):
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        f(x)
                """,
        },
    )
    batches: list[list[str]] = []
    alone: list[str] = []
    call, prefetch = check._Summaries.__call__, check._Summaries.prefetch

    def called(self: check._Summaries, path: Path, name: str) -> object:
        if (path, name) not in self._ready:
            alone.append(path.name)
        return call(self, path, name)

    def fetched(self: check._Summaries, modules: Iterable[tuple[Path, str]]) -> None:
        modules = list(modules)
        batches.append(sorted(path.name for path, _ in modules))
        prefetch(self, modules)

    monkeypatch.setattr(check._Summaries, "__call__", called)
    monkeypatch.setattr(check._Summaries, "prefetch", fetched)
    results = check_project(sorted(tmp_path.rglob("*.py")), Settings(), 1)
    found = sorted((Path(r.path).name, d.code) for r in results for d in r.diagnostics)
    assert found == [("b.py", "GL101"), ("c.py", "GL101")]
    assert any({"b.py", "c.py"} <= set(batch) for batch in batches)
    assert "b.py" not in alone and "c.py" not in alone


INSTALLED = {  # dedented below, so that tests can add to a file
    "pkg/__init__.py": "",
    "pkg/grads.py": """\
        import torch


        def finalize(grads):
            torch.cuda.synchronize()


        def log_grads(grads):
            print(len(grads))
        """,
    "pkg/sched.py": """\
        import torch


        def config_of(model):
            return getattr(model, "config")


        def step(model, x):
            config = config_of(model)
            y = x * 2
            config.finalize_func(y)
            return y


        def capture(model, x):
            with torch.cuda.stream(torch.cuda.Stream()):
                step(model, x)  # a warm-up
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                out = step(model, x)
            return out
        """,
    "pkg/train.py": """\
        from pkg.grads import finalize, log_grads
        from pkg.sched import capture


        def main(model, x):
            model.config.finalize_func = finalize
            model.config.log_func = log_grads
            return capture(model, x)
        """,
}
INSTALLED = {name: textwrap.dedent(text) for name, text in INSTALLED.items()}


def test_a_callback_installed_on_an_untyped_object_is_followed(
    tmp_path: Path,
) -> None:
    """``config.finalize_func(y)`` on an object nothing types runs what the project
    installs as ``finalize_func`` (``model.config.finalize_func = finalize``): the
    finding names the write in its chain and is inferred (medium confidence), in
    preview only; what is installed as another attribute is not followed."""
    _write(tmp_path, INSTALLED)
    code, out, _ = run("check", "--preview", "--show-reach", ".", cwd=tmp_path)
    assert code == 1
    (finding,) = [line for line in out.splitlines() if ": GL" in line]
    assert finding.startswith("pkg/grads.py:5:5: GL103")
    assert (
        "via step() -> model.config.finalize_func = finalize at pkg/train.py:6 "
        "-> finalize()] (inferred)"
    ) in finding
    assert "handed over by model.config.finalize_func = finalize at" in out
    assert "log_grads" not in out
    code, out, _ = run("check", "--show-reach", ".", cwd=tmp_path)
    assert code == 0 and "`config.finalize_func` not followed" in out


@pytest.mark.parametrize(
    "installed",
    [
        # a class (a layer spec) or an instance is not a callback
        "model.config.finalize_func = Grads",
        "model.config.finalize_func = Grads()",
        # on the method's own object: the class's attributes say what it holds
        "self.finalize_func = finalize",
        # a value the file neither defines nor imports (a parameter copied over)
        "model.config.finalize_func = fn",
    ],
)
def test_what_is_not_an_installed_callback(tmp_path: Path, installed: str) -> None:
    files = dict(INSTALLED)
    files["pkg/grads.py"] += textwrap.dedent(
        """\


        class Grads:
            def __call__(self, grads):
                torch.cuda.synchronize()
        """
    )
    files["pkg/train.py"] = textwrap.dedent(
        f"""\
        from pkg.grads import Grads, finalize
        from pkg.sched import capture


        class Trainer:
            def main(self, model, x, fn):
                {installed}
                return capture(model, x)
        """
    )
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", ".", cwd=tmp_path)
    assert code == 0 and "GL103" not in out


def test_an_attribute_installed_with_many_callables_is_not_followed(
    tmp_path: Path,
) -> None:
    """An attribute the project installs more than four callables as is too common
    to tell which one a call runs: not followed."""
    files = dict(INSTALLED)
    names = [f"hook{i}" for i in range(5)]
    files["pkg/grads.py"] += "".join(
        f"\n\ndef {name}(grads):\n    torch.cuda.synchronize()\n" for name in names
    )
    files["pkg/train.py"] = (
        f"from pkg.grads import {', '.join(names)}\n"
        "from pkg.sched import capture\n\n\n"
        "def main(model, x):\n"
        + "".join(f"    model.config.finalize_func = {name}\n" for name in names)
        + "    return capture(model, x)\n"
    )
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", ".", cwd=tmp_path)
    assert code == 0 and "GL103" not in out
    files["pkg/train.py"] = files["pkg/train.py"].replace(
        "    model.config.finalize_func = hook4\n", ""
    )
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert code == 1 and out.count("GL103") == 4


@pytest.mark.parametrize(
    ("source", "written"),
    [
        ("cfg.hook = finish\n", [(b"hook", b"finish")]),
        ("a.b.hook = mod.finish  # installed\n", [(b"hook", b"mod.finish")]),
        ("cfg.hook = lambda y: y\n", [(b"hook", b"lambda")]),
        ("self.hook = finish\n", []),
        ("myself.hook = finish\n", [(b"hook", b"finish")]),
        ("cfg.hook = make()\n", []),
        ("cfg.hook == finish\n", []),
        ("cfg.hook += finish\n", []),
    ],
)
def test_the_attribute_writes_a_scan_finds(
    source: str, written: list[tuple[bytes, bytes]]
) -> None:
    assert installs(source.encode())[0] == written


@pytest.mark.parametrize(
    ("source", "kept"),
    [
        ("m.__orig_step__ = m.optimizer_step\n", [b"__orig_step__"]),
        ("m.orig = m.step  # kept\r\n", [b"orig"]),
        ("self.orig = self.step\n", []),
        ("a.m.orig = m.step\n", []),
        ("m.orig = n.step\n", []),
        ("m.orig = m.inner.step\n", []),
        ("m.orig = m.step()\n", []),
        ("am.orig = m.step\n", []),
    ],
)
def test_the_methods_kept_aside_a_scan_finds(source: str, kept: list[bytes]) -> None:
    assert installs(source.encode())[1] == kept


def test_an_attribute_some_class_has_as_a_method_is_not_followed(
    tmp_path: Path,
) -> None:
    """``x.finalize_func()`` on an object nothing types may be a method of any class
    that defines one by that name: what is installed as it is not followed then."""
    files = dict(INSTALLED)
    files["pkg/other.py"] = (
        "class Other:\n    def finalize_func(self, y):\n        return y\n"
    )
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", ".", cwd=tmp_path)
    assert code == 0 and "GL103" not in out


def test_a_capture_helper_is_given_what_every_call_in_the_project_passes(
    tmp_path: Path,
) -> None:
    """In preview, a function that captures, called from other files, takes for
    its parameters what every call passes (a tensor made on the GPU): its region's
    own code and the model it runs are checked with it; a call that passes
    something else leaves the parameter unknown."""
    files = {
        "pkg/__init__.py": "",
        "pkg/graphs.py": """\
            import torch


            class Gate(torch.nn.Module):
                def forward(self, x):
                    if x.sum() > 0:
                        return x * 2
                    return x


            def capture(model, x):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    if x.max() > 5:
                        x = x * 0
                    out = model(x)
                return graph, out
            """,
        "pkg/main.py": """\
            import torch

            from pkg.graphs import Gate, capture


            def main():
                model = Gate().cuda()
                x = torch.ones(4, device="cuda")
                with torch.cuda.stream(torch.cuda.Stream()):
                    model(x)
                graph, out = capture(model, x)
                graph.replay()
            """,
    }
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert code == 1
    found = [line.split(" ")[0] for line in out.splitlines() if ": GL201" in line]
    assert found == ["pkg/graphs.py:6:12:", "pkg/graphs.py:14:12:"]
    _, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert "GL201" not in out  # not without preview: the search reads other files
    files["pkg/other.py"] = (
        "from pkg.graphs import Gate, capture\n\n\n"
        "def later(x):\n    capture(Gate(), x)\n"
    )
    _write(tmp_path, files)
    _, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert "GL201" not in out


LIGHTNING = {
    "pkg/__init__.py": "",
    "pkg/model.py": """\
        import pytorch_lightning as pl


        class Net(pl.LightningModule):
            def training_step(self, batch, batch_idx):
                loss = self.layer(batch).sum()
                return loss.item()
        """,
    "pkg/callback.py": """\
        import pytorch_lightning as pl
        import torch


        def capture(pl_module: "pl.LightningModule", optimizer, graph):
            with torch.cuda.graph(graph):
                pl_module.optimizer_step(0, 0, optimizer)
        """,
}


def test_a_receiver_declared_as_a_library_class_runs_the_projects_overrides(
    tmp_path: Path,
) -> None:
    """In preview, ``pl_module: pl.LightningModule`` may be any project class
    derived from it: ``pl_module.optimizer_step(...)``, the library's, runs the
    ``training_step`` of each (the library model says so), also through a class
    derived from one; where more than eight define one, none is followed."""
    files = {name: textwrap.dedent(text) for name, text in LIGHTNING.items()}
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert code == 1
    (finding,) = [line for line in out.splitlines() if ": GL101" in line]
    assert finding.startswith("pkg/model.py:7:16: GL101")
    assert (
        "via pl_module.optimizer_step(..., ..., optimizer) runs self.training_step "
        "at pkg/callback.py:7 -> Net.training_step()]"
    ) in finding
    _, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert "GL101" not in out  # not without preview
    files["pkg/tuned.py"] = (
        "from pkg.model import Net\n\n\nclass Tuned(Net):\n"
        "    def training_step(self, batch, batch_idx):\n"
        "        return self.layer(batch).sum().tolist()\n"
    )
    _write(tmp_path, files)
    _, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert "pkg/tuned.py:6:16: GL101" in out and "pkg/model.py:7:16: GL101" in out
    files["pkg/many.py"] = "import pytorch_lightning as pl\n" + "".join(
        f"\n\nclass M{i}(pl.LightningModule):\n"
        "    def training_step(self, batch, batch_idx):\n        return batch\n"
        for i in range(8)
    )
    _write(tmp_path, files)
    _, out, _ = run(
        "check", "--preview", "--show-reach", "--no-cache", ".", cwd=tmp_path
    )
    assert "GL101" not in out and "reaches no project function" in out


def test_a_method_kept_aside_and_called_under_capture_runs_what_the_library_runs(
    tmp_path: Path,
) -> None:
    """A callback keeps the module's own ``optimizer_step`` aside
    (``pl_module.__orig_optimizer_step__ = pl_module.optimizer_step``), installs a
    replacement with ``types.MethodType`` and calls the original under capture:
    in preview, that is Lightning's ``optimizer_step`` of the declared module, so
    the hooks the library model names run, in the project classes derived from it,
    also through a base class in another file. The chain shows the write; the
    findings are inferred."""
    files = {
        "pkg/__init__.py": "",
        "pkg/callback.py": """\
            from types import MethodType

            import pytorch_lightning as pl
            import torch


            def get_optimizer_step(state):
                def optimizer_step(self, epoch, batch_idx, optimizer, closure=None):
                    with torch.cuda.graph(state.graph):
                        self.__orig_optimizer_step__(epoch, batch_idx, optimizer, closure)

                return optimizer_step


            class GraphCallback(pl.Callback):
                def on_train_start(self, trainer, pl_module: "pl.LightningModule"):
                    pl_module.__orig_optimizer_step__ = pl_module.optimizer_step
                    step = get_optimizer_step(self.state)
                    pl_module.optimizer_step = MethodType(step, pl_module)
            """,
        "pkg/base.py": """\
            import pytorch_lightning as pl


            class Base(pl.LightningModule):
                pass
            """,
        "pkg/model.py": """\
            import torch

            from pkg.base import Base


            class Net(Base):
                def configure_gradient_clipping(self, optimizer, val=None, algo=None):
                    norm = torch.nn.utils.clip_grad_norm_(self.parameters(), 1.0)
                    if norm > 10:
                        self.skipped = True
            """,
    }
    _write(tmp_path, files)
    code, out, _ = run("check", "--preview", "--no-cache", ".", cwd=tmp_path)
    assert code == 1
    (finding,) = [line for line in out.splitlines() if ": GL" in line]
    assert finding.startswith("pkg/model.py:9:12: GL201")
    assert (
        "via pl_module.__orig_optimizer_step__ = pl_module.optimizer_step at "
        "pkg/callback.py:17 -> self.__orig_optimizer_step__(epoch, batch_idx, "
        "optimizer, closure) runs self.configure_gradient_clipping at "
        "pkg/callback.py:10 -> Net.configure_gradient_clipping()] (inferred)"
    ) in finding
    _, out, _ = run("check", "--no-cache", ".", cwd=tmp_path)
    assert ": GL" not in out  # not without preview


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ("    def forward(self, x):\n", True),
        ("async def forward (self):\n", True),
        ("def forward_all(self):\n", False),
        ("self.forward(x)\n", False),
        ("# def forward\n", False),
    ],
)
def test_a_search_for_a_method_reads_its_def(source: str, found: bool) -> None:
    """The files searched for a class's overrides of a method are those whose text
    defines a function of that name (the others are not summarised)."""
    assert names(source.encode(), b"forward", DEF) is found


@pytest.mark.parametrize(
    ("source", "how", "named"),
    [
        ("x = step\n", "word", True),
        ("x = stepper\ny = a_step\n", "word", False),
        ("y = a_step\nstep(1)\n", "call", True),
        ("step = 1\nfrom m import step as s\n", "call", True),
        ("step = 1\nprint(step)\n", "call", False),
        ("def undefined(): step\ndef  step (x): pass\n", "def", True),
        ("def other(step): pass\n", "def", False),
        ("class A(B): pass\nclass C(\n    mod.step, D):\n", "base", True),
        ("class A(B): step\n", "base", False),
        ("subclass = 1\nclass C(D, step):\n", "base", True),
        ("class A(B, f()): x = step\n", "base", False),
    ],
)
def test_where_a_text_names_a_word(source: str, how: str, named: bool) -> None:
    assert names(source.encode(), b"step", how) is named
