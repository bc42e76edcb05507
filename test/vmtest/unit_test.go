package vmtest

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestLoadOrder checks that every module comes after its dependencies and
// that patterns and missing names work.
func TestLoadOrder(t *testing.T) {
	dir := t.TempDir()
	dep := `kernel/net/netfilter/ipvs/ip_vs_rr.ko: kernel/net/netfilter/ipvs/ip_vs.ko kernel/net/netfilter/nf_conntrack.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/ipvs/ip_vs.ko: kernel/net/netfilter/nf_conntrack.ko kernel/lib/libcrc32c.ko
kernel/net/netfilter/nf_conntrack.ko: kernel/lib/libcrc32c.ko
kernel/lib/libcrc32c.ko:
kernel/net/netfilter/nft_ct.ko: kernel/net/netfilter/nf_tables.ko
kernel/net/netfilter/nf_tables.ko:
kernel/drivers/net/dummy.ko:
kernel/drivers/gpu/unrelated.ko:
`
	if err := os.WriteFile(filepath.Join(dir, "modules.dep"), []byte(dep), 0o644); err != nil {
		t.Fatal(err)
	}
	ms, err := readModules(dir)
	if err != nil {
		t.Fatal(err)
	}
	order := ms.loadOrder()
	pos := map[string]int{}
	for i, m := range order {
		pos[m] = i
	}
	for _, want := range []string{"ip_vs_rr", "ip_vs", "nf_conntrack", "libcrc32c", "nft_ct", "nf_tables", "dummy"} {
		if _, ok := pos[ms.byName[want]]; !ok {
			t.Errorf("%s is not loaded; order %v", want, order)
		}
	}
	for mod, deps := range ms.deps {
		for _, d := range deps {
			if i, ok := pos[mod]; ok && pos[d] > i {
				t.Errorf("%s loads before its dependency %s", mod, d)
			}
		}
	}
	if slices.Contains(ms.packList(), "kernel/drivers/gpu/unrelated.ko") {
		t.Error("an unrelated module is packed")
	}
}

// TestUnsigned cuts a module signature and leaves unsigned files alone.
func TestUnsigned(t *testing.T) {
	body := []byte("\x7fELF module body")
	sig := []byte("SIGNATURE")
	info := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, byte(len(sig))}
	signed := slices.Concat(body, sig, info, []byte(moduleSigMagic))
	if got := unsigned(signed); !bytes.Equal(got, body) {
		t.Errorf("unsigned(signed) = %q, want %q", got, body)
	}
	if got := unsigned(body); !bytes.Equal(got, body) {
		t.Errorf("unsigned(body) = %q, want it unchanged", got)
	}
}

// TestResultLine accepts only the exact line with the boot's nonce.
func TestResultLine(t *testing.T) {
	for line, want := range map[string]int{
		"VMTEST-RESULT abc exit=0":   0,
		"VMTEST-RESULT abc exit=2":   2,
		"VMTEST-RESULT abd exit=0":   -1,
		"VMTEST-RESULT abc exit=x":   -1,
		"VMTEST-RESULT abc exit=200": -1,
		"x VMTEST-RESULT abc exit=0": -1,
	} {
		got, ok := parseResult(line, "abc")
		if !ok {
			got = -1
		}
		if got != want {
			t.Errorf("parseResult(%q) = %d, want %d", line, got, want)
		}
	}
	if _, err := kernelCmdline("n", []string{"-test.run", "A B"}); err == nil {
		t.Error("an argument with a space was accepted")
	}
	if s, err := kernelCmdline("n", []string{"-test.run=^TestX$"}); err != nil || !strings.HasSuffix(s, " -- -test.run=^TestX$") {
		t.Errorf("kernelCmdline = %q, %v", s, err)
	}
	// The guest's init gets CI from the command line, and passes it on to
	// the tests, exactly when the host runs under CI.
	for _, ci := range []string{"", "true"} {
		t.Setenv("CI", ci)
		s, _ := kernelCmdline("n", nil)
		if got := strings.Contains(s, " CI=true --"); got != (ci != "") {
			t.Errorf("CI=%q: kernelCmdline = %q", ci, s)
		}
	}
}

// TestCPIO checks the archive's framing: every entry starts 4-byte aligned
// with the newc magic, and the archive ends with the trailer.
func TestCPIO(t *testing.T) {
	var buf bytes.Buffer
	c := newCPIOWriter(&buf)
	c.File("/a/b/c", 0o644, []byte("hello"))
	c.Symlink("/lib", "usr/lib")
	c.CharDev("/dev/console", 0o600, 5, 1)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	if len(b)%4 != 0 {
		t.Errorf("archive length %d is not 4-byte aligned", len(b))
	}
	var names []string
	for off := 0; off < len(b); {
		if string(b[off:off+6]) != "070701" {
			t.Fatalf("no magic at offset %d", off)
		}
		size := hexField(t, b[off+54:off+62])
		nameLen := hexField(t, b[off+94:off+102])
		name := string(b[off+110 : off+110+nameLen-1])
		names = append(names, name)
		off = align4(align4(off+110+nameLen) + size)
	}
	want := []string{"a", "a/b", "a/b/c", "lib", "dev", "dev/console", "TRAILER!!!"}
	if !slices.Equal(names, want) {
		t.Errorf("entries %q, want %q", names, want)
	}
}

func hexField(t *testing.T, b []byte) int {
	var n int
	for _, c := range b {
		n <<= 4
		switch {
		case c >= '0' && c <= '9':
			n += int(c - '0')
		case c >= 'A' && c <= 'F':
			n += int(c-'A') + 10
		default:
			t.Fatalf("bad hex %q", b)
		}
	}
	return n
}

func align4(n int) int { return (n + 3) &^ 3 }
