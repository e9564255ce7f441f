/* SPDX-License-Identifier: Apache-2.0 */
/* C++ (Itanium ABI) demangling through libstdc++'s __cxa_demangle. */
#ifndef XSPROF_DAEMON_SYMBOLIZE_DEMANGLE_H
#define XSPROF_DAEMON_SYMBOLIZE_DEMANGLE_H

#include <stdbool.h>

/* Longest mangled name handed to the demangler; longer ones stay mangled. */
#define DEMANGLE_MAX_LEN 8192

/* Whether name looks like an Itanium C++ mangled name ("_Z..."). */
bool demangle__is_cxx(const char *name);
/*
 * The demangled name, malloc'd, or NULL with errno set: EINVAL when name is not a C++ name or
 * does not demangle, E2BIG past DEMANGLE_MAX_LEN, ENOMEM.
 */
char *demangle__cxx(const char *name);

#endif
