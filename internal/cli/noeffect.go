package cli

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// noEffectAnnotation marks a flag that a command accepts, so that one set
// of flags serves every command, but that does nothing there; its value
// says why.
const noEffectAnnotation = "svcproxy.kubectl.io/no-effect"

// markNoEffect marks fs's flag name as doing nothing, for the reason why.
func markNoEffect(fs *pflag.FlagSet, name, why string) {
	if err := fs.SetAnnotation(name, noEffectAnnotation, []string{why}); err != nil {
		panic(err) // a flag this package registers: a programming error
	}
}

// warnNoEffect says on stderr, one line each, which of the flags given to
// cmd do nothing there, rather than leaving that to --help.
func warnNoEffect(cmd *cobra.Command) {
	cmd.Flags().Visit(func(f *pflag.Flag) {
		if why := f.Annotations[noEffectAnnotation]; len(why) > 0 {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: --%s has no effect on %s: %s\n", f.Name, cmd.Name(), why[0])
		}
	})
}
