package otherproxy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strconv"
)

// processName is kube-proxy's comm: its executable's name.
const processName = "kube-proxy"

// ownerUID is the user a kube-proxy runs as: root, as it needs the
// network's administration. Any user can name a process kube-proxy; one
// that is not root's does not stop apply. Tests of a fake procfs set it
// to their own user.
var ownerUID = uint32(0)

// Processes returns the PIDs of root's processes named kube-proxy that
// share the network namespace of the calling process, from procfs
// ("/proc"). A process that ends while it is read, or whose namespace is
// hidden from us, is skipped. An unreadable procfs is an error.
func Processes(procfs string) ([]int, error) {
	self, err := os.Readlink(filepath.Join(procfs, "self", "ns", "net"))
	if err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(procfs)
	if err != nil {
		return nil, err
	}
	var pids []int
	var buf [32]byte
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		dir := procfs + "/" + e.Name()
		if !isKubeProxy(dir+"/comm", buf[:]) || !ownedBy(dir, ownerUID) {
			continue
		}
		ns, err := os.Readlink(dir + "/ns/net")
		if err != nil || ns != self {
			continue
		}
		pids = append(pids, pid)
	}
	slices.Sort(pids)
	return pids, nil
}

// isKubeProxy reads a comm file into buf with one read: the scan of a
// node's every process must stay cheap (os.ReadFile costs twice the
// system calls).
func isKubeProxy(path string, buf []byte) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	n, _ := f.Read(buf)
	f.Close()
	return string(bytes.TrimSuffix(buf[:n], []byte("\n"))) == processName
}
