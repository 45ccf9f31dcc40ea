#!/usr/bin/env bash
# packaging/list-sources.sh [PATH...]: print the source files under PATHs
# (default: the whole tree), one per line, relative to the top directory.
#
# Packages and source installs must ship sources, never what a local build
# left behind (ember.ko, kmod/.config/ probe results, agent objects...): in a
# git checkout the list is what git tracks plus new files git does not
# ignore, i.e. exactly what `make` would build from in this working tree.
# Outside git (a release tarball) it is every file minus known build output.
set -euo pipefail
cd "$(dirname "$0")/.."

# Only when this tree is the top of its own git work tree: a staged copy
# under build/ (make deb, rpmbuild's BUILD/) lies inside the checkout's work
# tree, where git would answer for the checkout and ignore build/.
if [ "$(git rev-parse --show-toplevel 2>/dev/null)" = "$(pwd -P)" ]; then
	git ls-files -z -c -o --exclude-standard -- "$@" |
		while IFS= read -r -d '' f; do
			# -c lists tracked files deleted in the working tree too
			[ -f "$f" ] || [ -L "$f" ] || continue
			printf '%s\n' "$f"
		done | sort -u
else
	find "${@:-.}" \( -path ./.git -o -path ./build -o -path ./.cache -o \
		-path ./selftests/logs -o -path ./selftests/artifacts -o \
		-path ./kmod/.config -o -path ./agent/gen -o -path ./bpf/.output \) -prune -o \
		\( -type f -o -type l \) \
		! -name '*.o' ! -name '*.ko' ! -name '*.mod' ! -name '*.mod.c' \
		! -name '*.cmd' ! -name '*.a' ! -name modules.order \
		! -name Module.symvers ! -path ./agent/ember \
		! -path ./preload/libember-alloc.so -print |
		sed 's|^\./||' | sort -u
fi
