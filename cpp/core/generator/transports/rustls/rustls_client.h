// The C ABI of the loadbench_rustls crate (src/lib.rs): rustls behind calls that each take one
// step on a non-blocking socket. Used by rustls_transport.cpp only.
#pragma once
#include <cstddef>

extern "C" {

// In IoStatus's order.
enum LbRustlsStatus { LB_RUSTLS_OK = 0, LB_RUSTLS_WANT_READ, LB_RUSTLS_WANT_WRITE, LB_RUSTLS_EOF, LB_RUSTLS_ERROR };

struct LbConfig;
struct LbConn;

LbConfig* lb_rustls_config_new(bool verify, const char* cafile, bool resume, char* error, size_t error_capacity);
void lb_rustls_config_set_alpn(LbConfig* config, const unsigned char* wire, size_t len);
void lb_rustls_config_free(LbConfig* config);

LbConn* lb_rustls_conn_new(const LbConfig* config, const char* server_name, char* error, size_t error_capacity);
void lb_rustls_conn_free(LbConn* conn);
LbRustlsStatus lb_rustls_handshake(LbConn* conn, int fd);
LbRustlsStatus lb_rustls_read(LbConn* conn, int fd, unsigned char* buffer, size_t capacity, size_t* n);
LbRustlsStatus lb_rustls_write(LbConn* conn, int fd, const unsigned char* data, size_t len, size_t* n);
const unsigned char* lb_rustls_alpn(const LbConn* conn, size_t* len);
bool lb_rustls_resumed(const LbConn* conn);
const char* lb_rustls_last_error(const LbConn* conn);

}  // extern "C"
