import lance, pyarrow as pa, shutil, glob, random, os
from lance.query import *
random.seed(3)
W = ["w%d"%i for i in range(50)]
docs = [" ".join(random.choice(W) for _ in range(random.randint(1,10))) for _ in range(40000)]
shutil.rmtree("/tmp/ftsres/q7", ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": docs}), "/tmp/ftsres/q7", max_rows_per_file=1000)
ds.create_scalar_index("text", "INVERTED", num_workers=2, memory_limit=1)
print(sorted(os.listdir(glob.glob("/tmp/ftsres/q7/_indices/*")[0])))
import lance.file as lf
m = lf.LanceFileReader(glob.glob("/tmp/ftsres/q7/_indices/*/metadata.lance")[0]).read_all().to_table()
print(m.schema.metadata[b"partitions"])
for f in sorted(glob.glob("/tmp/ftsres/q7/_indices/*/part_*_docs.lance")):
    t = lf.LanceFileReader(f).read_all().to_table(); r = t["_rowid"].to_pylist(); print(f.split("/")[-1], len(r), r[:3], r[-1] >> 32)
