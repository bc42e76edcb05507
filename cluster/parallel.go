package cluster

import (
	"runtime"
	"sync"
	"sync/atomic"
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

// forEachOn is forEach on the given number of goroutines.
func forEachOn(workers, n int, fn func(i int)) {
	if workers <= 1 {
		for i := range n {
			fn(i)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for i := int(next.Add(1) - 1); i < n; i = int(next.Add(1) - 1) {
				fn(i)
			}
		})
	}
	wg.Wait()
}
