package benchsize

import (
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	defaults := []int{1000, 10000, 30000}
	for v, want := range map[string][]int{
		"":           defaults,
		"smallest":   {1000},
		"100":        {100},
		"1000,50000": {1000, 50000},
		" 5 , 6 ":    {5, 6},
	} {
		if got, err := parse(v, defaults); err != nil || !slices.Equal(got, want) {
			t.Errorf("%q: %v, %v; want %v", v, got, err, want)
		}
	}
	for _, bad := range []string{"large", "0", "1000,", "-5"} {
		if _, err := parse(bad, defaults); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
