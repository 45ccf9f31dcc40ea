/* SPDX-License-Identifier: GPL-2.0-only */
/* Refusing an input with a message in the caller's buffer. */
#ifndef EMBER_ERRMSG_H
#define EMBER_ERRMSG_H

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>

/*
 * Format why an input is refused into err[len] and return -EINVAL, so a
 * parser's every refusal is one line: return errmsg_inval(err, len, ...).
 */
static inline int __attribute__((format(printf, 3, 4)))
errmsg_inval(char *err, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, len, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

#endif /* EMBER_ERRMSG_H */
