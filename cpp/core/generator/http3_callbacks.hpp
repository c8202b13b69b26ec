#pragma once
// Internal to Http3Session's two files: the ngtcp2 and nghttp3 callbacks (a friend of the
// session, so the C callbacks reach its state without widening its interface).
#include <gnutls/gnutls.h>
#include <nghttp3/nghttp3.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

namespace loadbench::generator {

struct Http3Callbacks {
    // ngtcp2 (http3_quic.cpp)
    static void rand(uint8_t* dest, size_t destlen, const ngtcp2_rand_ctx*);
    static int get_new_connection_id(ngtcp2_conn*, ngtcp2_cid* cid, uint8_t* token, size_t cidlen, void* user);
    static int handshake_completed(ngtcp2_conn*, void* user);
    static int recv_stream_data(ngtcp2_conn* conn, uint32_t flags, int64_t stream_id, uint64_t offset,
                                const uint8_t* data, size_t datalen, void* user, void* stream_user);
    static int acked_stream_data_offset(ngtcp2_conn*, int64_t stream_id, uint64_t offset, uint64_t datalen, void* user,
                                        void* stream_user);
    static int stream_close(ngtcp2_conn*, uint32_t flags, int64_t stream_id, uint64_t app_error_code, void* user,
                            void* stream_user);
    static int stream_reset(ngtcp2_conn*, int64_t stream_id, uint64_t final_size, uint64_t app_error_code, void* user,
                            void* stream_user);
    static int stream_stop_sending(ngtcp2_conn*, int64_t stream_id, uint64_t app_error_code, void* user,
                                   void* stream_user);
    static int extend_max_stream_data(ngtcp2_conn*, int64_t stream_id, uint64_t max_data, void* user,
                                      void* stream_user);
    static int extend_max_local_streams_bidi(ngtcp2_conn*, uint64_t max_streams, void* user);
    static ngtcp2_conn* get_conn(ngtcp2_crypto_conn_ref* ref);

    // GnuTLS (http3_resumption.cpp): a handshake message went by - keeps NewSessionTickets.
    static int tls_message(gnutls_session_t tls, unsigned int type, unsigned int when, unsigned int incoming,
                           const gnutls_datum_t* message);

    // nghttp3 (http3_session.cpp)
    static int h3_recv_header(nghttp3_conn*, int64_t stream_id, int32_t token, nghttp3_rcbuf* name,
                              nghttp3_rcbuf* value, uint8_t flags, void* user, void* stream_user);
    static int h3_recv_data(nghttp3_conn*, int64_t stream_id, const uint8_t* data, size_t datalen, void* user,
                            void* stream_user);
    static int h3_deferred_consume(nghttp3_conn*, int64_t stream_id, size_t consumed, void* user, void* stream_user);
    static int h3_end_stream(nghttp3_conn*, int64_t stream_id, void* user, void* stream_user);
    static int h3_stream_close(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user,
                               void* stream_user);
    static int h3_stop_sending(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user,
                               void* stream_user);
    static int h3_reset_stream(nghttp3_conn*, int64_t stream_id, uint64_t app_error_code, void* user,
                               void* stream_user);
    static int h3_shutdown(nghttp3_conn*, int64_t id, void* user);
    static nghttp3_ssize h3_read_body(nghttp3_conn*, int64_t stream_id, nghttp3_vec* vec, size_t veccnt,
                                      uint32_t* pflags, void* user, void* stream_user);
};

}  // namespace loadbench::generator
