package iptables

import (
	"slices"
	"strings"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/nodetable"
)

// restoreArgv splits one line of iptables-restore input into arguments
// as iptables does (add_param_to_argv in iptables' xshared.c): blanks
// (space, tab, newline) split outside quotes; a double quote opens a
// quoted part, in which a backslash takes the next byte as it is; the
// closing quote ends the argument, even an empty one. The test holds its
// own copy so that the encoder is checked against iptables' rules, not
// against Fields, which the encoder's author also wrote.
func restoreArgv(line string) []string {
	var out []string
	var arg []byte
	quoted, escaped := false, false
	for i := 0; i < len(line); i++ {
		c := line[i]
		if quoted {
			switch {
			case escaped:
				arg, escaped = append(arg, c), false
				continue
			case c == '\\':
				escaped = true
				continue
			case c != '"':
				arg = append(arg, c)
				continue
			}
			quoted = false
		} else if c == '"' {
			quoted = true
			continue
		}
		switch c {
		case '"':
		case ' ', '\t', '\n':
			if len(arg) == 0 {
				continue
			}
		default:
			arg = append(arg, c)
			continue
		}
		out = append(out, string(arg))
		arg = arg[:0]
	}
	if len(arg) > 0 {
		out = append(out, string(arg))
	}
	return out
}

func TestRestoreArgvFollowsIPTables(t *testing.T) {
	for line, want := range map[string][]string{
		`-A X -j ACCEPT`:         {"-A", "X", "-j", "ACCEPT"},
		`a  "b c" d`:             {"a", "b c", "d"},
		`"a"b`:                   {"a", "b"},
		`"" x`:                   {"", "x"},
		`"a\"b\\c"`:              {`a"b\c`},
		`a\b`:                    {`a\b`},
		"a\tb":                   {"a", "b"},
		`--comment "x\'y"`:       {"--comment", "x'y"},
		`ab"c d"e`:               {"abc d", "e"},
		`-i "veth -s 6.6.6.6" x`: {"-i", "veth -s 6.6.6.6", "x"},
	} {
		if got := restoreArgv(line); !slices.Equal(got, want) {
			t.Errorf("restoreArgv(%q) = %q, want %q", line, got, want)
		}
	}
}

// hostileStrings are values an attacker might put in a name or comment
// to end its argument early and add arguments of their own.
var hostileStrings = []string{
	"veth -s 6.6.6.6 -m comment --comment x",
	"cbr0 -j ACCEPT",
	`a"b`,
	`"`,
	`""`,
	`x" -s 6.6.6.6 "`,
	`x\" -s 6.6.6.6 \"`,
	`\`,
	`\\"`,
	`'`,
	`x' -j DROP '`,
	"",
	" ",
	"  -s 6.6.6.6",
	"veth+",
	"ünïcödé",
	"#x",
	"-s",
	"--",
}

// controlStrings would end the restore line: ValidateRule must refuse
// them, since no quoting keeps a newline inside one line.
var controlStrings = []string{"a\nb", "x\n-A INPUT -j ACCEPT", "a\rb", "a\tb", "a\x00b", "\x7f", "a\vb"}

// TestHostileStringsStayOneArgument writes rules whose interface and
// comment are hostile strings, encodes them as iptables-restore input,
// and splits each line as iptables-restore does: the arguments must be
// exactly the intended ones (issue 33: an interface prefix with spaces
// gave every pod-interface rule "-s 6.6.6.6/32").
func TestHostileStringsStayOneArgument(t *testing.T) {
	for _, iface := range hostileStrings {
		for _, comment := range hostileStrings {
			for _, not := range []bool{false, true} {
				r := NewBuilder().Protocol("tcp").InInterface(iface, not).Comment(comment).Jump("KUBE-MARK-MASQ").Rule()
				want := []string{"-A", "KUBE-X", "-i", iface, "-p", "tcp", "-m", "comment", "--comment", comment, "-j", "KUBE-MARK-MASQ"}
				if not {
					want = slices.Insert(want, 2, "!")
				}
				got := restoreArgv(encodedRuleLine(t, r))
				if !slices.Equal(got, want) {
					t.Errorf("interface %q, comment %q: iptables-restore reads %q, want %q", iface, comment, got, want)
				}
			}
		}
	}
}

// TestControlCharactersAreRefused checks that a rule whose interface or
// comment holds a control character is refused before anything is
// written: the restore line would end inside it.
func TestControlCharactersAreRefused(t *testing.T) {
	for _, s := range controlStrings {
		for _, r := range []Rule{
			NewBuilder().InInterface(s, false).Jump("ACCEPT").Rule(),
			NewBuilder().Comment(s).Jump("ACCEPT").Rule(),
		} {
			if err := ruleset(r).Validate(); err == nil {
				t.Errorf("rule %q validates", r)
			}
		}
	}
}

func ruleset(r Rule) *Ruleset {
	rs := &Ruleset{Family: nodetable.IPv4, Tables: []*Table{{Name: NAT}}}
	rs.Tables[0].AddChain(&Chain{Name: "KUBE-X", Policy: "-", Rules: []Rule{r}})
	return rs
}

// encodedRuleLine encodes a ruleset of the one rule and returns the rule's
// line, checking that the ruleset validates and that the line is the
// text's only rule line.
func encodedRuleLine(t *testing.T, r Rule) string {
	t.Helper()
	rs := ruleset(r)
	if err := rs.Validate(); err != nil {
		t.Fatalf("rule %q: %v", r, err)
	}
	var lines []string
	for _, l := range strings.Split(rs.String(), "\n") {
		if strings.HasPrefix(l, "-A ") || (l != "" && l[0] != '*' && l[0] != ':' && l != "COMMIT") {
			lines = append(lines, l)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("rule %q: %d rule lines in %q", r, len(lines), rs.String())
	}
	return lines[0]
}
