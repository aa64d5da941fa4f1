/*
 * A separate debug file, handed to libdw already inflated.
 *
 * Debian ships debug files (libc6-dbg's among them) with zlib-compressed .debug_* sections,
 * and libdw inflates every one of them with zlib when it opens the file: for libc about
 * 40 ms, most of a cold run's symbolization.  Here the sections are inflated with libdeflate
 * (about 2.5 times faster) into an in-memory copy of the file, and the location lists, which
 * symbolization never reads, are left out.  libdw then reads that copy as an ordinary
 * uncompressed file: the same bytes, so the same answers.  A debug file that a debuginfod
 * server sends is read the same way.
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

/* When DEBUGINFOD_URLS is set, asks those servers for the debug file of build_id through
   elfutils' libdebuginfod (as gdb does; its cache, DEBUGINFOD_CACHE_PATH, and its other
   variables apply) and returns a file descriptor of it, inflated as above where it can be,
   with *path set to the file in the cache (malloc'd, or NULL).  Returns -1 with a line in
   why ("debuginfod at URL has none", "... could not be asked: REASON") when that fails, and
   with why empty when DEBUGINFOD_URLS is not set. */
int churn_debugfile_fetch(const uint8_t *build_id, size_t build_id_len, char **path, char *why,
                          size_t why_len);

#endif
