import lance, numpy as np, pyarrow as pa, shutil
vecs=np.load('vecs.npy'); N=len(vecs)
p='/tmp/vecres/noidx'; shutil.rmtree(p,ignore_errors=True)
ds=lance.write_dataset(pa.table({"id":np.arange(N),"vec":pa.FixedSizeListArray.from_arrays(pa.array(vecs.reshape(-1)),32)}),p,max_rows_per_file=2000)
q=np.random.default_rng(5).standard_normal(32).astype(np.float32)
t=ds.to_table(nearest={"column":"vec","q":q})
print('default k rows', t.num_rows, 'schema', t.schema)
for metric in ["l2","cosine","dot"]:
    t=ds.to_table(nearest={"column":"vec","q":q,"k":5,"metric":metric}, columns=["id"])
    ids=t['id'].to_numpy(); d=t['_distance'].to_numpy()
    l2=((vecs[ids]-q)**2).sum(1); cos=1-(vecs[ids]@q)/np.linalg.norm(vecs[ids],axis=1)/np.linalg.norm(q); dot=1-(vecs[ids]@q); ndot=-(vecs[ids]@q)
    print(metric, ids, d, 'l2sq', np.allclose(d,l2,rtol=1e-5), 'cos', np.allclose(d,cos,atol=1e-5), '1-dot', np.allclose(d,dot,rtol=1e-4), '-dot', np.allclose(d,ndot,rtol=1e-4))
    # exact topk
    full={'l2':((vecs-q)**2).sum(1),'cosine':1-(vecs@q)/np.linalg.norm(vecs,axis=1)/np.linalg.norm(q),'dot':1-vecs@q}[metric]
    print('   exact top5', np.argsort(full,kind='stable')[:5])
print('dtype', t.schema.field('_distance'))
# columns order, with_row_id
t=ds.to_table(nearest={"column":"vec","q":q,"k":3}, with_row_id=True); print(t.column_names)
t=ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["id"], with_row_id=True); print(t.column_names)
t=ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["vec","id"]); print(t.column_names)
t=ds.to_table(nearest={"column":"vec","q":q,"k":3}, columns=["id"]); print(t.column_names)
# 2-D
Q=np.random.default_rng(6).standard_normal((3,32)).astype(np.float32)
t=ds.to_table(nearest={"column":"vec","q":Q,"k":2}, columns=["id"]); print(t.schema, t.to_pydict())
