/*
 * The Debian package a module belongs to, for a module without debug info: its debug file is
 * in PACKAGE-dbgsym, from Debian's debug archive (or a debuginfod server that serves it).
 */
#ifndef CHURN_DBGSYM_H
#define CHURN_DBGSYM_H

#include <stddef.h>

/* The packages that installed paths[0..n) ("libsqlite3-0", without the architecture), as
   dpkg-query -S tells them: packages[i] NULL where none did or dpkg is not there.  One
   dpkg-query for all of them (none for paths outside /usr, /lib*, /bin, /sbin and /opt, where
   packages install); the answers are kept for the process's life. */
void churn_dbgsym_packages(const char *const *paths, size_t n, const char **packages);

#endif
