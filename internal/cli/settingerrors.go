package cli

import (
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
)

// renderSettingFlags are the flags behind the settings render names in
// its errors, and the config file's fields behind the settings one may
// need.
var renderSettingFlags = map[string]struct{ flag, field string }{
	"masqueradeBit":       {"masquerade-bit", ""},
	"detectLocalMode":     {"detect-local-mode", "detectLocalMode"},
	"bridgeInterface":     {"pod-bridge-interface", "detectLocal.bridgeInterface"},
	"interfaceNamePrefix": {"pod-interface-name-prefix", "detectLocal.interfaceNamePrefix"},
	"nodePortAddresses":   {"nodeport-addresses", "nodePortAddresses"},
	"scheduler":           {"ipvs-scheduler", "ipvs.scheduler"},
	"listenIP":            {"bind-address", ""},
	"portRange":           {"proxy-port-range", "portRange"},
	"nftablesLayout":      {"nftables-layout", ""},
}

// settingError rephrases render's error about a setting to name where
// the value came from: the flag as given, or the config file's field.
// Other errors, and nil, are returned as they are.
func (f *ProxyFlags) settingError(err error) error {
	var se *render.SettingError
	if !errors.As(err, &se) {
		return err
	}
	names, ok := renderSettingFlags[se.Setting]
	if !ok {
		return err
	}
	source := f.describe(names.flag)
	if se.Needs == "" {
		return fmt.Errorf("%s %s: %s", source, se.Value, se.Problem)
	}
	needs := "--" + renderSettingFlags[se.Needs].flag
	if _, fromFile := f.fromConfig[names.flag]; fromFile {
		needs = renderSettingFlags[se.Needs].field
	}
	return fmt.Errorf("%s %s needs %s", source, se.Value, needs)
}
