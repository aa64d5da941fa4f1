/*
 * Test driver for analyzer/symbols/symbolize.c.
 *
 *   symtest MAPFILE          registers every "module" line of MAPFILE, then resolves every
 *                            "ip" line and prints one tab-separated line per frame:
 *                            label, index, inlined, function, file, line, module
 *                            ("?" for unknown), then "warning<TAB>text" lines.  Each ip is
 *                            resolved twice and the cached answer must equal the first.
 *   symtest --bench ELF N    registers ELF as if loaded at a high PIE address and resolves N
 *                            return addresses spread over its executable segment, twice,
 *                            printing the time of each pass and what was found.
 *
 * MAPFILE lines (numbers in hex, build id "-" when absent):
 *   module ID BIAS START END BUILDID PATH
 *   ip LABEL IP IS_RETURN
 */
#include "symbols/symbolize.h"

#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_FRAMES 64

typedef struct ip_line {
    char label[64];
    uint64_t ip;
    int is_return;
} ip_line;

static _Noreturn void die(const char *what)
{
    fprintf(stderr, "symtest: %s\n", what);
    exit(2);
}

static size_t parse_hex_bytes(const char *hex, uint8_t *out, size_t cap)
{
    if (strcmp(hex, "-") == 0)
        return 0;
    size_t n = strlen(hex) / 2;
    if (n > cap || strlen(hex) % 2)
        die("bad build id");
    for (size_t i = 0; i < n; i++)
        if (sscanf(hex + 2 * i, "%2hhx", &out[i]) != 1)
            die("bad build id");
    return n;
}

static void print_frames(churn_symbolizer *s, const ip_line *ip)
{
    churn_frame f[MAX_FRAMES], again[MAX_FRAMES];
    size_t n = churn_symbolizer_resolve(s, ip->ip, ip->is_return, UINT64_MAX, f, MAX_FRAMES);
    if (churn_symbolizer_resolve(s, ip->ip, ip->is_return, UINT64_MAX, again, MAX_FRAMES) != n ||
        memcmp(f, again, n * sizeof f[0]) != 0)
        die("the cached answer differs from the first");
    for (size_t i = 0; i < n; i++)
        printf("%s\t%zu\t%d\t%s\t%s\t%u\t%s\n", ip->label, i, f[i].inlined,
               f[i].function ? f[i].function : "?", f[i].file ? f[i].file : "?", f[i].line,
               f[i].module ? f[i].module : "?");
}

static int run_map(const char *path)
{
    FILE *in = fopen(path, "r");
    if (!in)
        die("cannot open the map file");
    churn_symbolizer *s = churn_symbolizer_new();
    ip_line *ips = NULL;
    size_t nips = 0;
    char line[8192];
    while (fgets(line, sizeof line, in)) {
        line[strcspn(line, "\n")] = 0;
        uint64_t id, bias, start, end, ip;
        char bid_hex[256], mpath[4096], label[64];
        int is_return;
        if (sscanf(line, "module %" SCNx64 " %" SCNx64 " %" SCNx64 " %" SCNx64 " %255s %4095[^\n]",
                   &id, &bias, &start, &end, bid_hex, mpath) == 6) {
            uint8_t bid[128];
            size_t bid_len = parse_hex_bytes(bid_hex, bid, sizeof bid);
            churn_symbolizer_add_module(s, id, mpath, bias, start, end, 0, bid_len ? bid : NULL,
                                        bid_len);
        } else if (sscanf(line, "ip %63s %" SCNx64 " %d", label, &ip, &is_return) == 3) {
            ips = realloc(ips, (nips + 1) * sizeof *ips);
            if (!ips)
                die("out of memory");
            snprintf(ips[nips].label, sizeof ips[nips].label, "%s", label);
            ips[nips].ip = ip;
            ips[nips].is_return = is_return;
            nips++;
        }
    }
    fclose(in);
    for (size_t i = 0; i < nips; i++)
        print_frames(s, &ips[i]);
    const char *const *warnings;
    size_t nw = churn_symbolizer_warnings(s, &warnings);
    for (size_t i = 0; i < nw; i++)
        printf("warning\t%s\n", warnings[i]);
    churn_symbolizer_free(s);
    free(ips);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void exec_segment(const char *path, uint64_t *lo, uint64_t *hi, int *pie)
{
    elf_version(EV_CURRENT);
    int fd = open(path, O_RDONLY);
    Elf *elf = fd >= 0 ? elf_begin(fd, ELF_C_READ, NULL) : NULL;
    GElf_Ehdr eh;
    size_t phnum;
    if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) != 0)
        die("cannot read the ELF file");
    *pie = eh.e_type == ET_DYN;
    *lo = *hi = 0;
    for (size_t i = 0; i < phnum; i++) {
        GElf_Phdr ph;
        if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && (ph.p_flags & PF_X)) {
            *lo = ph.p_vaddr;
            *hi = ph.p_vaddr + ph.p_memsz;
            break;
        }
    }
    elf_end(elf);
    close(fd);
    if (*hi == 0)
        die("no executable segment");
}

static int run_bench(const char *path, size_t count)
{
    uint64_t lo, hi;
    int pie;
    exec_segment(path, &lo, &hi, &pie);
    uint64_t bias = pie ? 0x55d0c0de0000ull : 0;
    churn_symbolizer *s = churn_symbolizer_new();
    churn_symbolizer_add_module(s, 1, path, bias, bias + lo, bias + hi, 0, NULL, 0);
    uint64_t stride = (hi - lo) / count ? (hi - lo) / count : 1;
    for (int pass = 0; pass < 2; pass++) {
        size_t named = 0, lined = 0, inlined = 0;
        double t0 = now();
        for (size_t i = 0; i < count; i++) {
            churn_frame f[MAX_FRAMES];
            size_t n = churn_symbolizer_resolve(s, bias + lo + 1 + i * stride, 1, UINT64_MAX, f,
                                                MAX_FRAMES);
            named += f[0].function != NULL;
            lined += f[0].line != 0;
            for (size_t j = 0; j < n; j++)
                inlined += f[j].inlined;
        }
        printf("%s pass: %zu addresses in %.3f s; %zu named, %zu with file:line, "
               "%zu inlined frames\n", pass ? "cached" : "cold", count, now() - t0, named, lined,
               inlined);
    }
    const char *const *warnings;
    size_t nw = churn_symbolizer_warnings(s, &warnings);
    for (size_t i = 0; i < nw; i++)
        printf("warning\t%s\n", warnings[i]);
    churn_symbolizer_free(s);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "--bench") == 0 && strtoul(argv[3], NULL, 10) > 0)
        return run_bench(argv[2], strtoul(argv[3], NULL, 10));
    if (argc == 2)
        return run_map(argv[1]);
    fputs("usage: symtest MAPFILE | symtest --bench ELF COUNT\n", stderr);
    return 2;
}
