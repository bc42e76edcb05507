//go:build !amd64

package vmtest

import "errors"

// writeExitDevice: the VM is an x86-64 one; elsewhere there is no device.
func writeExitDevice(code uint8) error {
	return errors.New("isa-debug-exit needs amd64")
}
