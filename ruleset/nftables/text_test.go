package nftables

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestEncodeReproducesKernelListings parses what `nft list ruleset` printed
// for the real kube-proxy and checks that Encode writes it back byte for byte.
func TestEncodeReproducesKernelListings(t *testing.T) {
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "reference", "*", "nftables.rules"))
	if len(paths) == 0 {
		t.Fatal("no reference listings found")
	}
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		sets, err := ParseAll(data)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		if len(sets) != 2 || sets[0].Family != IPv4 || sets[1].Family != IPv6 {
			t.Fatalf("%s: want an ip and an ip6 table", p)
		}
		var b bytes.Buffer
		if err := EncodeAll(&b, sets); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(data), b.String()); diff != "" {
			t.Errorf("%s: Encode differs from the nft listing (-nft +encoded):\n%s", p, diff)
		}
		for _, rs := range sets {
			if err := rs.Validate(); err != nil {
				t.Errorf("%s: %v", p, err)
			}
		}
	}
}

func sampleRuleset() *Ruleset {
	var ips []Element
	for _, a := range []string{"10.0.0.10", "10.0.0.9", "10.0.0.1", "192.168.0.1", "10.0.0.2"} {
		ips = append(ips, Element{Key: a})
	}
	return &Ruleset{
		Family: IPv4, Table: "kube-proxy", Comment: "rules for kube-proxy",
		Sets: []*Set{
			{Name: "cluster-ips", Type: "ipv4_addr", Comment: "Active ClusterIPs", Elements: ips},
			{Name: "service-ips", Type: "ipv4_addr . inet_proto . inet_service", DataType: "verdict", Elements: []Element{
				{Key: "10.96.0.10 . udp . 53", Value: "goto service-X-kube-system/dns/udp/dns"},
				{Key: "10.96.0.9 . tcp . 80", Value: "goto reject-chain", Comment: "ns/svc:a, b : c"},
			}},
			{Name: "affinity-X", Type: "ipv4_addr", Size: 65535, Flags: []SetFlag{FlagDynamic, FlagTimeout}, Timeout: 3 * time.Hour},
		},
		Chains: []*Chain{
			{Name: "nat-output", Base: &BaseChain{NATType, OutputHook, "-100", Accept}, Rules: []Rule{"jump services"}},
			{Name: "reject-chain", Comment: "helper", Rules: []Rule{"reject"}},
			{Name: "empty"},
		},
	}
}

func TestRoundTripAndWrapping(t *testing.T) {
	rs := sampleRuleset()
	text := rs.String()
	want := "\t\telements = { 10.0.0.10, 10.0.0.9,\n\t\t\t     10.0.0.1, 192.168.0.1,\n\t\t\t     10.0.0.2 }\n"
	if !strings.Contains(text, want) {
		t.Errorf("ipv4_addr elements not wrapped two per line:\n%s", text)
	}
	if !strings.Contains(text, `10.96.0.9 . tcp . 80 comment "ns/svc:a, b : c" : goto reject-chain }`) {
		t.Errorf("element comment misplaced:\n%s", text)
	}
	back, err := Parse([]byte(text))
	if err != nil {
		t.Fatalf("%v\n%s", err, text)
	}
	if !rs.Equal(back) {
		t.Errorf("round trip changed the ruleset:\n%s", cmp.Diff(text, back.String()))
	}
	if err := rs.Validate(); err != nil {
		t.Error(err)
	}
}

func TestSortElements(t *testing.T) {
	rs := sampleRuleset()
	rs.SortElements()
	var got []string
	for _, e := range rs.Set("cluster-ips").Elements {
		got = append(got, e.Key)
	}
	if want := []string{"10.0.0.1", "10.0.0.2", "10.0.0.9", "10.0.0.10", "192.168.0.1"}; !slices.Equal(got, want) {
		t.Errorf("sorted = %v, want %v", got, want)
	}
	s := &Set{Name: "m", Type: "inet_proto . inet_service", Elements: []Element{
		{Key: "udp . 53"}, {Key: "tcp . 8080"}, {Key: "tcp . 443"}, {Key: "sctp . 9"},
	}}
	s.SortElements()
	got = got[:0]
	for _, e := range s.Elements {
		got = append(got, e.Key)
	}
	if want := []string{"sctp . 9", "tcp . 443", "tcp . 8080", "udp . 53"}; !slices.Equal(got, want) {
		t.Errorf("sorted = %v, want %v", got, want)
	}
}

func TestDuration(t *testing.T) {
	for d, s := range map[time.Duration]string{
		3 * time.Hour:             "3h",
		90 * time.Second:          "1m30s",
		3601 * time.Second:        "1h1s",
		100000 * time.Second:      "1d3h46m40s",
		time.Second:               "1s",
		299992 * time.Millisecond: "4m59s992ms",
	} {
		if got := FormatDuration(d); got != s {
			t.Errorf("FormatDuration(%v) = %s, want %s", d, got, s)
		}
		if got, err := ParseDuration(s); err != nil || got != d {
			t.Errorf("ParseDuration(%s) = %v, %v", s, got, err)
		}
	}
	if got, err := ParseDuration("10800s"); err != nil || got != 3*time.Hour {
		t.Errorf("ParseDuration(10800s) = %v, %v", got, err)
	}
	for _, bad := range []string{"", "3", "h", "3x", "1.5s"} {
		if _, err := ParseDuration(bad); err == nil {
			t.Errorf("ParseDuration(%q) accepted", bad)
		}
	}
}

func TestParseErrorsNameTheLine(t *testing.T) {
	cases := map[string]string{
		"garbage":            "hello\n",
		"unclosed table":     "table ip t {\n",
		"set without type":   "table ip t {\n\tset s {\n\t}\n}\n",
		"map without data":   "table ip t {\n\tmap m {\n\t\ttype ipv4_addr\n\t}\n}\n",
		"set element value":  "table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 1.2.3.4 : drop }\n\t}\n}\n",
		"unclosed elements":  "table ip t {\n\tset s {\n\t\ttype ipv4_addr\n\t\telements = { 1.2.3.4,\n",
		"bad chain name":     "table ip t {\n\tchain 9x {\n\t}\n}\n",
		"comment after rule": "table ip t {\n\tchain c {\n\t\treject\n\t\tcomment \"x\"\n\t}\n}\n",
		"bad base chain":     "table ip t {\n\tchain c {\n\t\ttype filter hook input;\n\t}\n}\n",
		"set after chain":    "table ip t {\n\tchain c {\n\t}\n\tset s {\n\t\ttype ipv4_addr\n\t}\n}\n",
		"unknown family":     "table foo t {\n}\n",
	}
	for name, text := range cases {
		_, err := Parse([]byte(text))
		pe, ok := err.(*ParseError)
		if !ok || pe.Line == 0 {
			t.Errorf("%s: got %v, want a ParseError with a line number", name, err)
		}
	}
}

// FuzzParseRoundTrip checks that Parse never panics and that whatever it
// accepts, Encode writes back into text that parses to the same value.
func FuzzParseRoundTrip(f *testing.F) {
	f.Add([]byte(sampleRuleset().String()))
	paths, _ := filepath.Glob(filepath.Join("..", "..", "testdata", "reference", "*", "nftables.rules"))
	for _, p := range paths {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("table ip t {\n\tmap m {\n\t\ttype inet_proto . inet_service : verdict\n\t\telements = { tcp . 1 comment \"a}, b\" : drop,\n\t\t\t     udp . 2 : goto x }\n\t}\n}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sets, err := ParseAll(data)
		if err != nil {
			return
		}
		var b bytes.Buffer
		if err := EncodeAll(&b, sets); err != nil {
			t.Fatal(err)
		}
		again, err := ParseAll(b.Bytes())
		if err != nil {
			t.Fatalf("re-parse of encoded text failed: %v\n%s", err, b.String())
		}
		if len(again) != len(sets) {
			t.Fatalf("round trip changed the number of tables: %d, want %d", len(again), len(sets))
		}
		for i := range sets {
			if !sets[i].Equal(again[i]) {
				t.Fatalf("round trip changed the ruleset:\n%s", cmp.Diff(sets[i].String(), again[i].String()))
			}
		}
	})
}

func TestScript(t *testing.T) {
	rs := &Ruleset{Family: IPv4, Table: "kube-proxy", Chains: []*Chain{{Name: "c", Rules: []Rule{
		"ip daddr { 10.96.0.0/15 } drop",
		"ip saddr != { 1.2.3.4, 10.0.0.0/8 } drop",
		"update @a { ip saddr }",
		"meta l4proto tcp dnat ip to numgen random mod 1 map { 0 : 10.0.0.1 . 80 }",
	}}}}
	want := "add table ip kube-proxy\ndelete table ip kube-proxy\ntable ip kube-proxy {\n\tchain c {\n" +
		"\t\tip daddr { 10.96.0.0/15, 10.96.0.0/15 } drop\n" +
		"\t\tip saddr != { 1.2.3.4, 10.0.0.0/8 } drop\n" +
		"\t\tupdate @a { ip saddr }\n" +
		"\t\tmeta l4proto tcp dnat ip to numgen random mod 1 map { 0 : 10.0.0.1 . 80 }\n\t}\n}\n"
	if got := rs.Script(); got != want {
		t.Errorf("Script:\n%s", cmp.Diff(want, got))
	}
	if rs.Chains[0].Rules[0] != "ip daddr { 10.96.0.0/15 } drop" {
		t.Error("Script changed the ruleset")
	}
}

// TestTypeofSets holds sets declared by expression to what nft 1.0.6
// listed for the same declarations: the typeof line, and elements laid
// out by the type each expression loads. Parsing the listing gives the
// same sets back, and a type given twice is refused.
func TestTypeofSets(t *testing.T) {
	const listing = `table ip t {
	map a {
		typeof ip daddr : th dport
		elements = { 10.0.0.1 : 1, 10.0.0.2 : 2,
			     10.0.0.3 : 3, 10.0.0.4 : 4,
			     10.0.0.5 : 5 }
	}

	set b {
		typeof th dport
		elements = { 1, 2, 3, 4, 5,
			     6, 7 }
	}

	map c {
		typeof numgen random mod 1 : ip daddr . th dport
		elements = { 0 : 10.0.0.1 . 80, 1 : 10.0.0.2 . 80, 2 : 10.0.0.3 . 80, 3 : 10.0.0.4 . 80, 4 : 10.0.0.5 . 80,
			     5 : 10.0.0.6 . 80 }
	}
}
`
	rs, err := Parse([]byte(listing))
	if err != nil {
		t.Fatal(err)
	}
	if a := rs.Set("a"); !a.Typeof || a.Type != "ip daddr" || a.DataType != "th dport" || a.TypeClause() != "typeof ip daddr : th dport" {
		t.Errorf("map a parses as %+v", a)
	}
	if diff := cmp.Diff(listing, rs.String()); diff != "" {
		t.Errorf("Encode differs from nft's listing (-nft +encoded):\n%s", diff)
	}
	twice := strings.Replace(listing, "typeof th dport\n", "typeof th dport\n\t\ttype inet_service\n", 1)
	if _, err := Parse([]byte(twice)); err == nil || !strings.Contains(err.Error(), "type given twice") {
		t.Errorf("a set with typeof and type: %v", err)
	}
}
