// Keeps about 1.3 million small objects on V8's heap, added in batches over four seconds, so
// that RSS grows in V8's own mappings while malloc's heap hardly moves.  Prints how many.
const kept = [];
const start = Date.now();
while (Date.now() - start < 4000) {
    for (let i = 0; i < 20000; i++)
        kept.push({ i, s: "x" + i });
    await new Promise((done) => setTimeout(done, 50));
}
console.log(kept.length >= 400000 ? "objects kept: many" : "objects kept: " + kept.length);
