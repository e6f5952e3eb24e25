"""GL703's wording, which the project pass also writes (``settled_message``) without
the rule's LibCST analysis: a warm run that only reads the cache imports no parser."""

from __future__ import annotations

import re

from graphlint.diagnostics import WarmupVerdict as Settle
from graphlint.facts import torchapi as api

CODE = "GL703"
NEED = "; `{call}` at line {line} needs them ({what}: {why})"
NEED_THROUGH = (
    "; `{through}` at line {through_line} runs `{call}` (line {line}), which needs "
    "them ({what}: {why})"
)
NEED_ELSEWHERE = "; it runs `{call}` at {path}:{line}, which needs them ({what}: {why})"
UNCHECKED = "; the code it runs could not be checked (`{call}` at line {line})"
UNCHECKED_THROUGH = (
    "; the code it runs could not be checked (`{through}` at line {through_line} "
    "runs `{call}`, line {line})"
)
CALLED = "; {caller} calls `{called}` at {path}:{line} with none before it"
FAILS = "fails capture"
RECORDED = "the graph records that set-up, and every replay does it again"
UNSURE = "may fail capture or record one-time set-up that every replay does again"
_UNCHECKED = re.compile(
    r"; the code it runs could not be checked \(`.*?` at line \d+\)"
)


def settled_message(message: str, settle: Settle, path: str) -> str:
    """A pass-one GL703 message whose capture runs code in other files, once the
    project pass found there what needs a warm-up (``settle``, a function of
    ``path``)."""
    detail = NEED_ELSEWHERE.format(
        call=settle.need,
        path=path,
        line=settle.need_line,
        what=settle.need_what,
        why=settle.need_why,
    )
    consequence = FAILS if settle.need_why in api.WARMUP_FAILS else RECORDED
    head = message.removesuffix(f": {UNSURE}")
    return f"{_UNCHECKED.sub(lambda _: detail, head, count=1)}: {consequence}"


def called_message(
    message: str, function: str, path: str, line: int, called: str
) -> str:
    """A pass-one GL703 message whose capture is made by functions other files
    call, naming the call (``path``:``line`` in ``function``, "" for module code)
    that starts a way to it with no warm-up before."""
    head, _, consequence = message.rpartition(": ")
    caller = f"`{function}`" if function else "module code"
    detail = CALLED.format(caller=caller, called=called, path=path, line=line)
    return f"{head}{detail}: {consequence}"
