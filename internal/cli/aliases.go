package cli

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// flagAlias is kube-proxy v1.37's name for one of the tool's flags, where
// kube-proxy spells it differently: the alias sets the tool's flag, through
// the same variable, and is hidden from help (docs/USAGE.md lists the aliases).
type flagAlias struct {
	alias, flag string
	// modes, when set, are the modes in which kube-proxy reads the alias
	// (it reads --ipvs-sync-period in ipvs mode only); in another mode the
	// alias is refused, as the flags of another mode are.
	modes []Mode
}

// notIPVS are the modes in which kube-proxy reads its --iptables-*-sync-period.
var notIPVS = []Mode{ModeIPTables, ModeNFTables, ModeUserspace}

// kubeProxyAliases are the kube-proxy flags whose setting the tool has
// under another name. kube-proxy's flags of the same name as the tool's
// (--cluster-cidr, --masquerade-all, --ipvs-scheduler, ...) need none.
var kubeProxyAliases = []flagAlias{
	{alias: "proxy-mode", flag: "mode"},
	{alias: "hostname-override", flag: "node-name"},
	{alias: "iptables-masquerade-bit", flag: "masquerade-bit"},
	{alias: "iptables-sync-period", flag: "sync-period", modes: notIPVS},
	{alias: "iptables-min-sync-period", flag: "min-sync-period", modes: notIPVS},
	{alias: "ipvs-sync-period", flag: "sync-period", modes: []Mode{ModeIPVS}},
	{alias: "ipvs-min-sync-period", flag: "min-sync-period", modes: []Mode{ModeIPVS}},
	{alias: "master", flag: "server"},
}

// givenValues records, for one flag and its aliases, the value each name
// was given on the command line, as the flag prints it.
type givenValues struct {
	names  []string
	values map[string]string
}

// aliasedValue is the Value of a flag that has aliases, and of each alias:
// it sets the flag's own Value and records which name set what.
type aliasedValue struct {
	pflag.Value
	name  string
	given *givenValues
	// target is, for an alias, the flag it sets: setting the alias marks
	// the flag as given, so that the config file does not override it.
	target *pflag.Flag
}

func (v *aliasedValue) Set(s string) error {
	if err := v.Value.Set(s); err != nil {
		return err
	}
	if v.target != nil {
		v.target.Changed = true
	}
	if _, seen := v.given.values[v.name]; !seen {
		v.given.names = append(v.given.names, v.name)
	}
	v.given.values[v.name] = v.Value.String()
	return nil
}

// addAliases registers kube-proxy's aliases on every command of the tree
// that has the flag they stand for, and names them in the flag's help.
func addAliases(cmd *cobra.Command) {
	fs := cmd.Flags()
	names := map[*pflag.Flag][]string{}
	for _, a := range kubeProxyAliases {
		f := fs.Lookup(a.flag)
		if f == nil || fs.Lookup(a.alias) != nil {
			continue
		}
		v, ok := f.Value.(*aliasedValue)
		if !ok {
			v = &aliasedValue{Value: f.Value, name: a.flag, given: &givenValues{values: map[string]string{}}}
			f.Value = v
		}
		alias := &aliasedValue{Value: v.Value, name: a.alias, given: v.given, target: f}
		fs.AddFlag(&pflag.Flag{
			Name:        a.alias,
			Usage:       fmt.Sprintf("kube-proxy's name for --%s", a.flag),
			Value:       alias,
			DefValue:    f.DefValue,
			NoOptDefVal: f.NoOptDefVal,
			Hidden:      true,
		})
		names[f] = append(names[f], "--"+a.alias)
	}
	for f, aliases := range names {
		label := "name"
		if len(aliases) > 1 {
			label = "names"
		}
		f.Usage += fmt.Sprintf(" (kube-proxy's %s: %s)", label, strings.Join(aliases, ", "))
	}
	for _, sub := range cmd.Commands() {
		addAliases(sub)
	}
}

// checkAliases refuses a flag and its alias, or two aliases, given
// different values on one command line: which one was meant is unknown.
func checkAliases(fs *pflag.FlagSet) error {
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		v, ok := f.Value.(*aliasedValue)
		if !ok || v.target != nil || err != nil {
			return
		}
		g := v.given
		for _, name := range g.names[min(1, len(g.names)):] {
			if first := g.names[0]; g.values[name] != g.values[first] {
				err = fmt.Errorf("--%s=%s and --%s=%s conflict: give one of them",
					first, g.values[first], name, g.values[name])
				return
			}
		}
	})
	return err
}

// givenFlag names the flag as the command line gave it, "--proxy-mode"
// for an alias, else "--" and the flag's name.
func givenFlag(fs *pflag.FlagSet, name string) string {
	if fs != nil {
		if f := fs.Lookup(name); f != nil {
			if v, ok := f.Value.(*aliasedValue); ok && len(v.given.names) > 0 {
				return "--" + v.given.names[len(v.given.names)-1]
			}
		}
	}
	return "--" + name
}

// checkAliasModes refuses an alias that kube-proxy reads in other modes
// than mode only.
func checkAliasModes(fs *pflag.FlagSet, mode Mode) error {
	for _, a := range kubeProxyAliases {
		if a.modes == nil || slices.Contains(a.modes, mode) {
			continue
		}
		if f := fs.Lookup(a.alias); f != nil && f.Changed {
			return fmt.Errorf("--%s applies to --mode=%s only, not --mode=%s", a.alias, joinModes(a.modes), mode)
		}
	}
	return nil
}

// joinModes spells modes as "iptables, nftables or userspace".
func joinModes(modes []Mode) string {
	names := make([]string, len(modes))
	for i, m := range modes {
		names[i] = string(m)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}
