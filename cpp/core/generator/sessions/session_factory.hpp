#pragma once
// The one place a run's protocol picks its Session - and, for HTTP/3, the QUIC transport it rides
// on: the Connection that holds them names no protocol.
#include <memory>

#include "core/generator/base/plan.hpp"
#include "core/generator/quic/quic_transport.hpp"
#include "core/generator/sessions/session.hpp"

namespace loadbench::generator {

struct SessionParts {
    std::unique_ptr<QuicTransport> quic;  // HTTP/3: its transport (null: TCP or TLS over TCP)
    std::unique_ptr<Session> session;
    StreamSession* stream = nullptr;  // the session when it frames on a byte stream (HTTP/1.1, HTTP/2)
};

SessionParts make_session(const RunPlan& plan, SessionEvents& events);

}  // namespace loadbench::generator
