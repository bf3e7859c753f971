# norms quantization + bitpacking layout + multi fragment doc ids
import lance, pyarrow as pa, shutil, glob, random
import lance.file as lf
random.seed(2)
lens = [1,2,3,10,23,24,25,30,40,50,64,100,127,128,129,200,255,256,300,500,1000,2000,5000,10000,40000,70000,100000,300000]
docs = [" ".join(["w%d"%i]+["pad"]*(L-1)) for i,L in enumerate(lens)]
shutil.rmtree("/tmp/ftsres/fmt3", ignore_errors=True)
ds = lance.write_dataset(pa.table({"text": docs}), "/tmp/ftsres/fmt3")
ds.create_scalar_index("text", "INVERTED", stem=False, remove_stop_words=False)
t = lf.LanceFileReader(glob.glob("/tmp/ftsres/fmt3/_indices/*/part_0_invert.lance")[0]).read_all().to_table()
d = lf.LanceFileReader(glob.glob("/tmp/ftsres/fmt3/_indices/*/part_0_docs.lance")[0]).read_all().to_table()
print(d["_num_tokens"].to_pylist())
for i in range(t.num_rows):
    print(i, t["_length"][i], [b.hex() for b in t["_impacts"][i].as_py()], [b.hex()[:40] for b in t["_posting"][i].as_py()])
