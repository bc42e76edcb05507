package diff

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// sides rebuilds the old and new lists from a diff's runs.
func sides(runs []lineRun) (old, new []string) {
	for _, r := range runs {
		if r.op != addLines {
			old = append(old, r.lines...)
		}
		if r.op != removeLines {
			new = append(new, r.lines...)
		}
	}
	return old, new
}

func edits(runs []lineRun) int {
	n := 0
	for _, r := range runs {
		if r.op != keepLines {
			n += len(r.lines)
		}
	}
	return n
}

// lcs is the length of the longest common subsequence, by the textbook
// table: the fewest edits are len(a)+len(b)-2·lcs.
func lcs(a, b []string) int {
	t := make([][]int, len(a)+1)
	for i := range t {
		t[i] = make([]int, len(b)+1)
	}
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				t[i][j] = t[i+1][j+1] + 1
			} else {
				t[i][j] = max(t[i+1][j], t[i][j+1])
			}
		}
	}
	return t[0][0]
}

func randomLines(r *rand.Rand, n, alphabet int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("-j KUBE-SEP-%d", r.IntN(alphabet))
	}
	return out
}

// checkShape fails unless runs alternate properly: no two neighbours
// share an op, and between kept runs removals come before additions.
func checkShape(t *testing.T, runs []lineRun) {
	t.Helper()
	for i := 1; i < len(runs); i++ {
		if runs[i].op == runs[i-1].op {
			t.Fatalf("runs %d and %d share op %d", i-1, i, runs[i].op)
		}
		if runs[i].op == removeLines && runs[i-1].op == addLines {
			t.Fatalf("run %d removes after an addition", i)
		}
	}
	for i, r := range runs {
		if len(r.lines) == 0 {
			t.Fatalf("run %d is empty", i)
		}
	}
}

// TestLineDiffIsShortest holds the diff to random pairs of rule lists: it
// must rebuild both sides and use exactly the fewest edits.
func TestLineDiffIsShortest(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 37))
	for round := range 3000 {
		a := randomLines(r, r.IntN(14), 1+r.IntN(5))
		b := randomLines(r, r.IntN(14), 1+r.IntN(5))
		runs := lineDiff(a, b)
		gotA, gotB := sides(runs)
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("round %d: %q -> %q: diff rebuilds %q -> %q", round, a, b, gotA, gotB)
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits(runs) != want {
			t.Fatalf("round %d: %q -> %q: %d edits, the fewest is %d", round, a, b, edits(runs), want)
		}
		checkShape(t, runs)
	}
}

// TestLineDiffLongChain is a KUBE-SERVICES-sized chain with a few rules
// changed in the middle: the diff finds just those.
func TestLineDiffLongChain(t *testing.T) {
	old := make([]string, 30000)
	for i := range old {
		old[i] = fmt.Sprintf("-d 10.96.%d.%d/32 -j KUBE-SVC-%05d", i/256, i%256, i)
	}
	new := slices.Clone(old)
	new[100] = "-d 10.96.0.100/32 -j KUBE-SVC-CHANGED"
	new = slices.Delete(new, 20000, 20002)
	new = slices.Insert(new, 25000, "-d 10.97.0.1/32 -j KUBE-SVC-NEW")
	runs := lineDiff(old, new)
	gotA, gotB := sides(runs)
	if !slices.Equal(gotA, old) || !slices.Equal(gotB, new) {
		t.Fatal("the diff does not rebuild both chains")
	}
	added, removed := lineDiffCounts(old, new)
	if added != 2 || removed != 3 {
		t.Errorf("added %d, removed %d; want 2 and 3", added, removed)
	}
}

// TestLineDiffPastTheBound: two chains that differ by more than
// maxLineEdits rules between their common head and tail get the whole
// middle removed, then added; a true diff, the same on every run.
func TestLineDiffPastTheBound(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	old := append([]string{"head"}, randomLines(r, maxLineEdits, 1<<30)...)
	new := append([]string{"head"}, randomLines(r, maxLineEdits, 1<<30)...)
	old, new = append(old, "tail"), append(new, "tail")
	runs := lineDiff(old, new)
	ops := []lineOp{}
	for _, r := range runs {
		ops = append(ops, r.op)
	}
	if want := []lineOp{keepLines, removeLines, addLines, keepLines}; !slices.Equal(ops, want) {
		t.Fatalf("ops %v, want %v", ops, want)
	}
	gotA, gotB := sides(runs)
	if !slices.Equal(gotA, old) || !slices.Equal(gotB, new) {
		t.Fatal("the diff does not rebuild both chains")
	}
	// Just inside the bound, the search still finds the shortest script.
	old2, new2 := old[:maxLineEdits/2], new[:maxLineEdits/2]
	if got, want := edits(lineDiff(old2, new2)), len(old2)+len(new2)-2*lcs(old2, new2); got != want {
		t.Errorf("inside the bound: %d edits, the fewest is %d", got, want)
	}
}

// TestLineDiffScatteredPastTheBound: a KUBE-SERVICES-sized chain with
// more than maxLineEdits rules changed, spread over the whole chain (as
// when 501 Services across namespaces change), still shows just those:
// the unique rules between them anchor the diff.
func TestLineDiffScatteredPastTheBound(t *testing.T) {
	old := make([]string, 30000)
	for i := range old {
		old[i] = fmt.Sprintf("-d 10.96.%d.%d/32 -j KUBE-SVC-%05d", i/256, i%256, i)
	}
	new := slices.Clone(old)
	for k := range 501 {
		new[k*59] = fmt.Sprintf("-d 10.97.0.%d/32 -j KUBE-SVC-NEW%d", k%256, k)
	}
	runs := lineDiff(old, new)
	gotA, gotB := sides(runs)
	if !slices.Equal(gotA, old) || !slices.Equal(gotB, new) {
		t.Fatal("the diff does not rebuild both chains")
	}
	if added, removed := lineDiffCounts(old, new); added != 501 || removed != 501 {
		t.Errorf("added %d, removed %d; want 501 and 501", added, removed)
	}
	checkShape(t, runs)
}

// TestLineDiffByAnchors holds the anchored path, which lineDiff takes
// only past maxLineEdits, to random lists with a bound of a few edits:
// the diff must still rebuild both sides, in the right shape.
func TestLineDiffByAnchors(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 5))
	for round := range 3000 {
		a := randomLines(r, r.IntN(30), 2+r.IntN(40))
		b := randomLines(r, r.IntN(30), 2+r.IntN(40))
		rb := runBuilder{limit: r.IntN(4)}
		rb.diff(a, b)
		gotA, gotB := sides(rb.runs)
		if !slices.Equal(gotA, a) || !slices.Equal(gotB, b) {
			t.Fatalf("round %d: %q -> %q: diff rebuilds %q -> %q", round, a, b, gotA, gotB)
		}
		checkShape(t, rb.runs)
	}
}

// TestLongestRising checks the anchors' order against every subsequence
// of small random lists.
func TestLongestRising(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for round := range 500 {
		n := r.IntN(10)
		pairs := make([][2]int, n)
		for i := range pairs {
			pairs[i] = [2]int{i, r.IntN(12)}
		}
		got := longestRising(pairs)
		for i := 1; i < len(got); i++ {
			if got[i][0] <= got[i-1][0] || got[i][1] <= got[i-1][1] {
				t.Fatalf("round %d: %v does not rise", round, got)
			}
		}
		best := 0
		for mask := range 1 << n {
			last, ok, size := -1, true, 0
			for i := range n {
				if mask&(1<<i) != 0 {
					ok = ok && pairs[i][1] > last
					last, size = pairs[i][1], size+1
				}
			}
			if ok {
				best = max(best, size)
			}
		}
		if len(got) != best {
			t.Fatalf("round %d: %v: %d pairs, the longest rising run has %d", round, pairs, len(got), best)
		}
	}
}

// TestRuleLikeTheElision: a rule whose text is "..." is printed as a
// rule, not taken for the mark of cut context.
func TestRuleLikeTheElision(t *testing.T) {
	var b strings.Builder
	writeLineDiff(&b, []string{"x", "..."}, []string{"y", "..."}, "-A C ", "")
	if want := "--A C x\n+-A C y\n -A C ...\n"; b.String() != want {
		t.Errorf("got %q, want %q", b.String(), want)
	}
}
