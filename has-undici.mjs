const m = process.argv[2];
await import(m);
const v8 = await import('node:v8');
const f = v8.writeHeapSnapshot('/tmp/hs/x.heapsnapshot');
const s = JSON.parse((await import('node:fs')).readFileSync(f,'utf8'));
console.log(m, s.strings.some((x) => x.length > 700000 && x.includes('UndiciError')) ? 'LOADS node undici' : 'no');
