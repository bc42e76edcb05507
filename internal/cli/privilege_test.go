package cli

import (
	"testing"
)

func TestHasEffectiveCap(t *testing.T) {
	for status, want := range map[string]bool{
		"Name:\tx\nCapEff:\t000001ffffffffff\n": true,
		"CapEff:\t0000000000001000\n":           true,
		"CapEff:\t0000000000000000\n":           false,
		"CapEff:\t0000000000002000\n":           false,
	} {
		if got, err := hasEffectiveCap([]byte(status), capNetAdmin); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", status, got, err, want)
		}
	}
	if _, err := hasEffectiveCap([]byte("Name:\tx\n"), capNetAdmin); err == nil {
		t.Error("no CapEff line: no error")
	}
}
