#include "symbols/symcache.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/util.h"

/* File format, text:
     churn-symbols 2
     <offset hex> <n>                    an entry, followed by its n frames, innermost first:
     <inlined 0|1>\t<line>\t<function start hex>\t<function>\t<file>
   where a string is "-" for none or "=" and the text with \\, \t and \n escaped. */
#define HEADER "churn-symbols 2\n"
#define MAX_FILE_BYTES (256u << 20)
#define MAX_FRAMES 64

char *churn_symcache_dir(void)
{
    const char *env = getenv("CHURN_SYMBOL_CACHE");
    char path[4096];
    if (env) {
        if (!*env || !strcmp(env, "off"))
            return NULL;
        snprintf(path, sizeof path, "%s", env);
    } else if ((env = getenv("XDG_CACHE_HOME")) && *env) {
        snprintf(path, sizeof path, "%s/libchurn/symbols", env);
    } else if ((env = getenv("HOME")) && *env) {
        snprintf(path, sizeof path, "%s/.cache/libchurn/symbols", env);
    } else {
        return NULL;
    }
    return churn_xstrdup(path);
}

static void file_name(char *out, size_t cap, const char *dir, const uint8_t *id, size_t len)
{
    size_t used = (size_t)snprintf(out, cap, "%s/", dir);
    for (size_t i = 0; i < len && used + 3 < cap; i++)
        used += (size_t)snprintf(out + used, cap - used, "%02x", id[i]);
}

/* Unescapes one field in place, NUL-terminated; returns where it ended and sets *sep to the
   tab or newline that ended it, or returns NULL. */
static char *field(char *p, char *end, const char **out, char *sep)
{
    if (p >= end)
        return NULL;
    if (*p == '-') {
        *out = NULL;
        if (p + 1 >= end || (p[1] != '\t' && p[1] != '\n'))
            return NULL;
        *sep = p[1];
        return p + 1;
    }
    if (*p != '=')
        return NULL;
    char *w = ++p, *start = p;
    while (p < end && *p != '\t' && *p != '\n') {
        if (*p == '\\') {
            if (++p >= end)
                return NULL;
            *w++ = *p == 't' ? '\t' : *p == 'n' ? '\n' : *p;
            p++;
        } else {
            *w++ = *p++;
        }
    }
    if (p >= end)
        return NULL;
    *sep = *p;
    *w = '\0'; /* w <= p: at most over the separator, which *sep keeps */
    *out = start;
    return p;
}

/* One pass over the text; with fn NULL it only checks.  The text is unescaped in place, so
   the checking pass works on a copy. */
static int parse(char *p, char *end, churn_symcache_fn fn, void *ctx)
{
    if ((size_t)(end - p) < sizeof HEADER - 1 || memcmp(p, HEADER, sizeof HEADER - 1))
        return 0;
    p += sizeof HEADER - 1;
    churn_frame frames[MAX_FRAMES];
    while (p < end) {
        /* strtoull, not sscanf: sscanf measures the whole rest of the text every call */
        char *nl = memchr(p, '\n', (size_t)(end - p)), *stop;
        if (!nl || !isxdigit((unsigned char)*p))
            return 0;
        unsigned long long offset = strtoull(p, &stop, 16);
        if (*stop != ' ' || !isdigit((unsigned char)stop[1]))
            return 0;
        unsigned long n = strtoul(stop + 1, &stop, 10);
        if (stop != nl || n == 0 || n > MAX_FRAMES)
            return 0;
        p = nl + 1;
        for (unsigned i = 0; i < n; i++) {
            churn_frame *f = &frames[i];
            memset(f, 0, sizeof *f);
            char *q = p;
            if (q + 2 > end || (q[0] != '0' && q[0] != '1') || q[1] != '\t')
                return 0;
            f->inlined = q[0] == '1';
            char *stop, sep;
            unsigned long line = strtoul(q + 2, &stop, 10);
            if (stop == q + 2 || stop >= end || *stop != '\t' || line > 0xffffffffu)
                return 0;
            f->line = (unsigned)line;
            q = stop + 1;
            if (q >= end || !isxdigit((unsigned char)*q))
                return 0;
            f->entry = strtoull(q, &stop, 16);
            if (stop >= end || *stop != '\t')
                return 0;
            if (!(q = field(stop + 1, end, &f->function, &sep)) || sep != '\t' ||
                !(q = field(q + 1, end, &f->file, &sep)) || sep != '\n')
                return 0;
            p = q + 1;
        }
        if (fn)
            fn(ctx, offset, frames, n);
    }
    return 1;
}

int churn_symcache_load(const char *dir, const uint8_t *build_id, size_t len,
                        churn_symcache_fn fn, void *ctx)
{
    char path[4096];
    file_name(path, sizeof path, dir, build_id, len);
    int fd = churn_open_regular(path);
    if (fd < 0)
        return 0;
    struct stat st;
    char *text = NULL, *check = NULL;
    int ok = 0;
    if (fstat(fd, &st) == 0 && st.st_size > 0 &&
        (uint64_t)st.st_size <= MAX_FILE_BYTES) {
        size_t size = (size_t)st.st_size;
        /* NUL-terminated: strtoull reads a string */
        text = churn_xmalloc(size + 1);
        check = churn_xmalloc(size + 1);
        text[size] = check[size] = '\0';
        size_t got = 0;
        while (got < size) {
            ssize_t r = read(fd, text + got, size - got);
            if (r <= 0)
                break;
            got += (size_t)r;
        }
        if (got == size) {
            memcpy(check, text, size);
            ok = parse(check, check + size, NULL, NULL) && parse(text, text + size, fn, ctx);
        }
    }
    close(fd);
    free(text);
    free(check);
    return ok;
}

static void put_string(FILE *f, const char *s)
{
    if (!s) {
        fputc('-', f);
        return;
    }
    fputc('=', f);
    for (; *s; s++) {
        if (*s == '\\' || *s == '\t' || *s == '\n')
            fputc('\\', f);
        fputc(*s == '\t' ? 't' : *s == '\n' ? 'n' : *s, f);
    }
}

/* mkdir -p, private: the cache names the code a user analyzed. */
static int make_dirs(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s", dir);
    for (char *p = path + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(path, 0700) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    return mkdir(path, 0700) != 0 && errno != EEXIST ? -1 : 0;
}

void churn_symcache_save(const char *dir, const uint8_t *build_id, size_t len,
                         const churn_symcache_item *items, size_t n)
{
    char path[4096], tmp[4160];
    if (make_dirs(dir) != 0)
        return;
    file_name(path, sizeof path, dir, build_id, len);
    snprintf(tmp, sizeof tmp, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return;
    }
    fputs(HEADER, f);
    for (size_t i = 0; i < n; i++) {
        const churn_symcache_item *it = &items[i];
        size_t frames = it->n < MAX_FRAMES ? it->n : MAX_FRAMES;
        fprintf(f, "%llx %zu\n", (unsigned long long)it->offset, frames);
        for (size_t k = 0; k < frames; k++) {
            const churn_frame *fr = &it->frames[k];
            fprintf(f, "%d\t%u\t%llx\t", fr->inlined ? 1 : 0, fr->line,
                    (unsigned long long)fr->entry);
            put_string(f, fr->function);
            fputc('\t', f);
            put_string(f, fr->file);
            fputc('\n', f);
        }
    }
    int failed = ferror(f);
    if (fclose(f) != 0 || failed || rename(tmp, path) != 0)
        unlink(tmp);
}
