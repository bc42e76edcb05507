package ipvs

import (
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// The ipsets go through netlink's Ipset* API where it serves, and through
// raw ipset netlink requests (built with its nl package) where it does not:
//   - IpsetAdd and IpsetDel always send a protocol with a port, which the
//     kernel's bitmap:port type rejects ("invalid protocol"), so bitmap:port
//     entries are added and deleted with portRequest;
//   - IpsetList logs every attribute it does not know through the standard
//     logger, and sets created by the ipset tool (kube-proxy's) carry two
//     (bucketsize, initval), so sets are read with listSet;
//   - IpsetCreate takes no hashsize: the kernel's default, 1024, is the
//     one kube-proxy asks for.

// Set implements Kernel.
func (k *NetlinkKernel) Set(name string) (*ipvs.Set, error) {
	req := k.ipsetRequest(nl.IPSET_CMD_LIST, name)
	msgs, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	if errors.Is(err, unix.ENOENT) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list ipset %s: %w", name, ipsetErr(err))
	}
	s := &ipvs.Set{Name: name}
	for _, m := range msgs {
		if len(m) < 4 {
			continue
		}
		if err := parseSetMessage(s, m[4:]); err != nil {
			return nil, fmt.Errorf("list ipset %s: %w", name, err)
		}
	}
	return s, nil
}

// ipsetRequest starts an ipset request for one set, on the namespace's
// netfilter socket.
func (k *NetlinkKernel) ipsetRequest(cmd int, set string) *nl.NetlinkRequest {
	req := nl.NewNetlinkRequest(cmd|(unix.NFNL_SUBSYS_IPSET<<8), nl.GetIpsetFlags(cmd))
	req.Sockets = k.nfSock
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_NETLINK, Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_PROTOCOL, nl.Uint8Attr(nl.IPSET_PROTOCOL)))
	req.AddData(nl.NewRtAttr(nl.IPSET_ATTR_SETNAME, nl.ZeroTerminated(set)))
	return req
}

// parseSetMessage reads one message of a list dump: the header attributes
// and a batch of entries.
func parseSetMessage(s *ipvs.Set, data []byte) error {
	for a := range nl.ParseAttributes(data) {
		switch a.Type & nl.NLA_TYPE_MASK {
		case nl.IPSET_ATTR_TYPENAME:
			s.Type = ipvs.SetType(nl.BytesToString(a.Value))
		case nl.IPSET_ATTR_FAMILY:
			switch a.Value[0] {
			case unix.AF_INET:
				s.Family = "inet"
			case unix.AF_INET6:
				s.Family = "inet6"
			}
		case nl.IPSET_ATTR_DATA:
			parseSetHeader(s, a.Value)
		case nl.IPSET_ATTR_ADT:
			for e := range nl.ParseAttributes(a.Value) {
				entry, err := formatEntry(s.Type, e.Value)
				if err != nil {
					return err
				}
				s.Entries = append(s.Entries, entry)
			}
		}
	}
	return nil
}

func parseSetHeader(s *ipvs.Set, data []byte) {
	var from, to uint16
	for a := range nl.ParseAttributes(data) {
		switch a.Type & nl.NLA_TYPE_MASK {
		case nl.IPSET_ATTR_HASHSIZE:
			s.HashSize = int(binary.BigEndian.Uint32(a.Value))
		case nl.IPSET_ATTR_MAXELEM:
			s.MaxElem = int(binary.BigEndian.Uint32(a.Value))
		case nl.IPSET_ATTR_PORT_FROM:
			from = binary.BigEndian.Uint16(a.Value)
		case nl.IPSET_ATTR_PORT_TO:
			to = binary.BigEndian.Uint16(a.Value)
		}
	}
	if !s.Type.IsHash() {
		s.PortRange = strconv.Itoa(int(from)) + "-" + strconv.Itoa(int(to))
		s.Family = "" // `ipset save` prints none for bitmap:port
	}
}

// CreateSet implements Kernel. It is idempotent ("-exist"): creating a set
// that exists with the same type succeeds.
func (k *NetlinkKernel) CreateSet(s *ipvs.Set) error {
	opts := netlink.IpsetCreateOptions{Replace: true, MaxElements: uint32(s.MaxElem)}
	switch {
	case !s.Type.IsHash():
		from, to, err := parseRange(s.PortRange)
		if err != nil {
			return fmt.Errorf("ipset %s: %w", s.Name, err)
		}
		opts.PortFrom, opts.PortTo = from, to
	case s.Family == "inet6":
		opts.Family = unix.AF_INET6
	default:
		opts.Family = unix.AF_INET
	}
	return k.nl.IpsetCreate(s.Name, string(s.Type), opts)
}

// DestroySet implements Kernel.
func (k *NetlinkKernel) DestroySet(name string) error {
	return gone(k.nl.IpsetDestroy(name), unix.ENOENT)
}

// AddEntry implements Kernel; adding an entry that is there succeeds.
func (k *NetlinkKernel) AddEntry(s *ipvs.Set, entry string) error {
	return k.entry(nl.IPSET_CMD_ADD, s, entry)
}

// DeleteEntry implements Kernel; deleting an entry that is gone succeeds.
func (k *NetlinkKernel) DeleteEntry(s *ipvs.Set, entry string) error {
	return k.entry(nl.IPSET_CMD_DEL, s, entry)
}

func (k *NetlinkKernel) entry(cmd int, s *ipvs.Set, entry string) error {
	if !s.Type.IsHash() {
		port, err := strconv.ParseUint(entry, 10, 16)
		if err != nil {
			return fmt.Errorf("ipset %s: bad port entry %q", s.Name, entry)
		}
		return k.portRequest(cmd, s.Name, uint16(port))
	}
	e, err := parseEntry(s.Type, entry)
	if err != nil {
		return fmt.Errorf("ipset %s: %w", s.Name, err)
	}
	e.Replace = true // -exist: no error for an entry already there, or already gone
	if cmd == nl.IPSET_CMD_ADD {
		return k.nl.IpsetAdd(s.Name, e)
	}
	return k.nl.IpsetDel(s.Name, e)
}

// portRequest adds or deletes a bitmap:port entry, without the protocol
// attribute that netlink's IpsetAdd would send. Without NLM_F_EXCL the
// kernel treats an entry already there (add) or gone (del) as success.
func (k *NetlinkKernel) portRequest(cmd int, set string, port uint16) error {
	req := k.ipsetRequest(cmd, set)
	data := nl.NewRtAttr(nl.IPSET_ATTR_DATA|int(nl.NLA_F_NESTED), nil)
	data.AddChild(nl.NewRtAttr(nl.IPSET_ATTR_PORT|int(nl.NLA_F_NET_BYTEORDER), binary.BigEndian.AppendUint16(nil, port)))
	req.AddData(data)
	_, err := req.Execute(unix.NETLINK_NETFILTER, 0)
	return ipsetErr(err)
}
