const D = require('node:path').resolve(__dirname, '../../dist');
const {startBenchServer}=require(D+'/scripts/bench/bench-run');
const {hammer}=require(D+'/harness/load-generator');
const {postJson}=require(D+'/harness/http-requests');
const {writeTinyMlp}=require(D+'/harness/onnx-models');
(async()=>{
  const s=await startBenchServer();
  const r=await postJson(`${s.url}/models`,{model_name:'tiny',url:writeTinyMlp(s.store),initial_workers:1});
  const body=JSON.stringify({inputs:{input:[Array.from({length:16},(_,i)=>i/16)]}});
  const u=`${s.url}/models/tiny/invoke`;
  await hammer(u,body,{connections:16,seconds:3});
  const h=await hammer(u,body,{connections:16,seconds:10});
  console.log('rps',h.rps);
  await s.stop();
})();
