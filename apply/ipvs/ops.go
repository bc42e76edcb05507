package ipvs

import (
	"net/netip"
	"strings"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// op is one kernel call of an apply, with the command that does the same
// (for --dry-run and error messages) and, for additions, its inverse.
type op struct {
	family nodetable.Family
	cmd    string
	do     func(Kernel) error
	undo   func(Kernel) error
}

// addOps are the first phase of a plan: everything that is created or
// changed in place, in an order where nothing is referenced before it
// exists and nothing is reachable before it is complete: the device and
// the sets with their new entries, then the virtual servers with their
// real servers, then the addresses that route traffic to them.
func addOps(p *Plan) []op {
	cs := p.Changes
	f := cs.Family
	var ops []op
	if cs.Device == diff.IPVSCreateDevice {
		ops = append(ops, op{f, "ip link add " + ipvs.DummyDevice + " type dummy",
			Kernel.CreateDevice, Kernel.DeleteDevice})
	}
	for _, sc := range cs.Sets {
		s := sc.Set
		if sc.Verb == diff.IPVSCreateSet {
			ops = append(ops, op{f, "ipset create " + s.CreateLine() + " -exist",
				func(k Kernel) error { return k.CreateSet(&s) },
				func(k Kernel) error { return k.DestroySet(s.Name) }})
		}
		for _, e := range sc.Add {
			ops = append(ops, op{f, "ipset add " + s.Name + " " + e + " -exist",
				func(k Kernel) error { return k.AddEntry(&s, e) },
				func(k Kernel) error { return k.DeleteEntry(&s, e) }})
		}
	}
	for _, sc := range cs.Services {
		ops = append(ops, serviceAddOps(f, sc)...)
	}
	for _, a := range cs.AddAddresses {
		pfx := netip.PrefixFrom(a, a.BitLen())
		ops = append(ops, op{f, "ip addr add " + pfx.String() + " dev " + ipvs.DummyDevice,
			func(k Kernel) error { return k.AddAddress(pfx) },
			func(k Kernel) error { return k.DeleteAddress(pfx) }})
	}
	return ops
}

func serviceAddOps(f nodetable.Family, sc diff.IPVSServiceChange) []op {
	vs := sc.Service
	var ops []op
	switch sc.Verb {
	case diff.IPVSAddService:
		ops = append(ops, op{f, "ipvsadm " + vs.Line(),
			func(k Kernel) error { return k.AddService(&vs) },
			func(k Kernel) error { return k.DeleteService(&vs) }})
	case diff.IPVSEditService:
		old := *sc.Old
		ops = append(ops, op{f, "ipvsadm " + editLine(vs.Line()),
			func(k Kernel) error { return k.EditService(&vs) },
			func(k Kernel) error { return k.EditService(&old) }})
	}
	for _, d := range sc.Dests {
		r := d.Dest
		switch d.Verb {
		case diff.IPVSAddDest:
			ops = append(ops, op{f, "ipvsadm " + vs.RealServerLine(r),
				func(k Kernel) error { return k.AddDest(&vs, r) },
				func(k Kernel) error { return k.DeleteDest(&vs, r) }})
		case diff.IPVSEditDest:
			old := *d.Old
			ops = append(ops, op{f, "ipvsadm " + editLine(vs.RealServerLine(r)),
				func(k Kernel) error { return k.EditDest(&vs, r) },
				func(k Kernel) error { return k.EditDest(&vs, old) }})
		}
	}
	return ops
}

// removeOps are the last phase, after the helper chains: drains and
// deletions of real servers, stale virtual servers (before their
// addresses and NodePort entries, which mark them as the tool's), stale
// addresses, entries, sets that no rule references any more, and (reset)
// the device.
func removeOps(p *Plan) []op {
	cs := p.Changes
	f := cs.Family
	var ops []op
	for _, sc := range cs.Services {
		vs := sc.Service
		if sc.Verb == diff.IPVSDeleteService {
			continue // its real servers go with it
		}
		for _, d := range sc.Dests {
			r := d.Dest
			switch d.Verb {
			case diff.IPVSDrainDest:
				ops = append(ops, op{family: f, cmd: "ipvsadm " + editLine(vs.RealServerLine(r)),
					do: func(k Kernel) error { return k.EditDest(&vs, r) }})
			case diff.IPVSDeleteDest:
				ops = append(ops, op{family: f, cmd: "ipvsadm -d " + vs.Service() + " -r " + netip.AddrPortFrom(r.Address, r.Port).String(),
					do: func(k Kernel) error { return k.DeleteDest(&vs, r) }})
			}
		}
	}
	for _, sc := range cs.Services {
		if vs := sc.Service; sc.Verb == diff.IPVSDeleteService {
			ops = append(ops, op{family: f, cmd: "ipvsadm -D " + vs.Service(),
				do: func(k Kernel) error { return k.DeleteService(&vs) }})
		}
	}
	for _, a := range cs.DelAddresses {
		pfx, ok := p.prefixes[a]
		if !ok {
			pfx = netip.PrefixFrom(a, a.BitLen())
		}
		ops = append(ops, op{family: f, cmd: "ip addr del " + pfx.String() + " dev " + ipvs.DummyDevice,
			do: func(k Kernel) error { return k.DeleteAddress(pfx) }})
	}
	for _, sc := range cs.Sets {
		s := sc.Set
		if sc.Verb == diff.IPVSDestroySet {
			continue // its entries go with it
		}
		for _, e := range sc.Del {
			ops = append(ops, op{family: f, cmd: "ipset del " + s.Name + " " + e + " -exist",
				do: func(k Kernel) error { return k.DeleteEntry(&s, e) }})
		}
	}
	for _, sc := range cs.Sets {
		if name := sc.Set.Name; sc.Verb == diff.IPVSDestroySet {
			ops = append(ops, op{family: f, cmd: "ipset destroy " + name,
				do: func(k Kernel) error { return k.DestroySet(name) }})
		}
	}
	if cs.Device == diff.IPVSDeleteDevice {
		ops = append(ops, op{family: f, cmd: "ip link del " + ipvs.DummyDevice, do: Kernel.DeleteDevice})
	}
	return ops
}

// editLine turns an ipvsadm add line ("-A ...", "-a ...") into its edit
// ("-E ...", "-e ...").
func editLine(line string) string {
	switch {
	case strings.HasPrefix(line, "-A "):
		return "-E " + line[3:]
	case strings.HasPrefix(line, "-a "):
		return "-e " + line[3:]
	}
	return line
}
