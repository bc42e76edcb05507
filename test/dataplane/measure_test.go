package dataplane

import (
	"bufio"
	"bytes"
	"cmp"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// connectTimeout bounds one connect: a lost SYN costs a one-second
// retransmit, which a sample must not hide.
const connectTimeout = 3 * time.Second

// connect opens a TCP connection to dst from the calling thread's
// namespace and waits until it is established (the SYN-ACK has come back
// through the DNAT), then resets it (SO_LINGER 0: no TIME_WAIT, and the
// conntrack entry closes). It returns the time from connect(2) to
// established. The socket is non-blocking and waited on with poll(2),
// because the Go runtime's signals interrupt a blocking connect.
func connect(dst netip.AddrPort) (time.Duration, error) {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC|unix.SOCK_NONBLOCK, 0)
	if err != nil {
		return 0, fmt.Errorf("socket: %w", err)
	}
	defer unix.Close(fd)
	if err := unix.SetsockoptLinger(fd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1}); err != nil {
		return 0, fmt.Errorf("SO_LINGER: %w", err)
	}
	sa := &unix.SockaddrInet4{Addr: dst.Addr().As4(), Port: int(dst.Port())}
	start := time.Now()
	if err := unix.Connect(fd, sa); err != nil && err != unix.EINPROGRESS {
		return 0, fmt.Errorf("connect to %s: %w", dst, err)
	}
	if err := waitWritable(fd, start.Add(connectTimeout)); err != nil {
		return 0, fmt.Errorf("connect to %s: %w", dst, err)
	}
	elapsed := time.Since(start)
	if soErr, err := unix.GetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ERROR); err != nil || soErr != 0 {
		return 0, fmt.Errorf("connect to %s: %w", dst, cmp.Or(err, error(unix.Errno(soErr))))
	}
	return elapsed, nil
}

// waitWritable polls fd until it is writable (a connect has finished,
// well or not) or the deadline passes.
func waitWritable(fd int, deadline time.Time) error {
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return os.ErrDeadlineExceeded
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLOUT}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		if err == unix.EINTR || (err == nil && n == 0) {
			continue
		}
		return err
	}
}

// connectTimes times n connections from ns to each destination in turn
// and returns the median of each, and the slowest sample of all.
func connectTimes(ns netlab.NS, n int, dsts ...netip.AddrPort) (medians []time.Duration, slowest time.Duration, err error) {
	samples := make([][]time.Duration, len(dsts))
	err = ns.Do(func() error {
		for range n {
			for j, dst := range dsts {
				d, err := connect(dst)
				if err != nil {
					return err
				}
				samples[j] = append(samples[j], d)
				slowest = max(slowest, d)
			}
		}
		return nil
	})
	for _, s := range samples {
		medians = append(medians, median(s))
	}
	return medians, slowest, err
}

// median is the middle sample (the upper one of an even count).
func median(s []time.Duration) time.Duration {
	if len(s) == 0 {
		return 0
	}
	s = slices.Clone(s)
	slices.Sort(s)
	return s[len(s)/2]
}

// stallThreshold marks a connect that waited for a retransmission: the
// first SYN retry comes after one second.
const stallThreshold = 200 * time.Millisecond

// connectRate opens connections from ns to dst one after the other on
// one thread for window, and returns how many were established per
// second and how many of them stalled (see stallThreshold). One thread
// leaves the other CPU to the backend: with two connecting threads on
// two CPUs the backend's accept loop fell behind, its listen queue
// overflowed (TcpExtListenOverflows), and dropped SYNs cost whole
// seconds of the window. Any failed connection is an error.
func connectRate(ns netlab.NS, dst netip.AddrPort, window time.Duration) (rate float64, stalls int, err error) {
	count := 0
	start := time.Now()
	err = ns.Do(func() error {
		for deadline := start.Add(window); time.Now().Before(deadline); count++ {
			d, err := connect(dst)
			if err != nil {
				return err
			}
			if d > stallThreshold {
				stalls++
			}
		}
		return nil
	})
	return float64(count) / time.Since(start).Seconds(), stalls, err
}

// kernelMemoryFields are the /proc/meminfo lines (kB) where the rules of
// every mode live: nf_tables and x_tables objects, ipvs services and
// destinations, sets and addresses are slab objects or kvmalloc'ed
// (vmalloc when large); x_tables counters are per-CPU.
var kernelMemoryFields = []string{"Slab", "VmallocUsed", "Percpu"}

// kernelMemory is the sum of kernelMemoryFields in bytes. It is the whole
// machine's, not the lab's: other work moves it too.
func kernelMemory() (int64, error) {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	return parseMeminfo(data, kernelMemoryFields)
}

// parseMeminfo sums the named fields ("Name:   123 kB") in bytes; every
// field must be there.
func parseMeminfo(data []byte, fields []string) (int64, error) {
	want := map[string]bool{}
	for _, f := range fields {
		want[f] = true
	}
	var sum int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	for sc.Scan() {
		name, rest, ok := strings.Cut(sc.Text(), ":")
		if !ok || !want[name] {
			continue
		}
		f := strings.Fields(rest)
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("meminfo: unexpected line %q", sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("meminfo: %q: %w", sc.Text(), err)
		}
		sum += kb << 10
		delete(want, name)
	}
	if len(want) > 0 {
		return 0, fmt.Errorf("meminfo: no field %v", mapKeys(want))
	}
	return sum, nil
}

func mapKeys(m map[string]bool) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// settledKernelMemory waits, up to ten tries a quarter second apart,
// until kernelMemory moves by less than 512 KiB between two reads (the
// kernel frees a torn-down namespace's rules in the background), and
// returns the last read.
func settledKernelMemory() (int64, error) {
	last, err := kernelMemory()
	for range 10 {
		if err != nil {
			return 0, err
		}
		time.Sleep(250 * time.Millisecond)
		var now int64
		now, err = kernelMemory()
		if err == nil && abs(now-last) < 512<<10 {
			return now, nil
		}
		last = now
	}
	return last, err
}

func abs(x int64) int64 {
	if x < 0 {
		return -x
	}
	return x
}
