//! rustls behind a small C ABI for the generator's `--tls-library rustls` (see
//! ../../rustls_transport.cpp, the Transport that calls it).
//!
//! Why a crate of our own rather than rustls-ffi: rustls-ffi's client always keeps an in-memory
//! session cache (resumption cannot be switched off through its C API), so a "full handshake per
//! connection" run would quietly resume against any server that issues tickets. Here resumption
//! is off unless asked for, and each call does exactly one step on a non-blocking socket, with
//! the same statuses as the OpenSSL and wolfSSL transports (ok, want read, want write, eof,
//! error), so the connection state machine in C++ stays the same for all three.
//!
//! What a handshake proves is what the OpenSSL client proves: the X25519 key exchange and the
//! server's signature over the transcript (CertificateVerify; TLS 1.2: the signed key exchange)
//! always, with the key from the server's certificate; with verification on, also the chain
//! against the CA file (or the system's CAs) and the host name or IP address.

// Every entry point is called from rustls_transport.cpp only, with pointers this crate made and
// buffers valid for the lengths given (the contract in rustls_client.h).
#![allow(clippy::missing_safety_doc)]

use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::io::{self, IoSlice, Read, Write};
use std::sync::Arc;

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::client::Resumption;
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use rustls::{ClientConfig, ClientConnection, DigitallySignedStruct, HandshakeKind, RootCertStore, SignatureScheme};

/// The statuses of C++'s `IoStatus`, in its order.
#[repr(C)]
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum LbStatus {
    Ok = 0,
    WantRead = 1,
    WantWrite = 2,
    Eof = 3,
    Error = 4,
}

pub struct LbConfig {
    config: Arc<ClientConfig>,
}

pub struct LbConn {
    conn: ClientConnection,
    error: CString,
    /// Plaintext bytes of the caller's buffer already taken by rustls whose records could not all
    /// be sent: the caller retries the same write after the socket is writable (OpenSSL's rule).
    accepted: usize,
}

// --- the socket ------------------------------------------------------------------------------

extern "C" {
    fn recv(fd: c_int, buf: *mut c_void, len: usize, flags: c_int) -> isize;
    fn sendmsg(fd: c_int, msg: *const MsgHdr, flags: c_int) -> isize;
}
const MSG_NOSIGNAL: c_int = 0x4000; // a closed peer is an error, never SIGPIPE

#[repr(C)]
struct MsgHdr {
    name: *mut c_void,
    namelen: u32,
    iov: *const IoSlice<'static>, // IoSlice is ABI-compatible with struct iovec on Unix
    iovlen: usize,
    control: *mut c_void,
    controllen: usize,
    flags: c_int,
}

/// The generator's non-blocking socket (owned by the C++ Connection, never closed here).
struct Socket(c_int);

impl Read for Socket {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = unsafe { recv(self.0, buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
    }
}

impl Write for Socket {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.write_vectored(&[IoSlice::new(buf)])
    }
    // rustls hands over every queued record at once: one sendmsg, not one send per record.
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> io::Result<usize> {
        let msg = MsgHdr {
            name: std::ptr::null_mut(),
            namelen: 0,
            iov: bufs.as_ptr().cast(),
            iovlen: bufs.len(),
            control: std::ptr::null_mut(),
            controllen: 0,
            flags: 0,
        };
        let n = unsafe { sendmsg(self.0, &msg, MSG_NOSIGNAL) };
        if n < 0 { Err(io::Error::last_os_error()) } else { Ok(n as usize) }
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

// --- configuration -----------------------------------------------------------------------------

/// `--insecure` (the default, as oha and wrk): the chain and name are not checked, but the
/// server's signature always is, with the provider's own algorithms and the key from its
/// certificate, so the key exchange is still authenticated by whoever holds that key.
#[derive(Debug)]
struct SignatureOnly(Arc<CryptoProvider>);

impl ServerCertVerifier for SignatureOnly {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(message, cert, dss, &self.0.signature_verification_algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

fn roots(cafile: Option<&str>) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    match cafile {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|it| it.collect::<Result<Vec<_>, _>>())
                .map_err(|e| format!("cannot load CA certificates from '{path}' (rustls: {e})"))?;
            let (added, _) = roots.add_parsable_certificates(certs);
            if added == 0 {
                return Err(format!("cannot load CA certificates from '{path}' (rustls: no certificate in it)"));
            }
        }
        // No system CA store: the store stays empty and every certificate is refused at the
        // handshake, as the OpenSSL client does.
        None => {
            roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
        }
    }
    Ok(roots)
}

fn build_config(verify: bool, cafile: Option<&str>, resume: bool) -> Result<ClientConfig, String> {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let mut config = if verify || cafile.is_some() {
        builder.with_root_certificates(roots(cafile)?).with_no_client_auth()
    } else {
        builder
            .dangerous()
            .with_custom_certificate_verifier(Arc::new(SignatureOnly(provider)))
            .with_no_client_auth()
    };
    // Full handshakes unless resumption is asked for (rustls would otherwise cache sessions).
    config.resumption = if resume { Resumption::in_memory_sessions(1024) } else { Resumption::disabled() };
    Ok(config)
}

fn write_error(out: *mut c_char, capacity: usize, message: &str) {
    if out.is_null() || capacity == 0 {
        return;
    }
    let bytes = message.as_bytes();
    let n = bytes.len().min(capacity - 1);
    unsafe {
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), out.cast::<u8>(), n);
        *out.add(n) = 0;
    }
}

unsafe fn optional_str<'a>(s: *const c_char) -> Result<Option<&'a str>, String> {
    if s.is_null() {
        return Ok(None);
    }
    let s = CStr::from_ptr(s).to_str().map_err(|_| "not UTF-8".to_string())?;
    Ok(if s.is_empty() { None } else { Some(s) })
}

/// A client configuration, shared by every connection of a run. `cafile` may be null or empty
/// (the system's CAs when `verify`). Null with the reason in `error` when it cannot be built.
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_config_new(
    verify: bool,
    cafile: *const c_char,
    resume: bool,
    error: *mut c_char,
    error_capacity: usize,
) -> *mut LbConfig {
    let built = optional_str(cafile).and_then(|cafile| build_config(verify, cafile, resume));
    match built {
        Ok(config) => Box::into_raw(Box::new(LbConfig { config: Arc::new(config) })),
        Err(e) => {
            write_error(error, error_capacity, &e);
            std::ptr::null_mut()
        }
    }
}

/// Offer exactly these ALPN protocols (wire format: length-prefixed names). For connections made
/// after the call.
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_config_set_alpn(config: *mut LbConfig, wire: *const u8, len: usize) {
    let Some(config) = config.as_mut() else { return };
    let wire = if wire.is_null() { &[][..] } else { std::slice::from_raw_parts(wire, len) };
    let mut protocols = Vec::new();
    let mut i = 0;
    while i < wire.len() {
        let n = wire[i] as usize;
        if i + 1 + n > wire.len() {
            break;
        }
        protocols.push(wire[i + 1..i + 1 + n].to_vec());
        i += 1 + n;
    }
    let mut updated = (*config.config).clone();
    updated.alpn_protocols = protocols;
    config.config = Arc::new(updated);
}

#[no_mangle]
pub unsafe extern "C" fn lb_rustls_config_free(config: *mut LbConfig) {
    if !config.is_null() {
        drop(Box::from_raw(config));
    }
}

// --- connections -------------------------------------------------------------------------------

/// A client connection to `server_name` (a DNS name, sent as SNI, or an IP literal, not sent).
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_conn_new(
    config: *const LbConfig,
    server_name: *const c_char,
    error: *mut c_char,
    error_capacity: usize,
) -> *mut LbConn {
    let made = (|| {
        let config = config.as_ref().ok_or("no configuration")?;
        let name = optional_str(server_name)?.ok_or("no server name")?;
        let name = ServerName::try_from(name.to_string()).map_err(|e| format!("server name '{name}': {e}"))?;
        ClientConnection::new(config.config.clone(), name).map_err(|e| e.to_string())
    })();
    match made {
        Ok(conn) => Box::into_raw(Box::new(LbConn { conn, error: CString::default(), accepted: 0 })),
        Err(e) => {
            write_error(error, error_capacity, &e);
            std::ptr::null_mut()
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn lb_rustls_conn_free(conn: *mut LbConn) {
    if !conn.is_null() {
        drop(Box::from_raw(conn));
    }
}

impl LbConn {
    fn fail(&mut self, message: String) -> LbStatus {
        self.error = CString::new(message.replace('\0', " ")).unwrap_or_default();
        LbStatus::Error
    }

    fn tls_error(&mut self, e: rustls::Error) -> LbStatus {
        let certificate = matches!(e, rustls::Error::InvalidCertificate(_));
        let mut message = format!("{}{e}", if certificate { "certificate: " } else { "" });
        if message.contains("CaUsedAsEndEntity") {
            // OpenSSL and wolfSSL accept this, so say what differs and what to do.
            message.push_str(
                " - the server's certificate is a CA certificate (basicConstraints CA:TRUE, as `openssl req \
                 -x509` makes by default) and rustls refuses one as the server's own: give --cacert the CA that \
                 issued it, or make the self-signed certificate with -addext basicConstraints=critical,CA:FALSE",
            );
        }
        self.fail(message)
    }

    /// Sends every queued record. Ok when none is left.
    fn send_queued(&mut self, fd: c_int) -> LbStatus {
        while self.conn.wants_write() {
            match self.conn.write_tls(&mut Socket(fd)) {
                Ok(_) => {}
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return LbStatus::WantWrite,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return self.fail(format!("socket error: {e}")),
            }
        }
        LbStatus::Ok
    }

    /// Reads what the socket has into rustls and processes it. Ok when something was processed.
    fn receive(&mut self, fd: c_int) -> LbStatus {
        loop {
            match self.conn.read_tls(&mut Socket(fd)) {
                Ok(0) => return LbStatus::Eof,
                Ok(_) => {
                    if let Err(e) = self.conn.process_new_packets() {
                        // The alert rustls queued for the server (best effort: the connection is lost).
                        let _ = self.send_queued(fd);
                        return self.tls_error(e);
                    }
                    return LbStatus::Ok;
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return LbStatus::WantRead,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) if e.kind() == io::ErrorKind::ConnectionReset => return LbStatus::Eof,
                Err(e) => return self.fail(format!("socket error: {e}")),
            }
        }
    }
}

#[no_mangle]
pub unsafe extern "C" fn lb_rustls_handshake(conn: *mut LbConn, fd: c_int) -> LbStatus {
    let Some(c) = conn.as_mut() else { return LbStatus::Error };
    loop {
        let sent = c.send_queued(fd);
        if sent != LbStatus::Ok {
            return sent;
        }
        if !c.conn.is_handshaking() {
            return LbStatus::Ok;
        }
        let received = c.receive(fd);
        if received != LbStatus::Ok {
            return received;
        }
    }
}

/// Decrypted bytes into `buffer`: Ok with `*n > 0`, or why not. Eof: the server closed (with or
/// without close_notify).
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_read(conn: *mut LbConn, fd: c_int, buffer: *mut u8, capacity: usize, n: *mut usize) -> LbStatus {
    *n = 0;
    let Some(c) = conn.as_mut() else { return LbStatus::Error };
    let out = std::slice::from_raw_parts_mut(buffer, capacity);
    loop {
        match c.conn.reader().read(out) {
            Ok(0) => return LbStatus::Eof, // close_notify
            Ok(k) => {
                *n = k;
                return LbStatus::Ok;
            }
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return LbStatus::Eof,
            Err(e) => return c.fail(format!("read: {e}")),
        }
        let received = c.receive(fd);
        if received != LbStatus::Ok {
            return received;
        }
        // Whatever rustls answers by itself (a KeyUpdate): on its way, or with the next write.
        let _ = c.send_queued(fd);
    }
}

/// Encrypts and sends `data`: Ok with `*n` bytes taken. WantWrite: retry the same bytes once the
/// socket is writable (some may already be taken; they are counted on that retry).
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_write(conn: *mut LbConn, fd: c_int, data: *const u8, len: usize, n: *mut usize) -> LbStatus {
    *n = 0;
    let Some(c) = conn.as_mut() else { return LbStatus::Error };
    let sent = c.send_queued(fd);
    if sent != LbStatus::Ok {
        return sent;
    }
    if c.accepted > 0 {
        *n = std::mem::take(&mut c.accepted);
        return LbStatus::Ok;
    }
    let taken = match c.conn.writer().write(std::slice::from_raw_parts(data, len)) {
        Ok(k) => k,
        Err(e) => return c.fail(format!("write: {e}")),
    };
    match c.send_queued(fd) {
        LbStatus::Ok => {
            *n = taken;
            LbStatus::Ok
        }
        LbStatus::WantWrite => {
            c.accepted = taken;
            LbStatus::WantWrite
        }
        other => other,
    }
}

/// The protocol the server selected with ALPN (null: none).
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_alpn(conn: *const LbConn, len: *mut usize) -> *const u8 {
    *len = 0;
    match conn.as_ref().and_then(|c| c.conn.alpn_protocol()) {
        Some(p) => {
            *len = p.len();
            p.as_ptr()
        }
        None => std::ptr::null(),
    }
}

#[no_mangle]
pub unsafe extern "C" fn lb_rustls_resumed(conn: *const LbConn) -> bool {
    conn.as_ref().is_some_and(|c| c.conn.handshake_kind() == Some(HandshakeKind::Resumed))
}

/// Why the last call returned Error (NUL-terminated; valid until the next call).
#[no_mangle]
pub unsafe extern "C" fn lb_rustls_last_error(conn: *const LbConn) -> *const c_char {
    match conn.as_ref() {
        Some(c) => c.error.as_ptr(),
        None => c"no connection".as_ptr(),
    }
}
