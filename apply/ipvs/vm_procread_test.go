package ipvs

import (
	"reflect"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// TestIPVSServicesFromProc checks, in the VM, that Services reads the same
// virtual and real servers and connection counts with the real servers
// from /proc/net/ip_vs as with one netlink request per virtual server, on
// a table with affinity, NodePorts, external IPs and a real server at
// weight 0; and that /proc/net/ip_vs listed every virtual server, so the
// one-pass read was the one used.
func TestIPVSServicesFromProc(t *testing.T) {
	lab := netlab.New(t)
	c, ck := vmClient(t, lab)
	table := synthetic.VariedTable(60, 3)
	apply(t, c, renderTable(table, "rr"))
	k := ck.Kernel.(*NetlinkKernel)
	// A real server being drained: weight 0, as graceful termination sets.
	vss, _, err := k.Services(nodetable.IPv4)
	if err != nil || len(vss) == 0 || len(vss[0].RealServers) == 0 {
		t.Fatalf("services: %v, %d", err, len(vss))
	}
	drained := vss[0].RealServers[0]
	drained.Weight = 0
	if err := k.EditDest(vss[0], drained); err != nil {
		t.Fatal(err)
	}

	fromProc, procConns, err := k.Services(nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	listed, err := k.readProcDests()
	if err != nil || len(listed) != len(fromProc) {
		t.Fatalf("/proc/net/ip_vs: %d virtual servers, %v; Services found %d", len(listed), err, len(fromProc))
	}
	k.noProc = true
	defer func() { k.noProc = false }()
	fromNetlink, netlinkConns, err := k.Services(nodetable.IPv4)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(fromProc, fromNetlink) || !reflect.DeepEqual(procConns, netlinkConns) {
		t.Errorf("the virtual servers read with /proc/net/ip_vs differ from those read over netlink:\n%+v\n%+v", fromProc, fromNetlink)
	}
	if fromProc[0].RealServers[0].Weight != 0 && fromProc[0].RealServers[1].Weight != 0 {
		t.Errorf("the drained real server's weight 0 was not read: %+v", fromProc[0].RealServers)
	}
}
