package ipvs

import (
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// kernelVersion returns the running kernel's major and minor version.
func kernelVersion() (major, minor int) {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return 0, 0
	}
	parts := strings.SplitN(unix.ByteSliceToString(u.Release[:]), ".", 3)
	if len(parts) < 2 {
		return 0, 0
	}
	major, _ = strconv.Atoi(parts[0])
	minor, _ = strconv.Atoi(strings.TrimLeftFunc(parts[1], func(r rune) bool { return r < '0' || r > '9' }))
	return major, minor
}
