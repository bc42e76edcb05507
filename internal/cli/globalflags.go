package cli

import (
	"github.com/spf13/cobra"
)

// globalFlags are the root's persistent flags: how the output looks
// (--color, --progress) and how much the long-running commands log (-v).
// They say nothing about what a command does, so every command has them.
var globalFlags = []string{"color", "progress", "v"}

// addGlobalFlags registers the persistent flags on root, and checks them
// and the platform (platform.go) before any command runs.
func (c *common) addGlobalFlags(root *cobra.Command) {
	fs := root.PersistentFlags()
	fs.StringVar(&c.color, "color", colorAuto, "colour the diff of plan and the headers of --dry-run: auto (on a terminal, unless NO_COLOR is set or TERM=dumb), always or never")
	fs.BoolVar(&c.progress, "progress", false, "print progress on stderr: every 5s what a stage under way is doing, and the counts of each stage that took over a second (default: on when stderr is a terminal; --progress=false silences it)")
	c.logConfig = newLogConfig(c.streams.ErrOut)
	addLogFlags(fs, c.logConfig)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if err := checkPlatform(c.platform(), cmd); err != nil {
			return err
		}
		if !cmd.Flags().Changed("progress") {
			c.progress = isTerminal(c.streams.ErrOut)
		}
		return validateColor(c.color)
	}
}
