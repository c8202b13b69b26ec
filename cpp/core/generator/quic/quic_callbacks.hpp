#pragma once
// Internal to QuicTransport's two files: ngtcp2's and GnuTLS's callbacks (a friend of the
// transport, so the C callbacks reach its state without widening its interface).
#include <gnutls/gnutls.h>
#include <ngtcp2/ngtcp2.h>
#include <ngtcp2/ngtcp2_crypto.h>

namespace loadbench::generator {

struct QuicCallbacks {
    // ngtcp2 (quic_transport.cpp)
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

    // GnuTLS (quic_resumption.cpp): a handshake message went by - keeps NewSessionTickets.
    static int tls_message(gnutls_session_t tls, unsigned int type, unsigned int when, unsigned int incoming,
                           const gnutls_datum_t* message);
};

}  // namespace loadbench::generator
