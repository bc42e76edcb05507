//go:build !unix

package cluster

import (
	"os"
)

// mapFile reads f: only Unix systems map snapshot files.
func mapFile(f *os.File) (data []byte, unmap func(), err error) {
	st, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	if err := checkFileSize(st); err != nil {
		return nil, nil, err
	}
	data, err = readFile(f, st)
	return data, nil, err
}
