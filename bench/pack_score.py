"""Score graphlint on the real-world pack with this repository's judgements added.

``../shared/realworld/expectations.json`` holds the judged findings; findings that a
later change adds are judged here, in ``bench/judged.json`` (and, for ``--preview``,
``bench/handoff-judged.json``), in the same shape. This merges them into a temporary
copy and runs ``../shared/realworld/score.py`` with it:

    python bench/pack_score.py /root/rw-trees [--preview] [score.py options]
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
SHARED = HERE.parent.parent / "shared" / "realworld"


def merged(preview: bool) -> dict[str, object]:
    """The shared expectations with this repository's judgements added; a shared
    record wins over one judged here."""
    doc = json.loads((SHARED / "expectations.json").read_text(encoding="utf-8"))
    findings = doc["findings"]
    seen = {(f["tree"], f["path"], f["line"], f["code"]) for f in findings}
    names = ["judged.json"] + (["handoff-judged.json"] if preview else [])
    for name in names:
        for f in json.loads((HERE / name).read_text(encoding="utf-8"))["findings"]:
            key = (f["tree"], f["path"], f["line"], f["code"])
            if key not in seen:
                seen.add(key)
                findings.append(f)
    return doc


def main(argv: list[str]) -> int:
    preview = "--preview" in argv
    rest = [a for a in argv if a != "--preview"]
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "expectations.json"
        path.write_text(json.dumps(merged(preview)), encoding="utf-8")
        env = dict(os.environ)
        if preview:  # score.py runs `graphlint check`: put a wrapper first on PATH
            wrapper = Path(tmp) / "graphlint"
            wrapper.write_text(
                '#!/bin/sh\nif [ "$1" = check ]; then shift; '
                f'exec "{sys.executable}" -m graphlint check --preview "$@"; fi\n'
                f'exec "{sys.executable}" -m graphlint "$@"\n',
                encoding="utf-8",
            )
            wrapper.chmod(0o755)
            env["PATH"] = f"{tmp}{os.pathsep}{env.get('PATH', '')}"
        else:
            env["PATH"] = (
                f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
            )
        cmd = [
            sys.executable,
            str(SHARED / "score.py"),
            *rest,
            "--expectations",
            str(path),
        ]
        return subprocess.run(cmd, env=env, check=False).returncode


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
