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

// The README's command reference sits between these markers.
const (
	referenceBegin = "<!-- BEGIN GENERATED: command reference (go test ./internal/cli -run TestREADMECommandReference -update) -->\n"
	referenceEnd   = "<!-- END GENERATED: command reference -->\n"
)

// TestREADMECommandReference keeps the README's command reference equal to
// what cobra's doc generator makes of the command tree; with -update it
// rewrites the section.
func TestREADMECommandReference(t *testing.T) {
	path := filepath.Join("..", "..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := bytes.Index(readme, []byte(referenceBegin)), bytes.Index(readme, []byte(referenceEnd))
	if begin < 0 || end < begin {
		t.Fatalf("README.md lacks the markers %q and %q", referenceBegin, referenceEnd)
	}
	want := commandReference(t)
	got := string(readme[begin+len(referenceBegin) : end])
	if got == want {
		return
	}
	if !*golden.Update {
		t.Fatalf("README.md's command reference is out of date: run go test ./internal/cli -run TestREADMECommandReference -update")
	}
	updated := string(readme[:begin+len(referenceBegin)]) + want + string(readme[end:])
	if err := os.WriteFile(path, []byte(updated), 0o644); err != nil {
		t.Fatal(err)
	}
}

// commandReference is the Markdown of every command but completion and
// help, one level below the README's sections, without kubectl's
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
		if c.Name() == "completion" || c.Name() == "help" {
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
		b.WriteString(demoteHeadings(page.String()))
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
	return b.String()
}

// referenceLink turns the generator's file name for a command
// (kubectl_svcproxy_plan.md) into the anchor of its heading in the README.
func referenceLink(file string) string {
	return "#" + strings.ReplaceAll(strings.TrimSuffix(file, ".md"), "_", "-")
}

// demoteHeadings puts every Markdown heading outside code blocks one level
// down, so the commands sit under the README's "Command reference".
func demoteHeadings(md string) string {
	var b strings.Builder
	inCode := false
	for line := range strings.Lines(md) {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
		}
		if !inCode && strings.HasPrefix(line, "#") {
			line = "#" + line
		}
		b.WriteString(line)
	}
	return b.String()
}
