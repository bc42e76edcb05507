# Sourced by hack/e2e-images.sh: one function per image, each assembling
# $build/NAME with fetch and assemble (or bare), then writing the archive
# with write.
# Each says what upstream's Dockerfile (k8s.io/kubernetes
# test/images/NAME) or base image holds, and how this one stands in.
# require_commands names what the e2e tests exec in the image
# (test/e2e/network, test/e2e/framework), so that a missing command fails
# the build, not a test an hour later.

# agnhost: upstream is Alpine with bind-tools, curl, netcat-openbsd,
# iproute2, iperf, bash, util-linux-misc and socat, and busybox for every
# other command (wget, nslookup's fallback, hostname...). Here the same
# tools from Debian, dash as /bin/sh, GNU wget, and Debian's busybox
# (linked to the image's libc) for whatever those packages leave out.
# Not busybox's wget: 1.35's segfaults on a URL without a port, the
# static build in this image (it loads the image's shared NSS modules),
# the dynamic one when given -T, as the tests' "wget -T 5 -qO- URL" does
# (TestE2EImages saw both). Upstream's fake
# registry (/var/registry, for the image-pull tests) and coredns 1.6.2
# (for DNS tests that run their own server) are left out: neither is in
# the module and no Service test uses them.
build_agnhost() {
  local r=$build/agnhost
  fetch agnhost dash bash coreutils grep sed mawk findutils procps hostname debianutils \
    curl wget netcat-openbsd iproute2 iperf bind9-dnsutils util-linux socat libc-bin busybox netbase
  unchanged agnhost "$build/agnhost.debs" && return 0
  assemble agnhost
  ln -sfn dash "$r/bin/sh"
  alternative "$r" /bin/nc /bin/nc.openbsd
  alternative "$r" /usr/bin/awk /usr/bin/mawk
  alternative "$r" /usr/bin/which /usr/bin/which.debianutils
  busybox_links "$r" /usr/local/bin
  install -m 0755 "$bin/agnhost" "$r/agnhost"
  ln -sfn agnhost "$r/agnhost-2"
  # netexec's uploads, porter's certificate.
  mkdir -p "$r/uploads"
  install -m 0644 "$kube/test/images/agnhost/porter/localhost.crt" "$kube/test/images/agnhost/porter/localhost.key" "$r/"
  # For the test of SupplementalGroups with a group defined in the image.
  add_user "$r" user-defined-in-image 1000 1000 /home/user-defined-in-image /bin/sh
  add_group "$r" user-defined-in-image 1000
  add_group "$r" group-defined-in-image 50000 user-defined-in-image
  mkdir -p "$r/home/user-defined-in-image"
  require_commands "$r" agnhost sh bash curl nc wget timeout seq sleep date echo test cat grep tail \
    dig nslookup getent hostname ip ss iperf socat ipcs dd awk which
  write agnhost registry.k8s.io/e2e-test-images/agnhost:2.66.1 \
    -entrypoint /agnhost -cmd pause -label org.opencontainers.image.version=2.66.1
}

# busybox: upstream mirrors Docker's busybox:1.37.0, /bin/busybox with a
# link per applet in /bin, linked against glibc (the default variant).
# Here Debian's busybox (1.35, glibc too) laid out the same way. Its wget
# segfaults when given -T with a URL that has no port; the tests run
# wget in agnhost only.
build_busybox() {
  local r=$build/busybox
  fetch busybox busybox
  unchanged busybox "$build/busybox.debs" && return 0
  assemble busybox
  busybox_links "$r" /bin all
  require_commands "$r" busybox sh nc sleep echo wget
  write busybox registry.k8s.io/e2e-test-images/busybox:1.37.0-2 \
    -cmd sh -label org.opencontainers.image.version=1.37.0-2
}

# nginx: upstream mirrors nginx:1.27-alpine (nginx -g 'daemon off;' on
# port 80, logs to the container's stdout and stderr). Here Debian's
# nginx (1.22) with Debian's configuration: the default site on port 80,
# running as www-data, behind an entrypoint that, like upstream's
# 10-listen-on-ipv6-by-default.sh, drops the IPv6 listener in a pod
# without IPv6 (where nginx would otherwise fail to start).
build_nginx() {
  local r=$build/nginx
  fetch nginx nginx dash sed
  unchanged nginx "$build/nginx.debs" && return 0
  assemble nginx
  ln -sfn dash "$r/bin/sh"
  add_user "$r" www-data 33 33 /var/www
  add_group "$r" www-data 33
  mkdir -p "$r/etc/nginx/sites-enabled" "$r/etc/nginx/modules-enabled" "$r/var/lib/nginx" "$r/var/log/nginx" "$r/var/www/html"
  # What nginx-common's postinst does: enable the default site, install
  # its page.
  [ -L "$r/etc/nginx/sites-enabled/default" ] || ln -s /etc/nginx/sites-available/default "$r/etc/nginx/sites-enabled/default"
  [ -e "$r/var/www/html/index.nginx-debian.html" ] || cp "$r/usr/share/nginx/html/index.html" "$r/var/www/html/index.nginx-debian.html"
  ln -sfn /dev/stdout "$r/var/log/nginx/access.log"
  ln -sfn /dev/stderr "$r/var/log/nginx/error.log"
  printf '%s\n' '#!/bin/sh' \
    "[ -e /proc/net/if_inet6 ] || sed -i '/listen \\[::\\]/d' /etc/nginx/sites-enabled/default" \
    'exec "$@"' >"$r/docker-entrypoint.sh"
  chmod 0755 "$r/docker-entrypoint.sh"
  require_commands "$r" nginx nginx sh sed
  write nginx registry.k8s.io/e2e-test-images/nginx:1.27.0-2 \
    -entrypoint /docker-entrypoint.sh -cmd nginx -cmd -g -cmd 'daemon off;' -label org.opencontainers.image.version=1.27.0-2
}

# glibc-dns-testing: upstream is debian:bookworm-slim with dnsutils (and
# coredns 1.5.0, left out here as agnhost's). The DNS tests run
# `sh -c` loops of seq, dig, getent, test, echo and sleep in it.
build_glibc_dns_testing() {
  local r=$build/glibc-dns-testing
  fetch glibc-dns-testing dash bash coreutils grep sed libc-bin bind9-dnsutils hostname netbase
  unchanged glibc-dns-testing "$build/glibc-dns-testing.debs" && return 0
  assemble glibc-dns-testing
  ln -sfn dash "$r/bin/sh"
  require_commands "$r" glibc-dns-testing sh bash seq dig nslookup getent test echo sleep cat hostname
  write glibc-dns-testing registry.k8s.io/e2e-test-images/glibc-dns-testing:2.1.1 \
    -cmd /bin/bash -label org.opencontainers.image.version=2.1.1
}

# distroless-iptables: upstream is the base of the kube-proxy image
# (hack/kube-proxy-image.sh's package set, without kube-proxy). The
# KubeProxy CLOSE_WAIT test runs `sleep 600` in it and execs `/bin/sh -c`
# with test, cat, grep, which and conntrack, so it also has coreutils and
# debianutils (which).
build_distroless_iptables() {
  local r=$build/distroless-iptables
  fetch distroless-iptables iptables ipset conntrack nftables kmod netbase dash grep coreutils debianutils
  unchanged distroless-iptables "$build/distroless-iptables.debs" && return 0
  assemble distroless-iptables
  ln -sfn dash "$r/bin/sh"
  alternatives "$r"
  alternative "$r" /usr/bin/which /usr/bin/which.debianutils
  install -m 0755 "$repo/hack/image/iptables-wrapper" "$r/usr/sbin/iptables-wrapper"
  local name
  for name in iptables iptables-save iptables-restore ip6tables ip6tables-save ip6tables-restore; do
    ln -sfn iptables-wrapper "$r/usr/sbin/$name"
  done
  require_commands "$r" distroless-iptables sh sleep test cat grep which conntrack iptables nft ipset
  write distroless-iptables registry.k8s.io/build-image/distroless-iptables:v0.9.9 \
    -label org.opencontainers.image.version=v0.9.9
}

# regression-issue-74839: the Go binary alone, as upstream (whose
# debian-base layer it never uses).
build_regression() {
  local r=$build/regression-issue-74839
  unchanged regression-issue-74839 && return 0
  bare regression-issue-74839
  install -m 0755 "$bin/regression-issue-74839" "$r/regression-issue-74839"
  write regression-issue-74839 registry.k8s.io/e2e-test-images/regression-issue-74839:1.5 \
    -entrypoint /regression-issue-74839 -label org.opencontainers.image.version=1.5
}

# pause: test/ociimage/pause, a static Go program that, like upstream's C
# pause, sleeps, exits 0 on SIGINT or SIGTERM and reaps zombies.
build_pause() {
  local r=$build/pause
  unchanged pause && return 0
  bare pause
  install -m 0755 "$build/bin/pause" "$r/pause"
  write pause registry.k8s.io/pause:3.10.2 -entrypoint /pause -label org.opencontainers.image.version=3.10.2
}
