#include "core/server/app/answer.hpp"

namespace loadbench::server {

Answer answer_for(const RouteMatch& match) {
    Answer a;
    switch (match.route) {
        case Route::plaintext:
            a.kind = RequestKind::plaintext;
            a.content_type = "text/plain";
            a.body = plaintext_body;
            break;
        case Route::json:
            a.kind = RequestKind::json;
            a.content_type = "application/json";
            a.body = json_body;
            break;
        case Route::echo:
            a.kind = RequestKind::echo;
            a.echo = true;
            break;
        case Route::delay:
            a = delay_answer();
            a.delayed = true;
            a.delay_ms = match.delay_ms;
            break;
        case Route::not_found:
            a.status = 404;
            a.kind = RequestKind::not_found;
            a.content_type = "text/plain";
            a.body = "Not Found\n";
            break;
        case Route::method_not_allowed:
            a.status = 405;
            a.kind = RequestKind::method_not_allowed;
            a.content_type = "text/plain";
            a.body = "Method Not Allowed\n";
            a.allow = match.allowed_method;
            break;
        case Route::bad_request:
            a = limit_answer(RequestKind::bad_request);
            break;
    }
    return a;
}

Answer delay_answer() {
    Answer a;
    a.kind = RequestKind::delay;
    a.content_type = "text/plain";
    a.body = plaintext_body;
    return a;
}

Answer limit_answer(RequestKind kind) {
    Answer a;
    a.kind = kind;
    a.content_type = "text/plain";
    switch (kind) {
        case RequestKind::header_too_large:
            a.status = 431;
            a.body = "Request Header Fields Too Large\n";
            break;
        case RequestKind::body_too_large:
            a.status = 413;
            a.body = "Payload Too Large\n";
            break;
        case RequestKind::not_implemented:
            a.status = 501;
            a.body = "Not Implemented\n";
            break;
        default:
            a.status = 400;
            a.kind = RequestKind::bad_request;
            a.body = "Bad Request\n";
            break;
    }
    return a;
}

}  // namespace loadbench::server
