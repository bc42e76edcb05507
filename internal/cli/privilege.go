package cli

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// capNetAdmin is CAP_NET_ADMIN's bit in the capability sets.
const capNetAdmin = 12

// requireNetAdmin fails before anything is read when the process lacks
// CAP_NET_ADMIN, which reading and writing iptables, nf_tables and IPVS
// all need. Without it iptables answers "Permission denied (you must be
// root)", the backend detection falls back to legacy, and the error the
// user sees names neither the cause nor the fix. When the capability
// cannot be read (not Linux, no /proc), the kernel is left to answer.
func requireNetAdmin(command string) error {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	has, err := hasEffectiveCap(status, capNetAdmin)
	if err != nil || has {
		return nil
	}
	return fmt.Errorf("%s needs CAP_NET_ADMIN in the node's network namespace: run it as root on the node, "+
		"or in a container with hostNetwork and the NET_ADMIN capability (privileged, as kube-proxy runs)", command)
}

// hasEffectiveCap reads the CapEff line of /proc/self/status.
func hasEffectiveCap(status []byte, bit uint) (bool, error) {
	sc := bufio.NewScanner(bytes.NewReader(status))
	for sc.Scan() {
		if hex, ok := strings.CutPrefix(sc.Text(), "CapEff:"); ok {
			caps, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				return false, err
			}
			return caps&(1<<bit) != 0, nil
		}
	}
	return false, errors.New("no CapEff line")
}
