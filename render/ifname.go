package render

import (
	"fmt"
	"strings"
)

// IfNameMaxLen is the longest interface name the kernel takes: IFNAMSIZ
// (16) bytes with the NUL.
const IfNameMaxLen = 15

// validateInterfaces checks the pod bridge and the pod interface prefix,
// whenever given, as the kernel checks a device name (dev_valid_name),
// and refuses what the rules cannot carry as one word. kube-proxy v1.37
// only requires them to be non-empty in their mode; a name it would
// accept and this refuses could never match an interface anyway, or
// would be read by iptables-restore as more than one argument.
func (c *Config) validateInterfaces() error {
	if c.BridgeInterface != "" {
		if problem := ifNameProblem(c.BridgeInterface, IfNameMaxLen); problem != "" {
			return &SettingError{Setting: "bridgeInterface", Value: fmt.Sprintf("%q", c.BridgeInterface), Problem: problem}
		}
	}
	if c.InterfaceNamePrefix != "" {
		// The rules add one byte, "+" for iptables and "*" for nft, and
		// the result must still be a name iptables takes.
		if problem := ifNameProblem(c.InterfaceNamePrefix, IfNameMaxLen-1); problem != "" {
			return &SettingError{Setting: "interfaceNamePrefix", Value: fmt.Sprintf("%q", c.InterfaceNamePrefix), Problem: problem}
		}
	}
	return nil
}

// ifNameProblem says what is wrong with name as an interface name of at
// most maxLen bytes, or "" when nothing is.
func ifNameProblem(name string, maxLen int) string {
	switch {
	case name == "":
		return "must not be empty"
	case len(name) > maxLen:
		if maxLen < IfNameMaxLen {
			return fmt.Sprintf("must be at most %d bytes: the rules add + (* in nftables mode), and a name is at most %d (the kernel's IFNAMSIZ is %d with the NUL)", maxLen, IfNameMaxLen, IfNameMaxLen+1)
		}
		return fmt.Sprintf("must be at most %d bytes (the kernel's IFNAMSIZ is %d with the NUL)", maxLen, IfNameMaxLen+1)
	case name == "." || name == "..":
		return "is not a name the kernel takes"
	case name == "!":
		return "is read by iptables as a negation, not a name"
	case strings.ContainsAny(name, "/:"):
		return "must not hold / or :, which the kernel refuses in a name"
	}
	for i := 0; i < len(name); i++ {
		switch c := name[i]; {
		case kernelSpace(c):
			return "must not hold white space, which the kernel refuses in a name"
		case c < ' ' || c == 0x7f || c == '"' || c == '\'' || c == '\\':
			// The kernel takes these, but they would open a quote or an
			// escape in iptables-restore's or nft's text, or end its line.
			return "must not hold a quote, a backslash or a control character: iptables-save and nft print a name bare, so the rules could not be read back"
		}
	}
	return ""
}

// kernelSpace is the kernel's isspace (lib/ctype.c) on one byte of a
// name: the ASCII white space and, from its Latin-1 table, 0xa0 (so a
// name holding U+00A0 in UTF-8 is refused too, as the kernel does).
func kernelSpace(c byte) bool {
	switch c {
	case ' ', '\t', '\n', '\v', '\f', '\r', 0xa0:
		return true
	}
	return false
}
