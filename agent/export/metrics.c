// SPDX-License-Identifier: GPL-2.0-only
/* Prometheus text endpoint for `ember run` (see metrics.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>
#include "export/metrics.h"

#define REQUEST_MAX 4096

struct metrics_server {
	int fd;
	int stop_pipe[2];
	int port;
	pthread_t thread;
	metrics_fill_fn fill;
	void *ctx;
};

static void set_timeouts(int fd)
{
	struct timeval tv = { 2, 0 };	/* a stuck client cannot hold us */

	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void serve(struct metrics_server *m, int c)
{
	char req[REQUEST_MAX + 1], head[256];
	size_t n = 0;
	char *body = NULL;
	size_t body_len = 0;
	FILE *f;

	set_timeouts(c);
	/* Read until the end of the request headers (or the size cap). */
	while (n < REQUEST_MAX) {
		ssize_t r = recv(c, req + n, REQUEST_MAX - n, 0);

		if (r <= 0)
			break;
		n += (size_t)r;
		req[n] = '\0';
		if (strstr(req, "\r\n\r\n") || strstr(req, "\n\n"))
			break;
	}
	req[n] = '\0';
	if (strncmp(req, "GET /metrics", 12) && strncmp(req, "GET / ", 6)) {
		static const char nf[] = "HTTP/1.0 404 Not Found\r\nContent-Length: 24\r\n"
					 "Connection: close\r\n\r\ntry GET /metrics ember\r\n";

		write_all(c, nf, sizeof(nf) - 1);
		return;
	}
	f = open_memstream(&body, &body_len);
	if (!f)
		return;
	m->fill(f, m->ctx);
	if (fclose(f)) {
		free(body);
		return;
	}
	snprintf(head, sizeof(head), "HTTP/1.0 200 OK\r\n"
		 "Content-Type: text/plain; version=0.0.4\r\n"
		 "Content-Length: %zu\r\nConnection: close\r\n\r\n", body_len);
	write_all(c, head, strlen(head));
	write_all(c, body, body_len);
	free(body);
}

static void *loop(void *arg)
{
	struct metrics_server *m = arg;
	struct pollfd p[2] = {
		{ .fd = m->fd, .events = POLLIN },
		{ .fd = m->stop_pipe[0], .events = POLLIN },
	};

	pthread_setname_np(pthread_self(), "ember-metrics");
	for (;;) {
		int c;

		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		c = accept4(m->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			continue;
		serve(m, c);
		close(c);
	}
	return NULL;
}

static int bad_addr(char *err, size_t err_len, const char *addr, const char *why)
{
	snprintf(err, err_len, "'%s': %s (expected PORT, :PORT, HOST:PORT or "
		 "[IPV6]:PORT, PORT from 0 to 65535)", addr, why);
	return -EINVAL;
}

int metrics_addr_parse(const char *addr, char *host, size_t hlen, char *port,
		       size_t plen, char *err, size_t err_len)
{
	const char *colon, *p, *h = addr;
	size_t h_len;
	unsigned long v = 0;

	if (!*addr)
		return bad_addr(err, err_len, addr, "empty");
	for (p = addr; *p; p++)
		if ((unsigned char)*p <= ' ' || *p == 0x7f)
			return bad_addr(err, err_len, addr,
					"a space or control character");
	if (addr[0] == '[') {
		const char *end = strchr(addr, ']');

		if (!end)
			return bad_addr(err, err_len, addr, "no ']' closes the IPv6 address");
		h = addr + 1;
		h_len = (size_t)(end - h);
		if (!h_len)
			return bad_addr(err, err_len, addr, "empty IPv6 address in []");
		if (memchr(h, '[', h_len) || !memchr(h, ':', h_len))
			return bad_addr(err, err_len, addr, "not an IPv6 address in []");
		if (end[1] != ':')
			return bad_addr(err, err_len, addr, "no :PORT after ']'");
		colon = end + 1;
	} else {
		colon = strrchr(addr, ':');
		if (!colon) {
			h_len = 0;
			colon = addr - 1;	/* all of it is the port */
		} else {
			h_len = (size_t)(colon - addr);
			if (memchr(addr, ':', h_len))
				return bad_addr(err, err_len, addr, "an IPv6 address "
						"needs brackets, as in [::1]:9464");
		}
		if (memchr(addr, '[', h_len) || memchr(addr, ']', h_len))
			return bad_addr(err, err_len, addr, "a stray bracket");
	}
	p = colon + 1;
	if (!*p)
		return bad_addr(err, err_len, addr, "no port");
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return bad_addr(err, err_len, addr, "the port is not a number");
		v = v * 10 + (unsigned long)(*p - '0');
		if (v > 65535)
			return bad_addr(err, err_len, addr, "the port is above 65535");
	}
	if (h_len >= hlen || strlen(colon + 1) >= plen)
		return bad_addr(err, err_len, addr, "too long");
	if (h_len) {
		memcpy(host, h, h_len);
		host[h_len] = '\0';
	} else {
		snprintf(host, hlen, "127.0.0.1");
	}
	snprintf(port, plen, "%s", colon + 1);
	return 0;
}

struct metrics_server *metrics_start(const char *addr, metrics_fill_fn fill,
				     void *ctx, char *err, size_t err_len)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct metrics_server *m;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char host[256], port[16], why[256];
	int one = 1, rc;

	if (!addr || metrics_addr_parse(addr, host, sizeof(host), port, sizeof(port),
					why, sizeof(why))) {
		snprintf(err, err_len, "--metrics-addr %s", addr ? why : "missing");
		return NULL;
	}
	rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, err_len, "--metrics-addr '%s': %s", addr, gai_strerror(rc));
		return NULL;
	}
	m = calloc(1, sizeof(*m));
	if (!m) {
		freeaddrinfo(ai);
		snprintf(err, err_len, "out of memory");
		return NULL;
	}
	m->fill = fill;
	m->ctx = ctx;
	m->fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (m->fd < 0 ||
	    setsockopt(m->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(m->fd, ai->ai_addr, ai->ai_addrlen) || listen(m->fd, 8) ||
	    pipe2(m->stop_pipe, O_CLOEXEC)) {
		snprintf(err, err_len, "--metrics-addr %s: cannot listen: %s", addr,
			 strerror(errno));
		if (m->fd >= 0)
			close(m->fd);
		free(m);
		freeaddrinfo(ai);
		return NULL;
	}
	freeaddrinfo(ai);
	if (!getsockname(m->fd, (struct sockaddr *)&ss, &sl))
		m->port = ntohs(ss.ss_family == AF_INET6 ?
				((struct sockaddr_in6 *)&ss)->sin6_port :
				((struct sockaddr_in *)&ss)->sin_port);
	if (pthread_create(&m->thread, NULL, loop, m)) {
		snprintf(err, err_len, "cannot start the metrics thread");
		close(m->fd);
		close(m->stop_pipe[0]);
		close(m->stop_pipe[1]);
		free(m);
		return NULL;
	}
	return m;
}

int metrics_port(const struct metrics_server *m)
{
	return m ? m->port : 0;
}

void metrics_stop(struct metrics_server *m)
{
	if (!m)
		return;
	if (write(m->stop_pipe[1], "x", 1) < 0)
		pthread_cancel(m->thread);
	pthread_join(m->thread, NULL);
	close(m->fd);
	close(m->stop_pipe[0]);
	close(m->stop_pipe[1]);
	free(m);
}

uint64_t metrics_self_rss_bytes(void)
{
	unsigned long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	if (!f)
		return 0;
	if (fscanf(f, "%lu %lu", &size, &resident) != 2)
		resident = 0;
	fclose(f);
	return (uint64_t)resident * (uint64_t)sysconf(_SC_PAGESIZE);
}

double metrics_self_cpu_seconds(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru))
		return 0;
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}
