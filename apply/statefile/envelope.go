package statefile

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"sync"
)

// A cache file is exact only for the kernel state it was read from: one
// boot (netns cookies and nf_tables generations restart at boot), one
// network namespace (two namespaces can be at the same generation), one
// nf_tables generation, and one payload format. The envelope names all of
// them in a text header, then the payload's length and SHA-256, a blank
// line and the payload:
//
//	kubectl-svcproxy state v1
//	format iptables-nft-save ipv4 v1
//	boot-id 6f1c…
//	netns-cookie 4097
//	generation 6
//	payload-bytes 20671
//	payload-sha256 9b1e…
//
//	<payload>
//
// Load accepts a file only when all of it matches; the checksum catches a
// file cut short or edited. It is no defence against someone who can write
// the directory (they can write a matching file); the directory checks
// are.

const magic = "kubectl-svcproxy state v1"

// ErrMismatch is returned (wrapped) by Unseal and Load for a file that is
// not an exact record of the state asked for.
var ErrMismatch = errors.New("state file does not match")

// Key identifies the exact kernel state a cache file records.
type Key struct {
	// Format names what the payload is, in what encoding and version, and
	// what it covers (family, table): one line.
	Format      string
	BootID      string
	NetnsCookie uint64
	Generation  uint32
}

// header is the key's part of the envelope.
func (k Key) header() (string, error) {
	if k.Format == "" || strings.ContainsAny(k.Format, "\n") || k.BootID == "" || strings.ContainsAny(k.BootID, " \n") || k.NetnsCookie == 0 {
		return "", fmt.Errorf("statefile: incomplete key %+v", k)
	}
	return fmt.Sprintf("%s\nformat %s\nboot-id %s\nnetns-cookie %d\ngeneration %d\n", magic, k.Format, k.BootID, k.NetnsCookie, k.Generation), nil
}

// Seal wraps payload in the envelope for key.
func Seal(key Key, payload []byte) ([]byte, error) {
	h, err := sealHeader(key, payload)
	if err != nil {
		return nil, err
	}
	return append(h, payload...), nil
}

// sealHeader is the envelope's text before the payload.
func sealHeader(key Key, payload []byte) ([]byte, error) {
	h, err := key.header()
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(payload)
	return fmt.Appendf([]byte(h), "payload-bytes %d\npayload-sha256 %x\n\n", len(payload), sum), nil
}

// Unseal returns the payload of data if data is the envelope of key, with
// the payload's length and checksum right; otherwise an ErrMismatch that
// says what differs.
func Unseal(data []byte, key Key) ([]byte, error) {
	want, err := key.header()
	if err != nil {
		return nil, err
	}
	fields, payload, err := splitHeader(data)
	if err != nil {
		return nil, err
	}
	got := fmt.Sprintf("%s\nformat %s\nboot-id %s\nnetns-cookie %s\ngeneration %s\n", fields[0], fields[1], fields[2], fields[3], fields[4])
	if got != want {
		return nil, fmt.Errorf("%w: header %q, want %q", ErrMismatch, got, want)
	}
	if n, err := strconv.Atoi(fields[5]); err != nil || n != len(payload) {
		return nil, fmt.Errorf("%w: %d bytes of payload, the header says %s", ErrMismatch, len(payload), fields[5])
	}
	sum := sha256.Sum256(payload)
	if hex.EncodeToString(sum[:]) != fields[6] {
		return nil, fmt.Errorf("%w: the payload's SHA-256 is %x, the header says %s", ErrMismatch, sum, fields[6])
	}
	return payload, nil
}

// headerNames are the envelope's header lines, in order ("" for magic).
var headerNames = []string{"", "format", "boot-id", "netns-cookie", "generation", "payload-bytes", "payload-sha256"}

// splitHeader returns the values of the header lines and the payload.
func splitHeader(data []byte) ([]string, []byte, error) {
	var fields []string
	rest := data
	for _, name := range headerNames {
		line, after, ok := bytes.Cut(rest, []byte("\n"))
		if !ok {
			return nil, nil, fmt.Errorf("%w: the header is cut short", ErrMismatch)
		}
		value := string(line)
		if name != "" {
			v, ok := strings.CutPrefix(value, name+" ")
			if !ok {
				return nil, nil, fmt.Errorf("%w: header line %q, want %q", ErrMismatch, value, name+" …")
			}
			value = v
		}
		fields = append(fields, value)
		rest = after
	}
	payload, ok := bytes.CutPrefix(rest, []byte("\n"))
	if !ok {
		return nil, nil, fmt.Errorf("%w: no blank line after the header", ErrMismatch)
	}
	return fields, payload, nil
}

// Load returns the payload of the file name in d if it is the envelope of
// key. A file that exists but does not match, or fails the checks, is
// removed, so that it serves nobody later; a missing one returns an error
// satisfying errors.Is(err, fs.ErrNotExist).
func (d *Dir) Load(name string, key Key) ([]byte, error) {
	data, err := d.ReadFile(name)
	if err == nil {
		var payload []byte
		if payload, err = Unseal(data, key); err == nil {
			return payload, nil
		}
	}
	if !errors.Is(err, fs.ErrNotExist) {
		_ = d.Remove(name)
	}
	return nil, err
}

// Store writes payload in the envelope of key to the file name in d,
// atomically.
func (d *Dir) Store(name string, key Key, payload []byte) error {
	h, err := sealHeader(key, payload)
	if err != nil {
		return err
	}
	return d.writeFile(name, h, payload)
}

// BootID returns the kernel's boot ID, a random UUID chosen at every boot.
var BootID = sync.OnceValues(func() (string, error) {
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot ID: %w", err)
	}
	id := strings.TrimSpace(string(data))
	if len(id) != 36 || strings.ContainsAny(id, " \n") {
		return "", fmt.Errorf("read boot ID: %q is not a UUID", id)
	}
	return id, nil
})
