'use strict';
// node:http2 peer for the loadbench HTTP/2 benchmarks.
//   node bench/peers/node/hello_h2.js PORT              h2c (prior knowledge)
//   node bench/peers/node/hello_h2.js PORT CERT KEY     TLS, ALPN h2 (allowHTTP1 off)
//   NODE_WORKERS=N   N node:cluster workers sharing the port (default 1: one process), as hello.js
// Routes mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\n" text/plain,
// GET /json -> {"message":"Hello, World!"}, POST /echo -> the body back with its content type,
// other paths -> 404, a known path with a wrong method -> 405. Binds 127.0.0.1; uses the core
// 'stream' API (the cheapest of node's two HTTP/2 APIs).
const http2 = require('node:http2');
const cluster = require('node:cluster');
const fs = require('node:fs');

const port = Number.parseInt(process.argv[2] ?? '', 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node hello_h2.js PORT [CERT KEY]');
  process.exit(2);
}
const PLAINTEXT = Buffer.from('Hello, World!\n');
const JSON_BODY = Buffer.from('{"message":"Hello, World!"}');
const NOT_FOUND = Buffer.from('Not Found\n');
const NOT_ALLOWED = Buffer.from('Method Not Allowed\n');
const ROUTES = { '/': 'GET', '/plaintext': 'GET', '/json': 'GET', '/echo': 'POST' };
const workers = Number.parseInt(process.env.NODE_WORKERS ?? '1', 10);
if (!Number.isInteger(workers) || workers < 1) {
  console.error(`hello_h2.js: NODE_WORKERS must be a positive integer, got ${process.env.NODE_WORKERS}`);
  process.exit(2);
}

function onStream(stream, headers) {
  const path = (headers[':path'] ?? '/').split('?', 1)[0];
  const method = headers[':method'];
  if (ROUTES[path] !== undefined && ROUTES[path] !== method) {
    stream.respond({ ':status': 405, 'content-type': 'text/plain', 'content-length': NOT_ALLOWED.length,
                     allow: ROUTES[path] });
    stream.end(NOT_ALLOWED);
  } else if ((path === '/' || path === '/plaintext') && method === 'GET') {
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

function serve() {
  const server = tls
    ? http2.createSecureServer({ cert: fs.readFileSync(process.argv[3]), key: fs.readFileSync(process.argv[4]) })
    : http2.createServer();
  server.on('stream', onStream);
  server.on('sessionError', () => {});
  server.listen(port, '127.0.0.1', () => {
    if (cluster.isPrimary) {
      console.log(JSON.stringify({ event: 'ready', port: server.address().port, tls, workers: 1 }));
    } else {
      process.send({ listening: server.address().port });
    }
  });
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => server.close(() => process.exit(0)));
  // open sessions keep close() waiting; a benchmark peer stops promptly
  for (const sig of ['SIGTERM', 'SIGINT']) process.on(sig, () => setTimeout(() => process.exit(0), 1000).unref());
}

if (workers === 1 || !cluster.isPrimary) {
  serve();
} else {
  let listening = 0;
  let stopping = false;
  for (let i = 0; i < workers; i += 1) {
    cluster.fork().on('message', (msg) => {
      listening += 1;
      if (listening === workers) console.log(JSON.stringify({ event: 'ready', port: msg.listening, tls, workers }));
    });
  }
  const shutdown = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.kill('SIGTERM');
    setTimeout(() => process.exit(0), 2000).unref();
    cluster.disconnect(() => process.exit(0));
  };
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`hello_h2.js: worker ${worker.process.pid} died (${signal ?? code}); stopping`);
      shutdown();
    }
  });
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
}
