#include "symbols/debugfile.h"

#include <dlfcn.h>
#include <elf.h>
#include <elfutils/debuginfod.h>
#include <errno.h>
#include <fcntl.h>
#include <libdeflate.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "churn/elfnote.h"
#include "base/util.h"

#define BUILD_ID_DIR "/usr/lib/debug/.build-id/"

/* Where a section of the original file goes in the copy. */
typedef struct placed {
    const Elf64_Shdr *from;
    uint64_t offset, size, align;
    int inflate;        /* a zlib-compressed section, stored inflated */
} placed;

typedef struct source {
    const uint8_t *map;
    size_t size;
    const Elf64_Ehdr *eh;
    const Elf64_Shdr *sh;
} source;

static int in_file(const source *s, uint64_t offset, uint64_t size)
{
    return offset <= s->size && size <= s->size - offset;
}

static const char *section_name(const source *s, const Elf64_Shdr *h)
{
    const Elf64_Shdr *names = &s->sh[s->eh->e_shstrndx];
    if (!in_file(s, names->sh_offset, names->sh_size) || h->sh_name >= names->sh_size)
        return "";
    const char *text = (const char *)s->map + names->sh_offset + h->sh_name;
    return memchr(text, 0, names->sh_size - h->sh_name) ? text : "";
}

/* Location lists describe where variables live: nothing a frame's name or line needs. */
static int left_out(const source *s, const Elf64_Shdr *h)
{
    const char *name = section_name(s, h);
    return strcmp(name, ".debug_loclists") == 0 || strcmp(name, ".debug_loc") == 0;
}

static int has_build_id(const source *s, const uint8_t *id, size_t len)
{
    const uint8_t *its = NULL;
    return churn_elf_build_id(s->map, s->size, s->sh, s->eh->e_shnum, &its) == len &&
           memcmp(its, id, len) == 0;
}

static int by_offset(const void *a, const void *b)
{
    const placed *x = a, *y = b;
    return x->from->sh_offset < y->from->sh_offset ? -1 : x->from->sh_offset > y->from->sh_offset;
}

/* The copy keeps the file's bytes up to its first compressed section as they are (headers,
   program headers, notes), then every section from there on in file order at new offsets,
   then the section headers.  Returns the copy's size, 0 when the layout is not one this
   rewrites or nothing is compressed. */
static uint64_t plan(const source *s, placed *out, size_t *count, uint64_t *prefix)
{
    const Elf64_Ehdr *eh = s->eh;
    uint64_t first = UINT64_MAX;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *h = &s->sh[i];
        if (h->sh_type == SHT_NOBITS || !(h->sh_flags & SHF_COMPRESSED))
            continue;
        Elf64_Chdr ch;
        if (!in_file(s, h->sh_offset, h->sh_size) || h->sh_size < sizeof ch)
            return 0;
        memcpy(&ch, s->map + h->sh_offset, sizeof ch);
        if (ch.ch_type != ELFCOMPRESS_ZLIB || ch.ch_size > (1ull << 32))
            return 0;
        if (h->sh_offset < first)
            first = h->sh_offset;
    }
    if (first == UINT64_MAX || eh->e_phoff + (uint64_t)eh->e_phnum * eh->e_phentsize > first)
        return 0;
    size_t n = 0;
    for (size_t i = 0; i < eh->e_shnum; i++) {
        const Elf64_Shdr *h = &s->sh[i];
        if (h->sh_type == SHT_NOBITS || h->sh_size == 0)
            continue;
        if (!in_file(s, h->sh_offset, h->sh_size))
            return 0;
        if (h->sh_offset < first) {
            if (h->sh_offset + h->sh_size > first)
                return 0;
            continue;
        }
        placed *p = &out[n++];
        p->from = h;
        p->inflate = (h->sh_flags & SHF_COMPRESSED) != 0;
        p->size = h->sh_size;
        p->align = h->sh_addralign;
        if (p->inflate) {
            Elf64_Chdr ch;
            memcpy(&ch, s->map + h->sh_offset, sizeof ch);
            p->size = ch.ch_size;
            p->align = ch.ch_addralign;
        }
        if (left_out(s, h))
            p->size = p->inflate = 0;
    }
    qsort(out, n, sizeof *out, by_offset);
    uint64_t at = first;
    for (size_t i = 0; i < n; i++) {
        uint64_t align = out[i].align > 1 && out[i].align <= 4096 ? out[i].align : 1;
        at = (at + align - 1) & ~(align - 1);
        out[i].offset = at;
        at += out[i].size;
    }
    at = (at + 7) & ~(uint64_t)7;
    *count = n;
    *prefix = first;
    return at + (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr);
}

static int put(int fd, const void *bytes, uint64_t size, uint64_t offset)
{
    const uint8_t *p = bytes;
    while (size) {
        ssize_t w = pwrite(fd, p, size, (off_t)offset);
        if (w <= 0)
            return -1;
        p += w;
        size -= (uint64_t)w;
        offset += (uint64_t)w;
    }
    return 0;
}

/* Written with pwrite, each inflated section through one buffer: the copy's pages are not
   mapped here, so only what libdw reads of them counts in this process's memory. */
static int fill(const source *s, const placed *sections, size_t n, uint64_t prefix, int fd,
                uint64_t size)
{
    size_t shdr_bytes = s->eh->e_shnum * sizeof(Elf64_Shdr);
    Elf64_Shdr *headers = churn_xmalloc(shdr_bytes);
    memcpy(headers, s->sh, shdr_bytes);
    Elf64_Ehdr eh = *s->eh;
    eh.e_shoff = size - shdr_bytes;
    uint64_t largest = 0;
    for (size_t i = 0; i < n; i++)
        if (sections[i].inflate && sections[i].size > largest)
            largest = sections[i].size;
    uint8_t *buf = churn_xmalloc(largest ? largest : 1);
    struct libdeflate_decompressor *z = libdeflate_alloc_decompressor();
    int ok = z && put(fd, s->map, prefix, 0) == 0 && put(fd, &eh, sizeof eh, 0) == 0;
    for (size_t i = 0; ok && i < n; i++) {
        const placed *p = &sections[i];
        const uint8_t *from = s->map + p->from->sh_offset;
        if (p->inflate) {
            size_t got = 0;
            ok = libdeflate_zlib_decompress(z, from + sizeof(Elf64_Chdr),
                                            p->from->sh_size - sizeof(Elf64_Chdr), buf,
                                            p->size, &got) == LIBDEFLATE_SUCCESS &&
                 got == p->size && put(fd, buf, p->size, p->offset) == 0;
        } else {
            ok = put(fd, from, p->size, p->offset) == 0;
        }
        Elf64_Shdr *h = &headers[p->from - s->sh];
        h->sh_offset = p->offset;
        h->sh_size = p->size;
        if (p->from->sh_flags & SHF_COMPRESSED) {
            h->sh_flags &= ~(uint64_t)SHF_COMPRESSED;
            h->sh_addralign = p->align;
        }
    }
    ok = ok && put(fd, headers, shdr_bytes, eh.e_shoff) == 0;
    if (z)
        libdeflate_free_decompressor(z);
    free(buf);
    free(headers);
    return ok ? 0 : -1;
}

static int valid_header(const source *s)
{
    const Elf64_Ehdr *eh = s->eh;
    return s->size >= sizeof *eh && memcmp(eh->e_ident, ELFMAG, SELFMAG) == 0 &&
           eh->e_ident[EI_CLASS] == ELFCLASS64 && eh->e_ident[EI_DATA] == ELFDATA2LSB &&
           eh->e_shentsize == sizeof(Elf64_Shdr) && eh->e_shnum > 0 &&
           eh->e_shstrndx < eh->e_shnum && eh->e_shoff % 8 == 0 &&
           in_file(s, eh->e_shoff, (uint64_t)eh->e_shnum * sizeof(Elf64_Shdr));
}

static int inflated_copy(const source *s)
{
    placed *sections = churn_xmalloc(s->eh->e_shnum * sizeof *sections);
    size_t n = 0;
    uint64_t prefix = 0;
    uint64_t size = plan(s, sections, &n, &prefix);
    int fd = size ? memfd_create("churn-debuginfo", MFD_CLOEXEC) : -1;
    if (fd >= 0 && (ftruncate(fd, (off_t)size) != 0 || fill(s, sections, n, prefix, fd, size) != 0)) {
        close(fd);
        fd = -1;
    }
    free(sections);
    return fd;
}

/* The inflated copy of the debug file open as fd, when its build id is build_id (fd is
   closed either way); -1 when there is no copy to make. */
static int inflated_of(int fd, const uint8_t *build_id, size_t build_id_len)
{
    struct stat st;
    void *map = fstat(fd, &st) == 0 && st.st_size > 0
                    ? mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)
                    : MAP_FAILED;
    close(fd);
    if (map == MAP_FAILED)
        return -1;
    source s = {map, (size_t)st.st_size, map, NULL};
    int copy = -1;
    if (valid_header(&s)) {
        s.sh = (const Elf64_Shdr *)(s.map + s.eh->e_shoff);
        if (has_build_id(&s, build_id, build_id_len))
            copy = inflated_copy(&s);
    }
    munmap(map, (size_t)st.st_size);
    return copy;
}

int churn_debugfile_open(const uint8_t *build_id, size_t build_id_len, char **path)
{
    if (build_id_len < 2 || build_id_len > 64)
        return -1;
    char name[sizeof BUILD_ID_DIR + 2 * 64 + 8];
    size_t len = sizeof BUILD_ID_DIR - 1;
    memcpy(name, BUILD_ID_DIR, len);
    for (size_t i = 0; i < build_id_len; i++)
        len += (size_t)sprintf(name + len, i == 0 ? "%02x/" : "%02x", build_id[i]);
    strcpy(name + len, ".debug");
    int fd = churn_open_regular(name);
    int copy = fd < 0 ? -1 : inflated_of(fd, build_id, build_id_len);
    if (copy >= 0)
        *path = churn_xstrdup(name);
    return copy;
}

/* libdebuginfod's client, loaded the first time a module asks: linking it would load its
   own dependencies (curl, gnutls, kerberos: some 30 libraries) into every run, asked or not,
   which cost 16 M instructions of a cold analysis of python3. */
static struct {
    pthread_once_t once;
    char error[256];
    typeof(&debuginfod_begin) begin;
    typeof(&debuginfod_find_debuginfo) find_debuginfo;
    typeof(&debuginfod_end) end;
} client = {PTHREAD_ONCE_INIT, "", NULL, NULL, NULL};

static void client_load(void)
{
    void *lib = dlopen("libdebuginfod.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib) {
        client.begin = (typeof(client.begin))dlsym(lib, "debuginfod_begin");
        client.find_debuginfo =
            (typeof(client.find_debuginfo))dlsym(lib, "debuginfod_find_debuginfo");
        client.end = (typeof(client.end))dlsym(lib, "debuginfod_end");
    }
    if (!client.begin || !client.find_debuginfo || !client.end) {
        const char *why = dlerror();
        snprintf(client.error, sizeof client.error,
                 "libdebuginfod.so.1 (Debian libdebuginfod1) "
                 "cannot be loaded: %s",
                 why ? why : "symbols missing");
        client.begin = NULL;
    }
}

int churn_debugfile_fetch(const uint8_t *build_id, size_t build_id_len, char **path, char *why,
                          size_t why_len)
{
    const char *urls = getenv("DEBUGINFOD_URLS");
    why[0] = '\0';
    if (!urls || !*urls || build_id_len < 2 || build_id_len > 64)
        return -1;
    pthread_once(&client.once, client_load);
    if (!client.begin) {
        snprintf(why, why_len, "%s", client.error);
        return -1;
    }
    debuginfod_client *c = client.begin();
    if (!c) {
        snprintf(why, why_len, "the debuginfod client could not start");
        return -1;
    }
    char *cached = NULL;
    int fd = client.find_debuginfo(c, build_id, (int)build_id_len, &cached);
    client.end(c);
    if (fd < 0) {
        snprintf(why, why_len, "debuginfod at %s %s%s", urls,
                 fd == -ENOENT ? "has none" : "could not be asked: ",
                 fd == -ENOENT ? "" : strerror(-fd));
        free(cached);
        return -1;
    }
    /* Its cache keeps the file as the server sent it: Debian's are compressed. */
    int again = dup(fd);
    int copy = again < 0 ? -1 : inflated_of(again, build_id, build_id_len);
    if (copy >= 0)
        close(fd);
    *path = cached;
    return copy >= 0 ? copy : fd;
}
