/*
 * Does what compiler-rt's crtbegin does at start-up (workerd is built with it): registers the
 * program's .eh_frame with __register_frame_info when its weak reference finds one, and
 * deregisters it.  Prints "registered" when the unwinder kept it (deregistering returned
 * it), "not registered" when the call did nothing, "no unwinder" when the reference is
 * null.  Without libchurn a C program that does not load libgcc_s has none; under libchurn,
 * which loads libgcc_s for itself, it must say the same in effect (t_frame_registry.sh).
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif
extern void __register_frame_info(const void *begin, void *object) __attribute__((weak));
extern void *__deregister_frame_info(const void *begin) __attribute__((weak));
#ifdef __cplusplus
}
#endif

/* The executable's .eh_frame, from its .eh_frame_hdr (version 1, eh_frame_ptr pcrel|sdata4). */
static int find_eh_frame(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_GNU_EH_FRAME) {
            const uint8_t *hdr =
                (const uint8_t *)(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
            int32_t rel;
            memcpy(&rel, hdr + 4, 4);
            if (hdr[0] == 1 && hdr[1] == 0x1b)
                *(const uint8_t **)arg = hdr + 4 + rel;
        }
    return 1; /* the executable is the first object */
}

int main(void)
{
    static uintptr_t object[16]; /* libgcc's struct object is six words */
    const uint8_t *eh_frame = NULL;
    if (!__register_frame_info || !__deregister_frame_info) {
        puts("no unwinder");
        return 0;
    }
    dl_iterate_phdr(find_eh_frame, &eh_frame);
    if (!eh_frame) {
        fputs("frame_registry: no .eh_frame_hdr of the expected form\n", stderr);
        return 1;
    }
    __register_frame_info(eh_frame, object);
    puts(__deregister_frame_info(eh_frame) == object ? "registered" : "not registered");
    return 0;
}
