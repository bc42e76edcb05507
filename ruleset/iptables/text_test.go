package iptables

import (
	"slices"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"rule outside table":  "-A INPUT -j ACCEPT\n",
		"undeclared chain":    "*nat\n-A KUBE-X -j ACCEPT\nCOMMIT\n",
		"missing commit":      "*nat\n:KUBE-X - [0:0]\n",
		"garbage":             "*nat\nhello\nCOMMIT\n",
		"chain without table": ":KUBE-X - [0:0]\n",
	}
	for name, text := range cases {
		_, err := Parse([]byte(text), nodetable.IPv4)
		pe, ok := err.(*ParseError)
		if !ok || pe.Line == 0 {
			t.Errorf("%s: got %v, want a ParseError with a line number", name, err)
		}
	}
}

func TestQuoteString(t *testing.T) {
	for in, want := range map[string]string{
		"ns1_svc-1":       "ns1_svc-1",
		"ns1/svc1:http":   `"ns1/svc1:http"`,
		`say "hi"`:        `"say \"hi\""`,
		"":                `""`,
		`back\slash it's`: `"back\\slash it\'s"`,
	} {
		if got := quoteString(in); got != want {
			t.Errorf("quoteString(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestFieldsAndTarget(t *testing.T) {
	r := Rule(`-d 10.96.0.1/32 -p tcp -m comment --comment "ns/svc:http cluster IP" -m tcp --dport 443 -j KUBE-SVC-ABC`)
	want := []string{"-d", "10.96.0.1/32", "-p", "tcp", "-m", "comment", "--comment", "ns/svc:http cluster IP", "-m", "tcp", "--dport", "443", "-j", "KUBE-SVC-ABC"}
	if got := r.Fields(); !slices.Equal(got, want) {
		t.Errorf("Fields = %q", got)
	}
	if got := r.Target(); got != "KUBE-SVC-ABC" {
		t.Errorf("Target = %q", got)
	}
	if got := Rule(`-m comment --comment "other traffic -j x"`).Target(); got != "" {
		t.Errorf("Target of a rule without target = %q", got)
	}
}

func TestProbabilityAsKernelStoresIt(t *testing.T) {
	for p, want := range map[float64]string{0.5: "0.50000000000", 0.3333333333: "0.33333333349", 0.25: "0.25000000000", 0.1: "0.10000000009"} {
		if got := FormatProbability(p); got != want {
			t.Errorf("FormatProbability(%v) = %s, want %s", p, got, want)
		}
	}
}

// FuzzParseRoundTrip checks that whatever Parse accepts, Encode writes back
// into text that parses to the same value.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add([]byte("*nat\n:PREROUTING ACCEPT [0:0]\n:KUBE-X - [0:0]\n-A PREROUTING -j KUBE-X\n-A KUBE-X -m comment --comment \"a b\" -j DNAT --to-destination 1.2.3.4:80\nCOMMIT\n"))
	f.Add([]byte("# Generated\n*filter\n:INPUT DROP [1:2]\n[5:6] -A INPUT -j ACCEPT\nCOMMIT\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse(data, nodetable.IPv4)
		if err != nil {
			return
		}
		again, err := Parse([]byte(rs.String()), nodetable.IPv4)
		if err != nil {
			t.Fatalf("re-parse of encoded ruleset failed: %v\n%s", err, rs.String())
		}
		if !rs.Equal(again) {
			t.Fatalf("round trip changed the ruleset:\n%s\n%s", rs.String(), again.String())
		}
	})
}

// quoteString spells a string option the way iptables-save does
// (xtables_save_string): bare when it is only letters, digits, "_" and "-",
// otherwise in double quotes with `"`, `\` and `'` escaped.
func quoteString(s string) string { return string(AppendQuoted(nil, s)) }

// TestBytesIsString: Bytes gives String's text, and encodedLen its length
// exactly (a short estimate would only cost a copy; a long one, memory).
func TestBytesIsString(t *testing.T) {
	rs := &Ruleset{Tables: []*Table{
		{Name: Filter, Chains: []*Chain{
			{Name: "INPUT", Policy: "ACCEPT", Rules: []Rule{"-j KUBE-FIREWALL"}},
			{Name: "KUBE-FIREWALL", Policy: "-", Rules: []Rule{`-m comment --comment "a b" -j DROP`, "-j RETURN"}},
		}},
		{Name: NAT, Chains: []*Chain{{Name: "KUBE-EMPTY", Policy: "-"}}},
		{Name: Raw},
	}}
	text := rs.String()
	if got := string(rs.Bytes()); got != text {
		t.Fatalf("Bytes:\n%s\nString:\n%s", got, text)
	}
	n := 0
	for _, tb := range rs.Tables {
		n += tb.encodedLen()
	}
	if n != len(text) {
		t.Errorf("encodedLen is %d, the text %d bytes", n, len(text))
	}
}
