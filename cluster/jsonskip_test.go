package cluster

import (
	"math/rand/v2"
	"testing"
)

// valueEndBytewise is valueEnd as it was before nextStructural: one byte
// at a time. The tests hold valueEnd to it.
func valueEndBytewise(b []byte, i int) int {
	depth := 0
	for ; i < len(b); i++ {
		switch b[i] {
		case '"':
			i = jsonStringEnd(b, i)
			if depth == 0 {
				return i + 1
			}
		case '{', '[':
			depth++
		case '}', ']':
			depth--
			if depth == 0 {
				return i + 1
			}
			if depth < 0 {
				return i
			}
		case ',', ' ', '\t', '\r', '\n', ':':
			if depth == 0 {
				return i
			}
		}
	}
	return i
}

// TestValueEndIsBytewise: on random text over an alphabet of every byte
// that matters to the scanner, the bytes that fold onto '{' and '}' with
// 0x20 but are none of them (';', '=', 'y'...), and bytes above 0x7f,
// valueEnd ends every value where the bytewise scan does, from every
// offset and at every alignment.
func TestValueEndIsBytewise(t *testing.T) {
	alphabet := []byte("\"\\{}[],: \n\t\r{[;=yz}]0a\x5a\x5c\x7a\x7c\xfb\xfd\x80\xff")
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		b := make([]byte, rng.IntN(64))
		for j := range b {
			b[j] = alphabet[rng.IntN(len(alphabet))]
		}
		for i := range b {
			if got, want := valueEnd(b, i), valueEndBytewise(b, i); got != want {
				t.Fatalf("%q from %d: valueEnd %d, bytewise %d", b, i, got, want)
			}
		}
	}
}

func TestNextStructural(t *testing.T) {
	for _, c := range []struct {
		in   string
		from int
		want int
	}{
		{"", 0, 0}, {"abc", 0, 3}, {"        x", 0, 9}, {"        {", 0, 8},
		{"  \"", 0, 2}, {"[", 0, 0}, {"]", 0, 0}, {"a}b", 0, 1}, {"ab;=yz[", 0, 6},
		{"{{{{{{{{{", 3, 3}, {"0123456789abcdef]", 1, 16}, {"\xfb\xfd\xdb\xdd\x5a\x5c\x7a\x7c\"", 0, 8},
	} {
		if got := nextStructural([]byte(c.in), c.from); got != c.want {
			t.Errorf("nextStructural(%q, %d) = %d, want %d", c.in, c.from, got, c.want)
		}
	}
}
