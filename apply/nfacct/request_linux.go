package nfacct

import (
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// request sends one nfnetlink_acct message naming a counter and returns
// the answers.
func request(msg int, flags int, name string) ([][]byte, error) {
	req := nl.NewNetlinkRequest(subsysAcct<<8|msg, flags)
	req.AddData(&nl.Nfgenmsg{NfgenFamily: unix.AF_UNSPEC, Version: nl.NFNETLINK_V0})
	req.AddData(nl.NewRtAttr(attrName, nl.ZeroTerminated(name)))
	return req.Execute(unix.NETLINK_NETFILTER, 0)
}
