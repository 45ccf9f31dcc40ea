/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * UTF-8 sanitising for protobuf string fields. proto3 `string` fields must
 * be valid UTF-8: strict decoders (Go's protobuf in the OpenTelemetry
 * Collector, protoc, Python) reject the whole message otherwise. Symbol
 * names, comms and paths come from arbitrary binaries and processes, so
 * every string a writer puts in a proto3 string field goes through
 * utf8_sanitize().
 *
 * Header-only (static inline): test drivers build the writers from
 * explicit source lists (selftests/suites/12-outputs.sh, agent/mk/otlp.mk),
 * which then need no extra object.
 */
#ifndef EMBER_UTF8_H
#define EMBER_UTF8_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 character at s, 0 if invalid (or NUL). */
static inline int utf8_len(const unsigned char *s)
{
	uint32_t c = s[0], min;
	int len;

	if (c && c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		len = 2, c &= 0x1f, min = 0x80;
	else if ((c & 0xf0) == 0xe0)
		len = 3, c &= 0x0f, min = 0x800;
	else if ((c & 0xf8) == 0xf0)
		len = 4, c &= 0x07, min = 0x10000;
	else
		return 0;
	/* A NUL fails this test too: never reads past the string. */
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = c << 6 | (s[i] & 0x3f);
	}
	return c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff) ? 0 : len;
}

/*
 * s itself when it is valid UTF-8 (*owned = NULL). Otherwise a malloc'd
 * copy, also stored in *owned for the caller to free, in which each byte
 * that does not start a valid sequence (lone continuation or 0xf8..0xff,
 * truncated, overlong, surrogate or > U+10FFFF) becomes U+FFFD. NULL when
 * that copy cannot be allocated.
 */
static inline const char *utf8_sanitize(const char *str, char **owned)
{
	const unsigned char *s = (const unsigned char *)str;
	size_t o = 0;
	char *out;
	int n;

	*owned = NULL;
	for (n = 0; s[n] && utf8_len(s + n); n += utf8_len(s + n))
		;
	if (!s[n])
		return str;
	/* Worst case: every byte becomes the 3-byte U+FFFD. */
	out = malloc(strlen(str) * 3 + 1);
	if (!out)
		return NULL;
	while (*s) {
		n = utf8_len(s);
		if (n) {
			memcpy(out + o, s, n);
			o += n;
			s += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			s++;
		}
	}
	out[o] = 0;
	*owned = out;
	return out;
}

#endif /* EMBER_UTF8_H */
