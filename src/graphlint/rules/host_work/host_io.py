"""GL401: host I/O (print, logging, files, network) under capture."""

from __future__ import annotations

import libcst as cst

from graphlint.diagnostics import Applicability, Outcome
from graphlint.facts.syntax import method
from graphlint.rule import Scope
from graphlint.rules._removal import StatementRemoval

_BUILTINS = frozenset({"print", "open", "input"})
_FUNCTIONS = frozenset(
    {
        "json.dump",
        "json.load",
        "pickle.dump",
        "pickle.load",
        "sys.stdout.write",
        "sys.stderr.write",
        "sys.stdout.flush",
        "numpy.save",
        "numpy.load",
        "numpy.savetxt",
        "wandb.log",
        "mlflow.log_metric",
        "mlflow.log_metrics",
        "urllib.request.urlopen",
    }
)
_PREFIXES = ("logging.", "requests.", "shutil.", "socket.")
_LOG_METHODS = frozenset(
    {"debug", "info", "warning", "warn", "error", "critical", "exception", "log"}
)
_LOG_FUNCTIONS = frozenset(f"logging.{name}" for name in _LOG_METHODS)


class HostIo(StatementRemoval):
    """`print`, logging, file or network I/O under capture runs only at capture."""

    code = "GL401"
    message = "`{call}` runs on the host once, while capturing"
    fix_title = "Move it outside the region, after `replay()`"
    fix_applicability = Applicability.UNSAFE
    outcome = Outcome.SILENT_WRONG
    sees = Scope.CAPTURED  # recorded once for all replays: not torch.compile
    host_work = True
    consequence = "replays never run it"

    def visit_Call(self, node: cst.Call) -> None:
        region = self.here
        if self.formats_tensor(node):
            return  # a tensor formatted as text is GL102's
        name = self.builtin(node)
        if name in _BUILTINS or self.is_io(node):
            # printing and logging only show text; other I/O reads or writes data
            shown = name == "print" or self.is_logging(node)
            self.report(
                node,
                region,
                call=self.code_of(node),
                fix=self.removal(node, region) if shown else [],
            )

    def is_io(self, node: cst.Call) -> bool:
        q = self.qualname(node.func)
        if q is not None:
            return q in _FUNCTIONS or q.startswith(_PREFIXES)
        return self.is_logging(node)

    def is_logging(self, node: cst.Call) -> bool:
        """``logging.info(...)``, or ``log.info(...)`` on a ``logging.Logger``."""
        q = self.qualname(node.func)
        if q is not None:
            return q in _LOG_FUNCTIONS
        found = method(node)
        return (
            found is not None
            and found[1] in _LOG_METHODS
            and self.value(found[0]).cls == "logging.Logger"
        )

    def formats_tensor(self, node: cst.Call) -> bool:
        """Whether an argument is a device tensor, or an f-string that formats one."""
        for arg in node.args:
            parts = (
                [
                    part.expression
                    for part in arg.value.parts
                    if isinstance(part, cst.FormattedStringExpression)
                ]
                if isinstance(arg.value, cst.FormattedString)
                else [arg.value]
            )
            if any(self.value(part).on_device for part in parts):
                return True
        return False
