package nftables

import (
	"slices"
	"testing"
)

// nftWords splits rule text as nft's scanner does for what rules hold
// here: blanks split, and a quoted string runs from one double quote to
// the next, with no escapes (nft's scanner.l: \"[^"]*\"). The test keeps
// its own copy so that QuoteString is checked against nft's rules.
func nftWords(s string) []string {
	var out []string
	for i := 0; i < len(s); {
		switch {
		case s[i] == ' ' || s[i] == '\t':
			i++
		case s[i] == '"':
			j := i + 1
			for j < len(s) && s[j] != '"' {
				j++
			}
			out = append(out, s[i:min(j+1, len(s))])
			i = j + 1
		default:
			j := i
			for j < len(s) && s[j] != ' ' && s[j] != '\t' && s[j] != '"' {
				j++
			}
			out = append(out, s[i:j])
			i = j
		}
	}
	return out
}

// TestQuoteStringHostile checks that a string either stays one quoted
// word of the rule or makes the rule one that Validate refuses: never
// more words of the rule (issue 33).
func TestQuoteStringHostile(t *testing.T) {
	for _, s := range []string{
		"veth", "veth*", "veth ip saddr 6.6.6.6", `veth" ip saddr 6.6.6.6 "`, `"`, `a"b`, "", " ",
		`\`, `\"`, "'", "a\nb", "a\x00b", "a\tb", "a\rb", "\x7f", "{x}", "x; drop",
	} {
		rule := "iifname " + QuoteString(s) + " goto ext"
		rs := &Ruleset{Family: IPv4, Table: "kube-proxy", Chains: []*Chain{{Name: "c", Rules: []Rule{Rule(rule)}}}}
		err := rs.Validate()
		if !Quotable(s) {
			if err == nil {
				t.Errorf("%q: rule %q validates; nft cannot hold the string", s, rule)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", s, err)
		}
		want := []string{"iifname", `"` + s + `"`, "goto", "ext"}
		if got := nftWords(rule); !slices.Equal(got, want) {
			t.Errorf("%q: nft reads %q, want %q", s, got, want)
		}
	}
}
