//! Rust axum peer for the loadbench benchmarks: axum's Router on hyper 1 + tokio (multi-thread
//! runtime), rustls (ring) for TLS - the rust-hyper peer's stack with axum on top, so the pair shows
//! what axum's routing and extractors cost over a bare hyper service.
//!   loadbench-peer-axum PORT              HTTP/1.1 and h2c (prior knowledge) on 127.0.0.1:PORT
//!   loadbench-peer-axum PORT CERT KEY     TLS; ALPN offers h2 and http/1.1
//! Workers: TOKIO_WORKER_THREADS (read by tokio itself). Routes as every peer: GET / and /plaintext
//! -> "Hello, World!\n" text/plain, GET /json -> {"message":"Hello, World!"} (axum::Json, serialised
//! per request), POST /echo -> the body back with its content type; other paths -> 404 and a known
//! path with a wrong method -> 405, both axum's own answers. SIGTERM ends the process.
//!
//! Connections are accepted and served exactly as in bench/peers/rust (hyper-util's auto builder,
//! TCP_NODELAY, one task per connection) rather than with axum::serve: axum::serve has no TLS, and
//! one accept loop for both keeps the only difference between the two peers the Router.
use std::sync::Arc;

use axum::body::Bytes;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue};
use axum::response::IntoResponse;
use axum::routing::{get, post};
use axum::{Json, Router};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;

const PLAINTEXT: &str = "Hello, World!\n";

async fn plaintext() -> impl IntoResponse {
    ([(CONTENT_TYPE, HeaderValue::from_static("text/plain"))], PLAINTEXT)
}

async fn json() -> impl IntoResponse {
    Json(serde_json::json!({"message": "Hello, World!"}))
}

async fn echo(headers: HeaderMap, body: Bytes) -> impl IntoResponse {
    let ctype = headers
        .get(CONTENT_TYPE)
        .cloned()
        .unwrap_or_else(|| HeaderValue::from_static("application/octet-stream"));
    ([(CONTENT_TYPE, ctype)], body)
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
            eprintln!("usage: loadbench-peer-axum PORT [CERT KEY]   (TOKIO_WORKER_THREADS=N)");
            std::process::exit(2);
        }
    };
    let app = Router::new()
        .route("/", get(plaintext))
        .route("/plaintext", get(plaintext))
        .route("/json", get(json))
        .route("/echo", post(echo));
    let acceptor = if args.len() >= 4 { Some(tls_acceptor(&args[2], &args[3])) } else { None };
    let listener = TcpListener::bind(("127.0.0.1", port)).await.expect("bind");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(conn) => conn,
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        let acceptor = acceptor.clone();
        let service = TowerToHyperService::new(app.clone());
        tokio::spawn(async move {
            let builder = auto::Builder::new(TokioExecutor::new());
            match acceptor {
                Some(acceptor) => {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        let _ = builder.serve_connection(TokioIo::new(tls), service).await;
                    }
                }
                None => {
                    let _ = builder.serve_connection(TokioIo::new(stream), service).await;
                }
            }
        });
    }
}
