// rocm-perf host runtime: the one writer of JSON string literals for every file the runtimes write
// (the trace, the samples, the capture, the kept copies' notes) and for the rocm backend's capture
// interposer, which includes this header by its path relative to rocm_interposer/.
#pragma once

#include <cstdio>
#include <string>

namespace rocm_perf_json {

inline std::string json_string(const std::string& s) {
    std::string out = "\"";
    for (char c : s) {
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (static_cast<unsigned char>(c) < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", c);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace rocm_perf_json
