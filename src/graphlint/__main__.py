"""python -m graphlint.

``-m`` puts the working folder first on ``sys.path``, and the working folder is
usually the tree being checked: its modules (torch ships a ``types.py``; any
repository may ship a ``msgspec.py``) would be imported in place of the ones
graphlint needs. The folder is taken off the path before anything else is
imported; ``python -P -m graphlint`` (or the ``graphlint`` command) never adds it.
"""

import os
import sys

if (
    not getattr(sys.flags, "safe_path", False)
    and sys.path
    and sys.path[0] in ("", os.getcwd())
):
    del sys.path[0]

from graphlint.entry import main  # after the path is made safe

main()
