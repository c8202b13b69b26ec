#include "core/server/app/response_fields.hpp"

#include "core/server/app/answer.hpp"

#include <algorithm>
#include <charconv>
#include <cstring>

namespace loadbench::server {

void ResponseFields::set(unsigned status, std::string_view date, std::string_view content_type,
                         std::size_t content_length, std::string_view allow, std::string_view alt_svc) {
    std::to_chars(status_, status_ + sizeof status_, status);
    const std::size_t length_size =
        static_cast<std::size_t>(std::to_chars(length_, length_ + sizeof length_, content_length).ptr - length_);
    std::memcpy(date_, date.data(), std::min(date.size(), sizeof date_));
    count_ = 0;
    fields_[count_++] = {":status", {status_, sizeof status_}};
    fields_[count_++] = {"server", server_name};
    fields_[count_++] = {"date", {date_, sizeof date_}};
    if (!content_type.empty()) fields_[count_++] = {"content-type", content_type};
    fields_[count_++] = {"content-length", {length_, length_size}};
    if (!allow.empty()) fields_[count_++] = {"allow", allow};
    if (!alt_svc.empty()) fields_[count_++] = {"alt-svc", alt_svc};
}

}  // namespace loadbench::server
