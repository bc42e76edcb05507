package cli

import (
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
)

// flagGroupAnnotation puts a flag in a group of its own in --help, apart
// from the command's other flags.
const flagGroupAnnotation = "svcproxy.kubectl.io/flag-group"

// connectionGroup is the title of kubectl's connection flags in --help.
const connectionGroup = "Connection Flags (as kubectl's)"

// inGroup registers flags with add and puts each one it added in group.
func inGroup(fs *pflag.FlagSet, group string, add func(fs *pflag.FlagSet)) {
	before := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { before[f.Name] = true })
	add(fs)
	fs.VisitAll(func(f *pflag.Flag) {
		if !before[f.Name] {
			_ = fs.SetAnnotation(f.Name, flagGroupAnnotation, []string{group})
		}
	})
}

// usageTemplate is cobra's, with the local flags split into their groups
// and every flag's help wrapped at the terminal's width.
var usageTemplate = func() string {
	t := (&cobra.Command{}).UsageTemplate()
	start := strings.Index(t, "{{if .HasAvailableLocalFlags}}")
	end := strings.Index(t, "{{if .HasHelpSubCommands}}")
	if start < 0 || end < start {
		panic("cobra's usage template changed: no flag sections to replace")
	}
	return t[:start] + "{{flagSections .}}" + t[end:]
}()

func init() { cobra.AddTemplateFunc("flagSections", flagSections) }

// flagSections is the Flags, grouped flags and Global Flags sections of
// cmd's usage, each starting with a blank line.
func flagSections(cmd *cobra.Command) string {
	width := helpWidth(cmd)
	var b strings.Builder
	section := func(title string, fs *pflag.FlagSet) {
		if fs.HasAvailableFlags() {
			b.WriteString("\n\n" + title + ":\n" + strings.TrimRight(fs.FlagUsagesWrapped(width), " \n"))
		}
	}
	groups := map[string]*pflag.FlagSet{}
	var order []string
	plain := pflag.NewFlagSet("", pflag.ContinueOnError)
	cmd.LocalFlags().VisitAll(func(f *pflag.Flag) {
		g := f.Annotations[flagGroupAnnotation]
		if len(g) == 0 {
			plain.AddFlag(f)
			return
		}
		if groups[g[0]] == nil {
			groups[g[0]] = pflag.NewFlagSet(g[0], pflag.ContinueOnError)
			order = append(order, g[0])
		}
		groups[g[0]].AddFlag(f)
	})
	section("Flags", plain)
	for _, g := range order {
		section(g, groups[g])
	}
	section("Global Flags", cmd.InheritedFlags())
	return b.String()
}

// helpWidth is the width of the terminal help goes to, or 0 (no
// wrapping) when it goes to a file or a pipe. Tests replace it.
var helpWidth = func(cmd *cobra.Command) int {
	f, ok := cmd.OutOrStdout().(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	w, _, err := term.GetSize(int(f.Fd()))
	if err != nil || w < 40 {
		return 0
	}
	return w - 1
}
