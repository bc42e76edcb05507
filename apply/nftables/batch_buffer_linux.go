package nftables

import "golang.org/x/sys/unix"

// mapBufferMin is the size from which a batch's buffer is mapped rather
// than allocated: the batch of a whole table (11 MB at 10k Services in
// kube-proxy's layout, 42 MB in the compact one).
const mapBufferMin = 4 << 20

// mapBuffer maps n bytes of zeroed anonymous memory, asking the kernel
// for transparent huge pages. On this project's test VM, memory touched
// for the first time costs 5 to 9 ms a megabyte in 4 KiB pages, and a
// third to two thirds of that in 2 MiB ones; from Go's heap, a large
// buffer is also cleared once more by the runtime unless it is fresh from
// the kernel.
// Where transparent huge pages are off, the advice does nothing and the
// mapping is an ordinary one.
func mapBuffer(n int) ([]byte, error) {
	const huge = 2 << 20
	size := (n + huge - 1) &^ (huge - 1)
	buf, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return nil, err
	}
	_ = unix.Madvise(buf, unix.MADV_HUGEPAGE)
	return buf, nil
}

// unmapBuffer returns a mapBuffer to the kernel; nothing may use it after.
func unmapBuffer(buf []byte) {
	_ = unix.Munmap(buf)
}
