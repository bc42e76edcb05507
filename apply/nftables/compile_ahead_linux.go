package nftables

import (
	"runtime"
	"sync/atomic"
)

// compileAheadMin is the number of rules from which a batch's rules are
// compiled on another goroutine while the batch is encoded: a new table
// (100k rules at 10k Services in the compact layout), not a change.
const compileAheadMin = 4096

// compileChunk is how many rules the compiling goroutine hands over at a
// time.
const compileChunk = 1024

// compiledOp is the compiled rule of one add-rule op, or why it does not
// compile.
type compiledOp struct {
	rule *compiledRule
	err  error
}

// aheadCompiler compiles the rules of a list of ops, in order, on its own
// goroutine, so that compiling (about half of the tool's CPU for a new
// table) runs on a second CPU beside the encoding.
type aheadCompiler struct {
	out   []compiledOp
	ready []chan struct{} // closed when chunk k of out is filled
	stop  atomic.Bool
}

// compileAhead starts compiling the add-rule ops of ops for a table of
// family fam, or returns nil when there are too few of them or one CPU.
// The caller must call done.
func compileAhead(fam byte, ops []op) *aheadCompiler {
	rules := 0
	for _, o := range ops {
		if o.kind == opAddRule {
			rules++
		}
	}
	if rules < compileAheadMin || runtime.GOMAXPROCS(0) < 2 {
		return nil
	}
	a := &aheadCompiler{out: make([]compiledOp, len(ops))}
	for range (len(ops) + compileChunk - 1) / compileChunk {
		a.ready = append(a.ready, make(chan struct{}))
	}
	go a.run(fam, ops)
	return a
}

func (a *aheadCompiler) run(fam byte, ops []op) {
	for k, ready := range a.ready {
		if a.stop.Load() {
			return
		}
		end := min((k+1)*compileChunk, len(ops))
		for i := k * compileChunk; i < end; i++ {
			if ops[i].kind == opAddRule {
				cr, err := compileRule(fam, string(ops[i].rule))
				a.out[i] = compiledOp{cr, err}
			}
		}
		close(ready)
	}
}

// get waits for op i's compiled rule and hands it over.
func (a *aheadCompiler) get(i int) compiledOp {
	<-a.ready[i/compileChunk]
	c := a.out[i]
	a.out[i] = compiledOp{}
	return c
}

// done stops the compiling goroutine after its current chunk.
func (a *aheadCompiler) done() {
	if a != nil {
		a.stop.Store(true)
	}
}
