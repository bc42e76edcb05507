package render

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// ProxyPortRange is an inclusive range of local ports (kube-proxy's
// --proxy-port-range). The zero value means DefaultProxyPortRange.
type ProxyPortRange struct {
	First uint16 `json:"first"`
	Last  uint16 `json:"last"`
}

// DefaultProxyPortRange is used when no range is given. kube-proxy v1.25 took
// random ephemeral ports then, which is not deterministic. 20000-29999 lies
// below both the default NodePort range (30000-32767) and Linux's default
// ephemeral range (32768-60999), so proxy ports clash with neither.
var DefaultProxyPortRange = ProxyPortRange{First: 20000, Last: 29999}

// OrDefault returns r, or DefaultProxyPortRange for the zero value.
func (r ProxyPortRange) OrDefault() ProxyPortRange {
	if r == (ProxyPortRange{}) {
		return DefaultProxyPortRange
	}
	return r
}

// Size is the number of ports in the range.
func (r ProxyPortRange) Size() int { return int(r.Last) - int(r.First) + 1 }

// Contains reports whether port is in the range.
func (r ProxyPortRange) Contains(port int32) bool {
	return port >= int32(r.First) && port <= int32(r.Last)
}

// String is "first-last".
func (r ProxyPortRange) String() string {
	return strconv.Itoa(int(r.First)) + "-" + strconv.Itoa(int(r.Last))
}

// ParseProxyPortRange reads a range the way --proxy-port-range does:
// "first-last", "base+offset" or a single port. Port 0 is not allowed.
func ParseProxyPortRange(s string) (ProxyPortRange, error) {
	perr := func(msg string) (ProxyPortRange, error) {
		return ProxyPortRange{}, fmt.Errorf("port range %q: %s", s, msg)
	}
	first, rest, sep := s, "", byte(0)
	if i := strings.IndexAny(s, "-+"); i >= 0 {
		first, rest, sep = s[:i], s[i+1:], s[i]
	}
	a, err := strconv.ParseUint(first, 10, 16)
	if err != nil {
		return perr("first port is not a number in 1..65535")
	}
	b := a
	if sep != 0 {
		if b, err = strconv.ParseUint(rest, 10, 16); err != nil {
			return perr("second number is not in 0..65535")
		}
		if sep == '+' {
			b += a
		}
	}
	if a == 0 || b > 65535 || b < a {
		return perr("need 1 <= first <= last <= 65535")
	}
	return ProxyPortRange{First: uint16(a), Last: uint16(b)}, nil
}

// portsExhaustedError reports that the range had too few free ports; the
// Unallocated ports got none.
type portsExhaustedError struct {
	Range       ProxyPortRange
	Unallocated []nodetable.ServicePortName
}

func (e *portsExhaustedError) Error() string {
	return fmt.Sprintf("proxy port range %s is exhausted: %d service ports got no proxy port (first: %s %s)",
		e.Range, len(e.Unallocated), e.Unallocated[0], e.Unallocated[0].Protocol.Lower())
}

// proxyPortKey is the text a Service port's proxy port is derived from:
// "namespace/name:port/protocol", for example "default/web:http/tcp".
func proxyPortKey(n nodetable.ServicePortName) string { return n.String() + "/" + n.Protocol.Lower() }

// homeProxyPort is the port a Service port gets when nothing else claims it:
// the first 8 bytes of SHA-256(Key) modulo the range size, offset into r.
func homeProxyPort(n nodetable.ServicePortName, r ProxyPortRange) uint16 {
	sum := sha256.Sum256([]byte(proxyPortKey(n)))
	return r.First + uint16(binary.BigEndian.Uint64(sum[:8])%uint64(r.Size()))
}

// allocatePorts gives every Service port in names a distinct proxy port in r
// (the zero range means DefaultProxyPortRange), never one in reserved (the
// NodePorts in use). It is a pure function of the set of names and
// reserved ports; their order and duplicates do not matter.
//
// The rule: every name has a home port (homeProxyPort). Of the names sharing a
// free home port, the one whose Key sorts first takes it. The others, and
// names whose home port is reserved, are "displaced": in Key order, each
// takes the first free port after its home, wrapping around the range.
//
// What this guarantees, for a name that sits at its home port:
//   - removing other names never moves it;
//   - adding a name moves it only if the new name has the same home port
//     and a smaller Key (a hash collision), or its port becomes reserved.
//
// Displaced names (about n/(2·size) of n names while n ≪ size) have no
// such guarantee: any addition or removal may move them. No pure function
// of the set can do better, since a port freed by a removal must be reused
// the same way whether or not the removed name ever existed.
//
// When there are more names than free ports, the displaced names last in
// Key order get none; they are missing from the map and listed in an
// *portsExhaustedError.
func allocatePorts(names []nodetable.ServicePortName, r ProxyPortRange, reserved []int32) (map[nodetable.ServicePortName]uint16, error) {
	r = r.OrDefault()
	type cand struct {
		key  string
		name nodetable.ServicePortName
		home int
	}
	cands := make([]cand, 0, len(names))
	for _, n := range names {
		cands = append(cands, cand{proxyPortKey(n), n, int(homeProxyPort(n, r) - r.First)})
	}
	slices.SortFunc(cands, func(a, b cand) int { return strings.Compare(a.key, b.key) })
	cands = slices.CompactFunc(cands, func(a, b cand) bool { return a.key == b.key })

	taken := make([]bool, r.Size())
	for _, p := range reserved {
		if r.Contains(p) {
			taken[p-int32(r.First)] = true
		}
	}
	out := make(map[nodetable.ServicePortName]uint16, len(cands))
	var displaced []cand
	for _, c := range cands { // Key order: the smallest Key claims a home port.
		if taken[c.home] {
			displaced = append(displaced, c)
			continue
		}
		taken[c.home] = true
		out[c.name] = r.First + uint16(c.home)
	}
	var unallocated []nodetable.ServicePortName
	full := false // once one probe finds no free port, none will
	for _, c := range displaced {
		slot, ok := probeFreePort(taken, c.home, &full)
		if !ok {
			unallocated = append(unallocated, c.name)
			continue
		}
		taken[slot] = true
		out[c.name] = r.First + uint16(slot)
	}
	if len(unallocated) > 0 {
		return out, &portsExhaustedError{Range: r, Unallocated: unallocated}
	}
	return out, nil
}

// probeFreePort finds the first free slot after home, wrapping; it sets *full when
// there is none, so later probes stop at once.
func probeFreePort(taken []bool, home int, full *bool) (int, bool) {
	if *full {
		return 0, false
	}
	for i := 1; i < len(taken); i++ {
		if s := (home + i) % len(taken); !taken[s] {
			return s, true
		}
	}
	*full = true
	return 0, false
}
