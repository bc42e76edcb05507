package nfacct

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// attrPackets is NFACCT_PKTS, the counter's packets as a big-endian u64.
const attrPackets = 2

// Packets returns the packets the named counter has counted, for
// kube-proxy's nfacct metrics, which report it on every scrape.
func Packets(name string) (uint64, error) {
	if err := checkName(name); err != nil {
		return 0, err
	}
	answers, err := request(msgGet, flagAck, name)
	if err != nil {
		return 0, fmt.Errorf("nfacct: get %s: %w", name, unsupported(err))
	}
	for _, a := range answers {
		if n, ok := packetsAttr(a); ok {
			return n, nil
		}
	}
	return 0, fmt.Errorf("nfacct: get %s: %w", name, errNoPackets)
}

var errNoPackets = errors.New("the answer has no packet count")

// packetsAttr finds NFACCT_PKTS in one answer: the nfgenmsg header (4
// bytes), then netlink attributes, each a 2-byte length (with its 4-byte
// header), a 2-byte type and the value, padded to 4 bytes.
func packetsAttr(msg []byte) (uint64, bool) {
	const nfgenLen = 4
	if len(msg) < nfgenLen {
		return 0, false
	}
	b := msg[nfgenLen:]
	for len(b) >= 4 {
		l := int(binary.NativeEndian.Uint16(b))
		typ := binary.NativeEndian.Uint16(b[2:]) &^ 0xc000 // without the nested and byte-order flags
		if l < 4 || l > len(b) {
			return 0, false
		}
		if typ == attrPackets && l == 12 {
			return binary.BigEndian.Uint64(b[4:12]), true
		}
		b = b[min((l+3)&^3, len(b)):]
	}
	return 0, false
}
