package nfnl

import (
	"bytes"
	"encoding/binary"
	"errors"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

type attr struct {
	typ uint16
	v   string
}

// walked returns the attributes Walk reads from b.
func walked(b []byte) ([]attr, error) {
	var out []attr
	err := Walk(b, func(typ uint16, v []byte) error {
		out = append(out, attr{typ, string(v)})
		return nil
	})
	return out, err
}

// sample encodes attributes whose values need padding, a nested one and
// one with the byte-order flag, and returns where each attribute ends,
// before and after its padding.
func sample() (b []byte, ends []int) {
	var e Encoder
	e.PutString(1, "ab") // 4 + 3 bytes, 1 of padding
	ends = append(ends, 7, len(e.Buf))
	e.PutU32(2, 0xdeadbeef)
	ends = append(ends, len(e.Buf))
	n := e.Nested(3)
	e.Put(4, []byte{9})
	e.End(n)
	ends = append(ends, len(e.Buf)) // its length takes in the padding inside
	s := e.Begin(5 | unix.NLA_F_NET_BYTEORDER)
	e.Buf = append(e.Buf, "xyz"...)
	e.End(s)
	ends = append(ends, len(e.Buf)-1, len(e.Buf))
	return e.Buf, ends
}

func TestWalk(t *testing.T) {
	b, _ := sample()
	got, err := walked(b)
	if err != nil {
		t.Fatal(err)
	}
	nested := string([]byte{5, 0, 4, 0, 9, 0, 0, 0})
	want := []attr{{1, "ab\x00"}, {2, "\xde\xad\xbe\xef"}, {3, nested}, {5, "xyz"}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("walked %+v, want %+v", got, want)
	}
	if got, err := walked(nil); err != nil || got != nil {
		t.Errorf("nothing walked as %+v, %v", got, err)
	}
}

// Every cut of a valid buffer that does not fall between two attributes
// (or inside the last one's padding) is an error, and no cut panics.
func TestWalkTruncated(t *testing.T) {
	b, ends := sample()
	ok := map[int]bool{0: true}
	for _, e := range ends {
		ok[e] = true
	}
	for k := range len(b) {
		_, err := walked(b[:k])
		if ok[k] != (err == nil) {
			t.Errorf("cut at %d of %d: error %v, want one: %v", k, len(b), err, !ok[k])
		}
	}
}

func TestWalkMalformed(t *testing.T) {
	hdr := func(l, typ uint16) []byte {
		return binary.NativeEndian.AppendUint16(binary.NativeEndian.AppendUint16(nil, l), typ)
	}
	for name, b := range map[string][]byte{
		"length below the header":  hdr(3, 1),
		"length zero":              append(hdr(0, 1), 0, 0, 0, 0),
		"length past the end":      append(hdr(9, 1), 1, 2, 3, 4),
		"a header cut short":       {8, 0, 1},
		"a second header cut":      append(hdr(4, 1), 4, 0),
		"a nested length too long": append(hdr(0xffff, 1|unix.NLA_F_NESTED), make([]byte, 100)...),
	} {
		if got, err := walked(b); err == nil {
			t.Errorf("%s: walked %+v without an error", name, got)
		}
	}
}

func TestWalkStopsAtError(t *testing.T) {
	b, _ := sample()
	stop := errors.New("stop")
	calls := 0
	err := Walk(b, func(uint16, []byte) error {
		calls++
		return stop
	})
	if err != stop || calls != 1 {
		t.Errorf("Walk returned %v after %d calls, want the callback's error after 1", err, calls)
	}
}

func TestParseAttrs(t *testing.T) {
	var e Encoder
	e.PutU32(1, 7)
	e.PutString(2, "first")
	e.PutString(2, "last")
	e.Put(3, []byte{1, 2, 3})
	a, err := ParseAttrs(e.Buf)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := a.U32(1); !ok || v != 7 {
		t.Errorf("U32(1) = %d, %v; want 7", v, ok)
	}
	if s := a.String(2); s != "last" {
		t.Errorf("a type given twice reads %q, want the last value", s)
	}
	if _, ok := a.U32(3); ok {
		t.Error("three bytes read as a u32")
	}
	if _, ok := a.U32(4); ok {
		t.Error("a missing attribute read as a u32")
	}
	if a, err := ParseAttrs(e.Buf[:len(e.Buf)-2]); err == nil {
		t.Errorf("truncated attributes parsed as %v", a)
	}
}

func TestValues(t *testing.T) {
	for _, tc := range []struct{ in, want string }{{"abc\x00", "abc"}, {"abc", "abc"}, {"a\x00b\x00", "a"}, {"", ""}} {
		if got := CString([]byte(tc.in)); got != tc.want {
			t.Errorf("CString(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if BE32([]byte{1, 2, 3, 4}) != 0x01020304 || BE32([]byte{1, 2, 3}) != 0 {
		t.Error("BE32 misread")
	}
	if BE64([]byte{0, 0, 0, 0, 1, 2, 3, 4}) != 0x01020304 || BE64([]byte{1, 2, 3, 4}) != 0 {
		t.Error("BE64 misread")
	}
}

func TestDataValue(t *testing.T) {
	var e Encoder
	e.Put(unix.NFTA_DATA_VALUE, []byte{10, 0, 0, 1})
	if v, err := DataValue(e.Buf); err != nil || !bytes.Equal(v, []byte{10, 0, 0, 1}) {
		t.Errorf("DataValue = %v, %v", v, err)
	}
	var verdict Encoder
	verdict.PutU32(unix.NFTA_DATA_VERDICT, 1)
	for name, b := range map[string][]byte{"none": nil, "a verdict": verdict.Buf, "truncated": e.Buf[:6]} {
		if v, err := DataValue(b); err == nil {
			t.Errorf("%s: DataValue read %v", name, v)
		}
	}
}

func TestParseVerdict(t *testing.T) {
	var e Encoder
	e.PutU32(unix.NFTA_VERDICT_CODE, uint32(0xfffffffd)) // NFT_JUMP
	e.PutString(unix.NFTA_VERDICT_CHAIN, "services")
	v, err := ParseVerdict(e.Buf)
	if err != nil || v != (Verdict{Code: unix.NFT_JUMP, Chain: "services"}) {
		t.Errorf("ParseVerdict = %+v, %v", v, err)
	}
	var noCode, shortCode Encoder
	noCode.PutString(unix.NFTA_VERDICT_CHAIN, "services")
	shortCode.Put(unix.NFTA_VERDICT_CODE, []byte{0, 1})
	for name, b := range map[string][]byte{"no code": noCode.Buf, "a short code": shortCode.Buf, "truncated": e.Buf[:10]} {
		if v, err := ParseVerdict(b); err == nil {
			t.Errorf("%s: read %+v", name, v)
		}
	}
}
