package upstream

import (
	"encoding/xml"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
)

// State is a test's outcome in one column.
type State string

const (
	Passed  State = "passed"
	Failed  State = "failed"
	Skipped State = "skipped"
)

// Result is one test's outcome.
type Result struct {
	Name    string  // the spec's full text, as --focus sees it
	State   State   // passed, failed or skipped
	Seconds float64 // its run time
	Reason  string  // why it failed or skipped: the first line of ginkgo's message
}

// junitCase is what ReadJUnit needs of a <testcase> of ginkgo's JUnit
// report (the e2e framework writes it to --report-dir as junit_01.xml).
type junitCase struct {
	Name    string  `xml:"name,attr"`
	Status  string  `xml:"status,attr"`
	Time    float64 `xml:"time,attr"`
	Skipped *struct {
		Message string `xml:"message,attr"`
	} `xml:"skipped"`
	Failure *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"failure"`
	Error *struct {
		Message string `xml:"message,attr"`
		Text    string `xml:",chardata"`
	} `xml:"error"`
}

// ReadJUnit reads a JUnit report and returns the results of the tests that
// focus matches, sorted by name. Suite set-up nodes ([SynchronizedBeforeSuite]
// and the like) and specs that ginkgo filtered out are left out; a failed
// set-up node fails the read, since no result after it means anything.
func ReadJUnit(r io.Reader, focus *regexp.Regexp) ([]Result, error) {
	var doc struct {
		Suites []struct {
			Cases []junitCase `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.NewDecoder(r).Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading the JUnit report: %w", err)
	}
	var out []Result
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			kind, name, _ := strings.Cut(c.Name, " ")
			if kind != "[It]" {
				if st := state(c); st == Failed {
					return nil, fmt.Errorf("suite node %s %s: %s", kind, c.Status, firstLine(message(c)))
				}
				continue
			}
			if !focus.MatchString(name) || filteredOut(c) {
				continue // Merge adds the skip list's entries
			}
			out = append(out, Result{Name: name, State: state(c), Seconds: c.Time, Reason: firstLine(message(c))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// state maps ginkgo's statuses (passed, skipped, pending, failed,
// panicked, interrupted, timedout, aborted) to the three of the table.
func state(c junitCase) State {
	switch c.Status {
	case "passed":
		return Passed
	case "skipped", "pending":
		return Skipped
	}
	return Failed
}

// filteredOut is a spec that --focus or --skip left out: ginkgo reports
// it as skipped without a message of the test's own.
func filteredOut(c junitCase) bool {
	return c.Status == "skipped" && (c.Skipped == nil || c.Skipped.Message == "" || c.Skipped.Message == "skipped")
}

func message(c junitCase) string {
	switch {
	case c.Failure != nil:
		return firstNonEmpty(c.Failure.Message, c.Failure.Text)
	case c.Error != nil:
		return firstNonEmpty(c.Error.Message, c.Error.Text)
	case c.Skipped != nil:
		return strings.TrimPrefix(c.Skipped.Message, "skipped - ")
	}
	return ""
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}

// firstLine is the first non-empty line of s, at most 200 characters, with
// tabs as spaces: a cell of the results file and of the table.
func firstLine(s string) string {
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(strings.ReplaceAll(line, "\t", " "))
		if line == "" {
			continue
		}
		if len(line) > 200 {
			line = line[:200] + "…"
		}
		return line
	}
	return ""
}
