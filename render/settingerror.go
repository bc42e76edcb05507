package render

import "fmt"

// SettingError is a setting whose value the renderers refuse. It names the
// setting as Config and the options structs do, so that the caller can say
// where the value came from (a flag or a field of a config file).
type SettingError struct {
	// Setting is the refused setting: masqueradeBit, detectLocalMode,
	// bridgeInterface, interfaceNamePrefix, nodePortAddresses, scheduler,
	// listenIP or portRange.
	Setting string
	// Value is the refused value as the message shows it (quoted if text).
	Value string
	// Problem says what is wrong with the value.
	Problem string
	// Needs, when set, is the setting that this value needs and lacks; the
	// message then says so instead of Problem.
	Needs string
}

func (e *SettingError) Error() string {
	if e.Needs != "" {
		return fmt.Sprintf("%s %s needs %s", e.Setting, e.Value, e.Needs)
	}
	return fmt.Sprintf("%s %s: %s", e.Setting, e.Value, e.Problem)
}
