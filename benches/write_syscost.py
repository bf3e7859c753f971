"""Per-write wall, user and system time of the wide table's write, one line
per write (session 7's look at the wide write's spread): ``python
benches/write_syscost.py [ROWS] [alt|solo|sleep]`` with N=<writes> in the
environment; alt alternates lancelet and pylance, sleep puts a 1.5 s pause
where pylance's write would be. Writes go to $WW_DIR (default /tmp/lancelet-ww)."""
import os, sys, time, shutil, resource, gc
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import wide_table, lancelet, lance
t = wide_table.table(int(sys.argv[1]) if len(sys.argv) > 1 else 1_500_000)
mode = sys.argv[2] if len(sys.argv) > 2 else "alt"
base = os.environ.get("WW_DIR", "/tmp/lancelet-ww")
for i in range(int(os.environ.get("N", 6))):
    for name, mod in (("lancelet", lancelet), ("pylance", lance)):
        if mode == "solo" and name == "pylance": continue
        if mode == "sleep" and name == "pylance":
            time.sleep(1.5)
            continue
        p = f"{base}/{name}"; shutil.rmtree(p, ignore_errors=True); os.sync(); gc.collect()
        r0 = resource.getrusage(resource.RUSAGE_SELF); t0 = time.perf_counter()
        mod.write_dataset(t, p, max_rows_per_file=500_000)
        dt = time.perf_counter() - t0; r1 = resource.getrusage(resource.RUSAGE_SELF)
        print(f"{name:9s} wall {dt*1e3:6.0f} user {(r1.ru_utime-r0.ru_utime)*1e3:6.0f} sys {(r1.ru_stime-r0.ru_stime)*1e3:6.0f} minflt {r1.ru_minflt-r0.ru_minflt:7d} vcsw {r1.ru_nvcsw-r0.ru_nvcsw} ivcsw {r1.ru_nivcsw-r0.ru_nivcsw}", flush=True)
