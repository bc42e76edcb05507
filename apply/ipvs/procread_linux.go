package ipvs

import "os"

// procPath is the calling thread's network namespace's IPVS table.
const procPath = "/proc/thread-self/net/ip_vs"

// readProcDests reads the real servers of every virtual server from
// /proc/net/ip_vs in the kernel's namespace.
func (k *NetlinkKernel) readProcDests() (map[procKey][]procDest, error) {
	var out map[procKey][]procDest
	err := k.inNamespace(func() error {
		f, err := os.Open(procPath)
		if err != nil {
			return err
		}
		defer f.Close()
		out, err = parseProcIPVS(f)
		return err
	})
	return out, err
}
