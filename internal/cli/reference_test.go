package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/golden"
)

// referencePath is the generated command reference, from this package.
var referencePath = filepath.Join("..", "..", "docs", "reference", "commands.md")

// The generated part of the reference sits between these markers; the
// text above them is written by hand.
const (
	referenceBegin = "<!-- BEGIN GENERATED: command reference (go test ./internal/cli -run TestCommandReference -update) -->\n"
	referenceEnd   = "<!-- END GENERATED: command reference -->\n"
)

// TestCommandReference keeps docs/reference/commands.md equal to what
// cobra's doc generator makes of the command tree; with -update it
// rewrites the generated part.
func TestCommandReference(t *testing.T) {
	doc, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(doc, []byte(referenceBegin)), bytes.Index(doc, []byte(referenceEnd))
	if begin < 0 || end < begin {
		t.Fatalf("%s lacks the markers %q and %q", referencePath, referenceBegin, referenceEnd)
	}
	want := commandReference(t)
	got := string(doc[begin+len(referenceBegin) : end])
	if got == want {
		return
	}
	if !*golden.Update {
		t.Fatalf("%s is out of date: run go test ./internal/cli -run TestCommandReference -update", referencePath)
	}
	updated := string(doc[:begin+len(referenceBegin)]) + want + string(doc[end:])
	if err := os.WriteFile(referencePath, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commandReference is the Markdown of every command but help, each a
// section of the page, without kubectl's
// connection flags (listed once instead) and with the defaults that come
// from this machine (the hostname) left out.
func commandReference(t *testing.T) string {
	t.Helper()
	root := NewRootCommand(genericiooptions.NewTestIOStreamsDiscard())
	root.DisableAutoGenTag = true
	kubectlFlags := pflag.NewFlagSet("kubectl", pflag.ContinueOnError)
	(&connFlags{namespace: true}).addFlags(kubectlFlags)
	var b strings.Builder
	b.WriteString("\nGenerated from the command tree by cobra's doc generator. Besides the flags\n" +
		"listed, render, plan, apply, proxy and snapshot take kubectl's connection flags\n" +
		"(`--kubeconfig`, `--context`, `--server`, `--token`, ...).\n\n")
	var walk func(*cobra.Command)
	walk = func(c *cobra.Command) {
		if c.Name() == "help" {
			return
		}
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if kubectlFlags.Lookup(f.Name) != nil {
				f.Hidden = true
			}
			if f.Name == "node-name" {
				f.DefValue = "" // the hostname; the usage says so
			}
		})
		var page bytes.Buffer
		if err := doc.GenMarkdownCustom(c, &page, referenceLink); err != nil {
			t.Fatal(err)
		}
		b.WriteString(page.String())
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

// referenceLink turns the generator's file name for a command
// (kubectl_svcproxy_plan.md) into the anchor of its heading on the page.
func referenceLink(file string) string {
	return "#" + strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", "-")
}
