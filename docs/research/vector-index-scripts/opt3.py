import lance, numpy as np, pyarrow as pa, shutil, sys, os
sys.path.insert(0,'/tmp/vecres'); import pb
from lance.file import LanceFileReader
exec(open('opt2.py').read().split('rng=np.random')[0])  # reuse info()
p='/tmp/vecres/opt2_IVF_PQ'
ds=lance.dataset(p); print('uuids before', [(x['uuid'],x['lengths']) for x in info(p)])
extra=np.random.default_rng(5).standard_normal((100,16)).astype(np.float32)
ds.insert(pa.table({"id":np.arange(50000,50100),"vec":pa.FixedSizeListArray.from_arrays(pa.array(extra.reshape(-1)),16)}))
ds=lance.dataset(p); ds.optimize.optimize_indices(); print('append100+optimize', [(x['uuid'],x['dsver'],x['bitmap'],x['lengths']) for x in info(p)])
ds=lance.dataset(p); ds.optimize.optimize_indices(num_indices_to_merge=2); print('optimize(merge 2)', [(x['uuid'],x['dsver'],x['lengths']) for x in info(p)])
ds=lance.dataset(p); print('list', [(i['uuid'][:8], sorted(i['fragment_ids'])) for i in ds.list_indices()], 'frags', [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()])
# compaction
m=ds.optimize.compact_files(); print('compact metrics', m)
ds=lance.dataset(p); print('after compaction frags', [(f.fragment_id, f.count_rows()) for f in ds.get_fragments()])
for m_ in pb.index_section(p):
    d=pb.index_meta(m_); print('  idx', d['3:name'], d['1:uuid'][:8], d['6:details.type_url'], 'bitmap', d['5:fragment_bitmap'], 'dsver', d['4:dataset_version'])
print('  list', [(i['name'], i['type'], i['uuid'][:8], sorted(i['fragment_ids'])) for i in ds.list_indices()])
print('  stats', {k:v for k,v in ds.stats.index_stats('vec_idx').items() if k.startswith('num')})
q=np.random.default_rng(1).standard_normal(16).astype(np.float32)
print(ds.scanner(nearest={"column":"vec","q":q,"k":5}, columns=["id"]).explain_plan(True))
r=ds.to_table(nearest={"column":"vec","q":q,"k":5,"nprobes":8,"refine_factor":5}, columns=["id"]); print(r['id'].to_pylist())
ds.optimize.optimize_indices(); ds=lance.dataset(p)
print('after optimize post-compaction', [(x['uuid'],x['dsver'],x['bitmap'],x['lengths']) for x in info(p)])
print('  list', [(i['name'], i['type'], i['uuid'][:8], sorted(i['fragment_ids'])) for i in ds.list_indices()])
