package cli

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/watch"
)

func TestWatchFlags(t *testing.T) {
	parse := func(args ...string) (*watchFlags, error) {
		cmd := &cobra.Command{Use: "apply", RunE: func(*cobra.Command, []string) error { return nil }}
		var w watchFlags
		w.addFlags(cmd.Flags())
		cmd.Flags().Bool("dry-run", false, "")
		if err := cmd.Flags().Parse(args); err != nil {
			return nil, err
		}
		return &w, w.validate(cmd.Flags(), "dry-run")
	}
	w, err := parse()
	// kube-proxy's defaults.
	if err != nil || w.enabled || w.minSyncPeriod != time.Second || w.syncPeriod != 30*time.Second ||
		w.metricsAddr != "127.0.0.1:10249" || w.healthzAddr != "0.0.0.0:10256" {
		t.Errorf("defaults %+v, %v", w, err)
	}
	if w, err := parse("--watch", "--sync-period=1m", "--min-sync-period=0", "--healthz-bind-address="); err != nil || !w.enabled || w.syncPeriod != time.Minute || w.healthzAddr != "" {
		t.Errorf("--watch with periods: %+v, %v", w, err)
	}
	for args, want := range map[string]string{
		"--sync-period=1m":          "--sync-period needs --watch",
		"--metrics-bind-address=:1": "--metrics-bind-address needs --watch",
		"--watch --dry-run":         "--watch cannot be used with --dry-run",
	} {
		_, err := parse(strings.Fields(args)...)
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", args, err, want)
		}
	}
}

// TestDeployDocumentsWatchFlags holds the watch flags to docs/DEPLOY.md,
// where watch mode is explained, before apply registers them
// (TestDocsExplainEveryFlag then holds them to docs/USAGE.md too).
func TestDeployDocumentsWatchFlags(t *testing.T) {
	const path = "../../docs/DEPLOY.md"
	deploy, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fs := pflag.NewFlagSet("apply", pflag.ContinueOnError)
	(&watchFlags{}).addFlags(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !strings.Contains(string(deploy), "`--"+f.Name) {
			t.Errorf("flag --%s is not documented in %s", f.Name, path)
		}
	})
}

// TestWatchRejectsBadPeriods checks runWatch's validation, which fails
// before anything is contacted or served.
func TestWatchRejectsBadPeriods(t *testing.T) {
	o := newApplyOptions(&common{streams: genericiooptions.NewTestIOStreamsDiscard()})
	kubeconfig := t.TempDir() + "/kubeconfig"
	os.WriteFile(kubeconfig, []byte("apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: 'https://127.0.0.1:1'}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"), 0o600)
	o.input.conn.kubeconfig = kubeconfig
	// Complete, skipped here, would default the node name to the hostname.
	o.proxy.NodeName = "node1"
	sync := func(context.Context, *cluster.Snapshot) (watch.Result, error) { return watch.Result{}, nil }
	for _, w := range []watchFlags{
		{enabled: true, minSyncPeriod: time.Minute, syncPeriod: time.Second},
		{enabled: true, syncPeriod: 0},
	} {
		o.watch = w
		err := o.runWatch(t.Context(), newProxyHealth(ModeIPTables, 2*w.syncPeriod, nil), sync)
		if err == nil || !strings.Contains(err.Error(), "sync-period") {
			t.Errorf("%+v: %v, want an error about the periods", w, err)
		}
	}
}

// watchApplyCommand is the real binary's apply command, which has --watch.
func watchApplyCommand() *cobra.Command {
	apply, _, _ := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()).Find([]string{"apply"})
	return apply
}
