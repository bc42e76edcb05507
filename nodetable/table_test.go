package nodetable

import (
	"net/netip"
	"testing"
)

func TestAppendKeyIsString(t *testing.T) {
	for _, c := range []struct {
		ip   string
		port int32
	}{
		{"10.1.2.3", 8080},
		{"2001:db8::1", 443},
		{"::ffff:10.1.2.3", 80},
		{"10.0.0.1", 0},
	} {
		e := Endpoint{IP: netip.MustParseAddr(c.ip), Port: c.port}
		prefix := []byte("x|")
		if got, want := string(e.AppendKey(prefix)), "x|"+e.String(); got != want {
			t.Errorf("%s %d: AppendKey gives %q, String %q", c.ip, c.port, got, want)
		}
	}
}
