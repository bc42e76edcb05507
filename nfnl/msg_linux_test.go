package nfnl

import (
	"encoding/binary"
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// datagram encodes two nf_tables messages with sequence numbers 7 and 8.
func datagram() (b []byte, ends []int) {
	var e Encoder
	for i, table := range []string{"kube-proxy", "filter"} {
		start := e.BeginMsg(NFTablesType(unix.NFT_MSG_NEWTABLE), unix.NLM_F_MULTI, unix.NFPROTO_IPV4, 0)
		e.PutString(unix.NFTA_TABLE_NAME, table)
		e.EndMsg(start)
		binary.NativeEndian.PutUint32(e.Buf[start+8:], uint32(7+i))
		ends = append(ends, len(e.Buf))
	}
	return e.Buf, ends
}

func TestMessages(t *testing.T) {
	b, _ := datagram()
	var tables []string
	err := Messages(b, func(m Message) error {
		if m.Type != unix.NFNL_SUBSYS_NFTABLES<<8|unix.NFT_MSG_NEWTABLE || m.Flags != unix.NLM_F_MULTI || m.Seq != uint32(7+len(tables)) {
			t.Errorf("message %d: type %#x flags %#x seq %d", len(tables), m.Type, m.Flags, m.Seq)
		}
		if family, _, err := Body(m.Data); err != nil || family != unix.NFPROTO_IPV4 {
			t.Errorf("family %d, %v; want %d", family, err, unix.NFPROTO_IPV4)
		}
		a, err := m.Attrs()
		tables = append(tables, a.String(unix.NFTA_TABLE_NAME))
		return err
	})
	if err != nil || len(tables) != 2 || tables[0] != "kube-proxy" || tables[1] != "filter" {
		t.Errorf("read tables %q, %v", tables, err)
	}
}

// A datagram cut anywhere but between two messages is an error, and no
// cut panics; nor does a message whose length is wrong.
func TestMessagesMalformed(t *testing.T) {
	b, ends := datagram()
	ok := map[int]bool{0: true, ends[0]: true, ends[1]: true}
	for k := range len(b) {
		err := Messages(b[:k], func(Message) error { return nil })
		if ok[k] != (err == nil) {
			t.Errorf("cut at %d of %d: error %v, want one: %v", k, len(b), err, !ok[k])
		}
	}
	for name, l := range map[string]uint32{"shorter than its header": 15, "longer than the datagram": uint32(len(b) + 1), "of 4 GiB": 0xffffffff} {
		bad := binary.NativeEndian.AppendUint32(nil, l)
		bad = append(bad, b[4:]...)
		if err := Messages(bad, func(Message) error { return nil }); err == nil {
			t.Errorf("a message length %s read", name)
		}
	}
	stop := errors.New("stop")
	if err := Messages(b, func(Message) error { return stop }); err != stop {
		t.Errorf("Messages returned %v, want the callback's error", err)
	}
}

func TestNumberMessages(t *testing.T) {
	b, _ := datagram()
	NumberMessages(b, 41)
	var seqs []uint32
	if err := Messages(b, func(m Message) error {
		seqs = append(seqs, m.Seq)
		return nil
	}); err != nil || len(seqs) != 2 || seqs[0] != 41 || seqs[1] != 42 {
		t.Errorf("numbered %v, %v; want [41 42]", seqs, err)
	}
	zero := make([]byte, 40) // a length of 0 must not loop forever
	NumberMessages(zero, 1)
	if binary.NativeEndian.Uint32(zero[8:]) != 1 || binary.NativeEndian.Uint32(zero[24:]) != 0 {
		t.Errorf("a message of length 0 numbered as % x", zero)
	}
}

func TestBodyShort(t *testing.T) {
	if _, _, err := Body([]byte{2, 0, 0}); err == nil {
		t.Error("a payload shorter than the nfgenmsg split")
	}
	if fam, attrs, err := Body([]byte{10, 0, 0, 0}); err != nil || fam != unix.NFPROTO_IPV6 || len(attrs) != 0 {
		t.Errorf("Body of a bare nfgenmsg = %d, %v, %v", fam, attrs, err)
	}
	if a, err := (Message{Data: []byte{2, 0}}).Attrs(); err == nil {
		t.Errorf("a message shorter than the nfgenmsg read as %v", a)
	}
}

// errorMessage encodes an NLMSG_ERROR answering a request of the given
// length with sequence number 5, capped (only the request's header
// echoed) or not, with the extended-ack text when there is one.
func errorMessage(code int32, capped bool, requestLen int, text string) Message {
	var e Encoder
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, uint32(code))
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, uint32(requestLen))
	e.Buf = append(e.Buf, make([]byte, 4)...)
	e.Buf = binary.NativeEndian.AppendUint32(e.Buf, 5)
	e.Buf = append(e.Buf, make([]byte, 4)...)
	var flags uint16
	if capped {
		flags |= unix.NLM_F_CAPPED
	} else {
		// The rest of the request, padded as the kernel pads it.
		e.Buf = append(e.Buf, make([]byte, msgAlign(requestLen)-unix.NLMSG_HDRLEN)...)
	}
	if text != "" {
		flags |= unix.NLM_F_ACK_TLVS
		e.PutString(unix.NLMSGERR_ATTR_MSG, text)
	}
	return Message{Type: unix.NLMSG_ERROR, Flags: flags, Data: e.Buf}
}

func TestParseError(t *testing.T) {
	for _, tc := range []struct {
		name  string
		m     Message
		errno unix.Errno
		text  string
	}{
		{"acknowledgement", errorMessage(0, true, 20, ""), 0, ""},
		{"capped, with text", errorMessage(-int32(unix.ENOENT), true, 40, "No such chain"), unix.ENOENT, "No such chain"},
		{"the request echoed", errorMessage(-int32(unix.EEXIST), false, 22, "exists"), unix.EEXIST, "exists"},
		{"without text", errorMessage(-int32(unix.EBUSY), true, 40, ""), unix.EBUSY, ""},
	} {
		errno, seq, text := ParseError(tc.m)
		if errno != tc.errno || seq != 5 || text != tc.text {
			t.Errorf("%s: %v, seq %d, %q; want %v, seq 5, %q", tc.name, errno, seq, text, tc.errno, tc.text)
		}
	}
	m := errorMessage(-int32(unix.ENOENT), false, 40, "text")
	for k := range len(m.Data) {
		cut := Message{Type: m.Type, Flags: m.Flags, Data: m.Data[:k]}
		errno, _, _ := ParseError(cut) // must not panic
		if k < 4+unix.NLMSG_HDRLEN && errno != unix.EBADMSG {
			t.Errorf("an error message of %d bytes read as %v", k, errno)
		}
	}
}
