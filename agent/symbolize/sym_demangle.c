// SPDX-License-Identifier: GPL-2.0-only
/*
 * C++ and Rust demangling through libiberty (the GNU demangler binutils and
 * gdb use): cplus_demangle() in auto mode handles Itanium C++ ("_Z..."),
 * Rust legacy ("_ZN...17h<hash>E", hash dropped) and Rust v0 ("_R...").
 */
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>
#include "symbolize/symbolize_internal.h"

char *sym_demangle(const char *name)
{
	/* Cheap test first: only these prefixes can be mangled names. */
	if (!name || name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO);
}
