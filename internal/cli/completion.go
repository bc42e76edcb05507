package cli

import (
	"context"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// nodeCompletionTimeout bounds the Node list that completes --node-name:
// a shell waiting on a dead API server must not hang.
const nodeCompletionTimeout = 3 * time.Second

// outputFormats are the -o values of every command that has -o.
var outputFormats = map[string][]string{
	"render":   {"text", "json", "yaml"},
	"plan":     {"text", "json", "yaml"},
	"snapshot": {"yaml", "json"},
	"version":  {"text", "json", "yaml"},
}

// flagValues are the fixed values of the flags that have them, as
// kube-proxy v1.37 accepts them.
var flagValues = map[string][]string{
	"mode":              modeNames(allModes),
	"family":            {"all", "ipv4", "ipv6"},
	"detect-local-mode": {"ClusterCIDR", "NodeCIDR", "BridgeInterface", "InterfaceNamePrefix"},
	"ipvs-scheduler":    {"rr", "wrr", "lc", "wlc", "lblc", "lblcr", "sh", "dh", "sed", "nq", "mh"},
	"iptables-backend":  {"auto", "legacy", "nft"},
}

func modeNames(modes []Mode) []string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	return names
}

// registerCompletions adds value completion to the flags of every command
// under root that has them: the fixed values above, -o's formats, --color,
// and --node-name from the API server the command's connection flags reach.
func registerCompletions(root *cobra.Command) {
	for _, cmd := range root.Commands() {
		for name, values := range flagValues {
			if cmd.Name() == "proxy" && name == "mode" {
				values = []string{string(ModeUserspace)}
			}
			registerValues(cmd, name, values)
		}
		if formats, ok := outputFormats[cmd.Name()]; ok {
			registerValues(cmd, "output", formats)
		}
		if cmd.Flags().Lookup("node-name") != nil && cmd.Flags().Lookup("kubeconfig") != nil {
			cmd.RegisterFlagCompletionFunc("node-name", completeNodeNames)
		}
		if cmd.Flags().Lookup("service") != nil {
			cmd.RegisterFlagCompletionFunc("service", completeServices)
		}
	}
	root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(colorValues, cobra.ShellCompDirectiveNoFileComp))
	root.InitDefaultCompletionCmd()
	for _, cmd := range root.Commands() {
		if cmd.Name() == "completion" {
			cmd.Long = completionHelp
		}
	}
}

// completionHelp is the completion command's help: kubectl users complete
// `kubectl svcproxy ...` through kubectl, not through these scripts.
const completionHelp = `Generate the autocompletion script of kubectl-svcproxy for the specified shell.

For "kubectl svcproxy <TAB>" (the plugin run through kubectl), no script
is needed: kubectl 1.26 and later complete a plugin's arguments by running
kubectl_complete-svcproxy from PATH. Put the kubectl_complete-svcproxy
script (in the release archive and in the repository's deploy/) on PATH
next to kubectl-svcproxy; after a krew install:

  ln -s "$(dirname "$(readlink -f "$(command -v kubectl-svcproxy)")")/kubectl_complete-svcproxy" ~/.krew/bin/

The scripts below complete the binary run by its own name,
"kubectl-svcproxy <TAB>". See each sub-command's help for how to load one.`

// registerValues completes the local flag name of cmd, if it has one, with
// values.
func registerValues(cmd *cobra.Command, name string, values []string) {
	if cmd.LocalFlags().Lookup(name) == nil {
		return
	}
	cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeNodeNames lists the Nodes of the snapshot that -f or --example
// names, or else of the cluster the connection flags given so far reach
// (--kubeconfig, --context, ...). Any error, or no answer within
// nodeCompletionTimeout, completes nothing.
func completeNodeNames(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var names []string
	if snap, ok := completionSnapshot(cmd.Flags()); ok {
		for _, n := range snap.Nodes {
			names = append(names, n.Name)
		}
	} else if client, ok := completionClient(cmd.Flags()); ok {
		ctx, cancel := context.WithTimeout(context.Background(), nodeCompletionTimeout)
		defer cancel()
		nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			for _, n := range nodes.Items {
				names = append(names, n.Name)
			}
		}
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completeServices lists trace --service's NAMESPACE/NAME values, from the
// snapshot or the cluster as completeNodeNames does.
func completeServices(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	var names []string
	if snap, ok := completionSnapshot(cmd.Flags()); ok {
		for _, svc := range snap.Services {
			names = append(names, svc.Namespace+"/"+svc.Name)
		}
	} else if client, ok := completionClient(cmd.Flags()); ok {
		ctx, cancel := context.WithTimeout(context.Background(), nodeCompletionTimeout)
		defer cancel()
		svcs, err := client.CoreV1().Services("").List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err == nil {
			for _, svc := range svcs.Items {
				names = append(names, svc.Namespace+"/"+svc.Name)
			}
		}
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// completionSnapshot is the snapshot that --example or -f FILE names, if
// one does and it decodes; stdin is never read while completing.
func completionSnapshot(fs *pflag.FlagSet) (*cluster.Snapshot, bool) {
	if f := fs.Lookup("example"); f != nil && f.Changed && f.Value.String() == "true" {
		snap, err := cluster.Decode("example", example.Snapshot)
		return snap, err == nil
	}
	if f := fs.Lookup("filename"); f != nil && f.Changed {
		// Only a regular file: a FIFO would block the shell, a device
		// read to its limit.
		path := f.Value.String()
		if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() {
			return nil, false
		}
		snap, err := cluster.LoadFile(path, nil)
		return snap, err == nil
	}
	return nil, false
}

// completionClient is a client of the API server the connection flags
// given so far reach, bounded by nodeCompletionTimeout.
func completionClient(fs *pflag.FlagSet) (kubernetes.Interface, bool) {
	restConfig, err := connectionFlags(fs).restConfig()
	if err != nil {
		return nil, false
	}
	restConfig.Timeout = nodeCompletionTimeout
	client, err := kubernetes.NewForConfig(restConfig)
	return client, err == nil
}

// matching is the sorted names that start with prefix.
func matching(names []string, prefix string) []string {
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return out
}

// connectionFlags returns kubectl's connection flags with the values that
// were given on fs, which holds them among the command's other flags.
func connectionFlags(fs *pflag.FlagSet) *connFlags {
	conn := &connFlags{}
	own := pflag.NewFlagSet("connection", pflag.ContinueOnError)
	conn.addFlags(own)
	fs.Visit(func(f *pflag.Flag) {
		if own.Lookup(f.Name) != nil {
			own.Set(f.Name, f.Value.String())
		}
	})
	return conn
}
