# Shared by deploy/image/build-*: assembles a root filesystem from this
# host's files and builds a `FROM scratch` image of it. No registry is
# needed (nothing is pulled): every file of the image is one the host has.
#
# Ownership is set in the tar, not on disk, so neither the files nor the
# script need root: everything is root's but /data, which the image's user
# (uid and gid 10001) owns.

IMAGE_UID=10001

# Copies FILE to the same path under ROOTFS, following symlinks (a
# scratch image has only the files it is given).
add_file() {
  local rootfs="$1" file="$2"
  mkdir -p "$rootfs$(dirname "$file")"
  cp -L "$file" "$rootfs$file"
}

# Copies every shared library `ldd` names for each FILE, and the dynamic
# loader, to their paths under ROOTFS.
add_libs() {
  local rootfs="$1" file lib
  shift
  for file in "$@"; do
    # `libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)` and the
    # loader's own line, `/lib64/ld-linux-x86-64.so.2 (0x...)`.
    for lib in $(ldd "$file" | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do
      [ -e "$rootfs$lib" ] || add_file "$rootfs" "$lib"
    done
  done
}

# /etc/passwd and /etc/group with root and NAME (uid and gid 10001, home
# /data), an empty /data and a /tmp.
add_user() {
  local rootfs="$1" name="$2"
  mkdir -p "$rootfs/etc" "$rootfs/data" "$rootfs/tmp"
  chmod 700 "$rootfs/data"
  chmod 1777 "$rootfs/tmp"
  printf 'root:x:0:0:root:/:/nonexistent\n%s:x:%s:%s:%s:/data:/nonexistent\n' \
    "$name" "$IMAGE_UID" "$IMAGE_UID" "$name" >"$rootfs/etc/passwd"
  printf 'root:x:0:\n%s:x:%s:\n' "$name" "$IMAGE_UID" >"$rootfs/etc/group"
}

# Packs ROOTFS into CONTEXT/rootfs.tar (root's, /data the user's) and
# builds CONTEXT/Dockerfile as TAG.
build_image() {
  local rootfs="$1" context="$2" tag="$3"
  tar --numeric-owner --owner=0 --group=0 --exclude=./data \
    -C "$rootfs" -cf "$context/rootfs.tar" .
  tar --numeric-owner --owner="$IMAGE_UID" --group="$IMAGE_UID" \
    -C "$rootfs" -rf "$context/rootfs.tar" ./data
  docker build --quiet --tag "$tag" "$context" >/dev/null
  echo "built $tag ($(docker image inspect --format '{{.Size}}' "$tag") bytes)"
}
