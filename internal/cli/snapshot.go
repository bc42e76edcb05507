package cli

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/internal/outfile"
)

// SnapshotOptions are the options of `snapshot`.
type SnapshotOptions struct {
	*common
	input inputFlags
	proxy *ProxyFlags
	// output is the format (-o), as in every other command; outFile is
	// where it goes ("" or "-": stdout).
	output  string
	outFile string
	// format is the deprecated --format, an alias of -o.
	format string
}

func newSnapshotCommand(c *common) *cobra.Command {
	o := &SnapshotOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(nodePart)}
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save the cluster state that rendering needs",
		Long: `Save the Services, EndpointSlices, ServiceCIDRs and this node's Node object
as one v1 List, which render -f and plan -f read back unchanged. It goes to
stdout, or to --output-file, which is replaced whole or not at all.`,
		Example: `  # Save the embedded example as one v1 List that render -f reads back
  kubectl svcproxy snapshot --example
  # Save the cluster's state for node worker-1, then render it anywhere (needs a cluster)
  kubectl svcproxy snapshot --node-name=worker-1 --output-file=cluster.yaml
  kubectl svcproxy render -f cluster.yaml --node-name=worker-1`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	fs := cmd.Flags()
	o.input.addFlags(fs)
	o.proxy.AddFlags(fs)
	fs.StringVarP(&o.output, "output", "o", "", "output format: yaml or json (default: json for an --output-file ending in .json, else yaml)")
	fs.StringVar(&o.outFile, "output-file", "", "write to this file, atomically, instead of stdout")
	// --format is hidden and warns rather than MarkDeprecated, whose
	// notice cobra prints to stdout, into the snapshot.
	fs.StringVar(&o.format, "format", "", "deprecated: use -o/--output")
	_ = fs.MarkHidden("format")
	return cmd
}

// Complete reads the config file, defaults the node name for the example
// and the format from --format or the file name.
func (o *SnapshotOptions) Complete(cmd *cobra.Command, _ []string) error {
	if err := o.proxy.Complete(cmd); err != nil {
		return err
	}
	o.input.complete(cmd, o.proxy)
	switch {
	case o.format != "" && o.output != "" && o.format != o.output:
		return fmt.Errorf("--format %q and --output %q disagree; --format is deprecated, give -o only", o.format, o.output)
	case o.format != "":
		o.warnf("--format is deprecated: use -o/--output")
		o.output = o.format
	case o.output == "" && strings.HasSuffix(o.outFile, ".json"):
		o.output = "json"
	case o.output == "":
		o.output = "yaml"
	}
	return nil
}

// Validate checks the flags. A value of -o that is not a format is likely
// a file name from before -o was the format: the error says what to use.
func (o *SnapshotOptions) Validate() error {
	if o.output != "yaml" && o.output != "json" {
		if strings.ContainsAny(o.output, "./") {
			return fmt.Errorf("--output %q: must be yaml or json; -o is the format, as in kubectl: write to a file with --output-file=%s", o.output, o.output)
		}
		return fmt.Errorf("--output %q: must be yaml or json", o.output)
	}
	if o.outFile != "-" {
		if err := checkOutFile("--output-file", o.outFile); err != nil {
			return err
		}
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
	if o.output == "json" {
		write = snap.WriteJSON
	}
	if o.outFile == "" || o.outFile == "-" {
		return write(o.streams.Out)
	}
	return outfile.Write(o.outFile, write)
}

// checkOutFile refuses, before any work, an output file that the write
// at the end would refuse (a device, FIFO, socket or directory; see
// internal/outfile). "" is none.
func checkOutFile(flag, path string) error {
	if path == "" {
		return nil
	}
	if _, err := outfile.Check(path); err != nil {
		return fmt.Errorf("%s: %w", flag, err)
	}
	return nil
}
