def uvarint(b, i):
    x=0; s=0
    while True:
        c=b[i]; i+=1; x |= (c&0x7f)<<s; s+=7
        if c<0x80: return x,i
def quant(L):
    # hypothesis: 3-bit mantissa float code
    if L < 16: return L
    e = L.bit_length()-1
    m = (L >> (e-3)) & 7
    return 8*(e-2)+m
def dec_impact(b, rawbyte_norm=True):
    i=0; last,i = uvarint(b,i); n,i = uvarint(b,i)
    pairs=[]; pf=0; pn=0
    for _ in range(n):
        v,i = uvarint(b,i); fd=v>>1
        if v&1:
            if rawbyte_norm: d=b[i]; i+=1
            else: d,i=uvarint(b,i)
        else: d=1
        pf = pf+fd+1; pn = pn+d; pairs.append((pf,pn))
    assert i==len(b), (i,len(b))
    return last, pairs
if __name__=="__main__":
    b=bytes.fromhex('1b190102000d071909020903130313021b0447043503028d01046d0300568f0306e70708cf0f08ef2e0a8f4e08dfd40310dfd40307dfd40304ffb4180d')
    last,p = dec_impact(b); print(last,p)
    lens = [1,2,3,10,23,24,25,30,40,50,64,100,127,128,129,200,255,256,300,500,1000,2000,5000,10000,40000,70000,100000,300000]
    print([(L-1,quant(L)) for L in lens if L>1])
