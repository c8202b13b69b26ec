#pragma once
// Internal to Http3Session's two files: nghttp3's callbacks (a friend of the session, so the C
// callbacks reach its state without widening its interface).
#include <nghttp3/nghttp3.h>

namespace loadbench::generator {

struct Http3Callbacks {
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
