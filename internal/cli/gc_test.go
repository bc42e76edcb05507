package cli

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

// TestHeapFloor: with the floor set, allocating less than it collects
// nothing; reaching it collects, and then Go's default pacing is back.
func TestHeapFloor(t *testing.T) {
	isolateGC(t)
	runtime.GC()
	floor := runtimeBytes() + 48<<20
	gcs := numGC()
	setHeapFloor(floor)
	if !floorHolds() || gcPercent() != -1 || debug.SetMemoryLimit(-1) != floor {
		t.Fatalf("floor set: holding %v, GOGC %d, limit %d; want true, off, %d", floorHolds(), gcPercent(), debug.SetMemoryLimit(-1), floor)
	}
	var keep [][]byte
	for range 16 { // 16 MiB, well under the floor
		keep = append(keep, make([]byte, 1<<20))
	}
	if n := numGC(); n != gcs {
		t.Errorf("%d collections below the floor, want none", n-gcs)
	}
	deadline := time.Now().Add(10 * time.Second)
	for floorHolds() && time.Now().Before(deadline) {
		keep = append(keep, make([]byte, 1<<20))
		if len(keep) > 32 {
			keep = keep[1:]
		}
		time.Sleep(time.Millisecond)
	}
	runtime.KeepAlive(keep)
	if floorHolds() {
		t.Fatal("the floor still holds 10 s after the heap passed it")
	}
	if numGC() == gcs || gcPercent() != defaultGCPercent || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("after the floor: %d collections, GOGC %d, limit %d; want some, %d, none", numGC()-gcs, gcPercent(), debug.SetMemoryLimit(-1), defaultGCPercent)
	}
}

// TestDaemonEndsHeapFloor: a long-running command collects at its own
// pace from the start.
func TestDaemonEndsHeapFloor(t *testing.T) {
	isolateGC(t)
	setHeapFloor(1 << 40)
	tuneDaemonGC()
	if floorHolds() || gcPercent() != daemonGCPercent || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("watch mode: floor %v, GOGC %d, limit %d; want false, %d, none", floorHolds(), gcPercent(), debug.SetMemoryLimit(-1), daemonGCPercent)
	}
}

// floorHolds reports whether the startup floor holds.
func floorHolds() bool {
	gcMu.Lock()
	defer gcMu.Unlock()
	return heapFloor
}

// isolateGC runs the test with no GOGC or GOMEMLIMIT in the environment,
// and leaves Go's default collector after it.
func isolateGC(t *testing.T) {
	t.Helper()
	unsetEnv(t, "GOGC")
	unsetEnv(t, "GOMEMLIMIT")
	t.Cleanup(func() {
		endHeapFloor()
		debug.SetGCPercent(defaultGCPercent)
	})
}

// unsetEnv unsets key for the test, and sets it back after.
func unsetEnv(t *testing.T, key string) {
	t.Helper()
	t.Setenv(key, "")
	os.Unsetenv(key)
}

// gcPercent reads GOGC's current value.
func gcPercent() int {
	p := debug.SetGCPercent(0)
	debug.SetGCPercent(p)
	return p
}

func numGC() uint32 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.NumGC
}

// runtimeBytes is about what the memory limit counts: what the runtime
// holds from the OS and has not returned.
func runtimeBytes() int64 {
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.Sys - ms.HeapReleased)
}

// TestStaleCleanupKeepsTheFloor: the cleanup of an ended floor does not
// end the next one.
func TestStaleCleanupKeepsTheFloor(t *testing.T) {
	isolateGC(t)
	setHeapFloor(1 << 40)
	gcMu.Lock()
	stale := floorGen
	gcMu.Unlock()
	endHeapFloor()
	setHeapFloor(1 << 40)
	endHeapFloorGen(stale)
	if !floorHolds() || gcPercent() != -1 {
		t.Errorf("after an earlier floor's cleanup: floor %v, GOGC %d; want it held, off", floorHolds(), gcPercent())
	}
}
