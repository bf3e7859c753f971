import lance, numpy as np
q=np.random.default_rng(5).standard_normal(32).astype(np.float32)
ds=lance.dataset('/tmp/vecres/ds_IVF_FLAT')
for nn in [{}, {"nprobes":1}, {"search_effort":0.0}, {"search_effort":1.0}, {"minimum_nprobes":3}]:
    print("===", nn); print(ds.scanner(nearest={"column":"vec","q":q,"k":5, **nn}, columns=["id"]).analyze_plan())
