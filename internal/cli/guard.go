package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/pflag"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// guardFlags are apply's guard rails against wiping a node by mistake: an
// empty or truncated file, a snapshot of another cluster, a wrong
// --node-name. Each refuses before anything is written; --force passes.
type guardFlags struct {
	force      bool
	maxRemoval int // percent of the Service ports programmed on the node
}

func (g *guardFlags) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&g.force, "force", false, "apply even where a guard rail refuses: an input without Services or without this node's Node, or a change that removes more than --max-removal")
	fs.IntVar(&g.maxRemoval, "max-removal", 50, "refuse to remove more than this percentage (0-100) of the Service ports programmed on the node, unless --force")
}

func (g *guardFlags) validate() error {
	if g.maxRemoval < 0 || g.maxRemoval > 100 {
		return fmt.Errorf("--max-removal %d: must be a percentage from 0 to 100", g.maxRemoval)
	}
	return nil
}

// errRefused marks a guard rail's refusal.
var errRefused = errors.New("refusing to apply")

// checkInput refuses an input that cannot be this node's cluster: one with
// no Services (every cluster has default/kubernetes), or without the
// Node it is applied for.
func (g *guardFlags) checkInput(snap *cluster.Snapshot, nodeName string) error {
	if err := g.checkServices(snap); err != nil || g.force {
		return err
	}
	for _, n := range snap.Nodes {
		if n.Name == nodeName {
			return nil
		}
	}
	return fmt.Errorf("%w: the input holds no Node %q (a snapshot of another cluster, or the wrong --node-name?); pass --force to apply it anyway", errRefused, nodeName)
}

// checkServices refuses a snapshot without Services: an empty or
// truncated file, or an API server that lost its data. Watch mode checks
// this alone, since the Node is checked when it starts.
func (g *guardFlags) checkServices(snap *cluster.Snapshot) error {
	if g.force || len(snap.Services) > 0 {
		return nil
	}
	return fmt.Errorf("%w: the input holds no Services (an empty, truncated or wrong file, or an API server that lost its data?), so applying it would remove every Service from this node; pass --force if that is what you want", errRefused)
}

// checkRemoval refuses a plan that removes more than maxRemoval percent of
// the Service ports programmed on the node.
func (g *guardFlags) checkRemoval(p kernelPlan) error {
	ports := p.servicePorts()
	live, removed := len(ports.live), len(ports.removed)
	if g.force || live == 0 || removed*100 <= g.maxRemoval*live {
		return nil
	}
	shown := ports.removed
	if len(shown) > 10 {
		shown = append(shown[:10:10], fmt.Sprintf("and %d more", len(ports.removed)-10))
	}
	return fmt.Errorf("%w: the change removes %d of the %d Service ports programmed on this node (%d%%, over --max-removal=%d%%): %s; "+
		"check the input and --node-name, then raise --max-removal or pass --force",
		errRefused, removed, live, removed*100/live, g.maxRemoval, strings.Join(shown, ", "))
}
