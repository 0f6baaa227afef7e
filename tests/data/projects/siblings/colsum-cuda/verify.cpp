// Compiled by both versions' builds as a second source: compares and reports.
#include <cstdio>
#include <vector>

#include "reference.h"

int verify(const std::vector<unsigned>& got, const std::vector<unsigned>& want) {
    for (size_t i = 0; i < want.size(); ++i) {
        if (got[i] != want[i]) {
            std::printf("FAIL: column %zu: %u, expected %u\n", i, got[i], want[i]);
            return 1;
        }
    }
    std::printf("PASS\n");
    return 0;
}
