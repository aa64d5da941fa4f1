/*
 * A separate debug file, handed to libdw already inflated.
 *
 * Debian ships debug files (libc6-dbg's among them) with zlib-compressed .debug_* sections,
 * and libdw inflates every one of them with zlib when it opens the file: for libc about
 * 40 ms, most of a cold run's symbolization.  Here the sections are inflated with libdeflate
 * (about 2.5 times faster) into an in-memory copy of the file, and the location lists, which
 * symbolization never reads, are left out.  libdw then reads that copy as an ordinary
 * uncompressed file: the same bytes, so the same answers.
 */
#ifndef CHURN_DEBUGFILE_H
#define CHURN_DEBUGFILE_H

#include <stddef.h>
#include <stdint.h>

/* Opens the debug file named by build_id under /usr/lib/debug/.build-id (where elfutils'
   standard lookup looks first) and returns a file descriptor of its inflated copy, with
   *path set to the real file's name (malloc'd).  Returns -1 whenever that is not possible or
   brings nothing (no such file, a build id note that differs, no zlib-compressed section, an
   ELF layout this does not rewrite, a damaged section): the caller then takes the standard
   lookup, which reports problems as before. */
int churn_debugfile_open(const uint8_t *build_id, size_t build_id_len, char **path);

#endif
