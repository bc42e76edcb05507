package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// usagePath is the hand-written usage guide, from this package.
var usagePath = filepath.Join("..", "..", "docs", "USAGE.md")

// TestDocsExplainEveryFlag keeps docs/USAGE.md honest: every flag of every
// command, apart from kubectl's own connection flags, must be named there,
// with the commands that take it, so that a new flag gets its words
// beside the generated reference's one line. Hidden (deprecated) flags are
// exempt.
func TestDocsExplainEveryFlag(t *testing.T) {
	usage, err := os.ReadFile(usagePath)
	if err != nil {
		t.Fatal(err)
	}
	kubectlFlags := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	(&connFlags{namespace: true}).addFlags(kubectlFlags)
	seen := map[string]bool{"help": true}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if seen[f.Name] || f.Hidden || kubectlFlags.Lookup(f.Name) != nil || strings.Contains(c.CommandPath(), " completion") {
				return
			}
			seen[f.Name] = true
			if !strings.Contains(string(usage), "`--"+f.Name) {
				t.Errorf("flag --%s (%s) is not documented in %s", f.Name, c.CommandPath(), usagePath)
			}
		}
		c.LocalFlags().VisitAll(check)
		c.PersistentFlags().VisitAll(check)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(NewRootCommand(genericiooptions.NewTestIOStreamsDiscard()))
}
