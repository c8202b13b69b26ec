#include "core/server/request_parser.hpp"

#include <boost/beast/core/string.hpp>

namespace loadbench::server {

RequestParser::RequestParser(RequestScratch& scratch, std::uint64_t max_body, std::uint32_t max_header)
    : scratch_(scratch) {
    scratch_.clear();
    body_limit(max_body);
    header_limit(max_header);
    eager(true);
}

void RequestParser::on_request_impl(verb method, string_view, string_view target, int version, error_code&) {
    method_ = method;
    version_ = version;
    scratch_.target.assign(target.data(), target.size());
}

void RequestParser::on_field_impl(field name, string_view, string_view value, error_code&) {
    if (name == field::content_type) {
        scratch_.content_type.assign(value.data(), value.size());
    } else if (name == field::expect) {
        expect_continue_ = boost::beast::iequals(value, "100-continue");
    }
}

void RequestParser::on_body_init_impl(const boost::optional<std::uint64_t>& content_length, error_code&) {
    // The limit was checked by basic_parser before this call.
    if (content_length) scratch_.body.reserve(static_cast<std::size_t>(*content_length));
}

std::size_t RequestParser::on_body_impl(string_view body, error_code&) {
    scratch_.body.append(body.data(), body.size());
    return body.size();
}

std::size_t RequestParser::on_chunk_body_impl(std::uint64_t, string_view body, error_code&) {
    scratch_.body.append(body.data(), body.size());
    return body.size();
}

}  // namespace loadbench::server
