package ipvsvm

import (
	"slices"
	"testing"
)

// TestIPSetExtras checks what the canonical ipset lines set aside: the
// random initval and the default bucket size, but no other bucket size.
func TestIPSetExtras(t *testing.T) {
	for in, want := range map[string]string{
		"create A hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 12 initval 0x8f1e2d3c": "create A hash:ip family inet hashsize 1024 maxelem 65536",
		"create A hash:ip family inet hashsize 1024 maxelem 65536":                                  "create A hash:ip family inet hashsize 1024 maxelem 65536",
		"create A hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 14 initval 0x1":        "create A hash:ip family inet hashsize 1024 maxelem 65536 bucketsize 14",
		"create B bitmap:port range 0-65535":                                                        "create B bitmap:port range 0-65535",
	} {
		if got := ipsetExtras.ReplaceAllString(in, ""); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

func TestPrefixSorted(t *testing.T) {
	got := prefixSorted("ipvs ", "-a -t 10.96.0.1:80 -r 10.244.0.2:80 -m -w 1\n\n-A -t 10.96.0.1:80 -s rr\n")
	want := []string{"ipvs -A -t 10.96.0.1:80 -s rr", "ipvs -a -t 10.96.0.1:80 -r 10.244.0.2:80 -m -w 1"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
