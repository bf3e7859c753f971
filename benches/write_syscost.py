"""Per-write wall, user and system time of the wide table's write, one line
per write (sessions 7 and 8's look at the wide write's spread): ``python
benches/write_syscost.py [ROWS] [alt|solo|sleep|raw]`` with N=<writes> in the
environment; alt alternates lancelet and pylance, sleep puts a 1.5 s pause
where pylance's write would be, raw writes the same number of bytes with
plain ``os.write`` calls and no library (a control: how much system time
this machine charges for putting that many bytes in the page cache right
now). Before each timed write the previous dataset is removed and
``os.sync()`` runs, untimed, as in the wide suite; DELAY=<seconds> sleeps
after that, before the write (session 8: on this VM the write's system time
grows with that delay, see RESULTS.md). Writes go to $WW_DIR (default
/tmp/lancelet-ww). Ends with each writer's median user and system time."""
import gc
import os
import resource
import shutil
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import lance
import wide_table

import lancelet

rows = int(sys.argv[1]) if len(sys.argv) > 1 else 1_500_000
t = wide_table.table(rows)
mode = sys.argv[2] if len(sys.argv) > 2 else "alt"
base = os.environ.get("WW_DIR", "/tmp/lancelet-ww")
delay = float(os.environ.get("DELAY", 0))
# The raw writer's bytes: about what the libraries write (~0.29 KB a row).
RAW_BYTES = rows * 294
raw_src = memoryview(bytearray(os.urandom(1 << 20)) * (RAW_BYTES // (1 << 20) + 1))[:RAW_BYTES]


class Raw:
    """Writes RAW_BYTES in three files with 8 MiB os.write calls."""

    @staticmethod
    def write_dataset(_table, path, max_rows_per_file):
        os.makedirs(path)
        third = RAW_BYTES // 3
        for k in range(3):
            fd = os.open(f"{path}/f{k}", os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            end = RAW_BYTES if k == 2 else (k + 1) * third
            for off in range(k * third, end, 8 << 20):
                os.write(fd, raw_src[off:min(off + (8 << 20), end)])
            os.close(fd)


writers = {"alt": [("lancelet", lancelet), ("pylance", lance)], "solo": [("lancelet", lancelet)],
           "sleep": [("lancelet", lancelet), ("sleep", None)], "raw": [("raw", Raw)]}[mode]
cpu = {}
for _ in range(int(os.environ.get("N", 6))):
    for name, mod in writers:
        if mod is None:
            time.sleep(1.5)
            continue
        p = f"{base}/{name}"; shutil.rmtree(p, ignore_errors=True)
        s0 = time.perf_counter(); os.sync(); sync_ms = (time.perf_counter() - s0) * 1e3
        gc.collect(); time.sleep(delay)
        r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
        mod.write_dataset(t, p, max_rows_per_file=500_000)
        dt = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
        user, sys_ = (r1.ru_utime - r0.ru_utime) * 1e3, (r1.ru_stime - r0.ru_stime) * 1e3
        cpu.setdefault(name, []).append((user, sys_))
        print(f"{name:9s} sync {sync_ms:5.0f} wall {dt*1e3:6.0f} user {user:6.0f} sys {sys_:6.0f} minflt {r1.ru_minflt-r0.ru_minflt:7d} vcsw {r1.ru_nvcsw-r0.ru_nvcsw} ivcsw {r1.ru_nivcsw-r0.ru_nivcsw}", flush=True)
for name, v in cpu.items():
    print(f"{name:9s} median user {statistics.median(u for u, _ in v):.0f} ms, sys {statistics.median(s for _, s in v):.0f} ms "
          f"(sys {min(s for _, s in v):.0f}-{max(s for _, s in v):.0f}) over {len(v)} writes")
