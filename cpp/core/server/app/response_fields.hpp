#pragma once
// The header fields of an HTTP/2 or HTTP/3 response, built once for both encoders (Http2Session
// maps them to nghttp2_nv, Http3Application to nghttp3_nv): :status, server, date, content-type
// (when there is one), content-length, allow (a 405) and alt-svc (HTTP/2 under --h3), in that order.
//
// Both libraries send the fields without copying them, so the values must outlive the call
// that submits them: the status, length and date live in this object (kept in the stream until
// its response is out), the rest are constants or the worker's (content type, allow, alt-svc),
// or the stream's own (an echo's content type).
#include "core/server/app/http_date.hpp"

#include <array>
#include <cstddef>
#include <string_view>

namespace loadbench::server {

class ResponseFields {
public:
    struct Field {
        std::string_view name;
        std::string_view value;
    };

    ResponseFields() = default;
    // The fields point into this object: a copy would point into the original.
    ResponseFields(const ResponseFields&) = delete;
    ResponseFields& operator=(const ResponseFields&) = delete;

    // content_type, allow, alt_svc: empty for none. date: the worker's Date value.
    void set(unsigned status, std::string_view date, std::string_view content_type, std::size_t content_length,
             std::string_view allow, std::string_view alt_svc);

    const Field* begin() const { return fields_.data(); }
    const Field* end() const { return fields_.data() + count_; }
    std::size_t size() const { return count_; }
    static constexpr std::size_t max_fields = 7;

private:
    char status_[3] = {};
    char length_[20] = {};  // the longest std::size_t in decimal
    char date_[http_date_length] = {};
    std::array<Field, max_fields> fields_{};
    std::size_t count_ = 0;
};

}  // namespace loadbench::server
