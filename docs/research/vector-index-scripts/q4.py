import lance, numpy as np, pyarrow as pa, shutil, re, os
p='/tmp/vecres/big64'
if not os.path.exists(p):
    rng=np.random.default_rng(11); N=32768; D=16
    vecs=rng.standard_normal((N,D)).astype(np.float32); np.save('big64.npy',vecs)
    ds=lance.write_dataset(pa.table({"id":np.arange(N),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),D)}),p)
    ds.create_index("vec","IVF_FLAT",num_partitions=64)
ds=lance.dataset(p)
q=np.random.default_rng(5).standard_normal(16).astype(np.float32)
def searched(nn, **kw):
    s=ds.scanner(nearest={"column":"vec","q":q, **nn}, columns=["id"], **kw).analyze_plan()
    m=re.search(r'ANNSubIndex.*?partitions_searched=(\d+)', s); return m.group(1) if m else s
for nn in [{}, {"k":1}, {"k":100}, {"k":1000}, {"nprobes":1}, {"nprobes":10}, {"minimum_nprobes":5}, {"maximum_nprobes":5}, {"minimum_nprobes":1,"maximum_nprobes":2,"k":2000},
           {"search_effort":0.0}, {"search_effort":0.25}, {"search_effort":0.5}, {"search_effort":0.75}, {"search_effort":1.0}, {"search_effort":0.5, "nprobes":3}, {"nprobes":1,"k":2000}]:
    print(nn, 'partitions_searched=', searched(nn))
print('filter id<1000 post', searched({"k":10}, filter="id < 1000"))
print('filter id<1000 pre', searched({"k":10}, filter="id < 1000", prefilter=True))
print('filter id<50 pre', searched({"k":10}, filter="id < 50", prefilter=True))
print('filter id<50 pre nprobes1', searched({"k":10,"nprobes":1}, filter="id < 50", prefilter=True))
