// JIT workload for rperf tests: all time in hotJsFunction. Usage: node --perf-basic-prof hot.js
function hotJsFunction(n) { let s = 0; for (let i = 0; i < n; i++) { s += Math.sqrt(i ^ 0x5a5a); } return s; }
const end = Date.now() + 1500; let t = 0;
while (Date.now() < end) t += hotJsFunction(100000);
console.log(t > 0);
