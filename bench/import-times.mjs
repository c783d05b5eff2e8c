const spec = process.argv[2];
const t0 = performance.now();
await import(spec);
console.log(spec, (performance.now() - t0).toFixed(1));
