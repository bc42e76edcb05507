//go:build unix

package cluster

import (
	"os"
	"syscall"
)

// mapFile maps f read-only when it is a non-empty regular file, and
// otherwise (a pipe, a device, an empty file) reads it; unmap is nil then.
// Either way it holds to the limits of readFile.
func mapFile(f *os.File) (data []byte, unmap func(), err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if err := checkFileSize(st); err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() || st.Size() == 0 || int64(int(st.Size())) != st.Size() {
		data, err = readFile(f, st)
		return data, nil, err
	}
	data, err = syscall.Mmap(int(f.Fd()), 0, int(st.Size()), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil {
		// Some file systems cannot map files: read it instead.
		data, err = readFile(f, st)
		return data, nil, err
	}
	return data, func() { _ = syscall.Munmap(data) }, nil
}
