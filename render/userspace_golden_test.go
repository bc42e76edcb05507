package render_test

import (
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/userspace"
)

// renderUserspace renders every family of the case in the userspace text form.
func (gc *goldenCase) renderUserspace(t *testing.T, input []byte) ([]*userspace.Ruleset, string) {
	return userspaceGolden.renderCase(t, gc, input)
}
