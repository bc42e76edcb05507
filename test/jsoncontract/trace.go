// Package jsoncontract holds the tool's -o json output as a CI job reads
// it: only the documented fields (docs/OUTPUT.md), decoded by name, so
// that a test written against it fails when the contract changes.
package jsoncontract

import "slices"

// Trace is `trace -o json` (kind Trace).
type Trace struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Verdict    string `json:"verdict"`
	Scheduler  string `json:"scheduler"`
	Endpoints  []struct {
		Address     string  `json:"address"`
		Probability float64 `json:"probability"`
		Path        []Step  `json:"path"`
	} `json:"endpoints"`
	Masquerade bool `json:"masquerade"`
	Affinity   struct {
		Mode           string `json:"mode"`
		TimeoutSeconds int    `json:"timeoutSeconds"`
	} `json:"affinity"`
	Path  []Step `json:"path"`
	Entry struct {
		Via string `json:"via"`
	} `json:"entry"`
	ProxyPort string `json:"proxyPort"`
}

// Step is one rule a traced packet matched.
type Step struct {
	Table, Chain, Rule string
}

// Addresses are the endpoints' addresses, sorted.
func (tr Trace) Addresses() []string {
	var out []string
	for _, e := range tr.Endpoints {
		out = append(out, e.Address)
	}
	return slices.Sorted(slices.Values(out))
}
