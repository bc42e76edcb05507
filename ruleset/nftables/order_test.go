package nftables

import "testing"

func TestHasRepeatedElements(t *testing.T) {
	set := func(keys ...string) *Set {
		s := &Set{Name: "s"}
		for _, k := range keys {
			s.Elements = append(s.Elements, Element{Key: k, Value: "goto x"})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		sets []*Set
		want bool
	}{
		{"empty", nil, false},
		{"distinct", []*Set{set("10.0.0.1 . tcp . 80", "10.0.0.1 . tcp . 81")}, false},
		{"same key in two sets", []*Set{set("10.0.0.1"), set("10.0.0.1")}, false},
		{"repeat", []*Set{set("10.0.0.2"), set("10.0.0.1", "10.0.0.3", "10.0.0.1")}, true},
	} {
		rs := &Ruleset{Sets: tc.sets}
		if got := rs.HasRepeatedElements(); got != tc.want {
			t.Errorf("%s: HasRepeatedElements = %v, want %v", tc.name, got, tc.want)
		}
	}
}
