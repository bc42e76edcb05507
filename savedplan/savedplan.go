// Package savedplan is the file that `plan --out` writes and `apply FILE`
// executes: a reviewed change set, with everything needed to make it again
// and to prove that the node has not moved since it was computed.
//
// A saved plan does not hold kernel commands. It holds the input (the
// cluster snapshot and the settings, as flag values), the plan's text as
// it was shown, and fingerprints of the machine it was made on and of the
// owned kernel state it was computed against, table by table. apply
// renders the input again, plans it against the kernel, and writes only
// if the fingerprints match and the lines planned now, all but comments,
// are the text's, line for line, so what it writes is what the text
// shows, or nothing.
package savedplan

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"
)

// The file's type, versioned like a Kubernetes object: a reader refuses a
// version it does not know rather than guess.
const (
	APIVersion = "svcproxy.kubectl.io/v1alpha1"
	Kind       = "SavedPlan"
)

// MaxSize bounds what Load reads: a 10k-Service snapshot is about 30 MB.
const MaxSize = 256 << 20

// Plan is a saved plan. See docs/SAVED-PLANS.md for the format.
type Plan struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// CreatedAt and ToolVersion say when and by what it was made.
	CreatedAt   time.Time `json:"createdAt"`
	ToolVersion string    `json:"toolVersion"`
	// Node and Mode are --node-name and --mode.
	Node string `json:"node"`
	Mode string `json:"mode"`
	// Backend is what was read and would be written: "iptables-nft",
	// "nftables", "ipvs, iptables-legacy".
	Backend string `json:"backend"`
	// Host is the machine and network namespace it was computed in.
	Host Host `json:"host"`
	// Settings are the flags that shape the rules, by name, as given on
	// the command line or set by --config.
	Settings map[string]string `json:"settings"`
	// Snapshot is the cluster state, as a v1 List.
	Snapshot json.RawMessage `json:"snapshot"`
	// Live fingerprints the owned kernel state, per table.
	Live []Table `json:"live"`
	// Changes is the change set that was shown.
	Changes Changes `json:"changes"`
}

// Host identifies where a plan's live state was read. A reboot changes
// the boot ID, and every network namespace has its own cookie.
type Host struct {
	Hostname    string `json:"hostname"`
	BootID      string `json:"bootID"`
	NetnsCookie uint64 `json:"netnsCookie"`
}

// Table is the fingerprint of the owned objects of one kernel table.
type Table struct {
	// Name is the table, with its family: "ipv4 nat", "ip kube-proxy",
	// "ipv4 ipvs".
	Name string `json:"name"`
	// SHA256 is the digest of the owned objects in canonical text form.
	SHA256 string `json:"sha256"`
}

// Changes is the change set of a plan: its text as `plan` printed it,
// which apply compares with the change it plans, its one-line summary,
// and the digest of the text's change lines.
type Changes struct {
	Summary string `json:"summary"`
	SHA256  string `json:"sha256"`
	Diff    string `json:"diff"`
}

// Digest returns the hex SHA-256 of data.
func Digest(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// ChangeDigest fingerprints a plan's text: its change lines (ChangeLines),
// each with its newline.
func ChangeDigest(diffText string) string {
	h := sha256.New()
	for _, line := range ChangeLines(diffText) {
		io.WriteString(h, line+"\n")
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ChangeLines returns the lines of a plan's text that say what is written
// and where: every line but comments ("#"), in order. Hunk headers ("@@")
// and added ("+") and removed ("-") lines say what; context lines (" ")
// say where, since a changed chain is written whole and the order of its
// rules is their meaning: the unchanged rules around each change, and
// " ..." where a run of them is cut. Planned again against the same live
// state, the context is the same. Comments are left out: they carry live
// figures that move without changing what would be written (the ipvs text
// prints a draining real server's connection counts only in a "# draining:"
// comment, never in its context line).
func ChangeLines(diffText string) []string {
	var out []string
	for line := range strings.Lines(diffText) {
		if !strings.HasPrefix(line, "#") {
			out = append(out, strings.TrimSuffix(line, "\n"))
		}
	}
	return out
}

// Encode writes p as indented JSON.
func (p *Plan) Encode(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(p)
}

// Read reads and decodes a plan file from r, opened at path (the caller
// checks who may have written it).
func Read(r io.Reader, path string) (*Plan, error) {
	tooLarge := fmt.Errorf("saved plan %s: larger than %d MiB, the limit for a saved plan", path, MaxSize>>20)
	// A regular file says its size: one over the limit is not read, and
	// one within it is read into a buffer of its size. Anything else (a
	// pipe, /dev/zero) is read to the limit.
	var buf bytes.Buffer
	if f, ok := r.(*os.File); ok {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			if st.Size() > MaxSize {
				return nil, tooLarge
			}
			buf.Grow(int(st.Size()) + bytes.MinRead)
		}
	}
	if _, err := buf.ReadFrom(io.LimitReader(r, MaxSize+1)); err != nil {
		return nil, fmt.Errorf("saved plan %s: %w", path, err)
	}
	if buf.Len() > MaxSize {
		return nil, tooLarge
	}
	p, err := Decode(buf.Bytes())
	if err != nil {
		return nil, fmt.Errorf("saved plan %s: %w", path, err)
	}
	return p, nil
}

// Decode decodes a plan strictly: an unknown field, another apiVersion or
// kind, or a missing part is an error.
func Decode(data []byte) (*Plan, error) {
	var head struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, fmt.Errorf("not a saved plan: %w", err)
	}
	if head.Kind != Kind || head.APIVersion != APIVersion {
		return nil, fmt.Errorf("apiVersion %q, kind %q: want %s %s (a plan written by another version of the tool? make it again with plan --out)",
			head.APIVersion, head.Kind, APIVersion, Kind)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var p Plan
	if err := dec.Decode(&p); err != nil {
		return nil, err
	}
	if err := p.complete(); err != nil {
		return nil, err
	}
	if err := p.CheckConsistent(); err != nil {
		return nil, err
	}
	return &p, nil
}

// complete checks that every part apply needs is there.
func (p *Plan) complete() error {
	var missing []string
	for name, empty := range map[string]bool{
		"node": p.Node == "", "mode": p.Mode == "", "backend": p.Backend == "",
		"snapshot": len(p.Snapshot) == 0, "live": len(p.Live) == 0,
		"changes.sha256": p.Changes.SHA256 == "",
	} {
		if empty {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("the plan lacks %s", strings.Join(missing, ", "))
	}
	return nil
}
