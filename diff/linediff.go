package diff

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
// parts of two chains that differ. Past it (two chains with more than a
// thousand rules removed and added between their common head and tail)
// the differing part is shown as all removed, then all added: still a
// true diff, the same on every run, and found in O((N+M)·maxLineEdits)
// time with at most about maxLineEdits² ints of memory.
const maxLineEdits = 1000

// lineDiff diffs two rule lists line by line, with the fewest removals
// and additions up to maxLineEdits; R is iptables' or nftables' rule
// text. Between two kept runs, removed lines come before added ones.
func lineDiff[R ~string](old, new []R) []lineRun {
	a, b := toStrings(old), toStrings(new)
	head := 0
	for head < len(a) && head < len(b) && a[head] == b[head] {
		head++
	}
	tail := 0
	for tail < len(a)-head && tail < len(b)-head && a[len(a)-1-tail] == b[len(b)-1-tail] {
		tail++
	}
	var out runBuilder
	out.push(keepLines, a[:head]...)
	out.middle(a[head:len(a)-tail], b[head:len(b)-tail])
	out.push(keepLines, a[len(a)-tail:]...)
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
	runs []lineRun
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

// middle diffs the parts between the common head and tail.
func (rb *runBuilder) middle(a, b []string) {
	ids := lineIDs(a, b)
	x, y := ids[:len(a)], ids[len(a):]
	trace, ok := shortestEdits(x, y, maxLineEdits)
	if !ok {
		rb.push(removeLines, a...)
		rb.push(addLines, b...)
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
// additions that turn x into y. trace[d] holds, for each diagonal
// k = -d..d (at index k+d), the furthest x reached with d edits, or -1
// where no path of d edits stays inside both lists. It gives up,
// returning false, when more than limit edits are needed.
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
		start, down, _ := stepOnto(trace[d-1], d, k, n, m)
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
	for n, mv := range rev {
		out[len(rev)-1-n] = mv
	}
	return out
}
