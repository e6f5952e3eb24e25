"""The analysis, imported: LibCST, the engine and every rule. Workers import this
beside their first jobs (``runner._serve``), while the collecting process, which
never imports it, screens the files. (Importing it once before forking them was
slower: a cold check of Megatron-LM took 0.5-1 s longer on two cores.)"""

from __future__ import annotations

from graphlint.engine import check_file
from graphlint.rule import all_checks

CHECKS = all_checks()

__all__ = ["CHECKS", "check_file"]
