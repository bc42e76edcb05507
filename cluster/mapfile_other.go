//go:build !unix

package cluster

import (
	"io"
	"os"
)

// mapFile reads f: only Unix systems map snapshot files.
func mapFile(f *os.File) (data []byte, unmap func(), err error) {
	data, err = io.ReadAll(f)
	return data, nil, err
}
