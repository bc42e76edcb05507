package nfnl

import (
	"encoding/binary"
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Message is one netlink message: its header's fields and its payload,
// which aliases the buffer it was read from.
type Message struct {
	Type, Flags uint16
	Seq         uint32
	Data        []byte
}

// Messages calls fn for every netlink message in b, one datagram, in
// order, and stops at fn's first error. A message whose length is shorter
// than its header or runs past b, or bytes left over that cannot hold a
// header, are an error.
func Messages(b []byte, fn func(Message) error) error {
	for len(b) > 0 {
		if len(b) < unix.NLMSG_HDRLEN {
			return fmt.Errorf("netlink message header cut short: %d bytes left", len(b))
		}
		l := int(binary.NativeEndian.Uint32(b[0:4]))
		if l < unix.NLMSG_HDRLEN || l > len(b) {
			return fmt.Errorf("malformed netlink message (length %d of %d bytes)", l, len(b))
		}
		m := Message{
			Type:  binary.NativeEndian.Uint16(b[4:6]),
			Flags: binary.NativeEndian.Uint16(b[6:8]),
			Seq:   binary.NativeEndian.Uint32(b[8:12]),
			Data:  b[unix.NLMSG_HDRLEN:l],
		}
		if err := fn(m); err != nil {
			return err
		}
		b = b[min(msgAlign(l), len(b)):]
	}
	return nil
}

func msgAlign(n int) int { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }

// NumberMessages writes consecutive sequence numbers, from first, into
// the messages of b, which the caller encoded: a batch, or one request.
func NumberMessages(b []byte, first uint32) {
	seq := first
	for off := 0; off+unix.NLMSG_HDRLEN <= len(b); seq++ {
		binary.NativeEndian.PutUint32(b[off+8:], seq)
		l := int(binary.NativeEndian.Uint32(b[off:]))
		if l < unix.NLMSG_HDRLEN {
			return // not a message: nothing after it is either
		}
		off += msgAlign(l)
	}
}

// NFTablesType is the netlink message type of nf_tables' message msg
// (unix.NFT_MSG_NEWRULE, ...): the subsystem in the high byte.
func NFTablesType(msg uint16) uint16 { return unix.NFNL_SUBSYS_NFTABLES<<8 | msg }

// genLen is the size of struct nfgenmsg, which starts every nfnetlink
// message's payload: family, version, resource ID.
const genLen = int(unsafe.Sizeof(unix.Nfgenmsg{}))

// Body splits an nfnetlink message's payload into the family its nfgenmsg
// names and the attributes after it; an error when it is too short to
// hold the nfgenmsg.
func Body(data []byte) (family byte, attrs []byte, err error) {
	if len(data) < genLen {
		return 0, nil, fmt.Errorf("nfnetlink message of %d bytes has no header", len(data))
	}
	return data[0], data[genLen:], nil
}

// Attrs reads the attributes of an nfnetlink message, after its
// nfgenmsg.
func (m Message) Attrs() (Attrs, error) {
	_, b, err := Body(m.Data)
	if err != nil {
		return nil, err
	}
	return ParseAttrs(b)
}

// ParseError decodes an NLMSG_ERROR message: the errno (0 for an
// acknowledgement), the sequence number of the message it answers and
// the kernel's extended-ack text, if any. A message too short to be one
// reads as EBADMSG.
func ParseError(m Message) (errno unix.Errno, seq uint32, text string) {
	if len(m.Data) < 4+unix.NLMSG_HDRLEN {
		return unix.EBADMSG, 0, "short netlink error message"
	}
	code := int32(binary.NativeEndian.Uint32(m.Data[0:4]))
	seq = binary.NativeEndian.Uint32(m.Data[4+8 : 4+12])
	if code == 0 {
		return 0, seq, ""
	}
	rest := m.Data[4+unix.NLMSG_HDRLEN:]
	if m.Flags&unix.NLM_F_CAPPED == 0 {
		// The whole request follows; skip it.
		l := int(binary.NativeEndian.Uint32(m.Data[4:8]))
		rest = m.Data[min(4+msgAlign(l), len(m.Data)):]
	}
	if m.Flags&unix.NLM_F_ACK_TLVS != 0 {
		_ = Walk(rest, func(typ uint16, v []byte) error {
			if typ == unix.NLMSGERR_ATTR_MSG {
				text = CString(v)
			}
			return nil
		})
	}
	return unix.Errno(-code), seq, text
}
