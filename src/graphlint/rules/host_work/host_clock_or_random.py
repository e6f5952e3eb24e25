"""GL402: host clocks and host random numbers under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Outcome
from graphlint.rule import Rule, Scope

_FUNCTIONS = frozenset(
    {
        "time.time",
        "time.time_ns",
        "time.perf_counter",
        "time.perf_counter_ns",
        "time.monotonic",
        "time.monotonic_ns",
        "time.process_time",
        "datetime.datetime.now",
        "datetime.datetime.utcnow",
        "datetime.datetime.today",
        "datetime.date.today",
        "os.urandom",
        "uuid.uuid1",
        "uuid.uuid4",
    }
)
_PREFIXES = ("random.", "numpy.random.", "secrets.")


class HostClockOrRandom(Rule):
    """`time.time()`, `random.random()`, `np.random.*` under capture: one value."""

    code = "GL402"
    message = "`{call}` is evaluated on the host once, while capturing"
    fix_title = (
        "Generate it on the device (`torch.rand(..., device='cuda')`) or write it into "
        "a static tensor with `.fill_()` before each `replay()`"
    )
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    host_work = True
    consequence = "replays reuse the value from capture"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        q = self.qualname(node.func)
        if q is not None and (q in _FUNCTIONS or q.startswith(_PREFIXES)):
            self.report(node, region, call=self.code_of(node))
