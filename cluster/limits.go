package cluster

import (
	"io"
	"os"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/inputlimit"
)

// A snapshot file is input that the tool does not control; these bound
// what reading one may cost (docs/INPUT.md). A 10k-Service `kubectl get
// -o json` is about 110 MB.
//
// A regular file is mapped, not read (mapfile.go), so its size costs
// address space rather than heap: up to maxFileSize. Standard input, a
// pipe or a device is read into memory, where /dev/zero would otherwise
// take all there is: up to maxStreamSize, read in pieces that stop at
// the limit. Tests lower both.
var (
	maxFileSize   int64 = 1 << 30
	maxStreamSize int64 = 256 << 20
)

const (
	fileWhat   = "a snapshot file"
	streamWhat = "a snapshot read from standard input, a pipe or a device"
)

// checkFileSize refuses a regular file over maxFileSize before any of it
// is read or mapped.
func checkFileSize(st os.FileInfo) error {
	if st.Mode().IsRegular() && st.Size() > maxFileSize {
		return &inputlimit.TooLargeError{What: fileWhat, Limit: maxFileSize}
	}
	return nil
}

// readFile reads f, which is not mapped, to its limit: a regular file's
// (which may have grown since its size was checked), or a stream's.
func readFile(f *os.File, st os.FileInfo) ([]byte, error) {
	if st.Mode().IsRegular() && st.Size() > 0 {
		return inputlimit.ReadAll(f, maxFileSize, fileWhat)
	}
	return readStream(f)
}

// readStream reads standard input, a pipe or a device, to maxStreamSize.
func readStream(r io.Reader) ([]byte, error) {
	return inputlimit.ReadAll(r, maxStreamSize, streamWhat)
}
