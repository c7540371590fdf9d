import json,sys,collections
p=json.load(open(sys.argv[1]))
nodes={n['id']:n for n in p['nodes']}
parent={}
for n in p['nodes']:
    for c in n.get('children',[]): parent[c]=n['id']
t=p['startTime'];ts=[]
for d in p['timeDeltas']: t+=d; ts.append(t)
samples=p['samples']
def name(nid):
    cf=nodes[nid]['callFrame'];return cf['functionName'] or '(anon)'
# buckets
b0=ts[0];buck=collections.defaultdict(lambda:[0,0])
for s,tt in zip(samples,ts):
    k=int((tt-b0)/100000); buck[k][1]+=1
    if name(s)=='(idle)': buck[k][0]+=1
if len(sys.argv)<3:
    for k in sorted(buck): print(k, buck[k][1], '%.0f%% idle'%(100*buck[k][0]/buck[k][1]))
    sys.exit()
lo,hi=float(sys.argv[2]),float(sys.argv[3])
selfc=collections.Counter();incl=collections.Counter();n=0
for s,tt in zip(samples,ts):
    k=(tt-b0)/100000
    if not(lo<=k<hi): continue
    n+=1; selfc[name(s)]+=1
    seen=set();x=s
    while x is not None:
        cf=nodes[x]['callFrame'];key=(cf['functionName'] or '(anon)')+' '+cf['url'].split('/')[-1]+':'+str(cf['lineNumber'])
        if key not in seen: incl[key]+=1; seen.add(key)
        x=parent.get(x)
print('samples',n)
for k,v in selfc.most_common(15): print('self %5.1f%% %s'%(100*v/n,k))
for k,v in incl.most_common(45): print('incl %5.1f%% %s'%(100*v/n,k))
