"""The analysis, imported: LibCST, the engine and every rule. Workers import this
beside their first jobs (the collecting process never does), and a fork server
(``runner._context``) imports it once for every worker it forks."""

from __future__ import annotations

from graphlint.engine import check_file
from graphlint.rule import all_checks

CHECKS = all_checks()

__all__ = ["CHECKS", "check_file"]
