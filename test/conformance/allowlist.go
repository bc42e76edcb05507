package conformance

import (
	"errors"
	"fmt"
	"os"
	"path"
	"regexp"
	"strings"

	"sigs.k8s.io/yaml"
)

// Check names what a difference was found in: the rules of a mode, or the
// plan run on kube-proxy's node in a mode.
type Check string

// CheckRules and CheckPlan build the check names of the allow-list.
func CheckRules(m Mode) Check { return Check(m) }
func CheckPlan(m Mode) Check  { return Check("plan-" + m) }

// AllowEntry is one explained difference of testdata/conformance/allowlist.yaml.
type AllowEntry struct {
	// Scenario is a golden case name, or a path.Match pattern ("*").
	Scenario string `json:"scenario"`
	// Mode is iptables, nftables, ipvs, plan-iptables, plan-nftables,
	// plan-ipvs, or a path.Match pattern over them.
	Mode string `json:"mode"`
	// Line is a regular expression searched in each differing line, which
	// starts with "-" (only in kube-proxy's rules) or "+" (only in the
	// tool's) and a space; for a plan, in each changed line of its output.
	Line string `json:"line"`
	// Moved limits the entry to lines that moved: the same line is also in
	// the diff with the other sign, so only its position differs.
	Moved bool `json:"moved,omitempty"`
	// Reason says why the difference is correct or accepted; required.
	Reason string `json:"reason"`

	re   *regexp.Regexp
	used bool
}

// AllowList is the loaded allow-list.
type AllowList struct {
	Entries []*AllowEntry
}

// LoadAllowList reads and checks the allow-list file; a missing file is an
// empty list.
func LoadAllowList(file string) (*AllowList, error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return &AllowList{}, nil
	}
	if err != nil {
		return nil, err
	}
	var doc struct {
		Entries []*AllowEntry `json:"entries"`
	}
	if err := yaml.UnmarshalStrict(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	for i, e := range doc.Entries {
		if err := e.compile(); err != nil {
			return nil, fmt.Errorf("%s: entry %d: %w", file, i+1, err)
		}
	}
	return &AllowList{Entries: doc.Entries}, nil
}

func (e *AllowEntry) compile() error {
	if e.Scenario == "" || e.Mode == "" || e.Line == "" {
		return errors.New("scenario, mode and line are required")
	}
	if strings.TrimSpace(e.Reason) == "" {
		return errors.New("every entry needs a reason")
	}
	for _, p := range []string{e.Scenario, e.Mode} {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("pattern %q: %w", p, err)
		}
	}
	re, err := regexp.Compile(e.Line)
	if err != nil {
		return fmt.Errorf("line: %w", err)
	}
	e.re = re
	return nil
}

// Match returns the first entry that explains line in the scenario and
// check, or nil, and marks it used. moved says whether the line only moved
// (see AllowEntry.Moved).
func (l *AllowList) Match(scenario string, check Check, line string, moved bool) *AllowEntry {
	for _, e := range l.Entries {
		if e.Moved && !moved {
			continue
		}
		if ok, _ := path.Match(e.Scenario, scenario); !ok {
			continue
		}
		if ok, _ := path.Match(e.Mode, string(check)); !ok {
			continue
		}
		if e.re.MatchString(line) {
			e.used = true
			return e
		}
	}
	return nil
}

// Unused returns the entries that explained nothing in this run.
func (l *AllowList) Unused() []*AllowEntry {
	var out []*AllowEntry
	for _, e := range l.Entries {
		if !e.used {
			out = append(out, e)
		}
	}
	return out
}

// String describes the entry in one line.
func (e *AllowEntry) String() string {
	return fmt.Sprintf("%s/%s %q (%s)", e.Scenario, e.Mode, e.Line, e.Reason)
}
