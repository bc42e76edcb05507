package render_test

import (
	"testing"

	nft "github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/nftables"
)

// renderNFTables renders every family of the case in the nftables text form.
func (gc *goldenCase) renderNFTables(t *testing.T, input []byte) ([]*nft.Ruleset, string) {
	return nftablesGolden.renderCase(t, gc, input)
}
