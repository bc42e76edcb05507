package ipvs

import (
	"fmt"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/vmtest"
)

// BenchmarkIPVSRead measures reading every virtual server with its real
// servers (Services, what each plan does) at 1k and 10k Services x 3
// endpoints, two ways in the same node: the real servers from one read of
// /proc/net/ip_vs ("proc", what Services does) and from one netlink
// request per virtual server ("netlink").
func BenchmarkIPVSRead(b *testing.B) {
	if !vmtest.InGuest() {
		b.Skip("needs IPVS: runs in the VM (TestBenchInVM)")
	}
	for _, n := range benchsize.Sizes(b, 1000, 10000) {
		lab := netlab.New(b)
		c, _ := vmClient(b, lab)
		plans, err := c.Plan(b.Context(), oneFamily(renderTable(synthetic.Table(n, 3), "rr")))
		if err == nil {
			err = c.Apply(b.Context(), plans)
		}
		if err != nil {
			b.Fatal(err)
		}
		k := c.Kernel.(*countingKernel).Kernel.(*NetlinkKernel)
		for _, way := range []string{"proc", "netlink"} {
			b.Run(fmt.Sprintf("services=%d/%s", n, way), func(b *testing.B) {
				k.noProc = way == "netlink"
				defer func() { k.noProc = false }()
				for b.Loop() {
					if _, _, err := k.Services(nodetable.IPv4); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
