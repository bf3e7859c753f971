import lance, numpy as np, pyarrow as pa, shutil, sys, os
sys.path.insert(0,'/tmp/vecres'); import pb
rng=np.random.default_rng(21); N=40000; vecs=rng.standard_normal((N,16)).astype(np.float32)
p='/tmp/vecres/fr'; shutil.rmtree(p,ignore_errors=True)
ds=lance.write_dataset(pa.table({"id":np.arange(N),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),16)}),p,max_rows_per_file=10000)
ds.create_index("vec","IVF_FLAT",num_partitions=8)
ds.delete("id % 3 = 0"); ds=lance.dataset(p)
m=ds.optimize.compact_files(defer_index_remap=True); ds=lance.dataset(p); print(m, 'frags', [f.fragment_id for f in ds.get_fragments()])
for x in pb.index_section(p):
    d=pb.index_meta(x); print(' ', d['3:name'], d['1:uuid'][:8], d['6:details.type_url'], 'bitmap', d['5:fragment_bitmap'], 'dsver', d['4:dataset_version'], 'files', d.get('10:files'), 'ver', d.get('7:index_version'))
print(' list', [(i['name'], i['type'], sorted(i['fragment_ids'])) for i in ds.list_indices()])
print(' stats', {k:v for k,v in ds.stats.index_stats('vec_idx').items() if k.startswith('num')})
q=vecs[1]
print(ds.scanner(nearest={"column":"vec","q":q,"k":3}, columns=["id"]).explain_plan(True))
print(ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["id"]).to_pydict())
ds.optimize.optimize_indices(); ds=lance.dataset(p)
for x in pb.index_section(p):
    d=pb.index_meta(x); print(' after optimize', d['3:name'], d['1:uuid'][:8], 'bitmap', d['5:fragment_bitmap'], 'dsver', d['4:dataset_version'])
# scalar index prefilter + cosine plan
ds.create_index("id","BTREE")
ds=lance.dataset(p)
print(ds.scanner(nearest={"column":"vec","q":q,"k":3}, filter="id > 100", prefilter=True, columns=["id"]).explain_plan(True))
