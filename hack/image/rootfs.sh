# Sourced by hack/image.sh and hack/kube-proxy-image.sh: assembles one
# architecture's root filesystem from the .debs that apt_fetch listed, the
# way dpkg would install them, minus what a container that only runs
# kubectl-svcproxy and iptables never reads. hack/image/e2e-rootfs.sh
# reuses extract_debs, prune and base_files for the e2e test images.

# assemble_rootfs ARCH ROOTFS LIST BINARY [NAME]: BINARY goes to
# /usr/local/bin/NAME (default kubectl-svcproxy).
assemble_rootfs() {
  local arch=$1 root=$2 list=$3 binary=$4 bin_name=${5:-kubectl-svcproxy}
  rm -rf "$root"
  mkdir -p "$root"
  extract_debs "$root" "$list"
  alternatives "$root"
  prune "$root"
  base_files "$root"
  install -D -m 0755 "$binary" "$root/usr/local/bin/$bin_name"
}

# extract_debs ROOTFS LIST unpacks each .deb of LIST (apt_fetch's "name
# version path [extra]" lines) into ROOTFS as dpkg would, without running
# its maintainer scripts; of an "extra" package only the files that
# $extra_files names.
extract_debs() {
  local root=$1 list=$2 name version deb extra spec
  local status=$root/var/lib/dpkg/status.d
  mkdir -p "$status"
  while read -r name version deb extra; do
    if [ -z "$extra" ]; then
      dpkg-deb -x "$deb" "$root"
    else
      for spec in "${extra_files[@]}"; do
        [ "${spec%%:*}" = "$name" ] || continue
        dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$root" --no-same-owner "./${spec#*:}"
      done
    fi
    # What the package is, as distroless images record it, so that image
    # scanners can match the packages against Debian's advisories.
    dpkg-deb -f "$deb" Package Version Architecture Source Maintainer Description >"$status/$name"
  done <"$list"
}

# alternatives sets the links that the iptables package's postinst makes
# with update-alternatives, in auto mode: nf_tables has the higher
# priority (20, legacy 10), so the plain names are the nft variants. The
# tool chooses its backend itself and always runs the -legacy or -nft
# name; the plain names are for people in the container.
alternatives() {
  local root=$1 tool what
  mkdir -p "$root/etc/alternatives"
  for tool in iptables ip6tables arptables ebtables; do
    for what in "" -restore -save; do
      [ -e "$root/usr/sbin/$tool-nft$what" ] || { echo "image.sh: no /usr/sbin/$tool-nft$what in the packages" >&2; return 1; }
      ln -sfn "/usr/sbin/$tool-nft$what" "$root/etc/alternatives/$tool$what"
      ln -sfn "/etc/alternatives/$tool$what" "$root/usr/sbin/$tool$what"
    done
  done
}

# prune removes documentation, translations, iptables-apply (a shell
# script; the image has no shell), and the libc parts that no
# program of the image loads (iconv's gconv modules, getconf, audit).
prune() {
  local root=$1
  rm -rf "$root"/usr/share/{doc,man,info,locale,lintian,bug,gcc,gdb,common-licenses}
  rm -rf "$root"/usr/lib/*-linux-gnu/gconv "$root"/usr/libexec/getconf "$root"/usr/lib/*-linux-gnu/audit
  # Shell scripts: the image has no shell.
  rm -f "$root"/usr/sbin/ip{,6}tables-apply
  rmdir -p --ignore-fail-on-non-empty "$root"/usr/share "$root"/usr/libexec 2>/dev/null || true
}

# base_files adds what a container runtime or glibc expects: users root
# and nobody, the usual directories, os-release.
base_files() {
  local root=$1
  mkdir -p "$root"/{etc,proc,sys,dev,run,tmp,root,var/lib}
  chmod 1777 "$root/tmp"
  chmod 0700 "$root/root"
  printf '%s\n' 'root:x:0:0:root:/root:/usr/sbin/nologin' \
    'nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin' >"$root/etc/passwd"
  printf '%s\n' 'root:x:0:' 'nogroup:x:65534:' >"$root/etc/group"
  printf '%s\n' 'passwd: files' 'group: files' 'hosts: files dns' >"$root/etc/nsswitch.conf"
  [ -e "$root/usr/lib/os-release" ] && ln -sfn ../usr/lib/os-release "$root/etc/os-release"
  ln -sfn /run "$root/var/run"
  chmod 0644 "$root"/etc/{passwd,group,nsswitch.conf}
  find "$root/var/lib/dpkg" -type f -exec chmod 0644 {} +
}
