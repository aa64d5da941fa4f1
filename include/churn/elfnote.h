/*
 * A file's GNU build id, from its notes: what says a separate debug file describes this build.
 * The shim (shim/walk/elfsyms.c, reading a stripped file's debug file for its names) and the
 * analyzer (analyzer/symbols/debugfile.c, for symbolization) both check it; header-only, since the
 * two are separate binaries.
 */
#ifndef CHURN_ELFNOTE_H
#define CHURN_ELFNOTE_H

#include <elf.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The build id's bytes (*id) and length among the SHT_NOTE sections of a mapped ELF64 file
   of size bytes, whose count section headers are sh; 0 when it has none.  Everything read is
   checked to lie inside the file. */
static inline size_t churn_elf_build_id(const uint8_t *base, size_t size, const Elf64_Shdr *sh,
                                        size_t count, const uint8_t **id)
{
    for (size_t i = 0; i < count; i++) {
        if (sh[i].sh_type != SHT_NOTE || sh[i].sh_offset > size ||
            sh[i].sh_size > size - sh[i].sh_offset)
            continue;
        const uint8_t *p = base + sh[i].sh_offset, *end = p + sh[i].sh_size;
        while ((size_t)(end - p) >= sizeof(Elf64_Nhdr)) {
            Elf64_Nhdr n;
            memcpy(&n, p, sizeof n);
            size_t name = (n.n_namesz + 3u) & ~3u, desc = (n.n_descsz + 3u) & ~3u;
            p += sizeof n;
            if (name > (size_t)(end - p) || desc > (size_t)(end - p) - name)
                break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 && !memcmp(p, "GNU", 4)) {
                *id = p + name;
                return n.n_descsz;
            }
            p += name + desc;
        }
    }
    return 0;
}

#endif
