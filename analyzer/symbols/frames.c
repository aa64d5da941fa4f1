#include "symbols/frames.h"

#include <stdio.h>
#include <string.h>

#define INLINE_MAX 16
#define ELLIPSIS "..."

void churn_frame_fit(char *out, size_t cap, const char *text, size_t len)
{
    if (!cap)
        return;
    if (len < cap || cap <= sizeof ELLIPSIS + 1) {
        size_t n = len < cap ? len : cap - 1;
        memcpy(out, text, n);
        out[n] = '\0';
        return;
    }
    size_t keep = cap - sizeof ELLIPSIS; /* of the text, beside "..." and the NUL */
    size_t head = keep / 2, from = len - (keep - head);
    /* neither cut falls inside a UTF-8 character */
    while (head && ((unsigned char)text[head] & 0xc0) == 0x80)
        head--;
    while (from < len && ((unsigned char)text[from] & 0xc0) == 0x80)
        from++;
    memcpy(out, text, head);
    memcpy(out + head, ELLIPSIS, sizeof ELLIPSIS - 1);
    memcpy(out + head + sizeof ELLIPSIS - 1, text + from, len - from);
    out[head + sizeof ELLIPSIS - 1 + len - from] = '\0';
}

void churn_frame_where(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    if (f->module)
        snprintf(buf, len, "%s+0x%llx", f->module, (unsigned long long)(ip - f->bias));
    else
        snprintf(buf, len, "0x%llx", (unsigned long long)ip);
}

void churn_frame_function(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    if (f->function)
        churn_frame_fit(buf, len, f->function, strlen(f->function));
    else if (f->entry && f->module)
        snprintf(buf, len, "%s+0x%llx", f->module, (unsigned long long)f->entry);
    else
        churn_frame_where(ip, f, buf, len);
}

/* "function (location)" in len bytes: when both do not fit, the location keeps all it needs
   up to half of them (and more when the name needs less), each shortened in its middle. */
static void format_frame(uint64_t ip, const churn_frame *f, char *buf, size_t len)
{
    char where[256], line[16];
    churn_frame_where(ip, f, where, sizeof where);
    if (!f->function && !(f->entry && f->module)) {
        churn_frame_fit(buf, len, where, strlen(where));
        return;
    }
    const char *name = f->function, *location = where;
    char entry[256];
    if (!name) {
        churn_frame_function(ip, f, entry, sizeof entry);
        name = entry;
    }
    line[0] = '\0';
    if (f->function && f->file) {
        location = f->file;
        /* generated code a runtime names by its file alone (CPython's) has no line */
        if (f->line)
            snprintf(line, sizeof line, ":%u", f->line);
    }
    size_t name_len = strlen(name), location_len = strlen(location) + strlen(line);
    size_t room = len - sizeof " ()"; /* for the name and the location */
    size_t for_location = location_len;
    if (name_len + location_len > room) {
        size_t half = room / 2;
        for_location = location_len <= half ? location_len
                       : name_len <= half   ? room - name_len
                                            : half;
    }
    size_t for_name = room - for_location;
    if (for_name > name_len)
        for_name = name_len;
    churn_frame_fit(buf, for_name + 1, name, name_len);
    size_t n = strlen(buf);
    memcpy(buf + n, " (", 2);
    n += 2;
    /* the line number stays whole: the file gives way */
    size_t line_len = strlen(line);
    churn_frame_fit(buf + n, for_location - line_len + 1, location, location_len - line_len);
    n += strlen(buf + n);
    snprintf(buf + n, len - n, "%s)", line);
}

void churn_frames_missing(uint64_t stack, char *buf, size_t len)
{
    if (stack)
        snprintf(buf, len, "<stack %llu not in the trace>", (unsigned long long)stack);
    else
        snprintf(buf, len, "<no stack recorded>");
}

size_t churn_frames_each(const churn_frames_source *src, uint64_t stack, size_t max,
                         churn_frame_fn fn, void *ctx)
{
    size_t depth;
    const uint64_t *ips = churn_stack_defs_get(src->stacks, stack, &depth);
    char buf[1024];
    if (!ips) {
        churn_frames_missing(stack, buf, sizeof buf);
        fn(ctx, buf);
        return 1;
    }
    size_t emitted = 0, total = 0;
    uint64_t generation = churn_stack_defs_generation(src->stacks, stack);
    churn_frame frames[INLINE_MAX];
    /* Every recorded ip is a return address, the innermost one too (the return from the call
       of the allocation function): each is looked up at its call instruction, or an inlined
       allocation would show at the caller's next line. */
    for (size_t i = 0; i < depth; i++) {
        size_t n = churn_symbolizer_resolve(src->sym, ips[i], 1, generation, frames,
                                            INLINE_MAX);
        for (size_t k = 0; k < n; k++, total++) {
            if (max && emitted >= max)
                continue;
            format_frame(ips[i], &frames[k], buf, sizeof buf);
            fn(ctx, buf);
            emitted++;
        }
    }
    return total;
}
