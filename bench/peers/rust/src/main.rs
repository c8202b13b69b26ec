//! Rust peer for the loadbench benchmarks: hyper 1 on tokio's multi-thread runtime, rustls (ring) for TLS.
//!   loadbench-peer-rust PORT              HTTP/1.1 and h2c (prior knowledge) on 127.0.0.1:PORT
//!   loadbench-peer-rust PORT CERT KEY     TLS; ALPN offers h2 and http/1.1
//! Workers: TOKIO_WORKER_THREADS (read by tokio itself). Routes mirror the Beast reference server:
//! GET / and /plaintext -> "Hello, World!\n" text/plain, GET /json -> {"message":"Hello, World!"}
//! (serialised per request), POST /echo -> the body back with its content type, other paths -> 404,
//! a known path with a wrong method -> 405. SIGTERM ends the process (default disposition).
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::header::{HeaderValue, ALLOW, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const PLAINTEXT: &[u8] = b"Hello, World!\n";

fn answer(status: StatusCode, content_type: HeaderValue, body: Bytes) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    resp.headers_mut().insert(CONTENT_TYPE, content_type);
    resp
}

async fn handle(req: Request<Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req.uri().path().to_owned();
    let want = match path.as_str() {
        "/" | "/plaintext" | "/json" => Some(Method::GET),
        "/echo" => Some(Method::POST),
        _ => None,
    };
    let text = HeaderValue::from_static("text/plain");
    let resp = match want {
        None => answer(StatusCode::NOT_FOUND, text, Bytes::from_static(b"Not Found\n")),
        Some(m) if m != req.method() => {
            let mut r = answer(StatusCode::METHOD_NOT_ALLOWED, text, Bytes::from_static(b"Method Not Allowed\n"));
            r.headers_mut().insert(ALLOW, HeaderValue::from_str(m.as_str()).expect("a method name"));
            r
        }
        Some(_) if path == "/json" => {
            let body = serde_json::to_vec(&serde_json::json!({"message": "Hello, World!"})).unwrap();
            answer(StatusCode::OK, HeaderValue::from_static("application/json"), Bytes::from(body))
        }
        Some(_) if path == "/echo" => {
            let ctype = req.headers().get(CONTENT_TYPE).cloned()
                .unwrap_or_else(|| HeaderValue::from_static("application/octet-stream"));
            match req.into_body().collect().await {
                Ok(body) => answer(StatusCode::OK, ctype, body.to_bytes()),
                Err(_) => answer(StatusCode::BAD_REQUEST, text, Bytes::from_static(b"Bad Request\n")),
            }
        }
        Some(_) => answer(StatusCode::OK, text, Bytes::from_static(PLAINTEXT)),
    };
    Ok(resp)
}

fn tls_acceptor(cert: &str, key: &str) -> TlsAcceptor {
    let certs = rustls_pemfile::certs(&mut std::io::BufReader::new(std::fs::File::open(cert).expect("cert file")))
        .collect::<Result<Vec<_>, _>>()
        .expect("certificate PEM");
    let key = rustls_pemfile::private_key(&mut std::io::BufReader::new(std::fs::File::open(key).expect("key file")))
        .expect("key PEM")
        .expect("a private key");
    let mut config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("certificate and key");
    config.alpn_protocols = vec![b"h2".to_vec(), b"http/1.1".to_vec()];
    TlsAcceptor::from(Arc::new(config))
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = match args.get(1).and_then(|p| p.parse().ok()) {
        Some(p) => p,
        None => {
            eprintln!("usage: loadbench-peer-rust PORT [CERT KEY]   (TOKIO_WORKER_THREADS=N)");
            std::process::exit(2);
        }
    };
    let acceptor = if args.len() >= 4 { Some(tls_acceptor(&args[2], &args[3])) } else { None };
    let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            match acceptor {
                Some(acceptor) => {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        let _ = builder.serve_connection(TokioIo::new(tls), service_fn(handle)).await;
                    }
                }
                None => {
                    let _ = builder.serve_connection(TokioIo::new(stream), service_fn(handle)).await;
                }
            }
        });
    }
}
