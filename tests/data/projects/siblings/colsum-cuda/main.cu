// The CUDA version of the benchmark (not built by colsum-hip; present as in the real suites).
#include "reference.h"
int main() { return 0; }
