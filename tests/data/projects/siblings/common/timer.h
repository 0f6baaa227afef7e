// A wall-clock timer shared by every benchmark of the suite (read through -I../common).
#pragma once
#include <chrono>

inline double seconds_since(std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}
