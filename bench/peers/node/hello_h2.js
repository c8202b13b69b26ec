'use strict';
// node:http2 peer for the loadbench HTTP/2 benchmarks.
//   node bench/peers/node/hello_h2.js PORT              h2c (prior knowledge)
//   node bench/peers/node/hello_h2.js PORT CERT KEY     TLS, ALPN h2 (allowHTTP1 off)
// Routes mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\n" text/plain,
// GET /json -> {"message":"Hello, World!"}, POST /echo -> the body back with its content type,
// other paths -> 404. One process (node has no shared-nothing worker model for http2 sessions);
// binds 127.0.0.1; uses the core 'stream' API (the cheapest of node's two HTTP/2 APIs).
const http2 = require('node:http2');
const fs = require('node:fs');

const port = Number.parseInt(process.argv[2] ?? '', 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node hello_h2.js PORT [CERT KEY]');
  process.exit(2);
}
const PLAINTEXT = Buffer.from('Hello, World!\n');
const JSON_BODY = Buffer.from('{"message":"Hello, World!"}');
const NOT_FOUND = Buffer.from('Not Found\n');

function onStream(stream, headers) {
  const path = (headers[':path'] ?? '/').split('?', 1)[0];
  const method = headers[':method'];
  if ((path === '/' || path === '/plaintext') && method === 'GET') {
    stream.respond({ ':status': 200, 'content-type': 'text/plain', 'content-length': PLAINTEXT.length });
    stream.end(PLAINTEXT);
  } else if (path === '/json' && method === 'GET') {
    stream.respond({ ':status': 200, 'content-type': 'application/json', 'content-length': JSON_BODY.length });
    stream.end(JSON_BODY);
  } else if (path === '/echo' && method === 'POST') {
    const chunks = [];
    stream.on('data', (c) => chunks.push(c));
    stream.on('end', () => {
      const body = Buffer.concat(chunks);
      stream.respond({ ':status': 200, 'content-type': headers['content-type'] ?? 'application/octet-stream',
                       'content-length': body.length });
      stream.end(body);
    });
  } else {
    stream.respond({ ':status': 404, 'content-type': 'text/plain', 'content-length': NOT_FOUND.length });
    stream.end(NOT_FOUND);
  }
}

const tls = process.argv.length >= 5;
const server = tls
  ? http2.createSecureServer({ cert: fs.readFileSync(process.argv[3]), key: fs.readFileSync(process.argv[4]) })
  : http2.createServer();
server.on('stream', onStream);
server.on('sessionError', () => {});
server.listen(port, '127.0.0.1', () => {
  console.log(JSON.stringify({ event: 'ready', port: server.address().port, tls }));
});
for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
