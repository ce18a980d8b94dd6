#!/usr/bin/env bash
# Assembles the runtime image's files from a build: fencekeeper and fencectl in /usr/local/bin,
# libfencekeeper.so in /usr/local/lib, and the ldd closure of the three at their merged-/usr
# paths, stripped. The Dockerfile's runtime stage is exactly this tree on debian:12-slim, which has the
# C and C++ runtimes already (libc6, libstdc++6, libgcc-s1: left out unless --with-base, which
# makes DEST a root that runs on its own, as tests/k8s's chroot does). Prints the files.
#   usage: runtime-files.sh BUILD_DIR DEST [--with-base]
set -euo pipefail
build="$1" dest="$2" with_base="${3:-}"
base_pkgs=" libc6 libstdc++6 libgcc-s1 "
bins=("$build/sidecar/fencekeeper" "$build/client_lib/fencectl")
lib="$build/client_lib/libfencekeeper.so"

install -d "$dest/usr/local/bin" "$dest/usr/local/lib"
install -m 0755 "${bins[@]}" "$dest/usr/local/bin/"
install -m 0644 "$lib" "$dest/usr/local/lib/"
# Without their debug sections (fencekeeper: 33 MB -> a few): the image is for running them.
strip --strip-unneeded "$dest/usr/local/bin/fencekeeper" "$dest/usr/local/bin/fencectl" \
  "$dest/usr/local/lib/libfencekeeper.so"
echo /usr/local/bin/fencekeeper
echo /usr/local/bin/fencectl
echo /usr/local/lib/libfencekeeper.so

# The package that owns a library; dpkg knows some by their /lib and others by their /usr path.
owner() {
  local p="$1"
  for candidate in "$p" "/usr$p" "${p#/usr}"; do
    dpkg -S "$candidate" 2>/dev/null | head -1 | cut -d: -f1 && return 0
  done
  echo unknown
}

# "libx.so.1 => /lib/.../libx.so.1 (0x...)" and the interpreter "/lib64/ld-linux-x86-64.so.2 (...)".
ldd "${bins[@]}" "$lib" | awk '$2 == "=>" && $3 ~ /^\// {print $3} NF == 2 && $1 ~ /^\// {print $1}' |
  sort -u | while read -r path; do
    pkg="$(owner "$path")"
    if [ -z "$with_base" ] && [[ "$base_pkgs" == *" $pkg "* ]]; then continue; fi
    case "$path" in /lib/* | /lib64/*) target="/usr$path" ;; *) target="$path" ;; esac
    install -d "$dest$(dirname "$target")"
    cp -L "$path" "$dest$target"
    echo "$target"
  done

if [ -n "$with_base" ]; then
  # Merged /usr, as Debian 12 lays it out: the interpreter's path is /lib64/ld-linux-x86-64.so.2.
  for d in lib lib64; do [ -e "$dest/$d" ] || ln -s "usr/$d" "$dest/$d"; done
fi
