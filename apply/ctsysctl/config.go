// Package ctsysctl works out the conntrack sysctls that kube-proxy v1.37
// sets at startup (pkg/proxy/conntrack/sysctls.go, called from
// cmd/kube-proxy/app/server_linux.go), from its conntrack settings and
// what the node has: the table size, scaled by the CPUs and only ever
// raised, the hash size with it, and the TCP and UDP timeouts.
//
// It reads; the caller shows the result as a plan and writes it.
package ctsysctl

import "time"

// Config is kube-proxy's conntrack section (KubeProxyConntrackConfiguration),
// with its flags' names in the comments.
type Config struct {
	// MaxPerCore is --conntrack-max-per-core: table entries per CPU;
	// 0 leaves the table size and hash size alone, and Min with them.
	MaxPerCore int32
	// Min is --conntrack-min: the table size at least, whatever the CPUs.
	Min int32
	// TCPEstablishedTimeout is --conntrack-tcp-timeout-established, and
	// TCPCloseWaitTimeout --conntrack-tcp-timeout-close-wait; 0 leaves
	// the kernel's value.
	TCPEstablishedTimeout time.Duration
	TCPCloseWaitTimeout   time.Duration
	// TCPBeLiberal is --conntrack-tcp-be-liberal: set
	// nf_conntrack_tcp_be_liberal to 1 (false leaves it, never clears it).
	TCPBeLiberal bool
	// UDPTimeout is --conntrack-udp-timeout and UDPStreamTimeout
	// --conntrack-udp-timeout-stream; 0 leaves the kernel's value.
	UDPTimeout       time.Duration
	UDPStreamTimeout time.Duration
}

// Default returns kube-proxy v1.37's defaults
// (pkg/proxy/apis/config/v1alpha1/defaults.go): 32768 entries per CPU, at
// least 131072, established TCP flows kept a day idle, CLOSE_WAIT an
// hour; the UDP timeouts and be_liberal left as the kernel has them.
func Default() Config {
	return Config{
		MaxPerCore:            32 * 1024,
		Min:                   128 * 1024,
		TCPEstablishedTimeout: 24 * time.Hour,
		TCPCloseWaitTimeout:   time.Hour,
	}
}

// NegativeFlag returns the flag of the first value that kube-proxy's
// validation refuses, a negative one, or "" when there is none.
func (c Config) NegativeFlag() string {
	for _, v := range []struct {
		flag     string
		negative bool
	}{
		{"conntrack-max-per-core", c.MaxPerCore < 0},
		{"conntrack-min", c.Min < 0},
		{"conntrack-tcp-timeout-established", c.TCPEstablishedTimeout < 0},
		{"conntrack-tcp-timeout-close-wait", c.TCPCloseWaitTimeout < 0},
		{"conntrack-udp-timeout", c.UDPTimeout < 0},
		{"conntrack-udp-timeout-stream", c.UDPStreamTimeout < 0},
	} {
		if v.negative {
			return v.flag
		}
	}
	return ""
}

// maxLimit caps the scaled table size, as kube-proxy does, so that a
// machine with many CPUs does not get a table of excessive memory.
const maxLimit = 1 << 20

// Max returns the table size kube-proxy wants on a node with numCPU CPUs:
// MaxPerCore times the CPUs, capped at 1048576, or Min if that is larger
// (the cap is applied first, so a capped value wins over Min); 0 when
// MaxPerCore is 0, which leaves the size alone.
func (c Config) Max(numCPU int) int {
	if c.MaxPerCore <= 0 {
		return 0
	}
	scaled := int(c.MaxPerCore) * numCPU
	if scaled > maxLimit {
		return maxLimit
	}
	return max(scaled, int(c.Min))
}
