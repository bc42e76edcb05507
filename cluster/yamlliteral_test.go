package cluster

import (
	"math/rand/v2"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestBlockLiteralsAgreeWithSigsYAML: literal block scalars and plain
// scalars with flow characters inside, in random mappings with random
// indentation, blank lines and trailing spaces, convert on the block path
// to what sigs.k8s.io/yaml makes of them, or are left to it.
func TestBlockLiteralsAgreeWithSigsYAML(t *testing.T) {
	rng := rand.New(rand.NewPCG(37, 1))
	headers := []string{"|", "|-", "|+", "|1", "|2", "|3-", "|+2", "|-1", "| ", "|2+"}
	words := []string{"x", "k:{\"p\":80}", "a,b", "{x}", "[y]", "# h", "&a", "*b", "- z", "y: z", "'q'", "\"q\"", "0b1", "é", ""}
	taken := 0
	for range 3000 {
		var b strings.Builder
		for k := range 1 + rng.IntN(3) {
			ind := strings.Repeat(" ", 2*rng.IntN(2))
			b.WriteString(ind + "k" + string(rune('a'+k)) + ": " + headers[rng.IntN(len(headers))] + "\n")
			for range rng.IntN(4) {
				switch rng.IntN(5) {
				case 0:
					b.WriteString(strings.Repeat(" ", rng.IntN(6)) + "\n")
				default:
					b.WriteString(strings.Repeat(" ", len(ind)+1+rng.IntN(4)) + words[rng.IntN(len(words))] + strings.Repeat(" ", rng.IntN(2)) + "\n")
				}
			}
			if rng.IntN(3) == 0 {
				b.WriteString(ind + words[rng.IntN(len(words))] + "x: v\n")
			}
		}
		doc := b.String()
		got, err := blockJSON([]byte(doc))
		if err != nil {
			continue
		}
		taken++
		want, wantErr := yaml.YAMLToJSONStrict([]byte(doc))
		if wantErr != nil || !sameJSON(t, got, want) {
			t.Errorf("%q: block path %s; sigs.k8s.io/yaml %s, %v", doc, got, want, wantErr)
		}
	}
	if taken < 300 {
		t.Errorf("the block path took %d of 3000 documents: the test tests little", taken)
	}
}
