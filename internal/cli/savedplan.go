package cli

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/nftgen"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/apply/statefile"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/savedplan"
)

// ruleFlags are the flags that shape the rules or choose what is read: a
// saved plan records the ones that were set, and apply FILE sets them
// again. They are the node and proxy settings and the kernel flags,
// without --config (its values are recorded as the flags it set) and
// without the paths of the lock and the cache, which belong to the run.
func ruleFlags() map[string]bool {
	fs := pflag.NewFlagSet("rules", pflag.ContinueOnError)
	NewProxyFlags(allParts).AddFlags(fs)
	(&kernelFlags{ipvs: true, conntrack: true}).addFlags(fs)
	names := map[string]bool{}
	fs.VisitAll(func(f *pflag.Flag) { names[f.Name] = true })
	delete(names, "config")
	delete(names, "state-dir")
	return names
}

// flagValue is a flag's value as Set takes it back: a list joined with
// commas (its items, addresses and CIDRs, hold none).
func flagValue(f *pflag.Flag) string {
	if s, ok := f.Value.(pflag.SliceValue); ok {
		return strings.Join(s.GetSlice(), ",")
	}
	return f.Value.String()
}

// recordSettings returns the rule flags that were set, on the command
// line or by --config, with the node name and mode always.
func recordSettings(fs *pflag.FlagSet) map[string]string {
	names := ruleFlags()
	out := map[string]string{}
	fs.VisitAll(func(f *pflag.Flag) {
		if names[f.Name] && (f.Changed || f.Name == "node-name" || f.Name == "mode") {
			out[f.Name] = flagValue(f)
		}
	})
	return out
}

// savedPlanConflicts are the flags apply FILE refuses: the plan carries its
// own input, and a saved plan is applied once.
func savedPlanConflicts() []string {
	conn := pflag.NewFlagSet("conn", pflag.ContinueOnError)
	(&connFlags{namespace: true}).addFlags(conn)
	names := []string{"filename", "example", "config", "watch"}
	conn.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	return names
}

// restoreSettings sets the plan's flags on fs. A rule flag given on the
// command line too must say the same as the plan; one the plan did not
// set may not be given.
func restoreSettings(fs *pflag.FlagSet, p *savedplan.Plan) error {
	for _, name := range savedPlanConflicts() {
		if f := fs.Lookup(name); f != nil && f.Changed {
			return fmt.Errorf("--%s cannot be used with a saved plan: the plan carries its input and settings", name)
		}
	}
	names := ruleFlags()
	var err error
	fs.VisitAll(func(f *pflag.Flag) {
		want, recorded := p.Settings[f.Name]
		switch {
		case err != nil || !names[f.Name] || !f.Changed:
		case !recorded:
			err = fmt.Errorf("--%s cannot be used with this saved plan: it was made without it", f.Name)
		case flagValue(f) != want:
			err = fmt.Errorf("%w: it was made with --%s=%s, not %s", savedplan.ErrStale, f.Name, want, flagValue(f))
		}
	})
	if err != nil {
		return err
	}
	keys := slices.Sorted(func(yield func(string) bool) {
		for k := range p.Settings {
			if !yield(k) {
				return
			}
		}
	})
	for _, name := range keys {
		if !names[name] || fs.Lookup(name) == nil {
			return fmt.Errorf("the saved plan sets %q, which is not a setting of this version's apply", name)
		}
		if err := fs.Set(name, p.Settings[name]); err != nil {
			return fmt.Errorf("the saved plan's %s: %w", name, err)
		}
	}
	return nil
}

// thisHost identifies the machine and network namespace the tool runs in.
func thisHost() (savedplan.Host, error) {
	var h savedplan.Host
	var err error
	if h.Hostname, err = os.Hostname(); err != nil {
		return h, err
	}
	if h.BootID, err = statefile.BootID(); err != nil {
		return h, err
	}
	h.NetnsCookie, err = nftgen.NetnsCookie()
	return h, err
}

// newSavedPlan records plan p of snapshot snap, made with the flags in fs.
func newSavedPlan(fs *pflag.FlagSet, snap *cluster.Snapshot, s *renderSettings, b kernelBackend, p kernelPlan) (*savedplan.Plan, error) {
	host, err := thisHost()
	if err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	var snapJSON, text bytes.Buffer
	if err := snap.WriteJSON(&snapJSON); err != nil {
		return nil, err
	}
	if err := p.writeText(&text); err != nil {
		return nil, err
	}
	return &savedplan.Plan{
		APIVersion: savedplan.APIVersion, Kind: savedplan.Kind,
		CreatedAt: time.Now().UTC().Truncate(time.Second), ToolVersion: version,
		Node: s.cluster.NodeName, Mode: string(s.mode), Backend: b.name(), Host: host,
		Settings: recordSettings(fs), Snapshot: bytes.TrimSpace(snapJSON.Bytes()),
		Live: p.liveTables(),
		Changes: savedplan.Changes{
			Summary: p.summary().String(), SHA256: savedplan.ChangeDigest(text.String()), Diff: text.String(),
		},
	}, nil
}

// checkSavedSettings refuses a plan whose top-level mode and node are not
// the ones its settings give once parsed: what apply renders for must be
// what the file says it is for.
func checkSavedSettings(path string, saved *savedplan.Plan, s *renderSettings) error {
	if string(s.mode) != saved.Mode || s.cluster.NodeName != saved.Node {
		return fmt.Errorf("%s: %w: it says mode %s and node %q, its settings give mode %s and node %q",
			path, savedplan.ErrEdited, saved.Mode, saved.Node, s.mode, s.cluster.NodeName)
	}
	return nil
}

// verifySaved refuses a plan computed now that is not the saved one:
// another machine, backend or live state, or changes that the saved
// plan's text does not show line for line.
func verifySaved(saved *savedplan.Plan, b kernelBackend, p kernelPlan) error {
	host, err := thisHost()
	if err != nil {
		return err
	}
	if err := saved.CheckHost(host); err != nil {
		return err
	}
	if err := saved.CheckBackend(b.name()); err != nil {
		return err
	}
	if err := saved.CheckLive(p.liveTables()); err != nil {
		return err
	}
	return checkSavedText(saved, p)
}

// checkSavedText compares the text of the plan made now with the text
// the saved plan shows (savedplan.CheckChanges).
func checkSavedText(saved *savedplan.Plan, p kernelPlan) error {
	var text bytes.Buffer
	if err := p.writeText(&text); err != nil {
		return err
	}
	return saved.CheckChanges(text.String(), version)
}
