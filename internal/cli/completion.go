package cli

import (
	"context"
	"slices"
	"strings"
	"time"

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
	}
	root.RegisterFlagCompletionFunc("color", cobra.FixedCompletions(colorValues, cobra.ShellCompDirectiveNoFileComp))
}

// registerValues completes the local flag name of cmd, if it has one, with
// values.
func registerValues(cmd *cobra.Command, name string, values []string) {
	if cmd.LocalFlags().Lookup(name) == nil {
		return
	}
	cmd.RegisterFlagCompletionFunc(name, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

// completeNodeNames lists the cluster's Nodes through the connection flags
// given so far (--kubeconfig, --context, ...). Any error, or no answer
// within nodeCompletionTimeout, completes nothing.
func completeNodeNames(cmd *cobra.Command, _ []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	conn := connectionFlags(cmd.Flags())
	restConfig, err := conn.restConfig()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	restConfig.Timeout = nodeCompletionTimeout
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	ctx, cancel := context.WithTimeout(context.Background(), nodeCompletionTimeout)
	defer cancel()
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{ResourceVersion: "0"})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []string
	for _, n := range nodes.Items {
		if strings.HasPrefix(n.Name, toComplete) {
			names = append(names, n.Name)
		}
	}
	slices.Sort(names)
	return names, cobra.ShellCompDirectiveNoFileComp
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
