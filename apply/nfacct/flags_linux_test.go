package nfacct

import (
	"testing"

	"golang.org/x/sys/unix"
)

// The flags spelled out for the other systems' build are Linux's.
func TestFlagsAreLinuxs(t *testing.T) {
	for _, c := range []struct {
		name      string
		got, want int
	}{{"NLM_F_ACK", flagAck, unix.NLM_F_ACK}, {"NLM_F_EXCL", flagExcl, unix.NLM_F_EXCL}, {"NLM_F_CREATE", flagCreate, unix.NLM_F_CREATE}} {
		if c.got != c.want {
			t.Errorf("%s = %#x, want %#x", c.name, c.got, c.want)
		}
	}
}
