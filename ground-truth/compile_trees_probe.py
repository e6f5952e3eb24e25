"""Ground truth for torch.compile's CUDA graphs (cudagraph trees): what happens to
outputs kept across calls, static inputs replaced between calls, CPU tensors passed in,
and syncs or dynamic shapes under fullgraph=True.

Each case runs in its own process and prints one JSON line. Outcomes:
  ok            results equal eager and the callable replays CUDA graphs
  error         a call or a read raised (message recorded)
  silent-wrong  no error, but a result differs from eager execution
  no-graph      results right, but no CUDA graph is launched (the graph was skipped)
  graph-split   results right, more than one CUDA graph launched per call (a graph
                break, or Inductor partitioning around an op it cannot capture)
Usage (on a GPU machine): python compile_trees_probe.py [CASE ...] > out.jsonl

The measurements are in h100-torch2.11-compile.jsonl beside it (ground-truth/README.md).
"""

import json
import subprocess
import sys
import textwrap

CASES = {}


def case(name, note):
    def deco(src):
        CASES[name] = (note, textwrap.dedent(src))
        return src

    return deco


PRELUDE = """
import json, warnings, torch, torch._dynamo
from torch._dynamo.utils import counters
from torch.profiler import profile, ProfilerActivity
dev = 'cuda'
torch.manual_seed(0)
def launches(fn, *args):
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        out = fn(*args); torch.cuda.synchronize()
    return sum(e.count for e in prof.key_averages() if 'cudaGraphLaunch' in e.key), out
def diff(a, b): return float((a.float() - b.float()).abs().max())
def verdict(result, max_diff, n_launch):
    if max_diff > 1e-3: result.update(outcome='silent-wrong')
    elif n_launch == 0: result.update(outcome='no-graph')
    elif n_launch > 1 or sum(counters['graph_break'].values()):
        result.update(outcome='graph-split')
    else: result.update(outcome='ok')
    result.update(max_diff=max_diff, graph_launches_per_call=n_launch,
                  graph_breaks=sum(counters['graph_break'].values()),
                  cudagraph_skips=dict(counters['inductor']).get('cudagraph_skips', 0))
"""

RUNNER = """
result = {}
try:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter('always')
        main(result)
    result['warnings'] = sorted({str(w.message)[:200] for w in caught})[:3]
except Exception as e:
    error = f'{type(e).__name__}: {e}'.splitlines()[0][:400]
    result.update(outcome='error', error=error)
print('RESULT ' + json.dumps(result))
"""

# --- outputs of a reduce-overhead callable kept across calls ---

case(
    "compiled_output_kept",
    "output of a reduce-overhead callable kept in a list across calls,"
    " read after the next call",
)("""
def main(result):
    f = torch.compile(lambda x: x * 2 + 1, mode='reduce-overhead')
    xs = [torch.randn(64, device=dev) for _ in range(5)]
    kept = [f(x) for x in xs]
    verdict(result, max(diff(k, x * 2 + 1) for k, x in zip(kept, xs)), 1)
""")

case(
    "compiled_output_kept_clone", "the same, each output .clone()d before the next call"
)("""
def main(result):
    f = torch.compile(lambda x: x * 2 + 1, mode='reduce-overhead')
    xs = [torch.randn(64, device=dev) for _ in range(5)]
    kept = [f(x).clone() for x in xs]
    n, _ = launches(f, xs[0])
    verdict(result, max(diff(k, x * 2 + 1) for k, x in zip(kept, xs)), n)
""")

case("compiled_output_two_names", "a = f(x1); b = f(x2); then a is read")("""
def main(result):
    f = torch.compile(lambda x: x * 2 + 1, mode='reduce-overhead')
    for _ in range(3): f(torch.randn(64, device=dev))
    x1, x2 = torch.randn(64, device=dev), torch.randn(64, device=dev)
    a = f(x1)
    b = f(x2)
    verdict(result, max(diff(a, x1 * 2 + 1), diff(b, x2 * 2 + 1)), 1)
""")

case(
    "compiled_output_two_names_reset",
    "a = f(x1); torch._dynamo.reset(); b = f(x2); then a is read",
)("""
def main(result):
    f = torch.compile(lambda x: x * 2 + 1, mode='reduce-overhead')
    for _ in range(3): f(torch.randn(64, device=dev))
    x1, x2 = torch.randn(64, device=dev), torch.randn(64, device=dev)
    a = f(x1)
    torch._dynamo.reset()
    for _ in range(3): f(torch.randn(64, device=dev))
    b = f(x2)
    n, _ = launches(f, x2)
    verdict(result, max(diff(a, x1 * 2 + 1), diff(b, x2 * 2 + 1)), n)
""")

case(
    "compiled_output_fed_back",
    "x = f(x) in a loop: each output is the next call's input (gpt-fast's decode loop)",
)("""
def main(result):
    f = torch.compile(lambda x: torch.tanh(x * 0.5 + 1), mode='reduce-overhead')
    x = torch.randn(64, device=dev); ref = x.clone()
    for _ in range(6):
        x = f(x); ref = torch.tanh(ref * 0.5 + 1)
    d = diff(x, ref)  # read before the next call, which may reuse x's memory
    n, _ = launches(f, x.clone())
    verdict(result, d, n)
""")

case(
    "compiled_output_kept_mark_step",
    "output kept across calls with torch.compiler.cudagraph_mark_step_begin()"
    " before each call",
)("""
def main(result):
    f = torch.compile(lambda x: x * 2 + 1, mode='reduce-overhead')
    xs = [torch.randn(64, device=dev) for _ in range(5)]
    kept = []
    for x in xs:
        torch.compiler.cudagraph_mark_step_begin()
        kept.append(f(x))
    verdict(result, max(diff(k, x * 2 + 1) for k, x in zip(kept, xs)), 1)
""")

case(
    "compiled_output_kept_training",
    "output of a reduce-overhead module kept across calls in training (requires grad)",
)("""
def main(result):
    m = torch.nn.Linear(64, 64).to(dev)
    f = torch.compile(m, mode='reduce-overhead')
    xs = [torch.randn(8, 64, device=dev) for _ in range(5)]
    kept = [f(x) for x in xs]
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
""")

case(
    "compiled_output_kept_training_backward",
    "training: loss of a reduce-overhead module kept across steps,"
    " backward() each step",
)("""
def main(result):
    m = torch.nn.Linear(64, 64).to(dev)
    f = torch.compile(m, mode='reduce-overhead')
    xs = [torch.randn(8, 64, device=dev) for _ in range(6)]
    kept = []
    for x in xs:
        out = f(x)
        out.sum().backward()
        kept.append(out)
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
""")

# --- training loops around a reduce-overhead module (measured on 2026-11-27) ---

TRAIN = """
    m = torch.nn.Linear(64, 64).to(dev)
    f = torch.compile(m, mode='reduce-overhead')
    xs = [torch.randn(8, 64, device=dev) for _ in range(6)]
"""


def train_case(name, note, body):
    case(name, note)(
        "def main(result):" + TRAIN + textwrap.indent(textwrap.dedent(body), "    ")
    )


train_case(
    "compiled_train_two_forwards",
    "training: two forwards of a reduce-overhead module per step, one backward of both",
    """
    kept = []
    for x in xs:
        m.zero_grad()
        a = f(x)
        b = f(x * 2)
        (a.sum() + b.sum()).backward()
        kept.append(float(a.sum() + b.sum()))
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_two_forwards_mark_step",
    "the same with torch.compiler.cudagraph_mark_step_begin() at each step's start",
    """
    for x in xs:
        m.zero_grad()
        torch.compiler.cudagraph_mark_step_begin()
        a = f(x)
        b = f(x * 2)
        (a.sum() + b.sum()).backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_forward_without_backward",
    "training: a forward whose output gets no backward, then a forward with"
    " backward, each step",
    """
    for x in xs:
        m.zero_grad()
        unused = f(x).sum()
        out = f(x * 2)
        out.sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_forward_without_backward_mark_step",
    "the same with torch.compiler.cudagraph_mark_step_begin() at each step's start",
    """
    for x in xs:
        m.zero_grad()
        torch.compiler.cudagraph_mark_step_begin()
        unused = f(x).sum()
        out = f(x * 2)
        out.sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_forward_without_backward_read",
    "the same, and the output with no backward is read after the next forward",
    """
    seen = []
    for x in xs:
        m.zero_grad()
        first = f(x)
        out = f(x * 2)
        out.sum().backward()
        seen.append(diff(first, m(x)))
    verdict(result, max(seen), 1)
    """,
)
train_case(
    "compiled_train_kept_clone",
    "training: each step's output kept as out.detach().clone() after backward",
    """
    kept = []
    for x in xs:
        m.zero_grad()
        out = f(x)
        out.sum().backward()
        kept.append(out.detach().clone())
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
    """,
)
train_case(
    "compiled_train_kept_clone_attached",
    "training: each step's output kept as out.clone() (still in the autograd graph)",
    """
    kept = []
    for x in xs:
        m.zero_grad()
        out = f(x)
        out.sum().backward()
        kept.append(out.clone())
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
    """,
)
train_case(
    "compiled_train_kept_output",
    "training: each step's output kept as it is, zero_grad() each step",
    """
    kept = []
    for x in xs:
        m.zero_grad()
        out = f(x)
        out.sum().backward()
        kept.append(out)
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
    """,
)
train_case(
    "compiled_train_kept_detach",
    "training: each step's output kept as out.detach() (shares the graph's memory)",
    """
    kept = []
    for x in xs:
        m.zero_grad()
        out = f(x)
        out.sum().backward()
        kept.append(out.detach())
    verdict(result, max(diff(k, m(x)) for k, x in zip(kept, xs)), 1)
    """,
)
train_case(
    "compiled_train_loss_item",
    "training: each step's loss logged as loss.item() (a Python float),"
    " zero_grad() each step",
    """
    losses = []
    for x in xs:
        m.zero_grad()
        loss = f(x).sum()
        loss.backward()
        losses.append(loss.item())
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_eval_between",
    "training steps with a no_grad evaluation call in between, its output read"
    " after the next step",
    """
    seen = []
    for x in xs:
        m.zero_grad()
        with torch.no_grad():
            val = f(x)
        out = f(x * 2)
        out.sum().backward()
        seen.append(diff(val, m(x)))
    verdict(result, max(seen), 1)
    """,
)

train_case(
    "compiled_train_grads_accumulate_across_steps",
    "training: backward each step, never zero_grad(): each backward adds to"
    " .grad what the last one wrote",
    """
    for x in xs:
        f(x).sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_grads_accumulate_mark_step",
    "the same with torch.compiler.cudagraph_mark_step_begin() at each step's start",
    """
    for x in xs:
        torch.compiler.cudagraph_mark_step_begin()
        f(x).sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_zero_grad_in_place",
    "training: zero_grad(set_to_none=False) each step (the grads zeroed in place)",
    """
    for x in xs:
        m.zero_grad(set_to_none=False)
        f(x).sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_microbatches",
    "training: zero_grad() each step, two microbatches (forward and backward"
    " each) per step",
    """
    for x in xs:
        m.zero_grad()
        f(x).sum().backward()
        f(x * 2).sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_microbatches_mark_step",
    "the same with torch.compiler.cudagraph_mark_step_begin() before each microbatch",
    """
    for x in xs:
        m.zero_grad()
        torch.compiler.cudagraph_mark_step_begin()
        f(x).sum().backward()
        torch.compiler.cudagraph_mark_step_begin()
        f(x * 2).sum().backward()
    verdict(result, 0.0, 1)
    """,
)
train_case(
    "compiled_train_optimizer_step",
    "training: opt.zero_grad(); forward; backward; opt.step() each step (the"
    " usual loop)",
    """
    opt = torch.optim.SGD(m.parameters(), lr=0.01)
    for x in xs:
        opt.zero_grad()
        f(x).sum().backward()
        opt.step()
    verdict(result, 0.0, 1)
    """,
)

# --- static inputs of a compiled module replaced between calls ---

MODULE = """
class M(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(64, 64)
        self.register_buffer('scale', torch.ones(64))
        self.plain = torch.full((64,), 2.0)
    def forward(self, x):
        return self.lin(x) * self.scale + self.plain.to(x.device)
"""


def module_case(name, note, change):
    case(name, note)(
        MODULE
        + textwrap.dedent("""
    @torch.no_grad()
    def main(result):
        m = M().to(dev); m.plain = m.plain.to(dev)
        f = torch.compile(m, mode='reduce-overhead')
        x = torch.randn(8, 64, device=dev)
        for _ in range(3): f(x)
    """)
        + textwrap.indent(textwrap.dedent(change), "    ")
        + textwrap.dedent("""
        outs = [f(x).clone() for _ in range(3)]
        n, _ = launches(f, x)
        verdict(result, max(diff(o, m(x)) for o in outs), n)
    """)
        .replace("\n", "\n    ")
        .rstrip()
        + "\n"
    )


module_case(
    "compiled_weight_data_replaced",
    "mod.lin.weight.data = new tensor between calls of the compiled module",
    "m.lin.weight.data = torch.randn(64, 64, device=dev)",
)
module_case(
    "compiled_parameter_rebound",
    "mod.lin.bias = nn.Parameter(new) between calls of the compiled module",
    "m.lin.bias = torch.nn.Parameter(torch.randn(64, device=dev))",
)
module_case(
    "compiled_buffer_rebound",
    "registered buffer rebound, mod.scale = new tensor, between calls",
    "m.scale = torch.randn(64, device=dev)",
)
module_case(
    "compiled_tensor_attr_rebound",
    "plain tensor attribute rebound, mod.plain = new tensor, between calls",
    "m.plain = torch.randn(64, device=dev)",
)
module_case(
    "compiled_weight_copy_inplace",
    "mod.lin.weight.copy_(new) in place between calls (control)",
    "m.lin.weight.copy_(torch.randn(64, 64, device=dev))",
)

case(
    "compiled_fn_module_arg_data_replaced",
    "model passed into a compiled function; model.weight.data replaced between calls",
)("""
@torch.no_grad()
def main(result):
    m = torch.nn.Linear(64, 64).to(dev)
    step = torch.compile(lambda model, x: model(x) * 2, mode='reduce-overhead')
    x = torch.randn(8, 64, device=dev)
    for _ in range(3): step(m, x)
    m.weight.data = torch.randn(64, 64, device=dev)
    outs = [step(m, x).clone() for _ in range(3)]
    n, _ = launches(step, m, x)
    verdict(result, max(diff(o, m(x) * 2) for o in outs), n)
""")

# --- CPU tensors passed in ---

case(
    "compiled_cpu_tensor_input",
    "a CPU tensor passed into a reduce-overhead callable beside a GPU one",
)("""
@torch.no_grad()
def main(result):
    f = torch.compile(lambda x, s: x * s.to(x.device), mode='reduce-overhead')
    x = torch.randn(64, device=dev); s = torch.tensor(3.0)
    for _ in range(3): f(x, s)
    n, out = launches(f, x, s)
    verdict(result, diff(out, x * 3), n)
""")

case(
    "compiled_cpu_scalar_input",
    "a 0-d CPU tensor used as a scalar inside a reduce-overhead callable",
)("""
@torch.no_grad()
def main(result):
    f = torch.compile(lambda x, s: x * s, mode='reduce-overhead')
    x = torch.randn(64, device=dev); s = torch.tensor(3.0)
    for _ in range(3): f(x, s)
    n, out = launches(f, x, s)
    verdict(result, diff(out, x * 3), n)
""")

case(
    "compiled_cpu_vector_input",
    "a 1-D CPU tensor passed into a reduce-overhead callable"
    " and moved to the GPU inside",
)("""
@torch.no_grad()
def main(result):
    f = torch.compile(lambda x, s: x * s.to(x.device), mode='reduce-overhead')
    x = torch.randn(64, device=dev); s = torch.randn(64)
    for _ in range(3): f(x, s)
    n, out = launches(f, x, s)
    verdict(result, diff(out, x * s.to(dev)), n)
""")

case(
    "compiled_cpu_vector_math",
    "a 1-D CPU tensor used in CPU math inside a reduce-overhead callable",
)("""
@torch.no_grad()
def main(result):
    f = torch.compile(lambda x, s: x * (s * 2).to(x.device), mode='reduce-overhead')
    x = torch.randn(64, device=dev); s = torch.randn(64)
    for _ in range(3): f(x, s)
    n, out = launches(f, x, s)
    verdict(result, diff(out, x * (s * 2).to(dev)), n)
""")

# --- syncs and dynamic shapes ---


def sync_case(name, note, body, **kw):
    case(name, note)(f"""
@torch.no_grad()
def main(result):
    def fn(x):
{textwrap.indent(textwrap.dedent(body), "        ")}
    f = torch.compile(fn, mode='reduce-overhead', **{kw!r})
    x = torch.randn(64, device=dev)
    for _ in range(3): f(x)
    n, out = launches(f, x)
    verdict(result, diff(out, fn(x)), n)
""")


ITEM_UNUSED = "s = x.sum().item()\nreturn x * 2\n"
ITEM_ARITH = "s = x.sum().item()\nreturn x * s\n"
ITEM_BRANCH = "if x.sum().item() > 0:\n    return x * 2\nreturn x * 3\n"
TENSOR_BRANCH = "if x.sum() > 0:\n    return x * 2\nreturn x * 3\n"
NONZERO = "return x[torch.nonzero(x > 0).squeeze(1)].sum() + x\n"
MASK = "return x[x > 0].sum() + x\n"
UNIQUE = "return torch.unique(x.round()).sum() + x\n"
for label, body in [
    ("item_unused", ITEM_UNUSED),
    ("item_arith", ITEM_ARITH),
    ("item_branch", ITEM_BRANCH),
    ("tensor_branch", TENSOR_BRANCH),
    ("nonzero", NONZERO),
    ("bool_mask_index", MASK),
    ("unique", UNIQUE),
]:
    sync_case(f"compiled_{label}", f"{label} in a reduce-overhead callable", body)
    sync_case(
        f"compiled_fullgraph_{label}",
        f"{label} in a reduce-overhead callable with fullgraph=True",
        body,
        fullgraph=True,
    )


def run_case(name):
    note, src = CASES[name]
    prog = PRELUDE + src + RUNNER
    try:
        p = subprocess.run(
            [sys.executable, "-c", prog], capture_output=True, text=True, timeout=300
        )
        line = [s for s in p.stdout.splitlines() if s.startswith("RESULT ")]
        r = (
            json.loads(line[-1][7:])
            if line
            else {"outcome": "crash", "error": (p.stderr or "")[-600:]}
        )
    except subprocess.TimeoutExpired:
        r = {"outcome": "timeout"}
    r.update(case=name, note=note)
    return r


if __name__ == "__main__":
    import concurrent.futures as cf

    names = sys.argv[1:] or list(CASES)
    import torch

    print(
        json.dumps(
            {"torch": torch.__version__, "device": torch.cuda.get_device_name(0)}
        ),
        flush=True,
    )
    with cf.ThreadPoolExecutor(8) as ex:
        for r in ex.map(run_case, names):
            print(json.dumps(r), flush=True)
