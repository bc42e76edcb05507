package diff

import (
	"fmt"
	"io"
	"net/netip"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// Summary counts virtual servers, real servers, set entries, addresses
// and the helper chains' changes. DestinationsDraining counts the real
// servers this change set drains plus those already draining.
func (cs *IPVSChangeSet) Summary() Summary {
	var s Summary
	if cs.IPTables != nil {
		s = cs.IPTables.Summary()
	}
	for _, sc := range cs.Services {
		switch sc.Verb {
		case IPVSAddService:
			s.ServicesAdded++
		case IPVSEditService:
			s.ServicesChanged++
		case IPVSDeleteService:
			s.ServicesDeleted++
		}
		for _, d := range sc.Dests {
			switch d.Verb {
			case IPVSAddDest:
				s.DestinationsAdded++
			case IPVSEditDest:
				s.DestinationsChanged++
			case IPVSDrainDest:
				s.DestinationsDraining++
			case IPVSDeleteDest:
				s.DestinationsDeleted++
			}
		}
	}
	s.DestinationsDraining += len(cs.Draining)
	for _, sc := range cs.Sets {
		s.ElementsAdded += len(sc.Add)
		s.ElementsRemoved += len(sc.Del)
	}
	s.AddressesAdded, s.AddressesRemoved = len(cs.AddAddresses), len(cs.DelAddresses)
	return s
}

// WriteText writes the change set as a unified diff of the text form's
// sections: ipvsadm-save lines per virtual server ("@@ ipvs -t
// 10.96.0.1:443: changed in place @@"), `ipset save` lines per set, the
// kube-ipvs0 address lines, then the helper chains as iptables-save lines.
// Draining real servers are listed as context lines with their connection
// counts: they are waiting, not drift.
func (cs *IPVSChangeSet) WriteText(w io.Writer, liveName string) error {
	var b strings.Builder
	if !cs.Empty() || len(cs.Draining) > 0 {
		fmt.Fprintf(&b, "--- live %s (%s)\n+++ desired %s\n", cs.Family, liveName, cs.Family)
	}
	for _, c := range cs.Conflicts {
		b.WriteString("# conflict: " + c + "\n")
	}
	if cs.Device == IPVSCreateDevice {
		fmt.Fprintf(&b, "@@ %s: new dummy interface @@\n+link add %s type dummy\n", ipvs.DummyDevice, ipvs.DummyDevice)
	}
	for _, sc := range cs.Services {
		writeIPVSService(&b, sc)
	}
	writeIPVSDraining(&b, cs.Draining)
	for _, sc := range cs.Sets {
		writeIPVSSet(&b, sc)
	}
	writeIPVSAddrs(&b, cs.AddAddresses, cs.DelAddresses)
	if cs.IPTables != nil {
		for _, c := range cs.IPTables.Changes {
			writeChange(&b, c)
		}
	}
	if cs.Device == IPVSDeleteDevice {
		fmt.Fprintf(&b, "@@ %s: stale dummy interface @@\n-link add %s type dummy\n", ipvs.DummyDevice, ipvs.DummyDevice)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

var ipvsServiceHunk = map[IPVSVerb]string{
	IPVSAddService: "new virtual server", IPVSEditService: "changed in place",
	IPVSDeleteService: "stale virtual server", IPVSKeepService: "real servers changed",
}

func writeIPVSService(b *strings.Builder, sc IPVSServiceChange) {
	vs := &sc.Service
	fmt.Fprintf(b, "@@ ipvs %s: %s @@\n", vs.Service(), ipvsServiceHunk[sc.Verb])
	switch sc.Verb {
	case IPVSAddService:
		b.WriteString("+" + vs.Line() + "\n")
	case IPVSEditService:
		b.WriteString("-" + sc.Old.Line() + "\n+" + vs.Line() + "\n")
	case IPVSDeleteService:
		b.WriteString("-" + vs.Line() + "\n")
	}
	for _, d := range sc.Dests {
		switch d.Verb {
		case IPVSAddDest:
			b.WriteString("+" + vs.RealServerLine(d.Dest) + "\n")
		case IPVSEditDest:
			b.WriteString("-" + vs.RealServerLine(*d.Old) + "\n+" + vs.RealServerLine(d.Dest) + "\n")
		case IPVSDrainDest:
			b.WriteString("-" + vs.RealServerLine(*d.Old) + "\n+" + vs.RealServerLine(d.Dest) + "\n")
			b.WriteString("# draining: " + ipvsConnText(*d.Conns) + "; deleted once they close\n")
		case IPVSDeleteDest:
			b.WriteString("-" + vs.RealServerLine(d.Dest) + "\n")
		}
	}
}

func writeIPVSDraining(b *strings.Builder, draining []IPVSDraining) {
	for _, d := range draining {
		fmt.Fprintf(b, "@@ ipvs %s: draining @@\n %s\n# draining: %s; deleted once they close\n",
			d.Service.Service(), d.Service.RealServerLine(d.Dest), ipvsConnText(d.Conns))
	}
}

func ipvsConnText(c IPVSConns) string {
	return fmt.Sprintf("%d active, %d inactive connections", c.Active, c.Inactive)
}

var ipvsSetHunk = map[IPVSSetVerb]string{IPVSCreateSet: "new set", IPVSDestroySet: "stale set", IPVSFillSet: "entries changed"}

func writeIPVSSet(b *strings.Builder, sc IPVSSetChange) {
	fmt.Fprintf(b, "@@ ipset %s: %s @@\n", sc.Set.Name, ipvsSetHunk[sc.Verb])
	switch sc.Verb {
	case IPVSCreateSet:
		b.WriteString("+create " + sc.Set.CreateLine() + "\n")
	case IPVSDestroySet:
		b.WriteString("-create " + sc.Set.CreateLine() + "\n")
	}
	for _, e := range sc.Del {
		b.WriteString("-add " + sc.Set.Name + " " + e + "\n")
	}
	for _, e := range sc.Add {
		b.WriteString("+add " + sc.Set.Name + " " + e + "\n")
	}
}

func writeIPVSAddrs(b *strings.Builder, add, del []netip.Addr) {
	if len(add)+len(del) == 0 {
		return
	}
	fmt.Fprintf(b, "@@ %s: addresses @@\n", ipvs.DummyDevice)
	for _, a := range del {
		b.WriteString("-addr add " + netip.PrefixFrom(a, a.BitLen()).String() + " dev " + ipvs.DummyDevice + "\n")
	}
	for _, a := range add {
		b.WriteString("+addr add " + netip.PrefixFrom(a, a.BitLen()).String() + " dev " + ipvs.DummyDevice + "\n")
	}
}
