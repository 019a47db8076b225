/* Run a Python process as if its CPU had AVX2 but no AVX-512, VNNI or AMX.
 *
 *     cc -O2 -shared -fPIC -o /tmp/avx2_only.so bench/avx2_only.c
 *     LD_PRELOAD=/tmp/avx2_only.so python bench/bench_dense.py ...
 *
 * Linux's CPUID faulting (arch_prctl ARCH_SET_CPUID; the CPU must list `cpuid_fault` in
 * /proc/cpuinfo) makes every CPUID instruction of the process raise SIGSEGV. The handler
 * runs the real CPUID, clears the AVX-512, VNNI and AMX bits, and steps over the
 * instruction. Libraries that pick their kernels from CPUID (onnxruntime's MLAS, numpy,
 * LLVM through numba) then take their AVX2 paths on the real core: the instruction set of
 * an AVX2-only machine at this core's clock and caches, not such a machine's
 * microarchitecture. glibc read the CPU before this library loads and keeps its choice.
 *
 * Only processes whose executable's name starts with "python" are masked (a browser or
 * PostgreSQL started by the tests keep their own signal handlers). A handler installed
 * later over this one (faulthandler: run pytest with `-p no:faulthandler`) ends the
 * process at its first CPUID. Set AVX2_ONLY_QUIET=1 to drop the line on stderr.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <sys/syscall.h>

#define ARCH_SET_CPUID 0x1012

static void cpuid_fault(int on) { syscall(SYS_arch_prctl, ARCH_SET_CPUID, on ? 0 : 1); }

static void masked(uint32_t leaf, uint32_t sub, uint32_t r[4]) {
    __asm__ volatile("cpuid" : "=a"(r[0]), "=b"(r[1]), "=c"(r[2]), "=d"(r[3])
                     : "a"(leaf), "c"(sub));
    if (leaf == 7 && sub == 0) {
        /* EBX: AVX512 F DQ IFMA PF ER CD BW VL */
        r[1] &= ~((1u << 16) | (1u << 17) | (1u << 21) | (1u << 26) | (1u << 27)
                  | (1u << 28) | (1u << 30) | (1u << 31));
        /* ECX: AVX512 VBMI, VBMI2, VAES, VPCLMULQDQ, VNNI, BITALG, VPOPCNTDQ */
        r[2] &= ~((1u << 1) | (1u << 6) | (1u << 9) | (1u << 10) | (1u << 11)
                  | (1u << 12) | (1u << 14));
        /* EDX: 4VNNIW, 4FMAPS, VP2INTERSECT, AMX-BF16, AVX512-FP16, AMX-TILE, AMX-INT8 */
        r[3] &= ~((1u << 2) | (1u << 3) | (1u << 8) | (1u << 22) | (1u << 23)
                  | (1u << 24) | (1u << 25));
    } else if (leaf == 7 && sub == 1) {
        r[0] &= ~((1u << 4) | (1u << 5) | (1u << 21) | (1u << 23));  /* AVX-VNNI, BF16, AMX-FP16, AVX-IFMA */
        r[3] &= ~((1u << 4) | (1u << 5) | (1u << 10));  /* AVX-VNNI-INT8, NE-CONVERT, VNNI-INT16 */
    } else if (leaf == 0xd && sub == 0) {
        r[0] &= ~((1u << 5) | (1u << 6) | (1u << 7) | (1u << 17) | (1u << 18));  /* ZMM, tile state */
    }
}

static void on_segv(int sig, siginfo_t *info, void *context) {
    ucontext_t *uc = context;
    greg_t *g = uc->uc_mcontext.gregs;
    const unsigned char *ip = (const unsigned char *)g[REG_RIP];
    (void)info;
    if (ip[0] != 0x0f || ip[1] != 0xa2) {  /* a real fault: let it kill the process */
        signal(sig, SIG_DFL);
        return;
    }
    uint32_t r[4];
    cpuid_fault(0);
    masked((uint32_t)g[REG_RAX], (uint32_t)g[REG_RCX], r);
    cpuid_fault(1);
    g[REG_RAX] = r[0];
    g[REG_RBX] = r[1];
    g[REG_RCX] = r[2];
    g[REG_RDX] = r[3];
    g[REG_RIP] += 2;
}

__attribute__((constructor)) static void start(void) {
    char exe[4096];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return;
    exe[n] = 0;
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : exe;
    if (strncmp(base, "python", 6) != 0) return;
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_sigaction = on_segv;
    act.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&act.sa_mask);
    if (sigaction(SIGSEGV, &act, NULL) != 0) return;
    if (syscall(SYS_arch_prctl, ARCH_SET_CPUID, 0) != 0) {
        fprintf(stderr, "avx2_only: this CPU or kernel has no CPUID faulting; nothing masked\n");
        return;
    }
    if (!getenv("AVX2_ONLY_QUIET"))
        fprintf(stderr, "avx2_only: CPUID masked to AVX2 (no AVX-512, VNNI, AMX) in %s\n", base);
}
