package netlab

import (
	"net"
	"strconv"
	"testing"
)

// TestSpreadUDPNeverReusesAPort asks for many UDP probes against a server
// that answers with the client's source port, so Spread counts ports: each
// must come once. Were a probe's socket closed before the next opened,
// the kernel's random choice among some 28,000 ports would repeat one
// about 40 times in 1500 probes, the first after some 200.
func TestSpreadUDPNeverReusesAPort(t *testing.T) {
	l := New(t)
	pod := l.AddPod("pod-a", podA)
	var conn *net.UDPConn
	err := pod.NS().Do(func() error {
		var err error
		conn, err = net.ListenUDP("udp4", net.UDPAddrFromAddrPort(ap(podA, udpPort)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	go func() {
		buf := make([]byte, 512)
		for {
			_, from, err := conn.ReadFromUDPAddrPort(buf)
			if err != nil {
				return
			}
			conn.WriteToUDPAddrPort(replyLine("port-"+strconv.Itoa(int(from.Port())), from), from)
		}
	}()

	const n = 1500
	got, err := l.Client().Spread(t.Context(), UDP, ap(podA, udpPort), n)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != n {
		for port, c := range got {
			if c > 1 {
				t.Errorf("source %s answered %d times", port, c)
			}
		}
		t.Errorf("%d probes came from %d ports, want one port each", n, len(got))
	}
}
