package cli

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestLogging checks the one log style of apply --watch and proxy: klog's
// text lines on stderr, with -v choosing the levels as kube-proxy's.
func TestLogging(t *testing.T) {
	for _, tc := range []struct {
		v    string
		want []string
		not  []string
	}{
		{"0", []string{"I", "W", "E"}, []string{"V2", "V4"}},
		{"2", []string{"I", "W", "E", "V2"}, []string{"V4"}},
		{"4", []string{"I", "W", "E", "V2", "V4"}, nil},
	} {
		var errOut bytes.Buffer
		c := &common{}
		c.streams.ErrOut = &errOut
		root := &cobra.Command{Use: "x"}
		c.addGlobalFlags(root)
		if err := root.PersistentFlags().Parse([]string{"-v", tc.v}); err != nil {
			t.Fatal(err)
		}
		log := c.logger()
		log.Info("msg I", "node", "node1")
		log.Warn("msg W")
		log.Error("msg E", "err", errors.New("boom"))
		log.Debug("msg V2")
		log.Log(t.Context(), levelV4, "msg V4")
		out := errOut.String()
		for _, m := range tc.want {
			if !strings.Contains(out, `"msg `+m+`"`) {
				t.Errorf("-v=%s: %q not logged:\n%s", tc.v, m, out)
			}
		}
		for _, m := range tc.not {
			if strings.Contains(out, `"msg `+m+`"`) {
				t.Errorf("-v=%s: %q logged:\n%s", tc.v, m, out)
			}
		}
		// klog's header: severity, date, time, pid, file:line].
		header := `^[IWE]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \S+:\d+\] `
		for _, want := range []string{header + `"msg I" node="node1"$`, `(?m)^E.*\] "msg E" err="boom"$`} {
			if !regexp.MustCompile(`(?m)` + strings.TrimPrefix(want, "(?m)")).MatchString(out) {
				t.Errorf("-v=%s: no line matches %s:\n%s", tc.v, want, out)
			}
		}
	}
}
