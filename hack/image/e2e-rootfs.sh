# Sourced by hack/e2e-images.sh (after hack/image/apt.sh and
# hack/image/rootfs.sh): general root filesystems from Debian packages for
# the substitutes of Kubernetes' e2e test images. rootfs.sh's
# assemble_rootfs is for iptables images; this assembles any package set
# with its extract_debs, prune and base_files, and adds what Debian's
# maintainer scripts would have made (users, alternatives' links).

# e2e_rootfs ROOTFS LIST: the packages of LIST (apt_fetch's) unpacked, the
# documentation pruned, the base files (root and nobody, /tmp 1777) added.
e2e_rootfs() {
  local root=$1 list=$2
  rm -rf "$root"
  mkdir -p "$root"
  extract_debs "$root" "$list"
  prune "$root"
  base_files "$root"
}

# add_user ROOTFS NAME UID GID [HOME [SHELL]] appends a user to
# /etc/passwd; add_group ROOTFS NAME GID [MEMBERS] a group to /etc/group.
add_user() {
  local root=$1
  echo "$2:x:$3:$4:$2:${5:-/nonexistent}:${6:-/usr/sbin/nologin}" >>"$root/etc/passwd"
}
add_group() {
  echo "$2:x:$3:${4:-}" >>"$1/etc/group"
}

# in_root ROOTFS PATH prints PATH with its symbolic links resolved inside
# ROOTFS (an absolute link points into ROOTFS, not to the host), and
# fails if it leads nowhere.
in_root() {
  local root=$1 path=$2 target i
  for i in 1 2 3 4 5 6 7 8 9 10; do
    if [ -L "$root$path" ]; then
      target=$(readlink "$root$path")
      case $target in
        /*) path=$target ;;
        *) path=${path%/*}/$target ;;
      esac
      continue
    fi
    [ -e "$root$path" ] || return 1
    echo "$path"
    return 0
  done
  return 1
}

# which_in ROOTFS NAME prints where the image's PATH finds NAME.
which_in() {
  local root=$1 name=$2 dir found
  for dir in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
    found=$(in_root "$root" "$dir/$name") || continue
    [ -f "$root$found" ] && [ -x "$root$found" ] && { echo "$dir/$name"; return 0; }
  done
  return 1
}

# alternative ROOTFS LINK TARGET makes LINK point at TARGET (both
# absolute in the image), as update-alternatives would in a package's
# postinst: the link is relative, so that it resolves the same from
# inside and outside the image.
alternative() {
  local root=$1 link=$2 target=$3
  in_root "$root" "$target" >/dev/null || { echo "e2e-rootfs.sh: $target is not in the packages" >&2; return 1; }
  mkdir -p "$root${link%/*}"
  ln -sfn "$(realpath -ms --relative-to="${link%/*}" "$target")" "$root$link"
}

# busybox_links ROOTFS DIR [all] links each applet of ROOTFS's
# /bin/busybox (run on this machine, which the image is built for, with
# this machine's glibc) into DIR: all of them with "all" (upstream's
# busybox image), otherwise only the ones that no package provides, the
# way Alpine's busybox fills in what its packages leave out.
busybox_links() {
  local root=$1 dir=$2 all=${3:-} applet
  mkdir -p "$root$dir"
  for applet in $("$root/bin/busybox" --list); do
    if [ "$all" != all ] && which_in "$root" "$applet" >/dev/null; then
      continue
    fi
    [ -e "$root$dir/$applet" ] || [ -L "$root$dir/$applet" ] || ln -s "$(realpath -ms --relative-to="$dir" /bin/busybox)" "$root$dir/$applet"
  done
}

# require_commands ROOTFS IMAGE NAMES... fails unless the image's PATH
# finds each of NAMES: the commands the e2e tests exec in IMAGE.
require_commands() {
  local root=$1 image=$2 name missing=()
  shift 2
  for name in "$@"; do
    which_in "$root" "$name" >/dev/null || missing+=("$name")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "e2e-rootfs.sh: $image lacks ${missing[*]}" >&2
    return 1
  fi
}
