package cluster

import (
	"errors"
	"runtime/debug"
)

// A snapshot file is mapped into memory rather than read where the
// platform allows it (mapfile_unix.go). On a VM, memory that a process
// touches for the first time is costly: reading a 75 MB snapshot of 10k
// Services into the heap took 380-480 ms on the 2-core test VM, mapping
// and touching the same page-cached file 7-25 ms. Nothing decoded refers
// to the file's bytes (strings and slices are copies), so the mapping
// ends when decoding does.
//
// A mapped file that shrinks while it is read (a cron job rewriting it
// with ">") makes the reads past its new end fault. Decoding a mapping
// therefore turns faults into panics (debug.SetPanicOnFault) and those
// into errChangedWhileRead, on every goroutine that reads it.

var errChangedWhileRead = errors.New("the file changed while it was read: read it again")

// decodeMapped is Decode on a mapped file.
func decodeMapped(name string, data []byte, r reading) (snap *Snapshot, err error) {
	defer guardFault(func(e error) { snap, err = nil, &DecodeError{File: name, Err: e} })()
	r.mapped = true
	return decode(name, data, r)
}

// guardFault makes the calling goroutine's memory faults panics. Its
// result, deferred, recovers such a panic and passes errChangedWhileRead
// to fail; other panics go on.
func guardFault(fail func(error)) func() {
	old := debug.SetPanicOnFault(true)
	return func() {
		debug.SetPanicOnFault(old)
		r := recover()
		if r == nil {
			return
		}
		if isFault(r) {
			fail(errChangedWhileRead)
			return
		}
		panic(r)
	}
}
