#include "core/generator/sessions/session_factory.hpp"

#include "core/generator/sessions/http1_session.hpp"
#include "core/generator/sessions/http2_session.hpp"
#ifdef LOADBENCH_HAVE_HTTP3
#include "core/generator/sessions/http3_session.hpp"
#endif

namespace loadbench::generator {

SessionParts make_session(const RunPlan& plan, SessionEvents& events) {
    SessionParts parts;
#ifdef LOADBENCH_HAVE_HTTP3
    if (plan.h3) {  // HTTP/3 on the streams of a QUIC transport, not on TCP
        QuicOptions options;
        options.server_name = plan.url.host;
        options.server_name_is_ip = plan.url.host_is_ip_literal;
        options.verify = plan.h3_verify;
        options.cacert = plan.options.tls_cacert;
        options.handshake_timeout_ns = plan.timeout_ns;
        options.resume = plan.options.tls_session_resumption;
        options.early_data = plan.options.quic_early_data;
        options.no_error_code = Http3Session::kNoError;
        parts.quic = std::make_unique<QuicTransport>(options);
        parts.session = std::make_unique<Http3Session>(plan.h2_requests, plan.options.streams, !plan.options.keepalive,
                                                       *parts.quic, events);
        return parts;
    }
#endif
    std::unique_ptr<StreamSession> stream;
    if (plan.h2)
        stream = std::make_unique<Http2Session>(plan.h2_requests, plan.options.streams, !plan.options.keepalive, events,
                                                (int32_t{1} << plan.options.h2_window_bits) - 1);
    else
        stream = std::make_unique<Http1Session>(plan.wire_requests, plan.head_requests, events, plan.options.pipeline);
    parts.stream = stream.get();
    parts.session = std::move(stream);
    return parts;
}

}  // namespace loadbench::generator
