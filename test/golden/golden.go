// Package golden defines the -update test flag that rewrites the golden
// files under testdata/golden. Every package with tests imports it (for its
// side effect, if it has no golden files), so that `go test ./... -update`
// is accepted by every test binary, as CONTRIBUTING.md says.
package golden

import "flag"

// Update is true when the tests were run with -update.
var Update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")
