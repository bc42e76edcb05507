package diff

import (
	"fmt"
	"io"
	"strings"
)

// Sysctl is one sysctl that a plan changes: its name as sysctl(8) spells
// it ("net.ipv4.conf.all.route_localnet"), the value the node has now
// (empty when the node has no such sysctl), and the value wanted. Values
// are compared and shown with their whitespace runs as single spaces, as
// /proc/sys separates a multi-valued sysctl's fields with tabs.
type Sysctl struct {
	Name    string `json:"name"`
	Current string `json:"current"`
	Wanted  string `json:"wanted"`
}

// SysctlName returns the sysctl(8) name of a path under /proc/sys
// ("net/ipv4/conf/all/route_localnet"): slashes become dots, and a dot
// within a component (an interface name, "eth0.100") becomes a slash. An
// absolute path is a setting that is not a sysctl (a module parameter,
// "/sys/module/nf_conntrack/parameters/hashsize"): it is named by its path.
func SysctlName(path string) string {
	if strings.HasPrefix(path, "/") {
		return path
	}
	return swapDotSlash(path)
}

// Path returns the sysctl's path under /proc/sys, SysctlName reversed, or
// the absolute path a name that is one.
func (s Sysctl) Path() string { return SysctlName(s.Name) }

func swapDotSlash(s string) string {
	return strings.Map(func(r rune) rune {
		switch r {
		case '.':
			return '/'
		case '/':
			return '.'
		}
		return r
	}, s)
}

// SysctlValue is a sysctl's value as it is compared and shown.
func SysctlValue(v string) string { return strings.Join(strings.Fields(v), " ") }

// SysctlChanges are the sysctls a plan sets, in the order they are
// written; only those whose value differs from the wanted one.
type SysctlChanges []Sysctl

// Empty reports whether no sysctl changes.
func (s SysctlChanges) Empty() bool { return len(s) == 0 }

// WriteText writes the changes as a unified diff in sysctl(8)'s
// "name = value" lines, one hunk per sysctl; a sysctl the node lacks has
// no "-" line:
//
//	--- live sysctl
//	+++ desired sysctl
//	@@ sysctl net.ipv4.conf.all.route_localnet @@
//	-net.ipv4.conf.all.route_localnet = 0
//	+net.ipv4.conf.all.route_localnet = 1
func (s SysctlChanges) WriteText(w io.Writer) error {
	if s.Empty() {
		return nil
	}
	var b strings.Builder
	b.WriteString("--- live sysctl\n+++ desired sysctl\n")
	for _, c := range s {
		fmt.Fprintf(&b, "@@ sysctl %s @@\n", c.Name)
		if c.Current != "" {
			fmt.Fprintf(&b, "-%s = %s\n", c.Name, c.Current)
		}
		fmt.Fprintf(&b, "+%s = %s\n", c.Name, c.Wanted)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
