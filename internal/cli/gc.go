package cli

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
)

// The garbage collector's settings, process by process. GOGC in the
// environment overrides all of them; GOMEMLIMIT turns the startup floor
// off.
//
// A one-shot command (render, plan, apply, trace) lives for well under a
// second at 1k Services and allocates a few tens of megabytes. Go's default
// pacing starts collecting at a 4 MB heap and doubles from there, so such
// a run collected five times while its heap grew: at 1k Services about a
// sixth of a one-shot apply's time went to those collections, their
// pauses, their write barriers and the allocations they slowed. So the
// process starts with a heap floor: no collection before the heap reaches
// startupHeapFloor, then Go's default pacing. A 1k run never collects; a
// 10k run, whose live heap is larger than the floor, peaks where it did.
//
// A long-running command ends the floor when it starts: apply --watch
// then collects at daemonGCPercent, proxy as Go does by default.

// startupHeapFloor is how far the heap may grow before the first
// collection.
const startupHeapFloor = 64 << 20

// daemonGCPercent is the garbage collector's GOGC in watch mode. Go's
// default, 100, lets the heap grow to twice what is live before it
// collects; a node agent's memory is what it keeps at its peak, so watch
// mode collects at one and a half times instead, for somewhat more CPU.
// docs/PERFORMANCE.md has the figures.
const daemonGCPercent = 50

// defaultGCPercent is Go's GOGC.
const defaultGCPercent = 100

// gcMu orders the changes to the collector's settings: the floor's end
// may come from its cleanup's goroutine while watch mode sets its own.
var gcMu sync.Mutex

// heapFloor is set while the startup floor holds; floorGen counts the
// floors set, so that the cleanup of an earlier one (in tests, which set
// several) cannot end a later one.
var (
	heapFloor bool
	floorGen  uint64
)

// SetStartupHeapFloor turns the collector off until the Go runtime holds
// startupHeapFloor bytes; at the first collection the default pacing takes
// over. main calls it before running a command.
func SetStartupHeapFloor() {
	setHeapFloor(startupHeapFloor)
}

func setHeapFloor(bytes int64) {
	if gcSetByEnvironment() {
		return
	}
	gcMu.Lock()
	defer gcMu.Unlock()
	if heapFloor {
		return
	}
	heapFloor = true
	floorGen++
	debug.SetGCPercent(-1)
	// The limit counts all the memory the runtime holds (heap, stacks,
	// its own), not a mapped snapshot file.
	debug.SetMemoryLimit(bytes)
	// The object is garbage at once: its cleanup runs after the first
	// collection, which the memory limit triggers.
	runtime.AddCleanup(new([64]byte), endHeapFloorGen, floorGen)
}

// endHeapFloorGen ends the floor of generation gen, if it still holds.
func endHeapFloorGen(gen uint64) {
	gcMu.Lock()
	defer gcMu.Unlock()
	if gen == floorGen {
		endHeapFloorLocked()
	}
}

// endHeapFloor returns the collector to Go's default pacing, if the floor
// still holds.
func endHeapFloor() {
	gcMu.Lock()
	defer gcMu.Unlock()
	endHeapFloorLocked()
}

func endHeapFloorLocked() {
	if heapFloor {
		heapFloor = false
		debug.SetGCPercent(defaultGCPercent)
		debug.SetMemoryLimit(math.MaxInt64)
	}
}

// tuneDaemonGC ends the startup floor and sets daemonGCPercent, unless
// GOGC in the environment says otherwise.
func tuneDaemonGC() {
	gcMu.Lock()
	defer gcMu.Unlock()
	endHeapFloorLocked()
	if _, set := os.LookupEnv("GOGC"); !set {
		debug.SetGCPercent(daemonGCPercent)
	}
}

func gcSetByEnvironment() bool {
	_, gogc := os.LookupEnv("GOGC")
	_, limit := os.LookupEnv("GOMEMLIMIT")
	return gogc || limit
}
