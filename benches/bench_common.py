"""Helpers shared by the benchmark scripts: what was measured (the commit)
and how busy the machine was (load average)."""

from __future__ import annotations

import os
import subprocess
from typing import List, Optional

HERE = os.path.dirname(os.path.abspath(__file__))


def git_commit() -> Optional[str]:
    """The commit of the checkout the benchmarks run in, with ``+dirty`` when
    tracked files differ from it (None outside a git checkout)."""
    try:
        head = subprocess.run(["git", "-C", HERE, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", HERE, "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, check=True).stdout.strip()
        return head + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return None


def load_avg() -> List[float]:
    """The 1, 5 and 15 minute load averages, rounded."""
    return [round(x, 2) for x in os.getloadavg()]
