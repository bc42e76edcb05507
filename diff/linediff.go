package diff

import (
	"cmp"
	"slices"
)

// A line diff for plan's changed chains. It must be deterministic: apply
// with a saved plan prints the plan again and refuses it unless the text
// is the same, so a diff that gave up after a wall-clock deadline (as
// diffmatchpatch does after one second) could refuse a good plan on a
// loaded machine. This one bounds its work by a count of edits instead.

// lineOp says what a run of lines is in the diff.
type lineOp int8

const (
	keepLines lineOp = iota
	removeLines
	addLines
)

// lineRun is consecutive lines with one op.
type lineRun struct {
	op    lineOp
	lines []string
}

// maxLineEdits bounds the search for a shortest edit script between the
// parts of two chains that differ, in O((N+M)·maxLineEdits) time and at
// most about maxLineEdits² ints of memory. Past it (a chain of
// KUBE-SERVICES sorted by name, with more than 500 Services changed
// across it), the part is cut at the rules that occur once in each
// chain and in the same order (patience diff's anchors), and each piece
// between two anchors is diffed alone, once more within the bound. A
// piece that still needs more edits is shown as all removed, then all
// added: a true diff, though not the shortest.
const maxLineEdits = 1000

// lineDiff diffs two rule lists line by line, with the fewest removals
// and additions within maxLineEdits; R is iptables' or nftables' rule
// text. Between two kept runs, removed lines come before added ones.
func lineDiff[R ~string](old, new []R) []lineRun {
	out := runBuilder{limit: maxLineEdits}
	out.diff(toStrings(old), toStrings(new))
	return out.runs
}

func toStrings[R ~string](rules []R) []string {
	out := make([]string, len(rules))
	for i, r := range rules {
		out[i] = string(r)
	}
	return out
}

// runBuilder collects lines into runs, merging neighbours with the same
// op. Nothing needs reordering: shortestEdits breaks ties as Myers'
// paper does, which puts each region's removals before its additions
// (TestLineDiffIsShortest holds that).
type runBuilder struct {
	runs  []lineRun
	limit int // maxLineEdits; tests set less
	// anchored: the lists being diffed are pieces between anchors, which
	// are not cut again. So the whole diff costs at most two bounded
	// searches over every line, whatever the chains hold.
	anchored bool
}

func (rb *runBuilder) push(op lineOp, lines ...string) {
	if len(lines) == 0 {
		return
	}
	if n := len(rb.runs); n > 0 && rb.runs[n-1].op == op {
		rb.runs[n-1].lines = append(rb.runs[n-1].lines, lines...)
		return
	}
	rb.runs = append(rb.runs, lineRun{op, append([]string(nil), lines...)})
}

// diff diffs a and b: their common head and tail are kept, and what is
// between them is diffed by middle.
func (rb *runBuilder) diff(a, b []string) {
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	rb.push(keepLines, a[:head]...)
	rb.middle(a[head:len(a)-tail], b[head:len(b)-tail])
	rb.push(keepLines, a[len(a)-tail:]...)
}

// middle diffs two lists that differ in their first and last lines: by
// the shortest edit script, or, when that needs more than maxLineEdits,
// piece by piece between the anchors.
func (rb *runBuilder) middle(a, b []string) {
	if len(a) == 0 || len(b) == 0 {
		rb.push(removeLines, a...)
		rb.push(addLines, b...)
		return
	}
	ids := lineIDs(a, b)
	x, y := ids[:len(a)], ids[len(a):]
	trace, ok := shortestEdits(x, y, rb.limit)
	if !ok {
		rb.byAnchors(a, b, x, y)
		return
	}
	for _, m := range walkBack(trace, len(x), len(y)) {
		switch m.op {
		case keepLines:
			rb.push(keepLines, a[m.x])
		case removeLines:
			rb.push(removeLines, a[m.x])
		case addLines:
			rb.push(addLines, b[m.y])
		}
	}
}

// byAnchors keeps the anchors of a and b (see uniqueAnchors) and diffs
// each piece between two of them alone; without anchors, or in such a
// piece, a is removed and b added.
func (rb *runBuilder) byAnchors(a, b []string, x, y []int32) {
	var anchors [][2]int
	if !rb.anchored {
		anchors = uniqueAnchors(x, y)
	}
	if len(anchors) == 0 {
		rb.push(removeLines, a...)
		rb.push(addLines, b...)
		return
	}
	rb.anchored = true
	defer func() { rb.anchored = false }()
	i, j := 0, 0
	for _, an := range anchors {
		rb.diff(a[i:an[0]], b[j:an[1]])
		rb.push(keepLines, a[an[0]])
		i, j = an[0]+1, an[1]+1
	}
	rb.diff(a[i:], b[j:])
}

// uniqueAnchors returns the pairs (i, j) with x[i] == y[j] for the lines
// that occur once in x and once in y, the longest run of them whose j
// rise with i: lines the two lists keep, in the same order.
func uniqueAnchors(x, y []int32) [][2]int {
	count := map[int32][2]int{} // occurrences in x and in y
	for _, id := range x {
		c := count[id]
		c[0]++
		count[id] = c
	}
	at := map[int32]int{}
	for j, id := range y {
		c := count[id]
		c[1]++
		count[id] = c
		at[id] = j
	}
	var pairs [][2]int
	for i, id := range x {
		if count[id] == [2]int{1, 1} {
			pairs = append(pairs, [2]int{i, at[id]})
		}
	}
	return longestRising(pairs)
}

// longestRising returns the longest subsequence of pairs, which are in
// rising order of their first element, whose second elements rise too
// (patience sorting: O(n log n)).
func longestRising(pairs [][2]int) [][2]int {
	var tops []int // tops[k]: index in pairs of the smallest end of a run of k+1
	back := make([]int, len(pairs))
	for p, pr := range pairs {
		k, _ := slices.BinarySearchFunc(tops, pr[1], func(t, v int) int { return cmp.Compare(pairs[t][1], v) })
		if k > 0 {
			back[p] = tops[k-1]
		} else {
			back[p] = -1
		}
		if k == len(tops) {
			tops = append(tops, p)
		} else {
			tops[k] = p
		}
	}
	out := make([][2]int, len(tops))
	p := -1
	if len(tops) > 0 {
		p = tops[len(tops)-1]
	}
	for k := len(tops) - 1; k >= 0; k-- {
		out[k] = pairs[p]
		p = back[p]
	}
	return out
}

// lineIDs numbers the distinct lines of a then b, so that the search
// compares ints rather than strings.
func lineIDs(a, b []string) []int32 {
	seen := map[string]int32{}
	ids := make([]int32, 0, len(a)+len(b))
	for _, s := range append(append([]string(nil), a...), b...) {
		id, ok := seen[s]
		if !ok {
			id = int32(len(seen))
			seen[s] = id
		}
		ids = append(ids, id)
	}
	return ids
}

// shortestEdits is Myers' greedy search for the fewest removals and
// additions that turn x into y. trace[d] holds, for the diagonals
// k = -d, -d+2, ..., d (at index k+d), the x where the search's path of
// d edits on k ends, or -1 where it dropped the step because it would
// leave the grid (no shortest script passes there); the other indices
// are unused, and the last row stops at the diagonal that reached the
// end. It gives up, returning false, when more than limit edits are
// needed.
func shortestEdits(x, y []int32, limit int) (trace [][]int, ok bool) {
	n, m := len(x), len(y)
	var prev []int
	for d := 0; d <= limit; d++ {
		cur := make([]int, 2*d+1)
		for k := -d; k <= d; k++ {
			cur[k+d] = -1
			if (k+d)%2 != 0 {
				continue
			}
			i, _, reached := stepOnto(prev, d, k, n, m)
			if !reached {
				continue
			}
			j := i - k
			for i < n && j < m && x[i] == y[j] {
				i, j = i+1, j+1
			}
			cur[k+d] = i
			if i == n && j == m {
				return append(trace, cur), true
			}
		}
		trace = append(trace, cur)
		prev = cur
	}
	return nil, false
}

// stepOnto is where diagonal k starts after d edits (before its run of
// equal lines): one addition down from where diagonal k+1 got with d-1
// edits, or one removal right from diagonal k-1, whichever gets further
// (the addition on a tie). prev is trace[d-1]; down says which step.
func stepOnto(prev []int, d, k, n, m int) (i int, down, ok bool) {
	if d == 0 {
		return 0, false, true
	}
	at := func(k int) int {
		if k < -(d-1) || k > d-1 {
			return -1
		}
		return prev[k+d-1]
	}
	di, ri := at(k+1), at(k-1)
	downOK := di >= 0 && di-k <= m
	rightOK := ri >= 0 && ri+1 <= n
	switch {
	case downOK && (!rightOK || di >= ri+1):
		return di, true, true
	case rightOK:
		return ri + 1, false, true
	}
	return 0, false, false
}

// move is one step of the edit script: keep or remove old line x, or add
// new line y.
type move struct {
	op   lineOp
	x, y int
}

// walkBack follows trace from (n, m) back to (0, 0) and returns the moves
// in order.
func walkBack(trace [][]int, n, m int) []move {
	var rev []move
	i, j := n, m
	for d := len(trace) - 1; d > 0; d-- {
		k := i - j
		start, down, ok := stepOnto(trace[d-1], d, k, n, m)
		if !ok {
			panic("diff: the edit trace has no step onto its own path")
		}
		for i > start {
			rev = append(rev, move{keepLines, i - 1, j - 1})
			i, j = i-1, j-1
		}
		if down {
			rev = append(rev, move{addLines, i, j - 1})
			j--
		} else {
			rev = append(rev, move{removeLines, i - 1, j})
			i--
		}
	}
	for i > 0 {
		rev = append(rev, move{keepLines, i - 1, j - 1})
		i, j = i-1, j-1
	}
	out := make([]move, len(rev))
	for at, mv := range rev {
		out[len(rev)-1-at] = mv
	}
	return out
}
