import sys, struct, glob, os
def uv(b,i):
    x=s=0
    while True:
        c=b[i]; i+=1; x|=(c&0x7f)<<s; s+=7
        if c<0x80: return x,i
def fields(b):
    i=0; out=[]
    while i<len(b):
        k,i=uv(b,i); f,t=k>>3,k&7
        if t==0: v,i=uv(b,i)
        elif t==2: l,i=uv(b,i); v=b[i:i+l]; i+=l
        elif t==1: v=b[i:i+8]; i+=8
        elif t==5: v=b[i:i+4]; i+=4
        else: raise Exception(t)
        out.append((f,t,v))
    return out
def latest_manifest(ds):
    ms = glob.glob(ds+"/_versions/*.manifest")
    return max(ms, key=os.path.getmtime)
def index_entries(path):
    b=open(path,"rb").read()
    pos=struct.unpack("<Q", b[-16:-8])[0]
    l=struct.unpack("<I", b[pos:pos+4])[0]; man=b[pos+4:pos+4+l]
    mf=fields(man); off=[v for f,t,v in mf if f==6]
    if not off: return []
    o=off[0]; l=struct.unpack("<I", b[o:o+4])[0]; sec=b[o+4:o+4+l]
    return [v for f,t,v in fields(sec) if f==1]
def show(ds):
    for e in index_entries(latest_manifest(ds)):
        for f,t,v in fields(e):
            if f==6:
                d=fields(v); print("  6 index_details:", [(ff, vv if not isinstance(vv,bytes) else vv.decode(errors='replace')) for ff,tt,vv in d if ff==1], "value bytes:", [vv.hex() for ff,tt,vv in d if ff==2])
                for ff,tt,vv in d:
                    if ff==2: print("     details fields:", [(a, c if not isinstance(c,bytes) else c) for a,_,c in fields(vv)])
            elif f==10: print("  10 files:", [(x[0][2].decode(), x[1][2] if len(x)>1 else None) for x in [fields(v)]])
            elif f in (1,5): print(" ",f, v.hex() if isinstance(v,bytes) else v)
            else: print(" ", f, v)
        print(" --")
if __name__=="__main__": show(sys.argv[1])
