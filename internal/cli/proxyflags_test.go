package cli

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

func TestProxyFlags(t *testing.T) {
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	cmd, _, err := root.Find([]string{"proxy"})
	if err != nil {
		t.Fatal(err)
	}
	// kube-proxy v1.25's defaults, and a lock wait for a process that
	// shares the lock with apply.
	for flag, want := range map[string]string{
		"udp-timeout": "250ms", "metrics-bind-address": "127.0.0.1:10249", "healthz-bind-address": "0.0.0.0:10256",
		"sync-period": "30s", "min-sync-period": "1s", "lock-wait": "5s", "cleanup-on-exit": "false",
	} {
		if f := cmd.Flags().Lookup(flag); f == nil || f.DefValue != want || f.Value.String() != want {
			t.Errorf("--%s: got %v, want default %s", flag, f, want)
		}
	}
	var stderr bytes.Buffer
	for args, want := range map[string]string{
		"proxy --mode=iptables --example":       "--mode iptables: proxy runs only --mode=userspace",
		"proxy --udp-timeout=0 --example":       "--udp-timeout 0s: must be greater than 0",
		"proxy --reload-interval=-1s --example": "--reload-interval -1s: must be greater than 0",
		"proxy --sync-period=0 --example":       "--sync-period 0s: must be greater than 0",
		"proxy --min-sync-period=1m --example":  "--min-sync-period 1m0s: must be between 0 and --sync-period (30s)",
	} {
		root := NewRootCommand(genericiooptions.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &stderr})
		root.SetArgs(strings.Fields(args))
		if err := root.Execute(); err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}
