"""Where a cold ``graphlint check`` spends its time, phase by phase.

    python bench/phases.py ~/rw-trees/megatron-lm [--preview] [--repeat 3]

Runs the check of TREE in one new interpreter (the workers' jobs inline, as
``lint_source`` runs them), with no cache, and times each phase of the analysis:
the reading and CPython pre-screening of the files a worker gets (with the
statements nested too deeply taken out), LibCST's parse, the positions (computed a
statement at a time where a phase asks for them: counted as positions, not as that
phase), the facts' walk and replays (scopes, regions, the set-up's replay, then host
state and flow in one replay), the rules' replay, the module summaries and the
project's reach.
Each figure is the time spent in that phase itself: a summary made while reach
resolves a call counts as a summary, not as reach. "other" is the rest of the run:
collecting and screening the files, the configuration, merging the results. One
process runs what the workers would share, so the total is about the CPU time of
a cold run, not its wall time.

The figures are those of the fastest of ``--repeat`` runs, with how many files were
analysed (pass one and the project pass together) and how many modules were
summarised.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import graphlint.engine as engine
import graphlint.facts.analysis as analysis
import graphlint.facts.positions as positions
import graphlint.project.check as check
import graphlint.project.reach as reach
import graphlint.runner as runner
from graphlint.lint import Choices, lint
from graphlint.settings import Settings

F = TypeVar("F", bound=Callable[..., Any])

# (module, attribute) of each phase's function, as the code that calls it names it
PHASES: dict[str, list[tuple[object, str]]] = {
    "read and pre-screen": [(engine, "source_of"), (engine, "_skip_deep")],
    "parse (LibCST)": [(engine, "parse_module")],
    # computed when asked (``Positions._compute``), inside whichever phase asks
    "positions": [(engine, "positions_of"), (positions.Positions, "_compute")],
    "facts: scopes": [(analysis, "walk")],
    "facts: regions": [(analysis, "find_regions")],
    "facts: state, set-up, flow": [
        (analysis, "replay"),
        (analysis, "replay_together"),
    ],
    "rules": [(engine, "replay_rules")],
    "summaries": [(runner, "_summarize")],
    "reach": [(reach.Project, "reach")],
}


POOL = "open_pool"  # what ``project.check`` runs its jobs on


def _inline(size: int, settings: Settings, progress: object = None) -> object:
    """``open_pool``'s stand-in: the jobs run in this process, one by one, as
    ``lint_source`` runs them."""
    return nullcontext(runner.Inline(settings))


class Clock:
    """Time spent in each phase itself: a phase entered inside another is taken
    off the outer one's figure."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = dict.fromkeys(PHASES, 0.0)
        self.calls: dict[str, int] = dict.fromkeys(PHASES, 0)
        self._inner: list[float] = []  # per open phase: time of phases inside it

    @contextmanager
    def phase(self, name: str) -> Iterator[None]:
        self._inner.append(0.0)
        start = time.perf_counter()
        try:
            yield
        finally:
            took = time.perf_counter() - start
            inner = self._inner.pop()
            self.spent[name] += took - inner
            self.calls[name] += 1
            if self._inner:
                self._inner[-1] += took

    def wrap(self, name: str, function: F) -> F:
        def timed(*args: Any, **kwargs: Any) -> Any:
            with self.phase(name):
                return function(*args, **kwargs)

        return timed  # type: ignore[return-value]


def measure(
    tree: Path, preview: bool
) -> tuple[dict[str, float], dict[str, int], float]:
    """One cold check of ``tree`` in this process: each phase's own seconds and
    calls, and the whole run's seconds."""
    clock = Clock()
    replaced: list[tuple[object, str, object]] = [
        (owner, attribute, clock.wrap(name, getattr(owner, attribute)))
        for name, places in PHASES.items()
        for owner, attribute in places
    ]
    replaced.append((check, POOL, _inline))
    saved = [
        (owner, attribute, getattr(owner, attribute))
        for owner, attribute, _ in replaced
    ]
    try:
        for owner, attribute, replacement in replaced:
            setattr(owner, attribute, replacement)
        start = time.perf_counter()
        lint([tree], no_cache=True, chosen=Choices(preview=preview))
        total = time.perf_counter() - start
    finally:
        for owner, attribute, original in saved:
            setattr(owner, attribute, original)
    return clock.spent, clock.calls, total


def table(spent: dict[str, float], calls: dict[str, int], total: float) -> str:
    rows = ["| phase | seconds | share | calls |", "|---|---|---|---|"]
    other = total - sum(spent.values())
    for name, seconds in [*spent.items(), ("other", other)]:
        count = str(calls[name]) if name in calls else "-"
        share = seconds / total if total else 0.0
        rows.append(f"| {name} | {seconds:.2f} | {share:.0%} | {count} |")
    rows.append(f"| **all** | **{total:.2f}** | 100% | |")
    return "\n".join(rows)


def _fresh(tree: Path, preview: bool) -> tuple[dict[str, float], dict[str, int], float]:
    """``measure`` in a new interpreter: nothing parsed or summarised by an earlier
    run is at hand (the engine keeps trees between passes)."""
    command = [sys.executable, __file__, str(tree), "--json"]
    done = subprocess.run(
        [*command, *(["--preview"] if preview else [])],
        capture_output=True,
        text=True,
        check=True,
    )
    spent, calls, total = json.loads(done.stdout)
    return spent, calls, total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("tree", type=Path, help="the folder to check")
    parser.add_argument("--preview", action="store_true", help="check with --preview")
    parser.add_argument(
        "--repeat", type=int, default=1, help="runs; the fastest counts"
    )
    parser.add_argument("--json", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if not args.tree.is_dir():
        parser.error(f"{args.tree} is not a folder")
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    if args.json:  # one run, for ``_fresh``
        print(json.dumps(measure(args.tree, args.preview)))
        return 0
    runs = [_fresh(args.tree, args.preview) for _ in range(args.repeat)]
    spent, calls, total = min(runs, key=lambda run: run[2])
    mode = " --preview" if args.preview else ""
    print(f"graphlint check {args.tree}{mode} --no-cache, in one process")
    print(
        f"(fastest of {args.repeat}, each in a new interpreter; files analysed: "
        f"{calls['facts: scopes']}, modules summarised: {calls['summaries']})\n"
    )
    print(table(spent, calls, total))
    return 0


if __name__ == "__main__":
    sys.exit(main())
