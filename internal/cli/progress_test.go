package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
)

// steppingClock is a clock on which every reading is 1.5 s after the last:
// every stage takes longer than the progress threshold.
type steppingClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *steppingClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(1500 * time.Millisecond)
	return c.now
}

func (c *steppingClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// runWithClock runs the CLI as run does, timing the stages with clk.
func runWithClock(t *testing.T, clk *steppingClock, args ...string) (stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	c := &common{streams: genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}}
	if clk != nil {
		c.clock = clk
	}
	cmd := newRootCommand(c)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(context.Background()); err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errOut.String()
}

// TestProgress checks that --progress reports the stages that took over a
// second, with their counts, on stderr only; that stages that end within
// a second print nothing; and that without --progress (stderr is no
// terminal here) or with --progress=false nothing is printed.
func TestProgress(t *testing.T) {
	args := []string{"render", "--example", "--family=ipv4", "--cluster-cidr=10.244.0.0/16"}
	quiet, _ := runWithClock(t, nil, args...)

	out, stderr := runWithClock(t, &steppingClock{}, append(args, "--progress")...)
	if out != quiet {
		t.Errorf("--progress changed stdout")
	}
	for _, re := range []string{
		`(?m)^decoded \d+ Services, \d+ EndpointSlices, 1 Nodes, \d+ ServiceCIDRs \(1\.5s\)$`,
		`(?m)^rendered [1-9]\d* rules \(iptables\) \(1\.5s\)$`,
	} {
		if !regexp.MustCompile(re).MatchString(stderr) {
			t.Errorf("--progress on a slow clock: stderr does not match %s:\n%s", re, stderr)
		}
	}
	for _, tc := range []struct {
		what string
		clk  *steppingClock
		args []string
	}{
		{"a fast run", nil, append(args, "--progress")},
		{"stderr not a terminal", &steppingClock{}, args},
		{"--progress=false", &steppingClock{}, append(args, "--progress=false")},
	} {
		if _, stderr := runWithClock(t, tc.clk, tc.args...); stderr != "" {
			t.Errorf("%s: progress printed:\n%s", tc.what, stderr)
		}
	}
}
