// Device memory at addresses another process can reproduce. Every hipMalloc* and hipHostMalloc
// allocation is placed in one region reserved at a fixed virtual address (a 1 TiB PROT_NONE
// reservation, committed page by page as allocations are made), first fit at page offsets. The
// same program making the same allocations gets the same addresses in every run, and a replay
// harness (rocm-perf isolate) can put each captured allocation back at its original address, so
// that pointers hidden in kernel arguments or in device memory stay valid.
//
// Environment:
//   ROCM_PERF_HOST_DEVICE_BASE   the region's base address (hex; default 0x200000000000, 32 TiB:
//                                above a PIE program, its heap and ASan's shadow, below the
//                                top-down mmap area); 0 turns the region off
// Where the reservation is refused (the address is taken, a 39-bit address space), allocations
// come from the C heap as before and `device_region().refusal` says why; a capture then refuses.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "rocm_perf_host/outline.h"

namespace rocm_perf_host {

enum class MemoryKind : unsigned char { Device, Host };

inline const char* memory_kind_name(MemoryKind k) { return k == MemoryKind::Device ? "device" : "host"; }

struct RegionAllocation {
    std::uintptr_t address;
    std::size_t requested;  // the bytes asked for
    std::size_t reserved;   // whole pages
    MemoryKind kind;
};

struct DeviceRegion {
    static constexpr std::uintptr_t default_base = 0x200000000000ull;
    static constexpr std::size_t default_size = std::size_t(1) << 40;

    std::mutex m;
    std::uintptr_t base = 0;  // 0: no region (see refusal)
    std::size_t size = 0;
    std::size_t page = 4096;
    std::string refusal;
    std::map<std::uintptr_t, RegionAllocation> live;   // by address
    std::map<std::uintptr_t, std::size_t> free_ranges;  // address -> bytes, coalesced, by address

    DeviceRegion() {
        long p = sysconf(_SC_PAGESIZE);
        if (p > 0) page = std::size_t(p);
        std::uintptr_t wanted = default_base;
        if (const char* v = std::getenv("ROCM_PERF_HOST_DEVICE_BASE"); v && *v) wanted = std::strtoull(v, nullptr, 16);
        if (wanted == 0) {
            refusal = "ROCM_PERF_HOST_DEVICE_BASE=0 turned the reserved region off";
            return;
        }
        if (wanted % page) {
            refusal = "ROCM_PERF_HOST_DEVICE_BASE is not a multiple of the page size";
            return;
        }
        int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE;
#ifdef MAP_FIXED_NOREPLACE
        flags |= MAP_FIXED_NOREPLACE;  // never over a mapping that is there; a kernel without it takes a hint
#endif
        void* got = mmap(reinterpret_cast<void*>(wanted), default_size, PROT_NONE, flags, -1, 0);
        if (got == MAP_FAILED) {
            refusal = std::string("cannot reserve 1 TiB at the fixed base: ") + std::strerror(errno);
            return;
        }
        if (reinterpret_cast<std::uintptr_t>(got) != wanted) {
            munmap(got, default_size);
            refusal = "the fixed base address is taken in this process";
            return;
        }
        base = wanted;
        size = default_size;
        free_ranges[base] = size;
    }

    std::size_t pages_for(std::size_t bytes) const { return (std::max<std::size_t>(bytes, 1) + page - 1) / page * page; }

    bool contains(const void* p) const {
        auto a = reinterpret_cast<std::uintptr_t>(p);
        return base && a >= base && a < base + size;
    }

    // Commits [address, address + bytes) out of the free range that holds it; false if none does.
    bool take(std::uintptr_t address, std::size_t bytes) {
        auto it = free_ranges.upper_bound(address);
        if (it == free_ranges.begin()) return false;
        --it;
        const std::uintptr_t start = it->first;
        const std::size_t length = it->second;
        if (address + bytes > start + length) return false;
        if (mprotect(reinterpret_cast<void*>(address), bytes, PROT_READ | PROT_WRITE) != 0) return false;
        free_ranges.erase(it);
        if (address > start) free_ranges[start] = address - start;
        if (address + bytes < start + length) free_ranges[address + bytes] = start + length - (address + bytes);
        return true;
    }

    // The lowest free range that fits (first fit by address: the same sequence of allocations
    // and frees gives the same addresses). Fresh and freed pages read as zero.
    void* allocate(std::size_t bytes, MemoryKind kind) {
        const std::size_t reserved = pages_for(bytes);
        std::lock_guard<std::mutex> lock(m);
        for (auto& [start, length] : free_ranges) {
            if (length < reserved) continue;
            const std::uintptr_t address = start;
            if (!take(address, reserved)) return nullptr;
            live[address] = RegionAllocation{address, bytes, reserved, kind};
            return reinterpret_cast<void*>(address);
        }
        return nullptr;
    }

    // Puts an allocation at `address` (a replay harness restoring a captured one); "" or why not.
    std::string place(std::uintptr_t address, std::size_t bytes, MemoryKind kind) {
        if (!base) return "no reserved region in this process: " + refusal;
        const std::size_t reserved = pages_for(bytes);
        if (address % page || address < base || address + reserved > base + size)
            return "the address is not a page of this process's reserved region";
        std::lock_guard<std::mutex> lock(m);
        if (!take(address, reserved)) return "the address range is already in use";
        live[address] = RegionAllocation{address, bytes, reserved, kind};
        return "";
    }

    // Frees an allocation of the region (its pages dropped and made inaccessible again, as a GPU
    // unmaps freed memory); false if `p` is not one.
    bool release(void* p) {
        const auto address = reinterpret_cast<std::uintptr_t>(p);
        std::lock_guard<std::mutex> lock(m);
        auto it = live.find(address);
        if (it == live.end()) return false;
        const std::size_t reserved = it->second.reserved;
        live.erase(it);
        madvise(p, reserved, MADV_DONTNEED);
        mprotect(p, reserved, PROT_NONE);
        auto [slot, inserted] = free_ranges.emplace(address, reserved);
        (void)inserted;
        auto next = std::next(slot);
        if (next != free_ranges.end() && slot->first + slot->second == next->first) {
            slot->second += next->second;
            free_ranges.erase(next);
        }
        if (slot != free_ranges.begin()) {
            auto prev = std::prev(slot);
            if (prev->first + prev->second == slot->first) {
                prev->second += slot->second;
                free_ranges.erase(slot);
            }
        }
        return true;
    }

    std::vector<RegionAllocation> allocations() {
        std::lock_guard<std::mutex> lock(m);
        std::vector<RegionAllocation> out;
        for (const auto& [address, a] : live) out.push_back(a);
        return out;
    }
};

ROCM_PERF_OUTLINED DeviceRegion& device_region();
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED DeviceRegion& device_region() {
    static DeviceRegion* region = new DeviceRegion;  // never destroyed: freed memory may be released at exit
    return *region;
}
#endif

// Memory of `bytes` (zeroed): from the region, or from the heap where there is none.
ROCM_PERF_OUTLINED void* allocate_memory(std::size_t bytes, MemoryKind kind);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void* allocate_memory(std::size_t bytes, MemoryKind kind) {
    DeviceRegion& region = device_region();
    if (region.base) return region.allocate(bytes, kind);
    std::size_t rounded = (std::max<std::size_t>(bytes, 1) + 255) & ~std::size_t(255);
    void* p = std::aligned_alloc(256, rounded);
    if (p) std::memset(p, 0, rounded);
    return p;
}
#endif

// Frees what allocate_memory gave (a second free of a region allocation is ignored).
ROCM_PERF_OUTLINED void release_memory(void* p);
#if ROCM_PERF_HOST_BODIES
ROCM_PERF_OUTLINED void release_memory(void* p) {
    if (!p) return;
    DeviceRegion& region = device_region();
    if (region.contains(p))
        region.release(p);
    else
        std::free(p);
}
#endif

// The bytes an allocation at `p` spans, for the runtime's map of device pointers.
inline std::size_t allocation_span(const void* p, std::size_t bytes) {
    DeviceRegion& region = device_region();
    if (region.contains(p)) return region.pages_for(bytes);
    return (std::max<std::size_t>(bytes, 1) + 255) & ~std::size_t(255);
}

}  // namespace rocm_perf_host
