// SPDX-License-Identifier: GPL-2.0-only
// C++ target for demangling: each function records the return address of
// a call it makes; prints "ADDR name hexaddr 1 - 0 0" lines, then READY,
// and waits for stdin to close (the same protocol as target.c).
#include <cstdio>

static void *ret_method, *ret_twice;

__attribute__((noinline)) static void *caller(void)
{
	return __builtin_return_address(0);
}

namespace ns {
struct Klass {
	int method(int x);
};

__attribute__((noinline)) int Klass::method(int x)
{
	ret_method = caller();
	return x * 2;
}

template <typename T> __attribute__((noinline)) T twice(T v)
{
	ret_twice = caller();
	return v + v;
}
} // namespace ns

int main()
{
	ns::Klass k;
	char buf[64];

	k.method(1);
	ns::twice<long>(2);
	std::printf("ADDR method %lx 1 - 0 0\n", (unsigned long)ret_method);
	std::printf("ADDR twice %lx 1 - 0 0\n", (unsigned long)ret_twice);
	std::printf("READY\n");
	std::fflush(stdout);
	while (std::fgets(buf, sizeof(buf), stdin))
		;
	return 0;
}
