package render_test

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
)

// renderIPVS renders every family of the case in the ipvs text form.
func (gc *goldenCase) renderIPVS(t *testing.T, input []byte) ([]*ipvs.Ruleset, string) {
	return ipvsGolden.renderCase(t, gc, input)
}
