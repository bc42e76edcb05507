package nfnl

import (
	"reflect"
	"testing"

	"golang.org/x/sys/unix"
)

// FuzzDecode feeds arbitrary bytes to every reader of the package, as a
// hostile or torn kernel message could present them: as attributes, as a
// datagram of messages, as an error message, a verdict and a data value.
// Nothing may panic. Attributes that Walk accepts must encode back to
// attributes that read the same, and ParseAttrs must fail exactly when
// Walk does. The seeds are the encodings of the unit tests.
func FuzzDecode(f *testing.F) {
	b, _ := sample()
	f.Add(b)
	d, _ := datagram()
	f.Add(d)
	f.Add(errorMessage(-int32(unix.ENOENT), false, 40, "text").Data)
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		attrs, err := walked(b)
		if _, perr := ParseAttrs(b); (err == nil) != (perr == nil) {
			t.Errorf("Walk: %v, ParseAttrs: %v", err, perr)
		}
		if err == nil {
			var e Encoder
			for _, a := range attrs {
				e.Put(a.typ, []byte(a.v))
			}
			again, err := walked(e.Buf)
			if err != nil || !reflect.DeepEqual(again, attrs) {
				t.Errorf("read %+v, encoded back and read %+v, %v", attrs, again, err)
			}
		}
		_ = Messages(b, func(m Message) error {
			_, _, _ = ParseError(m)
			_, _ = m.Attrs()
			return nil
		})
		_, _, _ = ParseError(Message{Flags: unix.NLM_F_ACK_TLVS, Data: b})
		_, _ = ParseVerdict(b)
		_, _ = DataValue(b)
	})
}
