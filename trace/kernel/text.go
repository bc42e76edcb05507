package kernel

import (
	"fmt"
	"strings"
)

// Text is the check as `trace --kernel` prints it after the trace.
func (c *Check) Text() string {
	var b strings.Builder
	state := "agrees with the trace"
	switch c.Cause {
	case CauseRouting:
		state = "DISAGREES with the trace, because of routing, not the proxy's rules: the packet matched every rule the trace predicts, then routing or the reverse-path filter ended it"
	case CauseOtherTable:
		state = "DISAGREES with the trace, because of a rule outside this mode's tables: the packet matched every rule the trace predicts, then another table dropped it"
	case CauseRules:
		state = "DISAGREES with the trace: the proxy's rules in the kernel did not do what the trace predicts"
	}
	fmt.Fprintf(&b, "kernel:     %s (probe from source port %d)\n", state, c.SourcePort)
	for _, d := range c.Disagreements {
		fmt.Fprintf(&b, "  - %s\n", d)
	}
	b.WriteString("kernel path:\n")
	for _, s := range c.Path {
		fmt.Fprintf(&b, "  %s\n", stepText(s))
	}
	switch {
	case c.Verdict == "":
		fmt.Fprintf(&b, "kernel verdict: none (%s)\n", c.Note)
	case c.Endpoint != "":
		fmt.Fprintf(&b, "kernel verdict: %s to %s, masquerade %s\n", c.Verdict, c.Endpoint, yesNo(c.Masquerade))
	default:
		fmt.Fprintf(&b, "kernel verdict: %s, masquerade %s\n", c.Verdict, yesNo(c.Masquerade))
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
