package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// SnapshotOptions are the options of `snapshot`.
type SnapshotOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	out    string
	format string
}

func newSnapshotCommand(c *common) *cobra.Command {
	o := &SnapshotOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(nodePart)}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save the cluster state that rendering needs to a file",
		Long: `Save the Services, EndpointSlices, ServiceCIDRs and this node's Node object
as one v1 List, which render -f and plan -f read back unchanged.`,
		Example: `  kubectl svcproxy snapshot --node-name=worker-1 -o cluster.yaml
  kubectl svcproxy render -f cluster.yaml --node-name=worker-1`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	cmd.Flags().StringVarP(&o.out, "output", "o", "-", "the file to write ('-' for stdout)")
	cmd.Flags().StringVar(&o.format, "format", "", "file format: yaml or json (default: json for a .json file, else yaml)")
	return cmd
}

// Complete reads the config file, defaults the node name for the example
// and the format from the file name.
func (o *SnapshotOptions) Complete(cmd *cobra.Command, _ []string) error {
	if err := o.proxy.Complete(cmd); err != nil {
		return err
	}
	o.input.complete(cmd, o.proxy)
	if o.format == "" {
		o.format = "yaml"
		if strings.HasSuffix(o.out, ".json") {
			o.format = "json"
		}
	}
	return nil
}

// Validate checks the flags.
func (o *SnapshotOptions) Validate() error {
	if o.format != "yaml" && o.format != "json" {
		return fmt.Errorf("--output %q: must be yaml or json", o.format)
	}
	return o.input.validate()
}

// Run loads the state and writes it.
func (o *SnapshotOptions) Run(ctx context.Context) error {
	snap, err := o.load(ctx, &o.input, o.proxy.NodeName)
	if err != nil {
		return err
	}
	write := snap.WriteYAML
	if o.format == "json" {
		write = snap.WriteJSON
	}
	if o.out == "-" {
		return write(o.streams.Out)
	}
	return writeFileAtomic(o.out, write)
}

// writeFileAtomic writes through a temporary file in the same directory and
// renames it into place, so a failed write never leaves a truncated file.
func writeFileAtomic(path string, write func(io.Writer) error) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return os.Rename(tmp.Name(), path)
}
