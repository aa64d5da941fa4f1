// Keeps 30,000 filled 4 KiB buffers, 1,000 every 100 ms: Bun's JavaScript heap and
// mimalloc hold them, and none of it goes through a malloc libchurn sees.
const keep = [];
let turns = 0;
const timer = setInterval(() => {
  for (let k = 0; k < 1000; k++) keep.push(new Uint8Array(4096).fill(k & 255));
  if (++turns === 30) {
    clearInterval(timer);
    let sum = 0;
    for (const b of keep) sum += b[100];
    console.log("buffers", keep.length, "sum", sum);
  }
}, 100);
