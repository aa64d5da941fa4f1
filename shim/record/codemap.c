/*
 * Names of the code a runtime generates, from the perf map it writes: /tmp/perf-<pid>.map,
 * a line "START SIZE name" (hex) for each piece of code as it is made, appended (V8 with
 * --perf-basic-prof: node, workerd; CPython 3.12 and later with -X perf; a JVM's perf-map
 * agent).  That code belongs to no loaded object, so the module map cannot name its frames,
 * and the file is gone once /tmp is cleaned.  The writer reads the file's new lines when a
 * stack it defines has a frame in no module that the entries read so far do not cover, and
 * writes a CODE record for each entry the stacks of a segment use, before the first STACK
 * that uses it, so every segment names its own frames.  An entry keeps its range and where
 * its name is in the file (read again when it is written), 24 bytes; where two entries
 * cover an address, the one read last (the code made last) names it.
 *
 * A map older than the process (left by an earlier process of the same pid) is read from
 * its end.  Runs on the writer thread only; the file is read through a descriptor of
 * libchurn's own, looked for again at most every 100 ms while it is not there.
 */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "record/encode.h"
#include "shim.h"

typedef struct code_entry {
    uint64_t start, end;
    uint64_t name_at; /* offset of the name in the file */
    uint32_t name_len;
    uint32_t emitted_in; /* the last segment (churn_enc.segments) with its CODE record */
} code_entry;

#define RETRY_NS 100000000u
#define NAME_MAX_BYTES 1024u
#define ENTRIES_MAX (1u << 22)
#define LOOK_BACK 16 /* entries before the last one starting at or below an address */
#define CACHE 4096   /* addresses asked recently, direct-mapped */
#define NONE UINT32_MAX

static struct {
    _Atomic int fd; /* libchurn's own (fds.c) */
    pid_t pid;
    uint64_t read_to;     /* file offset of the first line not read */
    int in_long_line;     /* read_to is inside a line passed over */
    uint64_t next_try_ns; /* when to look for a missing file again */
    time_t born;          /* the process's start: an older map is another's */
    code_entry *entries;  /* in file order */
    uint32_t *sorted;     /* indices by start, then file order */
    size_t count, cap, nsorted;
    struct {
        uintptr_t ip;
        uint32_t entry; /* index + 1; 0: none; NONE: in a module */
        uint32_t count; /* entries read when it was looked up */
    } cache[CACHE];
} m = {.fd = -1};

static void reset(void)
{
    if (m.fd >= 0)
        churn_fd_drop(&m.fd);
    churn_mem_free(m.entries);
    churn_mem_free(m.sorted);
    memset(&m, 0, sizeof m);
    m.fd = -1;
}

static uint64_t hex(const char **p, const char *end)
{
    uint64_t v = 0;
    const char *s = *p;
    while (s < end) {
        int d = *s >= '0' && *s <= '9'   ? *s - '0'
                : *s >= 'a' && *s <= 'f' ? *s - 'a' + 10
                : *s >= 'A' && *s <= 'F' ? *s - 'A' + 10
                                         : -1;
        if (d < 0)
            break;
        v = v << 4 | (uint64_t)d;
        s++;
    }
    *p = s;
    return v;
}

/* One line, "START SIZE name", at file offset at. */
static void take_line(const char *line, size_t len, uint64_t at)
{
    const char *p = line, *end = line + len;
    uint64_t start = hex(&p, end);
    if (p == line || p == end || *p++ != ' ')
        return;
    const char *size_at = p;
    uint64_t size = hex(&p, end);
    if (p == size_at || p == end || *p++ != ' ' || !size || start + size < start)
        return;
    if (m.count == m.cap) {
        size_t cap = m.cap ? m.cap * 2 : 4096;
        code_entry *e =
            cap <= ENTRIES_MAX ? churn_mem_realloc(m.entries, cap * sizeof *e) : NULL;
        if (!e)
            return;
        m.entries = e;
        m.cap = cap;
    }
    size_t name_len = (size_t)(end - p);
    m.entries[m.count++] =
        (code_entry){start, start + size, at + (uint64_t)(p - line),
                     (uint32_t)(name_len < NAME_MAX_BYTES ? name_len : NAME_MAX_BYTES), 0};
}

/* Bytes of the map at offset, through libchurn's descriptor of it (-1: gone: the program
   took its number over). */
static ssize_t read_at(void *buf, size_t len, uint64_t offset)
{
    int fd = churn_fd_use(&m.fd);
    if (fd < 0)
        return -1;
    ssize_t n = pread(fd, buf, len, (off_t)offset);
    churn_fd_done(&m.fd);
    return n;
}

/* Reads the lines appended since the last read; returns how many entries came. */
static size_t read_new(void)
{
    size_t before = m.count;
    char buf[65536];
    for (;;) {
        ssize_t n = read_at(buf, sizeof buf, m.read_to);
        if (n <= 0)
            break;
        size_t used = 0;
        for (size_t i = 0; i < (size_t)n; i++)
            if (buf[i] == '\n') {
                if (!m.in_long_line)
                    take_line(buf + used, i - used, m.read_to + used);
                m.in_long_line = 0;
                used = i + 1;
            }
        if (!used) {
            /* a line longer than the buffer: no code's name is; passed over to its end, its
               rest never read as a line of its own */
            m.in_long_line = 1;
            m.read_to += (uint64_t)n;
            continue;
        }
        m.read_to += used; /* a last line without its newline is read when it has one */
        if ((size_t)n < sizeof buf)
            break;
    }
    return m.count - before;
}

static int open_map(uint64_t now)
{
    if (m.fd >= 0 && m.pid == getpid())
        return 1;
    if (m.pid != getpid()) {
        reset();
        m.pid = getpid();
        m.born = time(NULL);
    }
    if (now < m.next_try_ns)
        return 0;
    m.next_try_ns = now + RETRY_NS;
    char path[64];
    snprintf(path, sizeof path, "/tmp/perf-%d.map", (int)m.pid);
    /* Anyone can make the path first: a FIFO (its open and its reads would wait forever), a
       link to /dev/zero or to any file.  The runtime's map is a regular file it made. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        close(fd);
        return 0;
    }
    if (st.st_mtime < m.born - 1)
        m.read_to = (uint64_t)st.st_size;
    return churn_fd_keep(&m.fd, fd) >= 0;
}

static int before(uint32_t a, uint32_t b)
{
    const code_entry *x = &m.entries[a], *y = &m.entries[b];
    return x->start < y->start || (x->start == y->start && a < b);
}

/* The index of the entries by start, with those read since merged in (a heap sort of the
   new ones, which are few, then one merge). */
static int index_new(size_t fresh)
{
    uint32_t *s = churn_mem_realloc(m.sorted, m.count * sizeof *s);
    if (!s)
        return 0;
    m.sorted = s;
    uint32_t *add = churn_mem_alloc(fresh * sizeof *add);
    if (!add)
        return 0;
    for (size_t i = 0; i < fresh; i++)
        add[i] = (uint32_t)(m.count - fresh + i);
    /* insertion sort: the new lines of V8 and CPython come mostly in address order */
    for (size_t i = 1; i < fresh; i++) {
        uint32_t v = add[i];
        size_t j = i;
        while (j && before(v, add[j - 1])) {
            add[j] = add[j - 1];
            j--;
        }
        add[j] = v;
    }
    size_t i = m.nsorted, j = fresh, k = m.nsorted + fresh;
    while (j) {
        if (i && before(add[j - 1], s[i - 1]))
            s[--k] = s[--i];
        else
            s[--k] = add[--j];
    }
    m.nsorted += fresh;
    churn_mem_free(add);
    return 1;
}

static uint32_t lookup(uintptr_t ip)
{
    size_t lo = 0, hi = m.nsorted;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m.entries[m.sorted[mid]].start <= ip)
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t best = 0;
    for (size_t k = lo; k > 0 && lo - k < LOOK_BACK; k--) {
        uint32_t e = m.sorted[k - 1];
        if (ip < m.entries[e].end && e + 1 > best)
            best = e + 1;
    }
    return best;
}

static int in_module(uintptr_t ip)
{
    for (size_t i = 0; i < churn_modules_count(); i++) {
        const churn_module *mod = churn_module_get(i);
        if (mod && ip >= mod->start && ip < mod->end)
            return 1;
    }
    return 0;
}

/* The entry (index + 1) naming the code at ip, or 0.  An address in a module is never a
   map's; another is looked up again once more entries were read. */
static uint32_t entry_of(uintptr_t ip, uint64_t now)
{
    unsigned slot = (unsigned)((ip * 0x9e3779b97f4a7c15ull) >> 52) & (CACHE - 1);
    if (m.cache[slot].ip == ip) {
        if (m.cache[slot].entry == NONE)
            return 0;
        if (m.cache[slot].entry && m.cache[slot].count == m.count)
            return m.cache[slot].entry;
    } else if (in_module(ip)) {
        m.cache[slot].ip = ip;
        m.cache[slot].entry = NONE;
        return 0;
    }
    if (!open_map(now))
        return 0;
    uint32_t e = lookup(ip);
    if (!e) {
        size_t fresh = read_new();
        if (fresh && index_new(fresh))
            e = lookup(ip);
    }
    m.cache[slot].ip = ip;
    m.cache[slot].entry = e;
    m.cache[slot].count = (uint32_t)m.count;
    return e;
}

void churn_codemap_stack(const uintptr_t *ips, unsigned depth)
{
    uint64_t now = churn_now_ns();
    for (unsigned i = 0; i < depth; i++) {
        if (churn_pyframes_name(ips[i]))
            continue;
        uint32_t e = entry_of(ips[i] - 1, now);
        if (!e)
            continue;
        code_entry *c = &m.entries[e - 1];
        if (churn_enc_written(c->emitted_in))
            continue;
        char name[NAME_MAX_BYTES];
        ssize_t n = read_at(name, c->name_len, c->name_at);
        if (n <= 0)
            continue;
        if (churn_emit_code(c->start, c->end - c->start, name, (size_t)n))
            c->emitted_in = (uint32_t)churn_enc.segments;
    }
}
