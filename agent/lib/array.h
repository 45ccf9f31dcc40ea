/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * Growing a plain heap array, for the output writers. Header-only like
 * utf8.h, so the test programs that compile the writers from a fixed list
 * of sources need nothing more.
 */
#ifndef EMBER_ARRAY_H
#define EMBER_ARRAY_H

#include <errno.h>
#include <stdlib.h>

/*
 * Make *arrp (an array of elem-sized items with room for *cap) hold at
 * least n items, doubling from 256. 0, or -ENOMEM with the array intact.
 */
static inline int array_grow(void *arrp, size_t *cap, size_t n, size_t elem)
{
	void **arr = arrp;
	size_t ncap;
	void *na;

	if (n <= *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 256;
	while (ncap < n)
		ncap *= 2;
	na = realloc(*arr, ncap * elem);
	if (!na)
		return -ENOMEM;
	*arr = na;
	*cap = ncap;
	return 0;
}

#endif /* EMBER_ARRAY_H */
