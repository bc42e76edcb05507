package ctsysctl

import (
	"bufio"
	"errors"
	"os"
	"strconv"
	"strings"
	"time"
)

// readOnlySysFSMessage is what kube-proxy v1.25 reported, as a node event,
// when /sys was read-only and the hash size had to grow.
const readOnlySysFSMessage = "/sys is read-only: cannot modify conntrack limits, problems may arise later (If running Docker, see docker issue #24000)"

// WantedV125 returns what kube-proxy v1.25, whose userspace mode the tool
// runs, wrote at startup (cmd/kube-proxy/app/conntrack.go there): only
// the table size, the hash size and the two TCP timeouts, each only ever
// raised; the table size not capped. When /sys is mounted read-only and
// the hash size must grow, v1.25 went on without it and said so in a node
// event: warn says the same, and the hash size is left out.
func (n Node) WantedV125(c Config) (out []Setting, warn string, err error) {
	want := 0
	if c.MaxPerCore > 0 {
		want = max(int(c.MaxPerCore)*n.NumCPU(), int(c.Min))
	}
	if want > 0 {
		if out, warn, err = n.wantedSizeV125(want); err != nil {
			return nil, "", err
		}
	}
	for _, s := range []struct {
		path string
		d    time.Duration
	}{
		{TCPEstablishedTimeoutSysctl, c.TCPEstablishedTimeout},
		{TCPCloseWaitTimeoutSysctl, c.TCPCloseWaitTimeout},
	} {
		v := int(s.d / time.Second)
		if cur, err := n.readInt(s.path); s.d > 0 && (err != nil || cur < v) {
			out = append(out, Setting{s.path, strconv.Itoa(v)})
		}
	}
	return out, warn, nil
}

func (n Node) wantedSizeV125(want int) ([]Setting, string, error) {
	var out []Setting
	cur, err := n.readInt(MaxSysctl)
	if err != nil || cur < want {
		if n.readOnly(MaxSysctl) {
			return nil, "nf_conntrack_max (" + strconv.Itoa(cur) + ") is read-only in this network namespace; kube-proxy would set it to " + strconv.Itoa(want) + ", and fail", nil
		}
		out = append(out, Setting{MaxSysctl, strconv.Itoa(want)})
	}
	hash, err := n.readInt(HashsizeFile)
	if err != nil {
		return nil, "", err
	}
	if hash >= want/4 {
		return out, "", nil
	}
	rw, err := n.sysfsWritable()
	if err != nil {
		return nil, "", err
	}
	if !rw {
		return out, readOnlySysFSMessage, nil
	}
	return append(out, Setting{HashsizeFile, strconv.Itoa(want / 4)}), "", nil
}

// sysfsWritable reads /proc/mounts as kube-proxy v1.25 did: the first
// sysfs mount decides, writable when its first option is rw.
func (n Node) sysfsWritable() (bool, error) {
	f, err := os.Open(n.file("/proc/mounts"))
	if err != nil {
		return false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 4 || fields[2] != "sysfs" {
			continue
		}
		return strings.Split(fields[3], ",")[0] == "rw", nil
	}
	if err := sc.Err(); err != nil {
		return false, err
	}
	return false, errors.New("no sysfs mounted")
}
