import lance, pyarrow as pa, shutil, glob, subprocess, os, struct
import lance.file as lf
from impdec import uvarint
FST="/tmp/ftsres/fstdump/target/release/fstdump"
def read(p): return lf.LanceFileReader(p).read_all().to_table()
def tokens_of(dsdir, part=0):
    d = glob.glob(dsdir+"/_indices/*/")[0]
    t = read(d+f"part_{part}_tokens.lance")
    open("/tmp/ftsres/_tmp.fst","wb").write(t.column(0)[0].as_py())
    out = subprocess.check_output([FST,"fst","/tmp/ftsres/_tmp.fst"]).decode().splitlines()
    return {int(l.split("\t")[1]): l.split("\t")[0] for l in out}
def dec_tail(b):
    i=4; first,i = uvarint(b,i); docs=[first]; 
    # unknown count: decode all varints, half docs half freqs
    vals=[first]
    while i < len(b):
        v,i = uvarint(b,i); vals.append(v)
    n=len(vals)//2
    docs=[]; acc=0
    for k,v in enumerate(vals[:n]): acc = v if k==0 else acc+v; docs.append(acc)
    return docs, vals[n:]
def probe(texts, **params):
    p="/tmp/ftsres/probe"; shutil.rmtree(p, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": texts}), p)
    ds.create_scalar_index("text", "INVERTED", **params)
    toks = tokens_of(p)
    d = glob.glob(p+"/_indices/*/")[0]
    inv = read(d+"part_0_invert.lance")
    per = [[] for _ in texts]
    for tid in range(inv.num_rows):
        blocks = inv["_posting"][tid].as_py()
        assert len(blocks)==1
        docs, fr = dec_tail(blocks[0])
        for dd,ff in zip(docs,fr): per[dd] += [toks[tid]]*ff
    return per
if __name__=="__main__":
    import sys
    ws = "was does having this is has over doing running ran caresses ponies quickly généralement Straße ÆON naïve résumé Ünïcödé don't it's U.S.A. e-mail foo_bar 3.14 x1y2 hello,world ﬁne İstanbul".split()
    for params in [{}, dict(stem=False), dict(remove_stop_words=False), dict(stem=False, remove_stop_words=False, ascii_folding=False), dict(lower_case=False, stem=False, remove_stop_words=False)]:
        per = probe(ws, **params)
        print(params); print("  ", list(zip(ws, per)))
def probe2(texts, **params):
    p="/tmp/ftsres/probe"; shutil.rmtree(p, ignore_errors=True)
    ds = lance.write_dataset(pa.table({"text": texts}), p)
    ds.create_scalar_index("text", "INVERTED", **params)
    toks = tokens_of(p)
    d = glob.glob(p+"/_indices/*/")[0]
    inv = read(d+"part_0_invert.lance"); docs = read(d+"part_0_docs.lance")
    rid = docs["_rowid"].to_pylist(); nt = docs["_num_tokens"].to_pylist()
    per = {}
    for tid in range(inv.num_rows):
        for dd,ff in zip(*dec_tail(inv["_posting"][tid].as_py()[0])): per.setdefault(rid[dd],[]).extend([toks[tid]]*ff)
    return [per.get(i,[]) for i in range(len(texts))]
