package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/trace/kernel"
)

const kindTrace = "Trace"

// traceLockWait is how long trace --kernel waits for the run lock by
// default: a check takes a second or two, a few more on a loaded machine,
// so several started at once all run, one after the other.
const traceLockWait = 30 * time.Second

// TraceOptions are the options of `trace`.
type TraceOptions struct {
	*common
	input  inputFlags
	proxy  *ProxyFlags
	output string

	from, to, protocol, via, service string
	live, kernel                     bool
	// liveBackend is the backend --live read the rules with.
	liveBackend string
	// kern are the flags of the commands that read the kernel, for --live.
	kern kernelFlags

	packet trace.Packet
	forced trace.Via
}

func newTraceCommand(c *common) *cobra.Command {
	o := &TraceOptions{common: c, input: newInputFlags(), proxy: NewProxyFlags(allParts), kern: kernelFlags{ipvs: true, locking: true, lockWait: traceLockWait}}
	cmd := &cobra.Command{
		Use:   "trace --from SRC --to DST:PORT | --service NS/NAME",
		Short: "Follow a packet through the node's proxy rules and print its fate",
		Long: `Follow the first packet of a new connection through the ruleset that render
produces (or, with --live, the one in this node's kernel) and print where it
enters (inferred from --from, or forced with --via), every rule it matches
(table, chain, rule), and the outcome: DNAT to the endpoint set with each
endpoint's probability, session affinity, masquerade, dropped or rejected by
which rule, or "not a service address". -o json|yaml prints a Trace object
(apiVersion svcproxy.kubectl.io/v1alpha1), the contract in docs/TRACE.md.

With --service NS/NAME instead, it prints the reachability matrix of the
Service: every entry point (ClusterIP, NodePort addresses, load-balancer and
external IPs) against every source class, with the outcome of each.
With --live --kernel it also injects the packet into this node's kernel and
prints the kernel's own trace of it (nf_tables trace events) under the trace,
with every way the two differ. It holds the run lock (--lock-file, waiting
up to --lock-wait) while it reads the rules and injects the probe, so that
two checks, or a check and an apply, never overlap; without --kernel,
trace takes no lock.
Exit codes: 0 traced, 1 the kernel disagrees (--kernel), 2 error (a bad
address, port, protocol or Service, or a rule the evaluator cannot follow).`,
		Example: `  # Where does a pod's DNS query to the example's kube-dns go?
  kubectl svcproxy trace --example --from 10.244.0.5 --to 10.96.0.53:53 --protocol udp
  # The same as JSON, for CI
  kubectl svcproxy trace --example --from 10.244.0.5 --to 10.96.0.53:53 --protocol udp -o json
  # Every entry point of a Service against every kind of client
  kubectl svcproxy trace --example --service kube-system/kube-dns
  # The same packet through this node's kernel, checked against its own trace (on a node, as root)
  kubectl svcproxy trace --live --kernel --mode=nftables --from 10.244.0.5 --to 10.96.0.53:53 --protocol udp`,
		Args: cobra.NoArgs,
		RunE: runE(o),
	}
	o.input.addFlags(cmd.Flags())
	o.proxy.AddFlags(cmd.Flags())
	o.kern.addFlags(cmd.Flags())
	fs := cmd.Flags()
	fs.StringVarP(&o.output, "output", "o", "text", "output format: text, json, yaml, or a template as kubectl takes it (jsonpath=..., go-template=..., and their -file forms)")
	fs.StringVar(&o.from, "from", "", "source address of the packet")
	fs.StringVar(&o.to, "to", "", "destination of the packet, ADDRESS:PORT ([ADDRESS]:PORT for IPv6)")
	fs.StringVar(&o.protocol, "protocol", "tcp", "protocol of the packet: tcp, udp or sctp")
	fs.StringVar(&o.via, "via", "", "force where the packet enters: pod (a local pod), node (the node itself) or external (the node's interface); inferred from --from by default")
	fs.StringVar(&o.service, "service", "", "print the reachability matrix of the Service NAMESPACE/NAME instead of one trace")
	fs.BoolVar(&o.live, "live", false, "trace against the ruleset in this node's kernel instead of the rendered one (Linux)")
	fs.BoolVar(&o.kernel, "kernel", false, "with --live: also inject the packet into this node's kernel, read the kernel's own trace (nf_tables trace events) and report where it disagrees; exit 1 if it does (nftables and iptables-nft)")
	return cmd
}

// Complete reads the config file and parses the settings; with --live, as
// plan does on the node (its sysctls and addresses).
func (o *TraceOptions) Complete(cmd *cobra.Command, _ []string) error {
	o.proxy.onNode = o.live
	return completeRender(cmd, &o.input, o.proxy)
}

// Validate checks the flags and parses the packet.
func (o *TraceOptions) Validate() error {
	if err := validateOutput(o.output); err != nil {
		return err
	}
	if err := o.input.validate(); err != nil {
		return err
	}
	if err := o.proxy.validateRender(allModes...); err != nil {
		return err
	}
	if o.live {
		if err := o.kern.validate(o.proxy); err != nil {
			return err
		}
	}
	if err := o.validateKernel(); err != nil {
		return err
	}
	if o.service != "" {
		if o.from != "" || o.to != "" || o.via != "" {
			return fmt.Errorf("--service prints every source and entry point: it takes no --from, --to or --via")
		}
		return nil
	}
	return o.parsePacket()
}

func (o *TraceOptions) parsePacket() error {
	if o.from == "" || o.to == "" {
		return fmt.Errorf("trace needs --from and --to (or --service)")
	}
	src, err := trace.ParseAddr("--from", o.from)
	if err != nil {
		return err
	}
	dst, port, err := trace.ParseDest(o.to)
	if err != nil {
		return err
	}
	if nodetable.FamilyOf(src) != nodetable.FamilyOf(dst) {
		return fmt.Errorf("--from %s and --to %s are of different IP families", src, dst)
	}
	proto, err := trace.ParseProtocol(o.protocol)
	if err != nil {
		return err
	}
	if o.via != "" {
		if o.forced, err = trace.ParseVia(o.via); err != nil {
			return err
		}
	}
	o.packet = trace.Packet{Src: src, Dst: dst, Port: port, Protocol: proto}
	return nil
}

// Run renders (or reads the kernel), traces and prints. With --kernel it
// holds the run lock from before it reads the kernel's rules, as apply
// does, to the end: the check's table and tun device are one per
// namespace, and the rules it reads must be those it probes.
func (o *TraceOptions) Run(ctx context.Context) error {
	d, err := o.renderDesired(ctx, &o.input, &o.proxy.settings)
	if err != nil {
		return err
	}
	if o.kernel {
		l, err := o.kern.lock()
		if err != nil {
			return fmt.Errorf("trace --kernel: %w", err)
		}
		defer l.Release()
	}
	if o.live {
		if d, err = o.liveDesired(ctx, d); err != nil {
			return err
		}
	}
	if o.service != "" {
		return o.runService(d)
	}
	tr, err := newTracer(d, nodetable.FamilyOf(o.packet.Dst))
	if err != nil {
		return err
	}
	entry := tr.node.Infer(o.packet.Src)
	if o.forced != "" {
		entry = tr.node.Force(o.forced)
	}
	if o.kernel && entry.Via != trace.ViaNode {
		entry.InInterface = kernel.TunName // where the probe will arrive
	}
	r, err := trace.Run(tr.ev, tr.node, o.packet, entry)
	if err != nil {
		return err
	}
	out := &traceResult{typeMeta: newTypeMeta(kindTrace), Result: r}
	if o.kernel {
		if out.Kernel, err = o.kernelCheck(d, entry.Via, r); err != nil {
			return err
		}
	}
	if err := writeTrace(o.streams.Out, o.output, out); err != nil {
		return err
	}
	if out.Kernel != nil && !out.Kernel.Agrees {
		return ErrKernelDisagrees
	}
	return nil
}

// traceResult is trace's -o json|yaml: the Result with its type, and
// with --kernel the kernel's check.
type traceResult struct {
	typeMeta
	*trace.Result
	Kernel *kernel.Check `json:"kernel,omitempty"`
}

func writeTrace(w io.Writer, format string, r *traceResult) error {
	if format == "text" {
		text := r.Text()
		if r.Kernel != nil {
			text += r.Kernel.Text()
		}
		_, err := io.WriteString(w, text)
		return err
	}
	return writeData(w, format, r)
}
