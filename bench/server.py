"""Latency of ``graphlint server``, as an editor sees it.

    python bench/server.py [--megatron ~/rw-trees/megatron-lm] [--repeat 5]

For a small file (a model function that a region in another file captures), a
generated 5,000-line file with a region and a hazard, and, with ``--megatron``, a
Megatron-LM model file that a region elsewhere reaches, the file of its regions
(``cuda_graphs.py``, which calls its own functions; edited at its end, then inside
its largest method, as typing there does) and a module no region reaches
(``blended_dataset.py``), and a short training step added to it whose region
calls Megatron-LM's ``permute`` and ``unpermute`` (the file an ML engineer edits
most, in a large project): the time from ``didOpen`` to its diagnostics, with an
empty cache and with a warm one, and from ``didChange`` (new text each time, adding
or removing a hazard; for the module no region reaches, a function that names
nothing a capture needs) to the diagnostics of that version; the median of
``--repeat`` changes, which includes the server's 0.25 s debounce (the check alone
is shown beside it). Then, for the small project, the
time from starting the server to its answer to ``initialize`` (and a bare pygls
server's, the floor under it: importing ``lsprotocol``'s types is most of it), and
from an unsaved edit to the callee to the updated diagnostics of the open file whose
capture calls it (a GL703 finding there appears or goes with a matmul in the
callee). With ``--megatron``, the time to the diagnostics of each of its files
opened one after another in one server (a warm cache), as an editor opens them
over a session. The server runs as an editor starts it, in the project's folder,
over stdio; the client is the tests' (``tests/lsp_client.py``).
"""

from __future__ import annotations

import argparse
import ast
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.installed import compile_graphlint
from tests.lsp_client import Client

DEBOUNCE = 0.25
# as VS Code and most editors start it: the server may register file watchers
EDITOR = {"workspace": {"didChangeWatchedFiles": {"dynamicRegistration": True}}}
MODEL = "def step(x):\n    return x.sum().item()\n"
TRAIN = (
    "import torch\nfrom pkg.model import step\n\n"
    "x = torch.zeros(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
    "with torch.cuda.graph(g):\n    y = step(x)\n"
)


def small(root: Path) -> tuple[Path, Path]:
    (root / "pkg").mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "model.py").write_text(MODEL)
    (root / "pkg" / "train.py").write_text(TRAIN)
    return root, root / "pkg" / "model.py"


def large(root: Path, lines: int = 5000) -> tuple[Path, Path]:
    """A module of ``lines`` lines: helpers of ten lines each, a capture region that
    calls every tenth one, one of which syncs."""
    root.mkdir(parents=True)
    (root / "pyproject.toml").write_text("")
    parts = ["import torch\n\n"]
    count = (lines - 20) // 10
    for n in range(count):
        body = "x.sum().item()" if n == count // 2 else "x * 2"
        parts.append(
            f"def helper_{n}(x):\n    y = x + {n}\n    z = y * y\n    w = z - y\n"
            f"    v = w.relu()\n    u = v + x\n    t = u.abs()\n    s = t.sqrt()\n"
            f"    return {body}\n\n"
        )
    calls = "".join(f"    y = helper_{n}(y)\n" for n in range(0, count, 10))
    parts.append(
        "x = torch.zeros(4, device='cuda')\ng = torch.cuda.CUDAGraph()\n"
        f"with torch.cuda.graph(g):\n    y = x\n{calls}    y = helper_{count // 2}(y)\n"
    )
    path = root / "big.py"
    path.write_text("".join(parts))
    return root, path


# a short file with a region, added to Megatron-LM: it calls the project's code
STEP = """\
import torch

from megatron.core.transformer.moe.moe_utils import permute, unpermute


def make_step(model, optimizer, static_x, static_y):
    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(static_x), static_y)
        loss.backward()
        optimizer.step()
        return loss

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        loss = step()
        tokens, mapping = permute(static_x, static_y)
        out = unpermute(tokens, mapping)
    return g, loss, out
"""


def megatron(tree: Path, scratch: Path) -> tuple[Path, Path, Path, Path, Path]:
    """A copy of the tree; a model file that regions elsewhere reach, the file that
    captures (its own functions too: pass one, then the project pass), a module no
    region reaches, and where a short file with a region is added (``STEP``, once
    the others are measured: their project is the tree's)."""
    copy = scratch / "megatron"
    shutil.copytree(tree, copy, symlinks=True, ignore=shutil.ignore_patterns(".git"))
    core = copy / "megatron" / "core"
    transformer = core / "transformer"
    step = transformer / "bench_step.py"
    return (
        copy,
        transformer / "moe" / "moe_utils.py",
        transformer / "cuda_graphs.py",
        core / "datasets" / "blended_dataset.py",
        step,
    )


# an edit of each kind: a hazard added (or not), or a function of arithmetic
HAZARD = "\nimport torch\n\n\ndef _bench(x):\n    return x.item()\n"
PLAIN = "\n\ndef _bench(x):\n    return x + 1\n"


def appended(added: str) -> Callable[[str, int], str]:
    """Edits at the end of the file: a comment, and ``added`` every other one."""
    return lambda text, version: (
        text + f"\n# edit {version}\n" + (added if version % 2 else "")
    )


def inside(text: str, version: int) -> str:
    """An edit inside the largest method of the largest class with methods (in a
    file without one, the largest function): a statement added before its first
    one (after its docstring), as typing there does."""
    tree = ast.parse(text)

    def span(node: ast.stmt) -> int:
        return (node.end_lineno or 0) - node.lineno

    def functions(body: list[ast.stmt]) -> list[ast.FunctionDef]:
        return [f for f in body if isinstance(f, ast.FunctionDef)]

    classes = [
        c for c in tree.body if isinstance(c, ast.ClassDef) and functions(c.body)
    ]
    largest = max(classes, key=span).body if classes else tree.body
    if not functions(largest):
        raise SystemExit("no function to edit inside")
    body = max(functions(largest), key=span).body
    docstring = isinstance(body[0], ast.Expr) and isinstance(
        body[0].value, ast.Constant
    )
    first = body[1] if docstring and len(body) > 1 else body[0]
    lines = text.splitlines(keepends=True)
    indent = " " * first.col_offset
    at = first.lineno - 1
    return "".join([*lines[:at], f"{indent}_edit = {version}\n", *lines[at:]])


def measure(
    name: str,
    root: Path,
    path: Path,
    repeat: int,
    cache: Path,
    edit: Callable[[str, int], str],
) -> str:
    os.environ["GRAPHLINT_CACHE_DIR"] = str(cache)
    text = path.read_text()
    opened = []
    for _ in range(2):  # an empty cache, then the one the first left
        client = Client(root)
        client.initialize(root, EDITOR)
        start = time.perf_counter()
        uri = client.open(path, text)
        found = client.diagnostics(uri, version=1, timeout=600)
        opened.append(time.perf_counter() - start)
        if len(opened) == 2:
            break
        client.close()
    changes = []
    for version in range(2, repeat + 2):
        # new text at every change, as typing makes: nothing is in the cache
        edited = edit(text, version)
        start = time.perf_counter()
        client.change(uri, edited, version)
        client.diagnostics(uri, version=version, timeout=600)
        changes.append(time.perf_counter() - start)
    client.close()
    change = statistics.median(changes)
    lines = text.count("\n")
    return (
        f"| {name} ({lines:,} lines, {len(found)} found) | {opened[0]:.2f} s "
        f"| {opened[1]:.2f} s | {change:.2f} s ({change - DEBOUNCE:.2f} s check) |"
    )


CALLEE = ("def step(x):\n    return x @ x\n", "def step(x):\n    return x * 2\n")


# the floor under the start: a pygls server that does nothing, started the same way
BARE = (
    "from pygls.lsp.server import LanguageServer\n"
    "LanguageServer('bare', 'v0').start_io()\n"
)


def started(root: Path, repeat: int, command: list[str] | None = None) -> str:
    """From starting the server (``command``: another) to its answer to
    ``initialize``, as an editor waits for it: the median of ``repeat`` starts."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        client = Client(root, command)
        client.initialize(root, EDITOR)
        times.append(time.perf_counter() - start)
        client.close()
    return f"{statistics.median(times):.2f} s"


def across(root: Path, repeat: int, cache: Path) -> str:
    """An unsaved edit to a callee (``pkg/model.py``: a matmul, which needs a
    warm-up, or not) until the open file whose capture calls it (``pkg/train.py``)
    shows the GL703 finding appear or go: the median of ``repeat`` edits."""
    os.environ["GRAPHLINT_CACHE_DIR"] = str(cache)
    model, train = root / "pkg" / "model.py", root / "pkg" / "train.py"
    model.write_text(CALLEE[0])
    client = Client(root)
    client.initialize(root, EDITOR)
    caller = client.open(train, train.read_text())
    client.diagnostics(caller, version=1, timeout=600)
    callee = client.open(model, CALLEE[0])
    client.diagnostics(callee, version=1, timeout=600)
    times = []
    for version in range(2, repeat + 2):
        start = time.perf_counter()
        client.change(
            callee, CALLEE[(version + 1) % 2] + f"# edit {version}\n", version
        )
        client.diagnostics(caller, timeout=600)  # only sent where they changed
        times.append(time.perf_counter() - start)
    client.close()
    change = statistics.median(times)
    return f"{change:.2f} s ({change - DEBOUNCE:.2f} s check)"


def one_after_another(root: Path, paths: list[Path], cache: Path) -> str:
    """Open ``paths`` one after another in one server, as an editor does over a
    session (the cache warm): the time from each ``didOpen`` to its diagnostics,
    the first and the median of the others."""
    os.environ["GRAPHLINT_CACHE_DIR"] = str(cache)
    client = Client(root)
    client.initialize(root, EDITOR)
    times = []
    for path in paths:
        start = time.perf_counter()
        uri = client.open(path, path.read_text())
        client.diagnostics(uri, version=1, timeout=600)
        times.append(time.perf_counter() - start)
    client.close()
    return f"{times[0]:.2f} s, then {statistics.median(times[1:]):.2f} s"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megatron", type=Path, help="a Megatron-LM checkout")
    parser.add_argument("--repeat", type=int, default=5, help="changes measured")
    args = parser.parse_args()
    compile_graphlint()
    print("| file | open, empty cache | open, warm cache | change (median) |")
    print("|---|---|---|---|")
    with tempfile.TemporaryDirectory() as scratch_name:
        scratch = Path(scratch_name)
        hazard, plain = appended(HAZARD), appended(PLAIN)
        cases: list[tuple[str, Path, Path, Callable[[str, int], str]]] = [
            ("small", *small(scratch / "small"), hazard),
            ("5,000 lines", *large(scratch / "large"), hazard),
        ]
        if args.megatron is not None:
            copy, reached, captures, aside, step = megatron(args.megatron, scratch)
            cases.append(("Megatron-LM moe_utils.py", copy, reached, hazard))
            cases.append(("Megatron-LM cuda_graphs.py", copy, captures, hazard))
            cases.append(("cuda_graphs.py, in a method", copy, captures, inside))
            cases.append(("Megatron-LM blended_dataset.py", copy, aside, plain))
            cases.append(("Megatron-LM + a training step", copy, step, hazard))
        for name, root, path, edit in cases:
            if not path.exists():  # the training step
                path.write_text(STEP)
            cache = scratch / f"cache-{name}"
            print(measure(name, root, path, args.repeat, cache, edit), flush=True)
        root = scratch / "small"
        print()
        print(f"Start to the answer to initialize: {started(root, args.repeat)}.")
        bare = started(root, args.repeat, [sys.executable, "-c", BARE])
        print(f"The same for a pygls server that does nothing: {bare}.")
        edited = across(root, args.repeat, scratch / "cache-across")
        print(f"An unsaved edit to a callee until its caller's file updates: {edited}.")
        if args.megatron is not None:
            opened = list(dict.fromkeys(case[2] for case in cases[2:]))
            warm = scratch / f"cache-{cases[-1][0]}"  # the last case's: all of them
            each = one_after_another(copy, opened, warm)
            print(f"Megatron-LM's files opened one after another: {each}.")


if __name__ == "__main__":
    main()
