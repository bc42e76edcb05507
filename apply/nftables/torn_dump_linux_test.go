package nftables

import "testing"

func TestHasRepeats(t *testing.T) {
	for _, tc := range []struct {
		name string
		raws []rawElem
		want bool
	}{
		{"none", nil, false},
		{"distinct", []rawElem{{key: []byte{1}}, {key: []byte{2}}}, false},
		// An interval's end may share its key with the next interval's start.
		{"start and end", []rawElem{{key: []byte{1}}, {key: []byte{1}, end: true}}, false},
		{"repeat", []rawElem{{key: []byte{1}}, {key: []byte{2}}, {key: []byte{1}}}, true},
	} {
		if got := hasRepeats(tc.raws); got != tc.want {
			t.Errorf("%s: hasRepeats = %v, want %v", tc.name, got, tc.want)
		}
	}
}
