import lance, pyarrow as pa, shutil, os, json
from dump import *
docs = ["The quick brown fox jumps over the lazy dog",
        "A quick brown dog",
        "Foxes are running quickly",
        "the lazy cat sleeps",
        "dog dog dog",
        "Café résumé naïve"]
shutil.rmtree("/tmp/ftsres/inv1", ignore_errors=True)
ds = lance.write_dataset(pa.table({"id": pa.array(range(6), pa.int32()), "text": docs}), "/tmp/ftsres/inv1")
ds.create_scalar_index("text", "INVERTED")
ds = lance.dataset("/tmp/ftsres/inv1")
dumpidx(ds)
print(ds.list_indices())
print(ds.index_statistics("text_idx"))
