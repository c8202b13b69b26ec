'use strict';
// node:http peer for the loadbench benchmarks.
//   node bench/peers/node/hello.js PORT          (NODE_WORKERS=N forks N cluster workers, default 1)
//   node bench/peers/node/hello.js PORT CERT KEY HTTP/1.1 over TLS (node:https), same routes
// Routes mirror the Beast reference server: GET / and /plaintext -> "Hello, World!\n" text/plain,
// GET /json -> {"message":"Hello, World!"}, POST /echo -> the body back with its content type,
// other paths -> 404, known path with a wrong method -> 405. Keep-alive is node's default.
// Binds 127.0.0.1 only; prints one JSON ready line once every worker listens.
const http = require('node:http');
const https = require('node:https');
const fs = require('node:fs');
const cluster = require('node:cluster');

const port = Number.parseInt(process.argv[2] ?? '', 10);
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error('usage: node hello.js PORT   (NODE_WORKERS=N for N cluster workers)');
  process.exit(2);
}
const workers = Number.parseInt(process.env.NODE_WORKERS ?? '1', 10);
if (!Number.isInteger(workers) || workers < 1) {
  console.error(`hello.js: NODE_WORKERS must be a positive integer, got ${process.env.NODE_WORKERS}`);
  process.exit(2);
}

const PLAINTEXT = Buffer.from('Hello, World!\n');
const PLAINTEXT_HEADERS = { 'Content-Type': 'text/plain', 'Content-Length': PLAINTEXT.length };
const ROUTES = { '/': 'GET', '/plaintext': 'GET', '/json': 'GET', '/echo': 'POST' };

function handle(req, res) {
  const path = req.url.split('?', 1)[0];
  const method = ROUTES[path];
  if (method === undefined) {
    res.writeHead(404, { 'Content-Type': 'text/plain', 'Content-Length': 10 });
    res.end('Not Found\n');
    return;
  }
  if (req.method !== method) {
    res.writeHead(405, { 'Content-Type': 'text/plain', 'Content-Length': 19, Allow: method });
    res.end('Method Not Allowed\n');
    return;
  }
  if (path === '/json') {
    // Serialised per request, like every framework benchmark's JSON test.
    const body = JSON.stringify({ message: 'Hello, World!' });
    res.writeHead(200, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body) });
    res.end(body);
  } else if (path === '/echo') {
    const chunks = [];
    req.on('data', (chunk) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks);
      res.writeHead(200, {
        'Content-Type': req.headers['content-type'] ?? 'application/octet-stream',
        'Content-Length': body.length,
      });
      res.end(body);
    });
  } else {
    res.writeHead(200, PLAINTEXT_HEADERS);
    res.end(PLAINTEXT);
  }
}

function serve() {
  const options = { keepAliveTimeout: 60_000 };
  const server = process.argv.length >= 5
    ? https.createServer({ ...options, cert: fs.readFileSync(process.argv[3]), key: fs.readFileSync(process.argv[4]) },
      handle)
    : http.createServer(options, handle);
  server.headersTimeout = 65_000;
  server.listen(port, '127.0.0.1', () => {
    if (cluster.isPrimary) {
      console.log(JSON.stringify({ event: 'ready', pid: process.pid, port: server.address().port, workers: 1 }));
    } else {
      process.send({ listening: server.address().port });
    }
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

if (workers === 1) {
  serve();
} else if (cluster.isPrimary) {
  let listening = 0;
  for (let i = 0; i < workers; i += 1) {
    const worker = cluster.fork();
    worker.on('message', (msg) => {
      listening += 1;
      if (listening === workers) {
        console.log(JSON.stringify({ event: 'ready', pid: process.pid, port: msg.listening, workers }));
      }
    });
  }
  cluster.on('exit', (worker, code, signal) => {
    if (!stopping) {
      console.error(`hello.js: worker ${worker.process.pid} died (${signal ?? code}); stopping`);
      shutdown();
    }
  });
  let stopping = false;
  const shutdown = () => {
    stopping = true;
    for (const worker of Object.values(cluster.workers)) worker.kill('SIGTERM');
    setTimeout(() => process.exit(0), 2000).unref();
    cluster.disconnect(() => process.exit(0));
  };
  process.on('SIGTERM', shutdown);
  process.on('SIGINT', shutdown);
} else {
  serve();
}
