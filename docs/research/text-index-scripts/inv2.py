import lance, pyarrow as pa, shutil, random
from dump import *
random.seed(1)
words = ["alpha","beta","gamma","delta","omega"]
docs=[]
for i in range(300):
    n = random.randint(1,8)
    docs.append(" ".join(random.choice(words) if j>0 else "alpha" for j in range(n)))
shutil.rmtree("/tmp/ftsres/inv2", ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": docs}), "/tmp/ftsres/inv2")
ds.create_scalar_index("text", "INVERTED", stem=False, remove_stop_words=False)
ds = lance.dataset("/tmp/ftsres/inv2")
import pickle; pickle.dump(docs, open("inv2.pkl","wb"))
dumpidx(ds, show=False)
import glob
r,t = dump(glob.glob("/tmp/ftsres/inv2/_indices/*/part_0_invert.lance")[0], show=False)
for i in range(t.num_rows):
    p = t.column("_posting")[i].as_py(); im = t.column("_impacts")[i].as_py()
    print(i, t.column("_length")[i], t.column("_max_score")[i], [len(b) for b in p], [b[:24].hex() for b in p])
    print("   impacts", [b.hex() for b in im])
r,t = dump(glob.glob("/tmp/ftsres/inv2/_indices/*/part_0_tokens.lance")[0], show=False)
open("inv2.fst","wb").write(t.column(0)[0].as_py())
