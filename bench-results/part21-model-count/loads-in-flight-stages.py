import collections,statistics,sys
ev=collections.defaultdict(dict)
for l in open(sys.argv[1]):
    if not l.startswith('T '): continue
    p=l.split(); t=float(p[1]); k=p[2]; n=p[3]
    if n=='?': continue
    ev[n][k]=t
for lab,cond in (('alone',lambda i:1<i<=161),('inflight',lambda i:i>161)):
  names=[n for n in ev if n.startswith('m') and cond(int(n[1:]))]
  out=[]
  for a,b in [('POST','SLOT'),('SLOT','RESOLVED'),('RESOLVED','SEND'),('SEND','LOADED'),('LOADED','DONE'),('REQ','DONE')]:
    v=[ev[n][b]-ev[n][a] for n in names if a in ev[n] and b in ev[n]]
    out.append(f'{a}->{b} {statistics.median(v):.2f}')
  print(lab,' | '.join(out))
