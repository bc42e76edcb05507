package nftables

import (
	"strings"
	"testing"
)

// TestTypeofRoundTrip encodes each typeof expression the compact layout
// declares and decodes it back, and refuses what the userdata cannot hold.
func TestTypeofRoundTrip(t *testing.T) {
	for _, text := range []string{"numgen random mod 1", "numgen random mod 3 offset 4096", "ip daddr . th dport", "ip6 daddr . th dport", "th dport"} {
		_, ud, err := encodeTypeof(text)
		if err != nil {
			t.Fatalf("%s: %v", text, err)
		}
		if got, ok := decodeTypeof(ud); !ok || got != text || typeofIsValue(ud) {
			t.Errorf("%s decodes as %q, %v", text, got, ok)
		}
		for cut := range len(ud) - 1 {
			if got, ok := decodeTypeof(ud[:cut]); ok {
				t.Errorf("%s cut to %d bytes decodes as %q", text, cut, got)
			}
		}
	}
	for _, text := range []string{"ip saddr", "numgen random mod 0", "numgen random mod 2 offset 0", strings.Repeat("ip daddr . ", 12) + "th dport"} {
		if _, _, err := encodeTypeof(text); err == nil {
			t.Errorf("%q encoded", text)
		}
	}
}

// TestTypeofTextHoldsTheKernelType reads a typeof userdata value against
// the key type the kernel holds: an expression that loads another type
// than the kernel's is not taken at its word.
func TestTypeofTextHoldsTheKernelType(t *testing.T) {
	st, ud, err := encodeTypeof("ip daddr . th dport")
	if err != nil {
		t.Fatal(err)
	}
	if got := typeofText(ud, st); got != "ip daddr . th dport" {
		t.Errorf("with its own type: %q", got)
	}
	other, _, _ := encodeTypeof("ip6 daddr . th dport")
	if got := typeofText(ud, other); got != "unsupported expression" {
		t.Errorf("with the kernel holding ip6 addresses: %q", got)
	}
}
