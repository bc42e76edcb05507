package cluster

import (
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/panicsite"
)

// minPerWorker is how many calls each goroutine of forEach must have at
// least: below it the goroutines cost more than they save.
const minPerWorker = 64

// forEach calls fn(i) for every i in [0, n), on as many goroutines as
// there are CPUs, and returns when all calls have. fn must only write
// what belongs to i.
func forEach(n int, fn func(i int)) {
	forEachOn(min(runtime.GOMAXPROCS(0), n/minPerWorker+1), n, fn)
}

// forEachChunk is forEach for calls that each do a lot: a goroutine for
// each call, up to one per CPU; one call runs on the caller's.
func forEachChunk(n int, fn func(i int)) {
	forEachOn(min(runtime.GOMAXPROCS(0), n), n, fn)
}

// forEachOn is forEach on the given number of goroutines. A panic in fn
// is raised again on the caller's goroutine, where the command's recover
// reports it as an error, rather than end the process with a trace.
func forEachOn(workers, n int, fn func(i int)) {
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	var panicked atomic.Pointer[workerPanic]
	for range workers {
		wg.Go(func() {
			defer func() {
				if r := recover(); r != nil {
					panicked.CompareAndSwap(nil, &workerPanic{value: r, site: panicsite.Of()})
					next.Store(int64(n)) // no more calls
				}
			}()
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
	switch p := panicked.Load(); {
	case p == nil:
	case isFault(p.value):
		panic(p.value) // for guardFault: a mapped file shrank
	default:
		panic(p)
	}
}

func isFault(r any) bool {
	_, ok := r.(interface{ Addr() uintptr })
	return ok
}

// workerPanic is a panic of one of forEachOn's goroutines, with where it
// happened, since raising it again loses that goroutine's stack.
type workerPanic struct {
	value any
	site  string
}

func (p *workerPanic) String() string { return fmt.Sprintf("%v%s", p.value, p.site) }
