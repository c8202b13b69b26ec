#include "core/server/h1/request_parser.hpp"

#include "core/server/h1/request_target.hpp"

#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>

namespace loadbench::server {

RequestParser::RequestParser(RequestScratch& scratch, std::uint64_t max_body, std::uint32_t max_header)
    : scratch_(scratch) {
    scratch_.clear();
    body_limit(max_body);
    header_limit(max_header);
    eager(true);
}

void RequestParser::refuse(Refusal why, error_code& ec) {
    refusal_ = why;
    ec = boost::beast::http::error::bad_value;
}

void RequestParser::on_request_impl(verb method, string_view, string_view target, int version, error_code& ec) {
    method_ = method;
    version_ = version;
    if (!target.empty() && target.front() == '/') {  // origin-form: every ordinary request
        scratch_.target.assign(target.data(), target.size());
    } else if (const auto absolute = parse_absolute_form({target.data(), target.size()})) {
        // The host in the target wins over Host (RFC 9112 §3.2.2); we serve any host, so
        // only the path is kept. Host is still required and checked like any other.
        if (absolute->path.empty() || absolute->path.front() != '/') scratch_.target.assign(1, '/');
        scratch_.target.append(absolute->path.data(), absolute->path.size());
    } else if (method == verb::options && target == "*") {  // asterisk-form (§3.2.4)
        scratch_.target.assign(1, '*');
    } else {
        refuse(Refusal::bad_request, ec);  // authority-form (CONNECT) or no form at all
    }
}

void RequestParser::on_field_impl(field name, string_view, string_view value, error_code& ec) {
    switch (name) {
        case field::content_type:
            scratch_.content_type.assign(value.data(), value.size());
            break;
        case field::expect:
            expect_continue_ = boost::beast::iequals(value, "100-continue");
            break;
        case field::host:
            // A second Host, or one outside the grammar: 400 (§3.2).
            if (++host_fields_ > 1 || !valid_host({value.data(), value.size()})) refuse(Refusal::bad_request, ec);
            break;
        case field::transfer_encoding:
            check_transfer_encoding(value, ec);
            break;
        default:
            break;
    }
}

// transfer-coding *( OWS "," OWS transfer-coding ), over every Transfer-Encoding field in
// order. Empty list elements are ignored (RFC 9110 §5.6.1); a coding with parameters is not
// plain chunked.
void RequestParser::check_transfer_encoding(string_view value, error_code& ec) {
    transfer_encoding_ = true;
    while (!value.empty()) {
        const auto comma = value.find(',');
        string_view coding = value.substr(0, comma);
        value = comma == string_view::npos ? string_view{} : value.substr(comma + 1);
        while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
        while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
        if (coding.empty()) continue;
        if (boost::beast::iequals(coding, "chunked")) {
            // chunked applied twice: the body's length cannot be determined (§6.1, §6.3).
            if (chunked_last_) return refuse(Refusal::bad_request, ec);
            chunked_last_ = true;
        } else {
            // After chunked, another coding leaves the body length unknown: 400 (§6.3).
            if (chunked_last_) return refuse(Refusal::bad_request, ec);
            unknown_coding_ = true;
        }
    }
}

void RequestParser::on_header_impl(error_code& ec) {
    if (version_ >= 11 && host_fields_ == 0) return refuse(Refusal::bad_request, ec);  // §3.2
    if (!transfer_encoding_) return;
    // HTTP/1.0 has no Transfer-Encoding (§6.1); without chunked last the length is unknown (§6.3).
    if (version_ < 11 || !chunked_last_) return refuse(Refusal::bad_request, ec);
    if (unknown_coding_) refuse(Refusal::not_implemented, ec);  // e.g. "gzip, chunked": we decode none
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
