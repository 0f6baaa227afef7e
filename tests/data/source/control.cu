// break / continue / goto / labels / return, switch inside loops, nested loops, range-for.
#include <hip/hip_runtime.h>

__global__ void control_flow(float* out, int n) {
    float acc = 0.0f;
    for (int i = 0; i < n; ++i) {
        if (out[i] < 0.0f) break;
        acc += out[i];
    }
    for (int i = 0; i < n; ++i) {
        if (out[i] < 0.0f) continue;
        acc += out[i];
    }
    for (int i = 0; i < n; ++i) {
        switch (i % 3) {
            case 0: acc += 1.0f; break;
            default: acc -= 1.0f;
        }
        for (int j = 0; j < 4; ++j) {
            if (j == i) continue;
            if (j > i) break;
        }
    }
    for (int i = 0; i < n; ++i) {
        if (out[i] > 100.0f) goto done;
        acc += out[i];
    }
    for (int i = 0; i < n; ++i) {
        if (out[i] > 1000.0f) return;
    }
    for (int i = 0; i < n; ++i) {
        i += 1;
        acc += out[i];
    }
    for (int i = 0; i < n; i = i + 2) acc += out[i];
    for (int i = 0, j = n; i < j; ++i) acc += out[i];
    for (int i = 0; i < n; ++i) {
        __shared__ float slot[4];
        slot[i % 4] = acc;
        acc += slot[0];
    }
    {
        float values[3] = {1.0f, 2.0f, 3.0f};
        for (float v : values) acc += v;
    }
    for (int i = n; i > 0; i--) acc += i;
done:
    out[0] = acc;
}
