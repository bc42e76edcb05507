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

// TestREADMEDocumentsEveryFlag keeps the README's flag tables honest: every
// flag of every command, apart from kubectl's own connection flags, must be
// documented there. Hidden (deprecated) flags are exempt.
func TestREADMEDocumentsEveryFlag(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	kubectlFlags := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	(&connFlags{namespace: true}).addFlags(kubectlFlags)
	seen := map[string]bool{"help": true}
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		check := func(f *pflag.Flag) {
			if seen[f.Name] || f.Hidden || kubectlFlags.Lookup(f.Name) != nil || c.Name() == "completion" {
				return
			}
			seen[f.Name] = true
			if !strings.Contains(string(readme), "`--"+f.Name) {
				t.Errorf("flag --%s (%s) is not documented in README.md", f.Name, c.CommandPath())
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
