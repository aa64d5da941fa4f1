'use strict';
// Object and Buffer churn for the benchmarks: each round builds a few objects holding
// freshly allocated Buffers (Buffer.alloc and Buffer.concat always take a new backing store
// from the native allocator, unlike the pooled Buffer.allocUnsafe), serialises them, and keeps
// a bounded window of results alive so that some memory survives a few rounds.  No randomness:
// the same ROUNDS makes the same work on every run.
// Usage: node bench/node_churn.js ROUNDS

const WINDOW = 500;

function oneRound(i, kept) {
  const parts = [];
  for (let k = 0; k < 4; k++) {
    const b = Buffer.alloc(64 + ((i * 31 + k * 17) % 960));
    b.writeUInt32LE(i, 0);
    parts.push({ id: i * 4 + k, tag: 'part-' + k, data: b });
  }
  const joined = Buffer.concat(parts.map((p) => p.data));
  const text = JSON.stringify(parts.map((p) => ({ id: p.id, tag: p.tag, n: p.data.length })));
  kept.push({ joined, text });
  if (kept.length > WINDOW) kept.shift();
  return joined.length + text.length;
}

function main() {
  const arg = process.argv[2];
  if (process.argv.length !== 3 || !/^[0-9]+$/.test(arg)) {
    process.stderr.write('usage: node_churn.js ROUNDS\n');
    process.exit(2);
  }
  const rounds = Number(arg);
  const kept = [];
  let total = 0;
  for (let i = 0; i < rounds; i++) total += oneRound(i, kept);
  console.log(`rounds=${rounds} checksum=${total} kept=${kept.length}`);
}

main();
