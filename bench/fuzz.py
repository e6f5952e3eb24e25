"""Fuzz ``graphlint check``: generated and mutated programs must never break it.

    python bench/fuzz.py --count 3000 --seed 1
    python bench/fuzz.py --count 500 --seed 7 --out /tmp/fuzz --jobs 4

Programs come from two sources, drawn deterministically from the seed:

- hypothesmith modules (``from_grammar``), each placed in a capture region: the body
  of ``with torch.cuda.graph(g):``, of a function marked ``@graphlint.capture_region``
  or of a function passed to ``torch.compile(fn, mode="reduce-overhead")``; the first
  wrapping that still compiles is kept;
- mutants of the files under ``fixtures/`` (lines deleted, duplicated, swapped,
  re-indented, nested, truncated, tokens and deep expressions inserted, bytes broken);
  most do not compile, which must give a GL00x outcome.

All programs are checked in one call of ``check_project`` and again one file per call
(under a wall-clock guard), and a sample goes through the real command
``graphlint check --format lsp FILE``. A failure is an exception that escapes, a GL009
(internal error), a hang or a GL005 time-out or crash, a GL001/GL002 on a program that
compiles or no GL00x on one that does not, different findings in batch and alone, or a
command that exits 2, writes to stderr or prints no JSON. Each failing program is
written with what went wrong to the failures folder; the exit code is 1 if any failed.
POSIX only: the guard is SIGALRM and the one-by-one runs share a fork pool.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import multiprocessing
import os
import random
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import repeat
from pathlib import Path
from types import FrameType

import hypothesmith
from hypothesis import HealthCheck, Phase, Verbosity, given, seed, settings
from hypothesis import strategies as st

from graphlint.diagnostics import FileResult
from graphlint.engine import lint_source
from graphlint.project.check import check_project
from graphlint.rule import all_checks
from graphlint.settings import Settings

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures"
TOOL_CODES = frozenset({"GL001", "GL002", "GL003", "GL004", "GL005"})

# Where a generated module goes: ``{body}`` is the module, indented, then a hazard.
WRAPPERS = {
    "torch.cuda.graph": (
        "import torch\n\nx = torch.zeros(8, device='cuda')\n"
        "g = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n{body}"
    ),
    "capture_region": (
        "import graphlint\nimport torch\n\n\n"
        "@graphlint.capture_region\ndef step(x):\n{body}"
    ),
    "torch.compile": (
        "import torch\n\n\ndef step(x):\n{body}\n\n"
        'compiled = torch.compile(step, mode="reduce-overhead")\n'
    ),
}
# Appended to a generated body, so that rules fire next to the odd syntax.
HAZARDS = (
    "",
    "y = x.sum().item()\n",
    "if x.mean() > 0:\n    x.zero_()\n",
    "print(x)\n",
    "x = torch.ones(8)\n",
    "for _ in range(int(x.sum())):\n    pass\n",
)
TOKENS = (
    *"()[]{}:,.=\\#'\"@*",
    *("**", "->", ":=", '"""', "\t", "\n", "\r", "\x0c", "\x00", "\u2028", "é"),
    *("if", "else", "with", "as", "lambda", "yield", "await", "async", "return"),
    *("def", "class", "not", "pass", "global g", "nonlocal g", "del x", "match x:"),
    *("torch.cuda.graph(g)", ".item()", "if x.sum() > 0:", "graphlint.capture_region"),
)
HEADERS = (
    "with torch.cuda.graph(g):",
    "with graphlint.capture_region():",
    "if x:",
    "for _ in range(3):",
    "while x.any():",
    "def inner(x):",
    "async def inner(x):",
    "class Inner:",
    "try:",
    "with torch.no_grad():",
)
DEEP = (
    lambda n: "-" * n + "x",
    lambda n: "not " * n + "x",
    lambda n: "(" * n + "x" + ")" * n,
    lambda n: "[" * n + "]" * n,
    lambda n: "x" + ".a" * n,
    lambda n: "x" + "[0]" * n,
    lambda n: "f(" * n + ")" * n,
    lambda n: " + ".join(["x.item()"] * n),
    lambda n: "lambda: " * n + "x",
    lambda n: "x if x else " * n + "x",
)
WARMUP = (
    "import torch\n\ng = torch.cuda.CUDAGraph()\nwith torch.cuda.graph(g):\n"
    "    y = x.sum().item()\n"
)


@dataclass(frozen=True)
class Program:
    """One program to check: its file name, where it came from and its bytes."""

    name: str
    source: str  # "hypothesmith" or "mutant"
    origin: str  # the wrapping, or the fixture and the mutations
    data: bytes
    compiles: bool | None  # None: too deep to tell at this process's limits


@dataclass(frozen=True)
class Failure:
    """Something graphlint must never do, on one program (or the whole batch)."""

    program: str
    kind: str
    detail: str


@dataclass
class Report:
    """What a fuzz run found and how long each part took."""

    programs: list[Program]
    failures: list[Failure] = field(default_factory=list)
    batch: list[FileResult] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)  # part -> seconds
    single: dict[str, float] = field(default_factory=dict)  # program -> seconds
    dropped: int = 0  # generated modules that no wrapping could compile
    cli_runs: int = 0


class Hang(Exception):
    """The wall-clock guard ran out."""


def compiles(data: bytes) -> bool | None:
    """Whether CPython accepts ``data`` as a module, as graphlint's pre-screen asks;
    None where the answer depends on the recursion limit (graphlint's is higher)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            compile(data, "<fuzz>", "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
        except (SyntaxError, ValueError):
            return False
        except (RecursionError, MemoryError):
            return None
    return True


def wrap(module: str, wrapper: str, hazard: str) -> bytes:
    """``module`` as the body of a capture region."""
    body = module if module.endswith("\n") or not module else module + "\n"
    body = textwrap.indent("pass\n" + body + hazard, "    ")
    return WRAPPERS[wrapper].format(body=body).encode("utf-8", "surrogatepass")


def generated(count: int, seed_value: int) -> tuple[list[Program], int]:
    """``count`` hypothesmith modules wrapped into regions; also how many were
    dropped because no wrapping compiled."""
    if count <= 0:
        return [], 0
    drawn: list[tuple[str, int, int]] = []
    names = list(WRAPPERS)

    @seed(seed_value)
    @settings(
        max_examples=count,
        database=None,
        deadline=None,
        phases=(Phase.generate, Phase.target),
        suppress_health_check=list(HealthCheck),
        verbosity=Verbosity.quiet,
    )
    @given(
        hypothesmith.from_grammar(),
        st.integers(0, len(names) - 1),
        st.integers(0, len(HAZARDS) - 1),
    )
    def collect(module: str, wrapper: int, hazard: int) -> None:
        drawn.append((module, wrapper, hazard))

    with warnings.catch_warnings():  # hypothesmith compiles: same examples anywhere
        warnings.simplefilter("ignore")
        collect()
    programs: list[Program] = []
    for module, first, hazard in drawn[:count]:
        for wrapper in names[first:] + names[:first]:
            data = wrap(module, wrapper, HAZARDS[hazard])
            if compiles(data) is True:
                name = f"gen_{len(programs):05d}.py"
                origin = f"{wrapper} wrapping, hazard {hazard}"
                programs.append(Program(name, "hypothesmith", origin, data, True))
                break
    return programs, len(drawn[:count]) - len(programs)


def _line(lines: list[str], rng: random.Random) -> int:
    return rng.randrange(len(lines)) if lines else 0


def _indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip(" \t"))]


def _delete(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = _line(lines, rng)
    del lines[i : i + 1]
    return "".join(lines), f"delete line {i + 1}"


def _duplicate(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = _line(lines, rng)
    lines[i:i] = lines[i : i + 1]
    return "".join(lines), f"duplicate line {i + 1}"


def _swap(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i, j = _line(lines, rng), _line(lines, rng)
    if lines:
        lines[i], lines[j] = lines[j], lines[i]
    return "".join(lines), f"swap lines {i + 1} and {j + 1}"


def _truncate(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    at = rng.randrange(len(text) + 1)
    return text[:at], f"truncate at character {at}"


def _token(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    at, token = rng.randrange(len(text) + 1), rng.choice(TOKENS)
    return text[:at] + token + text[at:], f"insert {token!r} at character {at}"


def _reindent(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i, change = _line(lines, rng), rng.choice(("dedent", "    ", "\t", " "))
    if lines:
        lines[i] = lines[i].lstrip(" \t") if change == "dedent" else change + lines[i]
    return "".join(lines), f"indent line {i + 1} by {change!r}"


def _nest(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = _line(lines, rng)
    span, depth = rng.randint(1, 8), rng.choice((1, 1, 2, 3, 20, 60, 99, 150))
    block = lines[i : i + span]
    indent = _indent_of(block[0]) if block else ""
    for _ in range(depth):
        header = indent + rng.choice(HEADERS) + "\n"
        block = [header] + ["    " + line for line in block]
    lines[i : i + span] = block
    return "".join(lines), f"nest lines {i + 1}-{i + span} {depth} deep"


def _deep(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    i = _line(lines, rng)
    # LibCST's parser is superlinear on long chains (1,000 terms of ``+`` take 1 s,
    # 3,000 take 20-45 s; CPython: 10 ms): past read.MAX_DEPTH graphlint says GL005 at
    # once, so both sides of that limit are drawn
    n = rng.choice((10, 100, 199, 500, 1000, 1400, 3000))
    shape = rng.randrange(len(DEEP))
    indent = _indent_of(lines[i]) if lines else ""
    lines[i:i] = [f"{indent}y = {DEEP[shape](n)}\n"]
    return "".join(lines), f"insert deep expression {shape} ({n}) at line {i + 1}"


def _splice(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    lines = text.splitlines(keepends=True)
    other = rng.choice(corpus).splitlines(keepends=True)
    start = _line(other, rng)
    taken = other[start : start + rng.randint(1, 10)]
    i = _line(lines, rng)
    lines[i:i] = taken
    return "".join(lines), f"splice {len(taken)} lines of another fixture at {i + 1}"


def _rename(text: str, rng: random.Random, corpus: Sequence[str]) -> tuple[str, str]:
    names = sorted(set(re.findall(r"\b[A-Za-z_]\w*\b", text)))
    if len(names) < 2:
        return text, "rename nothing"
    old, new = rng.sample(names, 2)
    return re.sub(rf"\b{old}\b", new, text), f"rename {old} to {new}"


MUTATIONS: tuple[
    Callable[[str, random.Random, Sequence[str]], tuple[str, str]], ...
] = (
    _delete,
    _duplicate,
    _swap,
    _truncate,
    _token,
    _reindent,
    _nest,
    _deep,
    _splice,
    _rename,
)
BYTE_DAMAGE: tuple[tuple[str, Callable[[bytes], bytes]], ...] = (
    ("invalid utf-8 byte", lambda b: b[: len(b) // 2] + b"\xff" + b[len(b) // 2 :]),
    ("latin-1 cookie", lambda b: b"# -*- coding: latin-1 -*-\n" + b),
    ("unknown cookie", lambda b: b"# -*- coding: fuzz-8 -*-\n" + b),
    ("BOM", lambda b: b"\xef\xbb\xbf" + b),
    ("CRLF", lambda b: b.replace(b"\n", b"\r\n")),
    ("CR", lambda b: b.replace(b"\n", b"\r")),
)


def mutate(
    text: str, rng: random.Random, corpus: Sequence[str]
) -> tuple[bytes, list[str]]:
    """One to three mutations of ``text``, sometimes damaged bytes; what was done."""
    steps = []
    for _ in range(rng.randint(1, 3)):
        text, step = rng.choice(MUTATIONS)(text, rng, corpus)
        steps.append(step)
    data = text.encode("utf-8", "surrogatepass")
    if rng.random() < 0.1:
        what, damage = rng.choice(BYTE_DAMAGE)
        data = damage(data)
        steps.append(what)
    return data, steps


def mutants(count: int, seed_value: int, fixtures: Path = FIXTURES) -> list[Program]:
    """``count`` mutants of the fixture files; mutant ``i`` depends on the seed and
    ``i`` only."""
    paths = sorted(fixtures.rglob("*.py"))
    texts = [p.read_text(encoding="utf-8") for p in paths]
    programs = []
    for index in range(count):
        rng = random.Random(f"{seed_value}/{index}")
        base = rng.randrange(len(paths))
        data, steps = mutate(texts[base], rng, texts)
        origin = f"{paths[base].relative_to(fixtures.parent)}: {'; '.join(steps)}"
        programs.append(
            Program(f"mut_{index:05d}.py", "mutant", origin, data, compiles(data))
        )
    return programs


Key = tuple[str, int, int, str, str]


def findings(results: Sequence[FileResult]) -> dict[str, set[Key]]:
    """``(path, line, col, code, message)`` of every diagnostic, by file."""
    found: dict[str, set[Key]] = {}
    for result in results:
        keys = found.setdefault(result.path, set())
        keys.update(
            (d.path, d.line, d.col, d.code, d.message) for d in result.diagnostics
        )
        if result.internal_error and all(key[3] != "GL009" for key in keys):
            keys.add((result.path, 0, 0, "GL009", "FileResult.internal_error"))
    return found


def judge(
    programs: Sequence[Program],
    folder: Path,
    batch: Sequence[FileResult],
    singles: Mapping[str, Sequence[FileResult]],
) -> list[Failure]:
    """The failures in the results of the batch run and of the runs of each file
    alone (``singles``, by program name; a program missing there is not compared)."""
    in_batch = findings(batch)
    alone: dict[str, set[Key]] = {}
    for results in singles.values():
        for path, keys in findings(results).items():
            alone.setdefault(path, set()).update(keys)
    failures = []
    for program in programs:
        path = str(folder / program.name)
        if path not in in_batch:
            failures.append(Failure(program.name, "missing", "no result in batch"))
            continue
        keys = in_batch[path] | alone.get(path, set())
        for kind, detail in _problems(program, keys):
            failures.append(Failure(program.name, kind, detail))
        if program.name in singles and in_batch[path] != alone.get(path, set()):
            only_batch = sorted(in_batch[path] - alone.get(path, set()))
            only_single = sorted(alone.get(path, set()) - in_batch[path])
            detail = f"only in batch: {only_batch}\nonly alone: {only_single}"
            failures.append(Failure(program.name, "batch-vs-single", detail))
    return failures


def _problems(program: Program, keys: set[Key]) -> Iterator[tuple[str, str]]:
    codes = {key[3] for key in keys}
    for _, line, col, code, message in sorted(keys):
        if code == "GL009":
            yield "internal-error", f"{line}:{col}: {message}"
        elif code == "GL005" and "took longer" in message:
            yield "timeout", message
        elif code == "GL005" and "crashed" in message:
            yield "crash", message
    if program.compiles and codes & {"GL001", "GL002"}:
        yield "syntax-error-on-valid", ", ".join(sorted(codes))
    if program.compiles is False and not codes & TOOL_CODES:
        yield "no-syntax-error-on-invalid", ", ".join(sorted(codes)) or "no findings"


@contextlib.contextmanager
def deadline(seconds: float) -> Iterator[None]:
    """Raise ``Hang`` in the main thread when ``seconds`` of wall time are up."""

    def expire(signum: int, frame: FrameType | None) -> None:
        raise Hang(f"no result after {seconds:g} s")

    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def check_cli(path: Path, timeout: float) -> str | None:
    """Run the real command on one file: what went wrong, or None."""
    script = Path(sys.executable).with_name("graphlint")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "graphlint"]
    command += ["check", "--format", "lsp", path.name]
    try:
        done = subprocess.run(
            command, cwd=path.parent, capture_output=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return f"`{' '.join(command)}` gave no answer after {timeout:g} s"
    problems = []
    if done.returncode not in (0, 1):
        problems.append(f"exit code {done.returncode}")
    if done.stderr.strip():
        problems.append("stderr:\n" + done.stderr.decode(errors="replace")[-3000:])
    try:
        json.loads(done.stdout)
    except ValueError as error:
        problems.append(f"stdout is not JSON ({error})")
    return "; ".join(problems) or None


def alone(
    path: Path, enabled: Settings, guard: float
) -> tuple[list[FileResult] | None, tuple[str, str] | None, float]:
    """Check one file on its own under the guard: the results, or the kind of failure
    and its detail; and the seconds it took."""
    start = time.perf_counter()
    found, problem = None, None
    try:
        with deadline(guard):
            found = check_project([path], enabled, 1)
    except Hang as error:
        problem = ("timeout", str(error))
    except Exception:
        problem = ("exception", traceback.format_exc())
    return found, problem, time.perf_counter() - start


def run(
    programs: Sequence[Program],
    folder: Path,
    *,
    jobs: int | None = None,
    guard: float = 20.0,
    cli_every: int = 50,
) -> Report:
    """Write ``programs`` to ``folder``, check them in batch, one by one and a sample
    through the command line, and judge the results."""
    report = Report(list(programs))
    folder = folder.resolve()
    folder.mkdir(parents=True, exist_ok=True)
    paths = [folder / p.name for p in programs]
    for program in programs:
        (folder / program.name).write_bytes(program.data)
    enabled = Settings(enabled=frozenset(all_checks()))
    # workers are forked from this process: warm LibCST and the rules here once
    lint_source(WARMUP)

    start = time.perf_counter()
    try:
        with deadline(guard * max(1, len(paths))):
            report.batch = check_project(paths, enabled, jobs)
    except Hang as error:
        report.failures.append(Failure("<batch>", "timeout", str(error)))
    except Exception:
        report.failures.append(Failure("<batch>", "exception", traceback.format_exc()))
    report.seconds["batch"] = time.perf_counter() - start

    singles: dict[str, Sequence[FileResult]] = {}
    start = time.perf_counter()
    # a fork pool starts all its processes at once, before it starts any thread
    with ProcessPoolExecutor(
        jobs or os.cpu_count() or 1, mp_context=multiprocessing.get_context("fork")
    ) as pool:
        done = pool.map(alone, paths, repeat(enabled), repeat(guard), chunksize=4)
        for program, (found, problem, seconds) in zip(programs, done, strict=True):
            if found is not None:
                singles[program.name] = found
            if problem is not None:
                report.failures.append(Failure(program.name, *problem))
            report.single[program.name] = seconds
    report.seconds["single"] = time.perf_counter() - start

    if report.batch:
        report.failures += judge(programs, folder, report.batch, singles)

    start = time.perf_counter()
    for index, path in enumerate(paths):
        if cli_every and index % cli_every == 0:
            report.cli_runs += 1
            wrong = check_cli(path, guard * 3)
            if wrong is not None:
                report.failures.append(Failure(path.name, "cli", wrong))
    report.seconds["cli"] = time.perf_counter() - start
    return report


def fuzz(
    count: int,
    seed_value: int,
    folder: Path,
    *,
    share: float = 0.5,
    jobs: int | None = None,
    guard: float = 20.0,
    cli_every: int = 50,
) -> Report:
    """Generate ``count`` programs (``share`` of them from hypothesmith), check them."""
    wanted = round(count * share)
    start = time.perf_counter()
    made, dropped = generated(wanted, seed_value)
    generation = time.perf_counter() - start
    start = time.perf_counter()
    changed = mutants(count - wanted, seed_value)
    mutation = time.perf_counter() - start
    report = run([*made, *changed], folder, jobs=jobs, guard=guard, cli_every=cli_every)
    report.dropped = dropped
    report.seconds["hypothesmith"] = generation
    report.seconds["mutants"] = mutation
    return report


def summary(report: Report) -> str:
    """A table of what was checked, found and failed, and how long it took."""
    found = findings(report.batch)
    by_name = {Path(path).name: keys for path, keys in found.items()}
    failed = {f.program for f in report.failures}
    rows = [("source", "programs", "compile", "with findings", "findings", "failed")]
    for source in ("hypothesmith", "mutant", None):
        chosen = [p for p in report.programs if source in (None, p.source)]
        keys = [by_name.get(p.name, set()) for p in chosen]
        rows.append(
            (
                source or "total",
                str(len(chosen)),
                str(sum(p.compiles is True for p in chosen)),
                str(sum(bool(k) for k in keys)),
                str(sum(len(k) for k in keys)),
                str(sum(p.name in failed for p in chosen)),
            )
        )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    lines = [
        "  ".join(
            c.ljust(w) if i == 0 else c.rjust(w)
            for i, (c, w) in enumerate(zip(row, widths, strict=True))
        )
        for row in rows
    ]
    codes = Counter(key[3] for keys in found.values() for key in keys)
    lines.append("")
    lines.append("codes: " + ", ".join(f"{c} {n}" for c, n in sorted(codes.items())))
    reasons = Counter(
        key[4].split(":", 1)[-1].split("(")[0].strip()
        for keys in found.values()
        for key in keys
        if key[3] == "GL005"
    )
    if reasons:
        lines.append("GL005: " + ", ".join(f"{r} {n}" for r, n in reasons.items()))
    kinds = Counter(f.kind for f in report.failures)
    lines.append(
        "failures: "
        + (", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) or "none")
    )
    if report.dropped:
        lines.append(
            f"dropped: {report.dropped} generated modules no wrapping compiled"
        )
    lines.append(_timing(report))
    return "\n".join(lines)


def _timing(report: Report) -> str:
    seconds = report.seconds
    made = sum(p.source == "hypothesmith" for p in report.programs) + report.dropped
    changed = sum(p.source == "mutant" for p in report.programs)
    times = sorted(report.single.items(), key=lambda item: item[1])
    parts = [
        f"generation {seconds.get('hypothesmith', 0):.1f} s "
        f"({made / max(seconds.get('hypothesmith', 0), 1e-9):.0f} modules/s)"
        f" + {seconds.get('mutants', 0):.2f} s "
        f"({changed / max(seconds.get('mutants', 0), 1e-9):.0f} mutants/s)",
        f"batch {seconds.get('batch', 0):.1f} s",
    ]
    if times:
        slowest, most = times[-1]
        median = statistics.median(t for _, t in times)
        parts.append(
            f"one by one {seconds.get('single', 0):.1f} s "
            f"(median {median * 1000:.0f} ms, max {most * 1000:.0f} ms {slowest})"
        )
    parts.append(f"CLI {report.cli_runs} runs {seconds.get('cli', 0):.1f} s")
    parts.append(f"total {sum(seconds.values()):.1f} s")
    return "time: " + "; ".join(parts)


def save_failures(report: Report, folder: Path, seed_value: int) -> None:
    """Each failing program and what went wrong, to reproduce it."""
    folder.mkdir(parents=True, exist_ok=True)
    by_name = {p.name: p for p in report.programs}
    for failure in report.failures:
        program = by_name.get(failure.program)
        note = folder / f"{failure.program.strip('<>')}.txt"
        lines = [f"kind: {failure.kind}", f"seed: {seed_value}"]
        if program is not None:
            (folder / program.name).write_bytes(program.data)
            lines += [
                f"source: {program.source} ({program.origin})",
                f"compiles: {program.compiles}",
                f"reproduce: graphlint check --format lsp {folder / program.name}",
            ]
        lines += [failure.detail, ""]
        with note.open("a", encoding="utf-8") as handle:
            handle.write("\n".join(lines) + "\n")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0] if __doc__ else None
    )
    parser.add_argument("--count", type=int, default=1000, help="programs in all")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, help="keep the programs here")
    parser.add_argument(
        "--jobs", type=int, help="processes for each run (default: all cores)"
    )
    parser.add_argument(
        "--share", type=float, default=0.5, help="fraction from hypothesmith"
    )
    parser.add_argument(
        "--guard", type=float, default=20.0, help="seconds per program at most"
    )
    parser.add_argument(
        "--cli-every",
        type=int,
        default=50,
        help="run the command on every Nth (0: none)",
    )
    parser.add_argument(
        "--failures",
        type=Path,
        help="where failing programs go (default: OUT/failures or ./fuzz-failures)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="graphlint-fuzz-") as temp:
        folder = args.out if args.out is not None else Path(temp)
        report = fuzz(
            args.count,
            args.seed,
            folder / "programs",
            share=args.share,
            jobs=args.jobs,
            guard=args.guard,
            cli_every=args.cli_every,
        )
        print(
            f"graphlint fuzz: seed {args.seed}, {len(report.programs)} programs, "
            f"jobs {args.jobs or os.cpu_count()}\n"
        )
        print(summary(report))
        if report.failures:
            where = args.failures or (
                args.out / "failures" if args.out else Path("fuzz-failures")
            )
            save_failures(report, where, args.seed)
            print(f"\n{len(report.failures)} failures written to {where}/")
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
