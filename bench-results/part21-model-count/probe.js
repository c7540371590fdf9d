// Outside probe of a running model-count server: models loaded (binary search on GET /models pages),
// tree CPU (/proc) over a window -> CPU per load, memory (PSS/RSS), GET /models page and /ping times.
const fs = require('fs');
const root = Number(process.argv[2]);
const url = process.argv[3];
const windowS = Number(process.argv[4] || 60);
const kids = () => { const out=[]; const byP=new Map(); for (const p of fs.readdirSync('/proc')) { if(!/^\d+$/.test(p)) continue; try { const st=fs.readFileSync(`/proc/${p}/stat`,'utf8'); const f=st.slice(st.lastIndexOf(')')+2).split(' '); const pp=Number(f[1]); (byP.get(pp)||byP.set(pp,[]).get(pp)).push(Number(p)); } catch{} } const v=(x)=>{for(const c of byP.get(x)||[]){out.push(c);v(c);}}; v(root); return [root,...out]; };
const cpu = (pid) => { try { const st=fs.readFileSync(`/proc/${pid}/stat`,'utf8'); const f=st.slice(st.lastIndexOf(')')+2).split(' '); return (Number(f[11])+Number(f[12]))*1e4; } catch { return 0; } };
const mem = (pid, key) => { try { const t=fs.readFileSync(`/proc/${pid}/${key==='Pss'?'smaps_rollup':'status'}`,'utf8'); const m=new RegExp(`^${key==='Pss'?'Pss':'VmRSS'}:\\s+(\\d+) kB`,'m').exec(t); return m?Number(m[1])/1024:0; } catch { return 0; } };
async function count() { let lo=0, hi=1<<20; while (lo<hi) { const mid=(lo+hi+1)>>1; const r=await (await fetch(`${url}/models?limit=1&next_page_token=${mid-1}`)).json(); if (r.models.length>0) lo=mid; else hi=mid-1; } return lo; }
async function ms(u, n=20) { const s=[]; for (let i=0;i<n;i++){ const t=performance.now(); const r=await fetch(u); await r.arrayBuffer(); s.push(performance.now()-t);} s.sort((a,b)=>a-b); return s[n>>1]; }
(async () => {
  const treeCpu = () => kids().reduce((a,p)=>a+cpu(p),0);
  const c0 = await count(); const cpu0 = treeCpu(); const t0 = Date.now();
  await new Promise(r=>setTimeout(r, windowS*1000));
  const c1 = await count(); const cpu1 = treeCpu(); const t1 = Date.now();
  const pids = kids();
  const out = {
    at: new Date().toISOString(), models: c1, windowSeconds: (t1-t0)/1000, loadsInWindow: c1-c0,
    loadsPerSecond: (c1-c0)/((t1-t0)/1000), cpuPerLoadMicros: (cpu1-cpu0)/Math.max(1,c1-c0),
    memory: { treePssMB: pids.reduce((a,p)=>a+mem(p,'Pss'),0), treeRssMB: pids.reduce((a,p)=>a+mem(p,'VmRSS'),0), serverPssMB: mem(root,'Pss'), serverRssMB: mem(root,'VmRSS'), processes: pids.length },
    firstPageMs: await ms(`${url}/models?limit=100`), middlePageMs: await ms(`${url}/models?limit=100&next_page_token=${Math.floor(c1/2)}`), pingMs: await ms(`${url}/ping`),
    loadAvg: fs.readFileSync('/proc/loadavg','utf8').trim(),
  };
  console.log(JSON.stringify(out));
})();
