# Sourced by hack/image.sh: downloads Debian packages for one
# architecture with apt, in a private configuration and state directory
# ($cache/apt/ARCH), so that neither the machine's apt configuration nor
# its dpkg architectures change. Needs $cache and $shared.

# apt_sources prints the machine's Debian bookworm sources ("URI SUITE"),
# from /etc/apt/sources.list and sources.list.d (both formats), so that the
# image comes from the mirror the machine uses; deb.debian.org if none.
apt_sources() {
  local found
  found=$(
    {
      cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        sed 's/\[[^]]*\]//' | awk '$1 == "deb" && / main( |$)/ { print $2, $3 }'
      for f in /etc/apt/sources.list.d/*.sources; do
        [ -f "$f" ] || continue
        awk '
          function flush(   n, m, i, j, u, s) {
            if (types ~ /(^| )deb( |$)/ && comps ~ /(^| )main( |$)/) {
              n = split(uris, u, " "); m = split(suites, s, " ")
              for (i = 1; i <= n; i++) for (j = 1; j <= m; j++) print u[i], s[j]
            }
            types = uris = suites = comps = ""
          }
          /^[ \t]*$/ { flush(); next }
          /^Types:/ { types = substr($0, 7) }
          /^URIs:/ { uris = substr($0, 6) }
          /^Suites:/ { suites = substr($0, 8) }
          /^Components:/ { comps = substr($0, 12) }
          END { flush() }' "$f"
      done
    } | awk '$2 ~ /^bookworm(-updates|-security)?$/' | sort -u
  )
  if [ -z "$found" ]; then
    found="http://deb.debian.org/debian bookworm
http://deb.debian.org/debian bookworm-updates
http://deb.debian.org/debian-security bookworm-security"
  fi
  echo "$found"
}

# apt_setup ARCH writes the private configuration and sets apt_opts.
apt_setup() {
  local arch=$1 d=$cache/apt/$1
  mkdir -p "$d/lists/partial" "$d/archives/partial" "$d/cache" "$d/etc/apt.conf.d" "$d/etc/preferences.d" "$d/etc/sources.list.d"
  [ -f "$d/status" ] || : >"$d/status"
  apt_sources | while read -r uri suite; do
    echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $uri $suite main"
  done >"$d/etc/sources.list.new"
  mv "$d/etc/sources.list.new" "$d/etc/sources.list"
  # Dir::Etc::Parts empty: none of the machine's apt.conf.d hooks
  # (cleaning /var/cache, appstream, packagekit) run for this apt.
  apt_opts=(
    -o "Dir::Etc::SourceList=$d/etc/sources.list" -o "Dir::Etc::SourceParts=$d/etc/sources.list.d"
    -o "Dir::Etc::Parts=$d/etc/apt.conf.d" -o "Dir::Etc::Preferences=$d/etc/preferences"
    -o "Dir::Etc::PreferencesParts=$d/etc/preferences.d"
    -o "Dir::State::Lists=$d/lists" -o "Dir::State::status=$d/status"
    -o "Dir::Cache=$d/cache" -o "Dir::Cache::Archives=$d/archives"
    -o "APT::Architecture=$arch" -o "APT::Architectures::=$arch"
    -o APT::Sandbox::User=root -o Acquire::Languages=none
  )
}

# copy_missing FROM TO copies the .debs of FROM that TO lacks (through a
# temporary name, so that a cut-off copy is never taken for a .deb).
copy_missing() {
  local f
  for f in "$1"/*.deb; do
    [ -f "$f" ] && [ ! -e "$2/${f##*/}" ] || continue
    cp "$f" "$2/.${f##*/}.tmp" && mv "$2/.${f##*/}.tmp" "$2/${f##*/}"
  done
}

apt_get() { apt-get "${apt_opts[@]}" "$@"; }

# apt_closure PACKAGES... prints "name version" for each package that
# installing PACKAGES on an empty system takes, dependencies included.
apt_closure() {
  apt_get -s install --no-install-recommends "$@" | awk '/^Inst / { print $2, substr($3, 2) }'
}

# apt_deb NAME VERSION prints the cached .deb's path.
apt_deb() {
  local f
  for f in "$cache/apt/$arch/archives/${1}_${2//:/%3a}_"*.deb; do
    [ -f "$f" ] && { echo "$f"; return 0; }
  done
  echo "image.sh: $1 $2: no .deb downloaded" >&2
  return 1
}

# apt_resolve PACKAGES... writes "name version" to $cache/apt/ARCH/wanted
# for PACKAGES and their dependencies, then, marked "extra", for the
# packages of $extra_files alone; apt_download fetches them (apt skips
# the ones already in the archives directory).
apt_resolve() {
  local d=$cache/apt/$arch name version spec
  apt_closure "$@" >"$d/wanted.new" || return 1
  apt_closure "${extra_packages[@]}" >"$d/extra" || return 1
  while read -r name version; do
    for spec in "${extra_packages[@]}"; do
      [ "$spec" = "$name" ] && echo "$name $version extra"
    done
  done <"$d/extra" >>"$d/wanted.new"
  mv "$d/wanted.new" "$d/wanted"
}

apt_download() {
  local d=$cache/apt/$arch
  # shellcheck disable=SC2046
  (cd "$d/archives" && apt_get -qq download $(awk '{ print $1 "=" $2 }' "$d/wanted") >/dev/null)
}

# apt_fetch ARCH LIST PACKAGES... downloads the packages and their
# dependencies, and the packages named in $extra_files without theirs, and
# writes "name version path" per .deb to LIST (extras marked "extra").
apt_fetch() {
  arch=$1
  local list=$2 name version extra path spec
  shift 2
  extra_packages=()
  for spec in "${extra_files[@]}"; do extra_packages+=("${spec%%:*}"); done
  local shared_debs=$shared/debs/$arch
  apt_setup "$arch"
  mkdir -p "$shared_debs"
  copy_missing "$shared_debs" "$cache/apt/$arch/archives"
  if ! compgen -G "$cache/apt/$arch/lists/*Packages*" >/dev/null; then
    apt_get -qq update
  fi
  # Package lists older than the archive give 404s: refresh them once.
  if ! { apt_resolve "$@" && apt_download; }; then
    echo "image.sh: $arch: refreshing the package lists" >&2
    apt_get -qq update
    apt_resolve "$@"
    apt_download
  fi
  copy_missing "$cache/apt/$arch/archives" "$shared_debs"
  while read -r name version extra; do
    path=$(apt_deb "$name" "$version")
    echo "$name $version $path $extra"
  done <"$cache/apt/$arch/wanted" >"$list"
}
