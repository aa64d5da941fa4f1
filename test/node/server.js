// An HTTP server whose handler either keeps a native-backed object per request (a 16 KiB
// Buffer: its bytes live outside V8's heap, allocated by node's ArrayBuffer allocator) or
// makes and drops the same object.  Mode from argv[2]: `leak`, `clean`, or `closure`, where
// a named function of this file (keepInClosure) makes the Buffer and keeps a closure over it.
// Prints its port on stdout once listening.  GET /work serves one request and answers with
// node's own view of its memory; GET /exit answers, then leaves through process.exit(0).
'use strict';
const http = require('http');

const mode = process.argv[2];
if (mode !== 'leak' && mode !== 'clean' && mode !== 'closure') {
    console.error('usage: node server.js leak|clean|closure');
    process.exit(2);
}
const BYTES = 16384; // above Buffer.poolSize / 2: every Buffer gets its own backing store
const kept = [];
let served = 0;

function keepInClosure(fill)
{
    const buf = Buffer.alloc(BYTES, fill);
    kept.push(() => buf.length);
}

const server = http.createServer((req, res) => {
  if (req.url === '/work') {
      if (mode === 'closure') {
          keepInClosure(served & 0xff);
      } else {
          const buf = Buffer.alloc(BYTES, served & 0xff);
          if (mode === 'leak')
              kept.push(buf);
      }
    served++;
    const mem = process.memoryUsage();
    const body = JSON.stringify({ served, array_buffers: mem.arrayBuffers, kept: kept.length });
    res.writeHead(200, { 'content-type': 'application/json', 'content-length': body.length });
    res.end(body);
  } else if (req.url === '/exit') {
    res.writeHead(200, { 'content-length': 2, connection: 'close' });
    res.end('ok', () => process.exit(0));
  } else {
    res.writeHead(404, { 'content-length': 0 });
    res.end();
  }
});
server.keepAliveTimeout = 60000;
server.listen(0, '127.0.0.1', () => {
  process.stdout.write(server.address().port + '\n');
});
