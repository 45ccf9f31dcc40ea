// SPDX-License-Identifier: GPL-2.0-only
/*
 * otlp_sink: the smallest OTLP/HTTP receiver, for the appliance image test
 * (selftests/suites/NN-image-arm64.sh), where there is no python. It is the
 * test's collector, not part of ember.
 *
 *   otlp_sink PORT DIR
 *
 * Listens on 127.0.0.1:PORT; every POST's body (gunzipped when sent with
 * Content-Encoding: gzip) is written to DIR/NNNNNN.otlp, which `ember
 * decode` reads, and answered 200 with an empty
 * ExportProfilesServiceResponse. HTTP/1.1 keep-alive (libcurl reuses its
 * connection); one connection at a time. Bodies over 64 MiB, and requests
 * it cannot parse, are answered 400 and the connection closed. DIR/count
 * holds the number of requests kept.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>
#include <zlib.h>

#define HDR_MAX 16384
#define BODY_MAX (64u << 20)

static const char *dir;
static unsigned long kept;

static int read_full(int fd, char *buf, size_t len)
{
	while (len) {
		ssize_t n = read(fd, buf, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

static int write_file(const char *path, const void *buf, size_t len)
{
	char tmp[4200];
	int fd, r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return -1;
	if (len && write(fd, buf, len) != (ssize_t)len)
		r = -1;
	close(fd);
	return r ? r : rename(tmp, path);
}

/* gunzip in into a malloc'd buffer; NULL when it is not gzip data */
static unsigned char *gunzip(const unsigned char *in, size_t len, size_t *out_len)
{
	z_stream z = { 0 };
	size_t cap = len * 4 + 4096;
	unsigned char *out = malloc(cap);
	int r;

	if (!out || inflateInit2(&z, 16 + MAX_WBITS) != Z_OK) {
		free(out);
		return NULL;
	}
	z.next_in = (unsigned char *)in;
	z.avail_in = (uInt)len;
	do {
		if (z.total_out == cap) {
			unsigned char *n = cap < BODY_MAX * 4 ? realloc(out, cap * 2) : NULL;

			if (!n)
				break;
			out = n;
			cap *= 2;
		}
		z.next_out = out + z.total_out;
		z.avail_out = (uInt)(cap - z.total_out);
		r = inflate(&z, Z_NO_FLUSH);
	} while (r == Z_OK);
	*out_len = z.total_out;
	inflateEnd(&z);
	if (r != Z_STREAM_END) {
		free(out);
		return NULL;
	}
	return out;
}

static void keep(const unsigned char *body, size_t len, int gz)
{
	unsigned char *plain = NULL;
	size_t plen = len;
	char path[4200], n[32];

	if (gz) {
		plain = gunzip(body, len, &plen);
		if (!plain) {
			fprintf(stderr, "otlp_sink: a gzip body that does not inflate\n");
			return;
		}
		body = plain;
	}
	snprintf(path, sizeof(path), "%s/%06lu.otlp", dir, kept + 1);
	if (!write_file(path, body, plen)) {
		kept++;
		snprintf(path, sizeof(path), "%s/count", dir);
		snprintf(n, sizeof(n), "%lu\n", kept);
		write_file(path, n, strlen(n));
	}
	free(plain);
}

static const char *find_header(const char *h, const char *name)
{
	size_t l = strlen(name);

	for (const char *p = strstr(h, "\r\n"); p && p[2]; p = strstr(p + 2, "\r\n"))
		if (!strncasecmp(p + 2, name, l) && p[2 + l] == ':')
			return p + 3 + l;
	return NULL;
}

static void reply(int c, int status, const char *why, int close_it)
{
	char r[256];
	int n = snprintf(r, sizeof(r), "HTTP/1.1 %d %s\r\nContent-Type: application/x-protobuf\r\n"
			 "Content-Length: 0\r\n%s\r\n", status, why,
			 close_it ? "Connection: close\r\n" : "");

	if (write(c, r, (size_t)n) < 0)
		return;
}

/* One connection: requests until the client closes or one is bad. */
static void serve(int c)
{
	static char h[HDR_MAX + 1];

	for (;;) {
		size_t hl = 0, cl;
		const char *v, *end;
		unsigned char *body;
		int gz;

		/* headers, byte by byte: simple, and never reads into a body */
		while (hl < HDR_MAX) {
			if (read(c, h + hl, 1) != 1)
				return;
			h[++hl] = '\0';
			if (hl >= 4 && !memcmp(h + hl - 4, "\r\n\r\n", 4))
				break;
		}
		end = hl < HDR_MAX ? h + hl : NULL;
		v = end ? find_header(h, "Content-Length") : NULL;
		if (!v || strncmp(h, "POST ", 5) ||
		    (cl = strtoul(v, NULL, 10)) > BODY_MAX) {
			reply(c, 400, "Bad Request", 1);
			return;
		}
		v = find_header(h, "Content-Encoding");
		gz = v && strstr(v, "gzip") && strstr(v, "gzip") < strstr(v, "\r\n");
		body = malloc(cl ? cl : 1);
		if (!body || read_full(c, (char *)body, cl)) {
			free(body);
			return;
		}
		keep(body, cl, gz);
		free(body);
		reply(c, 200, "OK", 0);
	}
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { .sin_family = AF_INET };
	int s, one = 1;

	if (argc != 3) {
		fprintf(stderr, "usage: otlp_sink PORT DIR\n");
		return 2;
	}
	dir = argv[2];
	signal(SIGPIPE, SIG_IGN);
	a.sin_port = htons((unsigned short)atoi(argv[1]));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0 || setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(s, (struct sockaddr *)&a, sizeof(a)) || listen(s, 8)) {
		perror("otlp_sink");
		return 1;
	}
	fprintf(stderr, "otlp_sink: listening on 127.0.0.1:%s, keeping requests in %s\n",
		argv[1], dir);
	for (;;) {
		int c = accept(s, NULL, NULL);

		if (c < 0)
			continue;
		serve(c);
		close(c);
	}
}
