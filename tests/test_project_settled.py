"""None-ness of parameters under capture: a test of a parameter for None that the
capturing callers settle keeps its branch out of the capture (issue #27)."""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

from graphlint.diagnostics import Hop, RegionKind, RegionRef
from graphlint.engine import analyse_source
from graphlint.facts.guards import Settled
from graphlint.project.check import check_project
from graphlint.project.resolve import Fn
from graphlint.project.settle import _memoises
from graphlint.project.summary import Nullness, summarize
from graphlint.project.survey import survey_project
from graphlint.settings import Settings
from tests.conftest import expectations

CASES = """\
    from typing import Optional, Tuple

    import torch


    class Plan:
        sizes: Tuple[int, ...]
        scale: Optional[torch.Tensor] = None


    def annotated(x, sizes=None):
        if sizes is None:
            x.sum().item()
        n = x.sum().item() if sizes is None else len(sizes)
        return x * n


    def passed_on(x, sizes=None):
        return inner(x, sizes)


    def inner(x, sizes=None):
        if sizes is not None:
            return x
        return x * x.sum().item()


    def field(x, sizes=None):
        if sizes is None:
            x.sum().item()


    def optional_field(x, scale=None):
        if scale is None:
            x.sum().item()  # expect: GL101


    def instance(x, plan=None):
        if plan is None:
            x.sum().item()


    def omitted(x, sizes=None):
        if sizes is not None:
            x.sum().item()
        if sizes is None:
            x.max().item()  # expect: GL101


    def mixed(x, sizes=None):
        if sizes is None:
            x.sum().item()  # expect: GL101


    def starred(x, sizes=None):
        if sizes is None:
            x.sum().item()  # expect: GL101


    def rebound(x, sizes=None):
        sizes = tuple(sizes) if sizes else None
        if sizes is None:
            x.sum().item()  # expect: GL101


    def looped(x, sizes=None):
        for _ in range(2):
            if sizes is None:
                x.sum().item()  # expect: GL101
            sizes = None


    def filled(x, counts, sizes=None):
        if sizes is None:
            sizes = sizes_of(counts)
        return x.split(sizes)


    def sizes_of(counts):
        return tuple(counts.tolist())


    def holder(x, sizes=None):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            held(x, sizes)
        return g


    def held(x, sizes=None):
        if sizes is None:
            x.sum().item()  # expect: GL101


    def capture(x: torch.Tensor, sizes: Tuple[int, ...], plan: Plan, rest: tuple):
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            annotated(x, sizes)
            passed_on(x, sizes=sizes)
            field(x, plan.sizes)
            optional_field(x, plan.scale)
            instance(x, Plan())
            omitted(x)
            mixed(x, sizes)
            mixed(x)
            starred(x, *rest)
            rebound(x, sizes)
            looped(x, sizes)
            filled(x, x, sizes)
            holder(x, sizes)
        return g
"""


def test_tests_the_capturing_calls_settle_are_not_reported(tmp_path: Path) -> None:
    """Settled: an annotated argument, one passed on through another function, a
    dataclass field, a new instance; in an ``if`` and in a conditional expression,
    and the call ``filled`` makes only where its argument is None is not
    followed. Not settled: an Optional field, a parameter left out (None: the
    other branch runs), calls that disagree, ``*args``, a parameter rebound before
    the test or in a loop around it, and the parameter of a function that holds a
    region (which captures whatever its callers, under capture or not, pass)."""
    source = textwrap.dedent(CASES)
    (tmp_path / "cases.py").write_text(source)
    results = check_project([tmp_path / "cases.py"], Settings(), 1)
    got = {(d.line, d.code) for r in results for d in r.diagnostics}
    assert got - {(line, "GL703") for line, _ in got} == expectations(source)


def _summary(source: str, name: str):  # type: ignore[no-untyped-def]
    module = summarize(ast.parse(textwrap.dedent(source)), "m", "m.py", None)
    return module, module.functions[name]


def test_summaries_say_what_calls_pass_and_which_parameters_are_tested() -> None:
    module, fn = _summary(
        """\
        from typing import Optional, Tuple, TypeVar
        import torch
        Bounds = Tuple[int, ...]
        T = TypeVar("T")

        class Meta:
            grid: Bounds
            scale: Optional[torch.Tensor] = None

        def f(x: torch.Tensor, b: Bounds, t: T, m: "Meta", o: Optional[Meta] = None,
              n: torch.Tensor = None, *args, k=(), **kw):
            y = x if o is None else m
            g(None, x, Meta(), torch.zeros(1), [1], m.grid, y, *args)
            h(k=k, o=o or ())
            Meta.update(self, o)
            return n is not None and use(n)
        """,
        "f",
    )
    assert fn.omitted == {
        "x": "",
        "b": "",
        "t": "",
        "m": "",
        "o": "none",
        "n": "none",
        "k": "some",
    }
    # ``n: Tensor = None`` is Optional; a type variable may be None
    assert fn.annotated == {"x": "some", "b": "some", "m": "Meta"}
    assert module.classes["Meta"].fields == {"grid": "some"}
    assert fn.tested == ["o", "n"]
    calls = {c.callee: c for c in fn.calls}
    assert calls["g"].nullness == Nullness(
        ("none", "=x", "()Meta", "some", "some", ".m.grid", "=x|=m"), (), True
    )
    assert calls["h"].nullness == Nullness((), (("k", "=k"), ("o", "some")))
    assert calls["Meta.update"].nullness == Nullness((), (), True)  # ``self`` first
    assert calls["use"].guards == ('["not",["none","n"]]',)  # right of ``and``


def test_a_parameter_rebound_before_a_test_or_in_a_loop_is_not_tested() -> None:
    _, fn = _summary(
        """\
        def f(a=None, b=None, c=None, d=None):
            if a is None:
                a = 1
            b = b or 1
            if b is None:
                pass
            while c is None:
                c = 1
            for _ in range(2):
                if d is None:
                    print(d)
                d = 1
        """,
        "f",
    )
    # ``a`` is rebound after its test; the loops come back to theirs
    assert fn.tested == ["a"]
    assert fn.rebound == {"a": 3}


def test_settled_tests_count_under_the_region_that_settles_them_only() -> None:
    """A function reached from elsewhere with ``sizes`` always None: its branch
    for a given ``sizes`` is not captured there, but still is in the function's
    own region, which runs whatever its callers pass."""
    source = textwrap.dedent(
        """\
        import torch

        def step(x, sizes=None):
            if sizes is not None:
                x.sum().item()
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                if sizes is not None:
                    x.max().item()  # expect: GL101
            return g
        """
    )
    hop = Hop("other.py", 3, 4, "step()")
    how = RegionRef(
        RegionKind.MANUAL,
        2,
        "torch.cuda.graph",
        "other.py",
        (hop,),
        settled=(Settled("sizes", none=True),),
    )
    found = analyse_source(source, "step.py", external={"step": how}).diagnostics
    assert {(d.line, d.code) for d in found} == set()  # the reached code: silent
    alone = analyse_source(source, "step.py").diagnostics
    assert {(d.line, d.code) for d in alone} == expectations(source)


def test_a_conditional_expression_evaluates_one_branch_under_capture() -> None:
    source = textwrap.dedent(
        """\
        import torch

        def run(x):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                live = torch.cuda.is_current_stream_capturing()
                n = 0 if live else x.sum().item()
                m = x.max().item() if live else 0  # expect: GL101
            return g, n, m
        """
    )
    found = analyse_source(source, "run.py").diagnostics
    got = {(d.line, d.code) for d in found if d.code != "GL703"}
    assert got == expectations(source)


def test_calls_in_blocks_that_settle_their_own_test_are_marked() -> None:
    _, fn = _summary(
        """\
        def f(self, key, seen, memo):
            if self.mgr is None:
                self.mgr = lazy()
            if key not in memo:
                memo[key] = probe(key)
            if key not in seen:
                seen.add(key)
                audit(key)
            if not hasattr(self, "table"):
                self.table = build()
            if not self.ready:
                warm()
                self.ready = True
            if self.mgr is not None:
                kept()
            else:
                self.mgr = other()
            if self.buf is None:
                made_again()  # nothing stores it: the test stays true
            if self.buf is None:
                self.other = elsewhere()
            if key in memo:
                memo[key] = wrong()  # a key that is there already
            def later():
                called_later()
            self.hook = lambda: deferred()
            if key is None:  # a local: the next call tests it anew
                key = fresh()
            cache = {}
            if key not in cache:
                cache[key] = fresh_too()
        """,
        "f",
    )
    settled = {c.callee for c in fn.calls if c.settled}
    assert settled == {"lazy", "probe", "seen.add", "audit", "build", "warm", "other"}
    _, g = _summary(
        """\
        _MGR = None
        def g():
            global _MGR
            if _MGR is None:
                _MGR = make()
        """,
        "g",
    )
    assert [c.settled for c in g.calls] == [True]


def test_an_entry_read_with_get_is_the_entry_its_block_fills() -> None:
    """``if seen.get(k) is v: return`` ... ``seen[k] = v``: the calls after the
    early exit run at warm-up only; a test of another entry settles nothing."""
    _, fn = _summary(
        """\
        def f(self, key, generation):
            if self.seen.get(key) is generation:
                return
            validate(generation)
            self.seen[key] = generation
        """,
        "f",
    )
    assert [(c.callee, c.settled) for c in fn.calls] == [
        ("self.seen.get", False),
        ("validate", True),
    ]
    _, other = _summary(
        """\
        def f(self, key, generation):
            if self.seen.get(key, None) == generation:
                return
            validate(generation)
            self.seen["all"] = generation
        """,
        "f",
    )
    assert [c.settled for c in other.calls if c.callee == "validate"] == [False]


def test_an_early_exit_on_two_parts_is_settled_when_the_rest_makes_both_true() -> None:
    """``if self.ready and self.key == key: return``: the calls after it run at
    warm-up only when the rest stores both parts; with one stored, the capture
    runs them again."""
    source = """\
        def f(self, key):
            if self.ready and self.key == key:
                return
            build(key)
            self.ready = True
            self.key = key
        """
    one = source.replace("self.key = key", "pass")
    for text, settled in ((source, True), (one, False)):
        _, fn = _summary(text, "f")
        assert [c.settled for c in fn.calls if c.callee == "build"] == [settled]


def test_a_global_of_a_nested_function_is_not_the_enclosing_ones() -> None:
    """``global table`` in a nested function leaves the enclosing function's own
    ``table`` a local: a block filling it settles nothing for the next call."""
    _, fn = _summary(
        """\
        def f():
            def reset():
                global table
                table = None
            table = {}
            if "k" not in table:
                fill()
                table["k"] = 1
        """,
        "f",
    )
    assert [c.settled for c in fn.calls if c.callee == "fill"] == [False]
    assert fn.shared == []


def test_a_memoising_decorator_is_told_from_a_wrapper_that_calls_every_time() -> None:
    module, _ = _summary(
        """\
        def cache_once(fn):
            memo = {}
            def wrapper(*args):
                if args not in memo:
                    memo[args] = fn(*args)
                return memo[args]
            return wrapper

        def traced(fn):
            def wrapper(*args):
                print(args)
                return fn(*args)
            return wrapper

        def both(fn):
            memo = {}
            def wrapper(*args):
                if args not in memo:
                    memo[args] = fn(*args)
                return fn(*args)
            return wrapper
        """,
        "cache_once",
    )
    found = {
        name: _memoises(Fn(module, module.functions[name]))
        for name in ("cache_once", "traced", "both")
    }
    assert found == {"cache_once": True, "traced": False, "both": False}


def test_a_memoised_function_is_listed_as_not_followed_with_why(tmp_path: Path) -> None:
    """A call of a ``functools.cache`` function under capture is not followed, and
    ``--show-reach`` says why: warm-up ran it, the capture reuses what it kept."""
    (tmp_path / "plan.py").write_text(
        textwrap.dedent(
            """\
            import functools

            import torch


            @functools.cache
            def plan(n):
                print("planning", n)
                return n * 2


            x = torch.zeros(4, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                y = x * plan(4)
            """
        )
    )
    checked = survey_project([tmp_path / "plan.py"], Settings(), 1)
    assert not [d for r in checked.results for d in r.diagnostics if d.code == "GL401"]
    (call,) = [u for u in checked.survey.unfollowed if u.callee == "plan"]
    assert call.reason.value == "eager function"
    assert (
        call.detail == "`plan.plan` is memoised: warm-up runs it, the capture reuses it"
    )


CORRELATED_CALLER = """\
import torch

from lib import run


class Runner:
    def __init__(self, config):
        self.config = config

    @property
    def size(self):
        return self.config.world_size

    def capture(self, x):
        counts = torch.full((self.size,), 4, device="cpu") if self.size > 1 else None

        def step():
            return run(x, self.config, counts=counts)

        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
"""

CORRELATED_CALLEE = """\
def run(x, config, counts=None):
    if counts is None and config.world_size > 1:
        counts = exchange(x)
    if counts is None and config.rank == 0:
        counts = gather(x)
    return x * 2


def exchange(x):
    return x.sum().item()


def gather(x):
    return x.max().item()
"""


def test_a_fallback_for_what_the_caller_did_not_compute_is_not_captured(
    tmp_path: Path,
) -> None:
    """The caller passes ``counts`` exactly when ``self.size > 1`` (a property
    returning ``self.config.world_size``, through a closure); the callee computes it
    itself when it is None and ``config.world_size > 1``, the same test through the
    argument ``config``: that fallback never runs under this capture. A fallback
    under another test (``config.rank == 0``) does."""
    (tmp_path / "main.py").write_text(CORRELATED_CALLER)
    (tmp_path / "lib.py").write_text(CORRELATED_CALLEE)
    results = check_project([tmp_path / "main.py"], Settings(), 1)
    found = {
        (Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics
    }
    assert ("lib.py", 14, "GL101") in found  # gather, under ``config.rank == 0``
    assert ("lib.py", 10, "GL101") not in found  # exchange, the correlated fallback


PASSED_ON_CALLER = """\
import torch

from lib import run


class Runner:
    def __init__(self, config):
        self.config = config
        self.x = torch.zeros(4, device="cuda")

    @property
    def size(self):
        return self.config.world_size

    def capture(self):
        counts = torch.full((self.size,), 4, device="cpu") if self.size > 1 else None
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            self.draft(counts)

    def draft(self, counts):
        return self._run(counts=counts)

    def _run(self, counts):
        return run(self.x, self.config, counts=counts)
"""


def _found(results: list) -> set[tuple[str, int, str]]:  # type: ignore[type-arg]
    return {(Path(r.path).name, d.line, d.code) for r in results for d in r.diagnostics}


def test_the_fallback_is_weighed_through_callers_that_pass_the_value_on(
    tmp_path: Path,
) -> None:
    """``counts`` reaches ``run`` through two methods that pass it on, and each call
    on the way says what ``run``'s ``config`` is in the capturing method's terms."""
    (tmp_path / "main.py").write_text(PASSED_ON_CALLER)
    (tmp_path / "lib.py").write_text(CORRELATED_CALLEE)
    found = _found(check_project([tmp_path / "main.py"], Settings(), 1))
    assert ("lib.py", 14, "GL101") in found
    assert ("lib.py", 10, "GL101") not in found


def test_the_fallback_is_weighed_through_a_lambda_and_a_base_class_property(
    tmp_path: Path,
) -> None:
    """A manager (its ``size`` property defined by a base class in another module)
    captures a lambda that calls a bound method it was handed with ``counts``; the
    lambda's call passes the value, and the property is written out."""
    (tmp_path / "base.py").write_text(
        textwrap.dedent(
            """\
            class Base:
                def __init__(self, config):
                    self.config = config

                @property
                def size(self):
                    return self.config.world_size
            """
        )
    )
    (tmp_path / "manager.py").write_text(
        textwrap.dedent(
            """\
            import torch

            from base import Base


            class Manager(Base):
                def capture(self, forward):
                    counts = (
                        torch.full((self.size,), 4, device="cpu")
                        if self.size > 1
                        else None
                    )
                    step = lambda: forward(counts)
                    g = torch.cuda.CUDAGraph()
                    with torch.cuda.graph(g):
                        step()
            """
        )
    )
    (tmp_path / "drafter.py").write_text(
        textwrap.dedent(
            """\
            import torch

            from lib import run
            from manager import Manager


            class Drafter:
                def __init__(self, config):
                    self.config = config
                    self.manager = Manager(config)
                    self.x = torch.zeros(4, device="cuda")

                def capture(self):
                    self.manager.capture(self.draft)

                def draft(self, counts):
                    return run(self.x, self.config, counts=counts)
            """
        )
    )
    (tmp_path / "lib.py").write_text(CORRELATED_CALLEE)
    files = [tmp_path / n for n in ("base.py", "manager.py", "drafter.py", "lib.py")]
    found = _found(check_project(files, Settings(preview=True), 1))
    assert ("lib.py", 14, "GL101") in found
    assert ("lib.py", 10, "GL101") not in found


def test_summaries_say_which_arguments_are_tensors_made_on_the_host_or_gpu() -> None:
    """``CallSite.host`` and ``CallSite.device``: a factory's device, ``.cpu()``,
    ``.cuda()`` and ``.to("cuda")`` of a tensor, a local bound once to one; not a
    module's ``.cuda()``, a ``.to(dtype)`` or a device in a variable."""
    _, fn = _summary(
        """\
        import torch

        def g(dev):
            z = torch.randn(4).cuda()
            m = torch.nn.Linear(2, 2).cuda()
            f(z, torch.ones(1), torch.empty(1, device=torch.device("cuda:0")),
              torch.zeros(2, device=dev), m, z.to(torch.float16), z.cpu(),
              w=torch.ones(1).to("cuda"), v=torch.ones(1, device="cpu"))
        """,
        "g",
    )
    (call,) = [c for c in fn.calls if c.callee == "f"]
    assert call.device == ("0", "2", "w")
    assert call.host == ("1", "6", "v")


EXIT_IN_WITH = """\
import contextlib

import torch


def read(bounds):
    return bounds.max().item()


def validate(bounds):
    with torch.cuda.device(bounds.device):
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("validate before capture")
    lower, upper = bounds.cpu().tolist()
    return read(bounds) > lower


def swallowed(bounds):
    with contextlib.suppress(RuntimeError):
        if torch.cuda.is_current_stream_capturing():
            raise RuntimeError("validate before capture")
    return bounds.sum().item()
"""


def test_an_early_exit_inside_a_with_block_guards_what_follows_it(
    tmp_path: Path,
) -> None:
    """``if capturing(): raise`` inside ``with torch.cuda.device(d):`` leaves the
    block and the function: the ``.cpu()`` after it, and the call of ``read``, do
    not run under capture (in the file, and for reach). Under ``suppress`` the code
    after the block runs anyway."""
    (tmp_path / "lib.py").write_text(EXIT_IN_WITH)
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """\
            import torch

            from lib import swallowed, validate

            x = torch.zeros(2, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                validate(x)
                swallowed(x)
            """
        )
    )
    found = _found(check_project([tmp_path / "main.py"], Settings(), 1))
    assert {(f, line) for f, line, code in found if code == "GL101"} == {("lib.py", 22)}


FLAGS = """\
def lengths(cu):
    return (cu[1:] - cu[:-1]).tolist()


def rope(t, cu, fused: bool = False):
    if fused:
        return t * 2
    sizes = (cu[1:] - cu[:-1]).tolist()
    lengths(cu)
    return t.split(sizes)


def other(t, cu, fast=False):
    if fast:
        return t * 2
    return cu.max().item()


def mixed(t, cu, fast=False):
    if fast:
        return t * 2
    return cu.min().item()


def passes_on(t, cu, fused):
    return rope(t, cu, fused=fused)
"""


def test_a_flag_every_call_passes_as_a_constant_settles_its_tests(
    tmp_path: Path,
) -> None:
    """``rope(..., fused=True)``, also through a caller that passes its own
    parameter on: the code after ``if fused: return`` (and the call it makes) does
    not run under capture. ``other``'s default ``fast=False`` leaves its ``.item()``
    running; ``mixed`` is called with both values, so its test stays unknown."""
    (tmp_path / "lib.py").write_text(FLAGS)
    (tmp_path / "main.py").write_text(
        textwrap.dedent(
            """\
            import torch

            from lib import mixed, other, passes_on, rope

            t = torch.zeros(4, device="cuda")
            cu = torch.zeros(3, dtype=torch.int32, device="cuda")
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                rope(t, cu, fused=True)
                passes_on(t, cu, True)
                other(t, cu)
                mixed(t, cu, fast=True)
                mixed(t, cu, fast=False)
            """
        )
    )
    found = _found(check_project([tmp_path / "main.py"], Settings(), 1))
    assert {(f, line) for f, line, code in found if code == "GL101"} == {
        ("lib.py", 16),
        ("lib.py", 22),
    }
