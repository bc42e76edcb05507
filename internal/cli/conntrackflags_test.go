package cli

import (
	"strings"
	"testing"
)

// The conntrack settings are checked before anything reads the node: a
// negative one as kube-proxy refuses it, and in userspace mode (kube-proxy
// v1.25's) one that v1.25 did not have.
func TestConntrackFlagsChecked(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"plan", "--example", "--conntrack-max-per-core=-5"}, "--conntrack-max-per-core: must be greater than or equal to 0"},
		{[]string{"apply", "--example", "--conntrack-udp-timeout-stream=-1s"}, "--conntrack-udp-timeout-stream: must be greater than or equal to 0"},
		{[]string{"plan", "--example", "--mode=userspace", "--conntrack-udp-timeout=45s"}, "--conntrack-udp-timeout: not in userspace mode"},
		{[]string{"apply", "--example", "--mode=userspace", "--conntrack-tcp-be-liberal"}, "--conntrack-tcp-be-liberal: not in userspace mode"},
	} {
		_, errOut, code := run(t, "", tc.args...)
		if code != ExitError || !strings.Contains(errOut, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errOut, tc.want)
		}
	}
}
