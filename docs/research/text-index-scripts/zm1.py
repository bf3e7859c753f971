import lance, pyarrow as pa, shutil, glob, json, math
from dump import *
from manidx import show
n=20
x = pa.array([float(i) if i not in (3,7) else (None if i==3 else float('nan')) for i in range(n)], pa.float64())
s = pa.array([f"s{i:03d}" if i%5 else None for i in range(n)])
shutil.rmtree("/tmp/ftsres/zm1", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(n), pa.int32()), "x": x, "s": s}), "/tmp/ftsres/zm1", max_rows_per_file=12)
from lance.indices import IndexConfig
ds.create_scalar_index("x", IndexConfig("zonemap", {"rows_per_zone": 5}))
ds.create_scalar_index("s", "ZONEMAP")
ds.create_scalar_index("id", IndexConfig("zonemap", {"rows_per_zone": 4}))
ds = lance.dataset("/tmp/ftsres/zm1")
dumpidx(ds)
show("/tmp/ftsres/zm1")
print(ds.list_indices())
for nm in ["x_idx","s_idx","id_idx"]: print(json.dumps(ds.index_statistics(nm), default=str))
for f in ["x > 15", "x = 2", "x IS NULL", "x < 1", "id BETWEEN 5 AND 6", "id IN (1, 17)", "s = 's013'", "s IS NULL", "isnan(x)", "id != 3"]:
    try:
        print(f, ds.to_table(filter=f, columns=["id"])["id"].to_pylist())
        print(ds.scanner(filter=f, columns=["id"]).explain_plan(verbose=True))
    except Exception as e: print(f, "ERR", e)
