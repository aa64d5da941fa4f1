/*
 * capstone, linked into libchurn.so from Debian's static archive with its x86 module alone.
 *
 * Why static: libcapstone.so.4 carries every architecture's tables, 77,375 relative
 * relocations that the dynamic linker writes at every traced program's start (about 380 page
 * faults, 4 to 6 ms of `python3.11 -c pass` here).  Linked from libcapstone.a, only the
 * objects reached are taken; capstone's cs.c reaches every architecture through its tables of
 * each module's set-up and option calls, so libchurn defines those of the modules it never
 * opens, and the linker leaves the modules out (docs/patching.md gives the figures).
 *
 * Why private: the copy is libchurn's (the Makefile hides its symbols), so setting its
 * allocator to libchurn's arena (patch.c) leaves alone a libcapstone.so that the traced
 * program loads for itself: that one's allocations stay the program's, and are traced
 * (t_own_capstone.sh).
 *
 * Each definition answers CS_ERR_ARCH, what cs_open answers for an architecture left out of
 * the build; patch.c opens CS_ARCH_X86 only.  A capstone whose modules have other names takes
 * them whole from the archive: larger and slower to load, but the same decoder.
 */
#include <capstone/capstone.h>
#include <stddef.h>

#define LEAVE_OUT(arch)                                                                        \
    cs_err arch##_global_init(void *ud);                                                       \
    cs_err arch##_option(void *handle, cs_opt_type type, size_t value);                        \
    cs_err arch##_global_init(void *ud)                                                        \
    {                                                                                          \
        (void)ud;                                                                              \
        return CS_ERR_ARCH;                                                                    \
    }                                                                                          \
    cs_err arch##_option(void *handle, cs_opt_type type, size_t value)                         \
    {                                                                                          \
        (void)handle, (void)type, (void)value;                                                 \
        return CS_ERR_ARCH;                                                                    \
    }

LEAVE_OUT(ARM)
LEAVE_OUT(AArch64)
LEAVE_OUT(EVM)
LEAVE_OUT(M680X)
LEAVE_OUT(M68K)
LEAVE_OUT(Mips)
LEAVE_OUT(PPC)
LEAVE_OUT(Sparc)
LEAVE_OUT(SystemZ)
LEAVE_OUT(TMS320C64x)
LEAVE_OUT(XCore)
