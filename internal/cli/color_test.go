package cli

import (
	"bytes"
	"strings"
	"testing"
)

// TestColorEnabled checks --color against the terminal and the
// environment: NO_COLOR and TERM=dumb turn auto off, never always.
func TestColorEnabled(t *testing.T) {
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	for _, tc := range []struct {
		mode     string
		terminal bool
		getenv   func(string) string
		want     bool
	}{
		{colorAuto, true, env("TERM", "xterm"), true},
		{colorAuto, false, env("TERM", "xterm"), false},
		{colorAuto, true, env("NO_COLOR", "1"), false},
		{colorAuto, true, env("NO_COLOR", ""), true},
		{colorAuto, true, env("TERM", "dumb"), false},
		{colorAlways, false, env("NO_COLOR", "1", "TERM", "dumb"), true},
		{colorNever, true, env(), false},
	} {
		if got := colorEnabled(tc.mode, tc.terminal, tc.getenv); got != tc.want {
			t.Errorf("--color=%s, terminal %v, NO_COLOR=%q TERM=%q: colour %v, want %v",
				tc.mode, tc.terminal, tc.getenv("NO_COLOR"), tc.getenv("TERM"), got, tc.want)
		}
	}
}

// TestColorWriter checks the colours of a plan's lines, written in pieces
// that split lines.
func TestColorWriter(t *testing.T) {
	plan := "--- live IPv4 (iptables-nft)\n+++ desired IPv4\n@@ nat KUBE-SERVICES: changed @@\n" +
		" -A KUBE-SERVICES -j KEEP\n-:KUBE-OLD - [0:0]\n+-A KUBE-NEW\n# kept X\nPlan: chains +1"
	var out bytes.Buffer
	cw := &colorWriter{w: &out, class: diffClass}
	for i := 0; i < len(plan); i += 7 {
		cw.Write([]byte(plan[i:min(i+7, len(plan))]))
	}
	if err := cw.Flush(); err != nil {
		t.Fatal(err)
	}
	want := sgrHeader + "--- live IPv4 (iptables-nft)" + sgrReset + "\n" +
		sgrHeader + "+++ desired IPv4" + sgrReset + "\n" +
		sgrCyan + "@@ nat KUBE-SERVICES: changed @@" + sgrReset + "\n" +
		" -A KUBE-SERVICES -j KEEP\n" +
		sgrRed + "-:KUBE-OLD - [0:0]" + sgrReset + "\n" +
		sgrGreen + "+-A KUBE-NEW" + sgrReset + "\n" +
		"# kept X\n" +
		sgrBold + "Plan: chains +1" + sgrReset
	if out.String() != want {
		t.Errorf("coloured plan:\n%q\nwant:\n%q", out.String(), want)
	}

	// A dry run's restore input: "-A" is a command, not a removal.
	out.Reset()
	cw = &colorWriter{w: &out, class: scriptClass}
	cw.Write([]byte("# iptables-nft-restore --noflush (IPv4)\n*nat\n-A KUBE-SERVICES -j X\n"))
	if want := sgrHeader + "# iptables-nft-restore --noflush (IPv4)" + sgrReset + "\n*nat\n-A KUBE-SERVICES -j X\n"; out.String() != want {
		t.Errorf("coloured dry run:\n%q\nwant:\n%q", out.String(), want)
	}
}

// TestColoredOutput checks the writer the commands get: coloured only with
// --color=always or on a terminal, and never for data formats.
func TestColoredOutput(t *testing.T) {
	t.Setenv("NO_COLOR", "")
	for _, tc := range []struct {
		color, format string
		want          bool
	}{
		{colorAlways, "text", true},
		{colorAlways, "json", false},
		{colorAlways, "yaml", false},
		{colorNever, "text", false},
		{colorAuto, "text", false}, // a buffer is no terminal
	} {
		var out bytes.Buffer
		c := &common{color: tc.color}
		c.streams.Out = &out
		w, flush := c.colored(tc.format, diffClass)
		w.Write([]byte("+added\n- removed"))
		flush()
		if got := strings.Contains(out.String(), "\x1b["); got != tc.want {
			t.Errorf("--color=%s -o %s: colour %v, want %v: %q", tc.color, tc.format, got, tc.want, out.String())
		}
	}
	if _, _, code := run(t, "", "version", "--color=sometimes"); code != ExitError {
		t.Errorf("--color=sometimes: exit %d, want %d", code, ExitError)
	}
}
