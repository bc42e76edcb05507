package upstream

import (
	"regexp"
	"strings"
	"testing"
)

// TestMergeSameNameFailureKept: two specs of one full name (which the
// e2e framework's JUnit writer allows, ordering them by start time), the
// first failed and the second passed: the merged result must not pass.
func TestMergeSameNameFailureKept(t *testing.T) {
	const name = "[sig-network] Services should do a thing"
	report := `<testsuites><testsuite>
<testcase name="[It] ` + name + `" status="failed" time="3"><failure type="failed">[FAILED] boom</failure></testcase>
<testcase name="[It] ` + name + `" status="passed" time="2"></testcase>
</testsuite></testsuites>`
	reported, err := ReadJUnit(strings.NewReader(report), regexp.MustCompile(`sig-network`))
	if err != nil {
		t.Fatal(err)
	}
	got := Merge([]string{name}, reported)
	if len(got) != 1 || got[0].State != Failed {
		t.Errorf("Merge = %+v, want the one test failed", got)
	}
}
