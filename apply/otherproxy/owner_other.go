//go:build !unix

package otherproxy

// ownedBy: no procfs here (apply runs on Linux only).
func ownedBy(string, uint32) bool { return false }
