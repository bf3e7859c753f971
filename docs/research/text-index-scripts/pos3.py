import lance, pyarrow as pa, shutil, glob, lance.file as lf, sys
def build(docs):
    shutil.rmtree("/tmp/ftsres/pos3", ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": docs}), "/tmp/ftsres/pos3")
    ds.create_scalar_index("text", "INVERTED", with_position=True, stem=False, remove_stop_words=False)
    t = lf.LanceFileReader(glob.glob("/tmp/ftsres/pos3/_indices/*/part_0_invert.lance")[0]).read_all().to_table()
    return t
for name, docs in [("128x alpha", ["alpha"]*128), ("128x 'b alpha'", ["b alpha"]*128), ("130x 'alpha b alpha'", ["alpha b alpha"]*130),
                   ("128 docs alpha at pos i%8", [" ".join(["b"]*(i%8)+["alpha"]) for i in range(128)])]:
    t = build(docs)
    for i in range(t.num_rows):
        cp = t["_compressed_position"][i].as_py()
        print(name, "tok", i, "len", t["_length"][i], "offsets", t["_position_block_offset"][i].as_py(), "bytes", len(cp), cp.hex())
