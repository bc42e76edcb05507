package vmtest

import "golang.org/x/sys/unix"

// outb writes val to an I/O port (the x86 OUT instruction); the calling
// thread needs ioperm for it.
func outb(port uint16, val uint8)

// writeExitDevice writes code to qemu's isa-debug-exit port. Giving this
// thread access to the port needs CAP_SYS_RAWIO, which init has.
func writeExitDevice(code uint8) error {
	if err := unix.Ioperm(debugExitPort, 4, 1); err != nil {
		return err
	}
	outb(debugExitPort, code)
	return nil
}
