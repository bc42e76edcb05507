package cluster

import (
	"net/netip"
	"testing"
)

func TestParseIP(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for an error
	}{
		{"10.0.0.1", "10.0.0.1"},
		{"010.000.000.001", "10.0.0.1"}, // leading zeros are decimal, as ParseIPSloppy
		{"::ffff:10.0.0.1", "10.0.0.1"},
		{"fd00::1", "fd00::1"},
		{"fe80::1%eth0", ""},
		{"10.0.0.300", ""},
		{"10.0.0", ""},
		{" 10.0.0.1", ""},
		{"", ""},
	}
	for _, tt := range tests {
		got, err := parseIP(tt.in)
		if (err != nil) != (tt.want == "") || (err == nil && got != netip.MustParseAddr(tt.want)) {
			t.Errorf("parseIP(%q) = %v, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestParsePrefix(t *testing.T) {
	tests := []struct {
		in   string
		want string // "" for an error
	}{
		{"10.0.0.0/8", "10.0.0.0/8"},
		{"10.1.2.3/8", "10.0.0.0/8"}, // masked, as net.ParseCIDR's network
		{"010.0.0.0/8", "10.0.0.0/8"},
		{"0.0.0.0/0", "0.0.0.0/0"},
		{"fd00::/64", "fd00::/64"},
		{"10.0.0.0/33", ""},
		{"10.0.0.0", ""},
		{"10.0.0.0/-1", ""},
		{"10.0.0.0/", ""},
	}
	for _, tt := range tests {
		got, err := parsePrefix(tt.in)
		if (err != nil) != (tt.want == "") || (err == nil && got != netip.MustParsePrefix(tt.want)) {
			t.Errorf("parsePrefix(%q) = %v, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}
