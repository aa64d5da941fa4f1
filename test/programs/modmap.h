/*
 * For the symbolization tests: prints the process's module map the way a trace records it
 * (id, load bias, absolute executable range, GNU build id, path), and return addresses,
 * in the line format test/tools/symtest.c reads.  Included by C and C++ test programs.
 */
#ifndef CHURN_TEST_MODMAP_H
#define CHURN_TEST_MODMAP_H

#include <elf.h>
#include <link.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Ids stay the same for a module when the map is printed again, as the shim's do. */
static uintptr_t modmap_seen[64];
static unsigned modmap_seen_count;

static unsigned modmap_id(uintptr_t bias_and_name)
{
    for (unsigned i = 0; i < modmap_seen_count; i++)
        if (modmap_seen[i] == bias_and_name)
            return i + 1;
    modmap_seen[modmap_seen_count] = bias_and_name;
    return ++modmap_seen_count;
}

/* Returns 1 when the note segment held a GNU build id, which is then printed in hex. */
static int modmap_print_build_id(const struct dl_phdr_info *info, const ElfW(Phdr) *ph)
{
    /* Notes are padded to the segment's alignment: 4, or 8 for .note.gnu.property. */
    size_t align = ph->p_align == 8 ? 8 : 4;
    const unsigned char *p = (const unsigned char *)(info->dlpi_addr + ph->p_vaddr);
    const unsigned char *end = p + ph->p_memsz;
    while (p + sizeof(ElfW(Nhdr)) <= end) {
        const ElfW(Nhdr) *nh = (const ElfW(Nhdr) *)p;
        const unsigned char *name = p + sizeof *nh;
        const unsigned char *desc = name + ((nh->n_namesz + align - 1) & ~(align - 1));
        if (nh->n_type == NT_GNU_BUILD_ID && nh->n_namesz == 4 && memcmp(name, "GNU", 4) == 0) {
            for (unsigned i = 0; i < nh->n_descsz; i++)
                printf("%02x", desc[i]);
            return 1;
        }
        p = desc + ((nh->n_descsz + align - 1) & ~(align - 1));
    }
    return 0;
}

static int modmap_print_module(struct dl_phdr_info *info, size_t size, void *unused)
{
    (void)size;
    (void)unused;
    const char *path = info->dlpi_name;
    char exe[PATH_MAX];
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        if (n < 0)
            return 0;
        exe[n] = 0;
        path = exe;
    }
    const ElfW(Phdr) *exec = NULL;
    for (int i = 0; i < info->dlpi_phnum; i++)
        if (info->dlpi_phdr[i].p_type == PT_LOAD && (info->dlpi_phdr[i].p_flags & PF_X)) {
            exec = &info->dlpi_phdr[i];
            break;
        }
    if (!exec)
        return 0;
    uintptr_t start = info->dlpi_addr + exec->p_vaddr;
    printf("module %x %lx %lx %lx ", modmap_id(info->dlpi_addr ^ (uintptr_t)info->dlpi_name),
           (unsigned long)info->dlpi_addr, (unsigned long)start,
           (unsigned long)(start + exec->p_memsz));
    int have_build_id = 0;
    for (int i = 0; i < info->dlpi_phnum && !have_build_id; i++)
        if (info->dlpi_phdr[i].p_type == PT_NOTE)
            have_build_id = modmap_print_build_id(info, &info->dlpi_phdr[i]);
    if (!have_build_id)
        printf("-");
    printf(" %s\n", path);
    return 0;
}

static void modmap_print(void)
{
    dl_iterate_phdr(modmap_print_module, NULL);
    fflush(stdout);
}

static void modmap_print_ip(const char *label, const void *ip, int is_return)
{
    printf("ip %s %lx %d\n", label, (unsigned long)(uintptr_t)ip, is_return);
}

#endif
