package trace

import (
	"strconv"
	"strings"
)

// Text is the human form of a trace: the packet and its entry point, the
// path rule by rule, then the outcome.
func (r *Result) Text() string {
	var b strings.Builder
	p := r.Packet
	b.WriteString("packet:     " + p.Protocol + " " + p.Src.String() + " -> " + hostPort(p.Dst.String(), p.Port) + "\n")
	b.WriteString("entry:      " + string(r.Entry.Via) + " (" + r.Entry.Reason + ")")
	if r.Entry.InInterface != "" {
		b.WriteString(", in on " + r.Entry.InInterface)
	}
	b.WriteString("\nmode:       " + r.Mode + "\n")
	b.WriteString("path:\n")
	writeSteps(&b, r.Path, "  ")
	switch r.Verdict {
	case DNAT:
		b.WriteString("verdict:    dnat to " + strconv.Itoa(len(r.Endpoints)) + " endpoint(s)")
		if r.Scheduler != "" {
			b.WriteString(", scheduler " + r.Scheduler)
		}
		if r.ProxyPort != "" {
			b.WriteString(", through proxy port " + r.ProxyPort)
		}
		b.WriteString("\n")
		writeEndpoints(&b, r.Endpoints)
	case Drop, Reject:
		b.WriteString("verdict:    " + string(r.Verdict))
		if r.DecidedBy != nil {
			b.WriteString(" by " + r.DecidedBy.Table + " " + r.DecidedBy.Chain + ": " + r.DecidedBy.Rule)
		}
		b.WriteString("\n")
	default:
		b.WriteString("verdict:    accept\n")
	}
	b.WriteString("masquerade: " + yesNo(r.Masquerade) + "\n")
	if r.Affinity.On() {
		b.WriteString("affinity:   ClientIP, timeout " + strconv.Itoa(r.Affinity.TimeoutSeconds) + "s\n")
	} else {
		b.WriteString("affinity:   none\n")
	}
	if r.Note != "" {
		b.WriteString("note:       " + r.Note + "\n")
	}
	return b.String()
}

// writeEndpoints lists each endpoint with the rules only its branch
// meets, then once the rules that every branch meets at its end (the
// filter and postrouting hooks, the same for every endpoint).
func writeEndpoints(b *strings.Builder, eps []Endpoint) {
	shared := commonTail(eps)
	for _, ep := range eps {
		b.WriteString("  " + ep.Address + "  probability " + formatProb(ep.Probability))
		if ep.Masquerade {
			b.WriteString("  masquerade")
		}
		b.WriteString("\n")
		if own := ep.Path[:len(ep.Path)-shared]; len(own) > 0 {
			writeSteps(b, own, "      ")
		}
	}
	if shared > 0 {
		b.WriteString("  then, after every endpoint:\n")
		writeSteps(b, eps[0].Path[len(eps[0].Path)-shared:], "      ")
	}
}

// commonTail is how many steps at the end of every endpoint's path are the
// same; 0 for fewer than two endpoints.
func commonTail(eps []Endpoint) int {
	if len(eps) < 2 {
		return 0
	}
	n := len(eps[0].Path)
	for _, ep := range eps[1:] {
		n = min(n, len(ep.Path))
	}
	for k := 1; k <= n; k++ {
		want := eps[0].Path[len(eps[0].Path)-k]
		for _, ep := range eps[1:] {
			if ep.Path[len(ep.Path)-k] != want {
				return k - 1
			}
		}
	}
	return n
}

func writeSteps(b *strings.Builder, steps []Step, indent string) {
	if len(steps) == 0 {
		b.WriteString(indent + "(no rule matched)\n")
		return
	}
	for _, s := range steps {
		b.WriteString(indent + s.Table + " " + s.Chain + ": " + s.Rule + "\n")
	}
}

func hostPort(host string, port uint16) string {
	if strings.Contains(host, ":") {
		host = "[" + host + "]"
	}
	return host + ":" + strconv.Itoa(int(port))
}

func formatProb(p float64) string { return strconv.FormatFloat(p, 'f', -1, 64) }

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
