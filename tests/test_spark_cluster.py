"""lancelet on a real cluster of separate executor processes
(local-cluster[2,1,1024]); the job runs in its own process because a
Python process holds one SparkContext."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark

JOB = Path(__file__).resolve().parent / "spark_jobs" / "cluster_roundtrip.py"


def test_local_cluster_round_trip(tmp_path):
    p = subprocess.run([sys.executable, str(JOB), str(tmp_path)], capture_output=True, text=True, timeout=900)
    assert p.returncode == 0, p.stderr[-5000:]
    out = json.loads(p.stdout.strip().splitlines()[-1])
    assert out["executors"] == 2
    assert out["versions"] == [1, 2]
    assert out["rows"] == 21000
    assert out["vec_type"].startswith("fixed_size_list<") and out["vec_type"].endswith(": float>[4]")
    assert out["partitions"] == out["fragments"]
    assert out["filtered"] == out["filtered_expected"] > 0
    assert out["sum_vec0"] == float(sum(range(20000)) + sum(range(1000)))
    assert out["map_in_arrow_rows"] == 21000
    assert out["helper_write_rows"] == 21000
    assert out["helper_vec_type"].startswith("fixed_size_list")
    assert out["take_ok"] is True
    assert out["failed_job_raised"] is True
    assert out["orphans"] == 0
    assert out["version_after_failure"] == 2
