package cli

import (
	"context"
	"fmt"
	"runtime"

	"github.com/spf13/cobra"
)

// Set at build time with -ldflags "-X ...cli.version=v1.2.3 ..."; where
// they are not, the build's own record fills them in (buildinfo.go).
var (
	version = "dev"
	commit  = "unknown"
	date    = "unknown"
)

// kubeProxyCompatibility is the kube-proxy release whose rules the tool
// renders.
const kubeProxyCompatibility = "v1.37"

// VersionOptions are the options of `version`.
type VersionOptions struct {
	*common
	output string
}

// versionInfo is version's -o json|yaml: kind Version (docs/OUTPUT.md).
type versionInfo struct {
	typeMeta
	Version                string `json:"version"`
	Commit                 string `json:"commit"`
	BuildDate              string `json:"buildDate"`
	GoVersion              string `json:"goVersion"`
	Platform               string `json:"platform"`
	KubeProxyCompatibility string `json:"kubeProxyCompatibility"`
}

func newVersionCommand(c *common) *cobra.Command {
	o := &VersionOptions{common: c}
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Long: `Print the version, the commit and date of the build, the Go version and
platform, and the kube-proxy release whose rules the tool renders; -o json|yaml
prints them as a Version object (docs/OUTPUT.md).`,
		Example: `  # Print the version
  kubectl svcproxy version
  # The same as a Version object
  kubectl svcproxy version -o json`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	cmd.Flags().StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml, or a template as kubectl takes it (jsonpath=..., go-template=..., and their -file forms)")
	return cmd
}

// Complete has nothing to fill in.
func (o *VersionOptions) Complete(*cobra.Command, []string) error { return nil }

// Validate checks the output format.
func (o *VersionOptions) Validate() error { return validateOutput(o.output) }

// Run prints the version.
func (o *VersionOptions) Run(context.Context) error {
	v := currentVersion()
	if o.output != "text" {
		return writeData(o.streams.Out, o.output, &v)
	}
	_, err := fmt.Fprintln(o.streams.Out, v.line())
	return err
}

// currentVersion is this binary's Version object.
func currentVersion() versionInfo {
	s := stamp()
	return versionInfo{
		typeMeta:               newTypeMeta(kindVersion),
		Version:                s.version,
		Commit:                 s.commit,
		BuildDate:              s.date,
		GoVersion:              runtime.Version(),
		Platform:               runtime.GOOS + "/" + runtime.GOARCH,
		KubeProxyCompatibility: kubeProxyCompatibility,
	}
}

// line is the text form, which `version` and `--version` print.
func (v versionInfo) line() string {
	return fmt.Sprintf("kubectl-svcproxy %s (commit %s, built %s, %s, %s, kube-proxy compatibility %s)",
		v.Version, v.Commit, v.BuildDate, v.GoVersion, v.Platform, v.KubeProxyCompatibility)
}
