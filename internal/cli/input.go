package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster/fromapi"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/example"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// inputFlags choose where the cluster state comes from: a snapshot file,
// the embedded example, or (by default) the API server that kubectl's
// connection flags (--kubeconfig, --context, --server, ...) reach.
type inputFlags struct {
	conn    *connFlags
	file    string
	example bool
	// saved is the snapshot of apply FILE's saved plan.
	saved []byte
}

// newInputFlags returns the input flags: kubectl's connection flags
// without -n/--namespace, which would do nothing (see flagError).
func newInputFlags() inputFlags {
	return inputFlags{conn: &connFlags{}}
}

// flagError explains a flag error: -n/--namespace, which kubectl users
// reach for, and where the usage is.
func flagError(cmd *cobra.Command, err error) error {
	var unknown *pflag.NotExistError
	if errors.As(err, &unknown) {
		name, short := unknown.GetSpecifiedName(), unknown.GetSpecifiedShortnames()
		if (short == "" && name == "namespace") || (short != "" && strings.HasPrefix(name, "n")) {
			err = fmt.Errorf("%w: kubectl svcproxy has no -n/--namespace: like kube-proxy, it reads the Services and EndpointSlices of all namespaces", err)
		}
	}
	// As kubectl does: every flag error points at the command's help.
	return fmt.Errorf("%w\nSee '%s --help' for usage.", err, cmd.CommandPath())
}

func (s *inputFlags) addFlags(fs *pflag.FlagSet) {
	inGroup(fs, connectionGroup, s.conn.addFlags)
	s.conn.api.addFlags(fs)
	fs.StringVarP(&s.file, "filename", "f", "", "read the cluster state from this snapshot file (YAML or JSON, '-' for stdin) instead of the API server")
	fs.BoolVar(&s.example, "example", false, "use the embedded example snapshot (node "+example.NodeName+")")
}

func (s *inputFlags) validate() error {
	if s.file != "" && s.example {
		return fmt.Errorf("--filename and --example cannot be used together")
	}
	return nil
}

// complete defaults --node-name to the example's node when --example is
// used, and takes the config file's clientConnection.acceptContentTypes,
// which has no flag.
func (s *inputFlags) complete(cmd *cobra.Command, p *ProxyFlags) {
	if s.example && !cmd.Flags().Changed("node-name") {
		p.NodeName = example.NodeName
	}
	if p.config != nil {
		s.conn.api.acceptContentTypes = p.config.ClientConnection.AcceptContentTypes
	}
}

// loadingWhat is what load is doing, for --progress.
func loadingWhat(s *inputFlags) string {
	switch {
	case s.saved != nil:
		return fmt.Sprintf("decoding the saved plan's snapshot (%s)", byteSize(int64(len(s.saved))))
	case s.example:
		return "decoding the example"
	case s.file == "-":
		return "decoding stdin"
	case s.file != "":
		if fi, err := os.Stat(s.file); err == nil && fi.Mode().IsRegular() {
			return fmt.Sprintf("decoding %s (%s)", s.file, byteSize(fi.Size()))
		}
		return "decoding " + s.file
	}
	return "listing Services, EndpointSlices and Nodes from the API server"
}

// byteSize is n bytes in the largest unit that keeps it at least 1.
func byteSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

// load returns the snapshot of node from the chosen source, printing its
// warnings.
func (c *common) load(ctx context.Context, s *inputFlags, node string) (*cluster.Snapshot, error) {
	var snap *cluster.Snapshot
	var err error
	st, verb := c.reporter().Start(loadingWhat(s)), "decoded"
	defer st.End()
	switch {
	case s.saved != nil:
		snap, err = cluster.Decode("the saved plan's snapshot", s.saved)
	case s.example:
		snap, err = cluster.Decode("example", example.Snapshot)
	case s.file != "":
		var examined atomic.Int64
		st.Track(func() string { return countLabel(examined.Load(), "object") + " decoded" })
		snap, err = cluster.LoadFileCounting(s.file, c.streams.In, &examined)
	default:
		snap, err = c.fromAPI(ctx, s.conn, node, st)
		verb = "listed"
	}
	if err != nil {
		return nil, err
	}
	st.Done("%s %s", verb, snapshotCounts(snap))
	for _, w := range snap.Warnings {
		c.warnf("%s", w)
	}
	return snap, nil
}

// fromAPI lists the snapshot of node from the API server; st's lines say
// which lists have come in.
func (c *common) fromAPI(ctx context.Context, conn *connFlags, node string, st *stage) (*cluster.Snapshot, error) {
	restConfig, err := conn.restConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(restConfig)
	if err != nil {
		return nil, fmt.Errorf("kubernetes client: %w", err)
	}
	var done atomic.Pointer[string]
	st.Track(func() string {
		if d := done.Load(); d != nil {
			return *d
		}
		return "nothing listed yet"
	})
	var listed []string
	snap, err := fromapi.SnapshotReporting(ctx, client, node, func(kind string, n int) {
		listed = append(listed, countLabel(int64(n), kind))
		line := strings.Join(listed, ", ") + " listed"
		done.Store(&line)
	})
	if err != nil {
		return nil, explainAPIError(restConfig.Host, err)
	}
	return snap, nil
}

// tables builds the node-local service tables, printing warnings.
func (c *common) tables(snap *cluster.Snapshot, cfg cluster.Config) (*nodetable.Tables, error) {
	build := cluster.Build
	if c.builder != nil {
		build = c.builder.Build
	}
	tables, warnings, err := build(snap, cfg)
	if err != nil {
		return nil, err
	}
	for _, w := range warnings {
		c.warnOnce(fmt.Sprint(w))
	}
	return tables, nil
}
