package cli

import (
	"fmt"
	"io"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/diff"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/review"
)

// markdownLines bounds the diff of each plan in -o markdown: a
// pull-request comment is read, not applied, and a forge caps its size
// (GitHub's at 65,536 characters).
const markdownLines = 300

// planHead is what a plan's output says besides its changes.
type planHead struct {
	mode Mode
	// backend is what the live side was read from: "iptables-nft", or
	// "rendered" for --against.
	backend string
	// against is --against's file; node the node planned.
	against, node string
	// noChanges is the text form's line for an empty plan.
	noChanges string
}

// planReport is the data form of a plan: kind Plan (docs/OUTPUT.md).
type planReport struct {
	typeMeta
	Mode    Mode         `json:"mode"`
	Backend string       `json:"backend"`
	Against string       `json:"against,omitempty"`
	Summary diff.Summary `json:"summary"`
	Sets    any          `json:"changeSets"`
	// Sysctls are the sysctls the plan changes.
	Sysctls diff.SysctlChanges `json:"sysctls"`
}

// writePlan prints p in the format of --output. services are the
// Services the plan changes, for markdown; nil when unknown (a kernel
// holds rules, not Services).
func (o *PlanOptions) writePlan(w io.Writer, h planHead, p kernelPlan, services []review.ServiceChange) error {
	sysctls := p.sysctls()
	if sysctls == nil {
		sysctls = diff.SysctlChanges{}
	}
	report := planReport{typeMeta: newTypeMeta(kindPlan), Mode: h.mode, Backend: h.backend, Against: h.against, Summary: p.summary(), Sets: p.data(), Sysctls: sysctls}
	switch o.output {
	case "text":
	case "markdown":
		text, err := planText(p)
		if err != nil {
			return err
		}
		s := review.Section{Title: "node " + h.node, Summary: report.Summary, Empty: p.empty(), Services: services, Diff: text}
		return review.Markdown(w, o.markdownHeading(h), []review.Section{s}, markdownLines)
	default:
		return writeData(w, o.output, &report)
	}
	if err := p.writeText(w); err != nil {
		return err
	}
	if p.empty() {
		_, err := fmt.Fprintln(w, h.noChanges)
		return err
	}
	_, err := fmt.Fprintf(w, "Plan: %s\n", report.Summary)
	return err
}

// markdownHeading says what was compared, in which mode.
func (o *PlanOptions) markdownHeading(h planHead) string {
	if h.against == "" {
		return fmt.Sprintf("kubectl svcproxy plan (%s mode, the node's kernel: %s)", h.mode, h.backend)
	}
	return fmt.Sprintf("kubectl svcproxy plan: %s against %s (%s mode)", o.inputName(), h.against, h.mode)
}

// inputName names the desired side's input, for headings.
func (o *PlanOptions) inputName() string {
	switch {
	case o.input.example:
		return "the example"
	case o.input.file == "-":
		return "<stdin>"
	case o.input.file != "":
		return o.input.file
	}
	return "the cluster"
}
