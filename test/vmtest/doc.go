// Package vmtest runs a package's Go tests inside a qemu VM that boots
// Debian's cloud kernel, for tests that need kernel features the host lacks
// (IPVS, dummy links). The test binary itself is the VM's init.
//
// A package opts in with three pieces:
//
//	func TestMain(m *testing.M) { vmtest.Main(m) }
//	func TestInVM(t *testing.T) { vmtest.Run(t, ".", "-test.run", "^TestIPVS") }
//	func TestIPVSThing(t *testing.T) { vmtest.RequireGuest(t); ... }
//
// On the host, TestInVM builds the package's test binary statically, packs
// it into an initramfs with the kernel modules and the network tools
// (cached), boots it with qemu (TCG) and fails unless the guest reports
// that its tests passed; the guest-only tests skip. In the VM, Main is
// PID 1: it mounts the pseudo file systems, loads the modules, runs the
// binary again as the test process, and reports its exit status through
// qemu's isa-debug-exit device. See hack/vm/README.md.
package vmtest
