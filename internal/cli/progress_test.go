package cli

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/cli-runtime/pkg/genericiooptions"
	clocktesting "k8s.io/utils/clock/testing"
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

// lockedBuffer is a bytes.Buffer that a stage's ticking goroutine and the
// test may use at once.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestProgressTicks: a stage under way says so every progressTick with the
// time elapsed, and nothing of it is printed after its last line.
func TestProgressTicks(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	var out lockedBuffer
	p := &progress{w: &out, clock: clk, ticker: clk}
	st := p.Start("applying (nftables): 10000 chains")
	want := ""
	for _, elapsed := range []string{"5s", "10s", "15s"} {
		clk.Step(progressTick)
		want += "still applying (nftables): 10000 chains... [" + elapsed + " elapsed]\n"
		waitFor(t, &out, want)
	}
	clk.Step(2 * time.Second)
	st.Done("applied (nftables): %d chains", 10000)
	want += "applied (nftables): 10000 chains (17s)\n"
	clk.Step(progressTick)
	time.Sleep(50 * time.Millisecond) // a late tick would have printed by now
	if got := out.String(); got != want {
		t.Errorf("progress lines:\n%s\nwant:\n%s", got, want)
	}

	// A stage that fails ends without a line of its own.
	out = lockedBuffer{}
	st = p.Start("decoding a.yaml (1.0 MiB)")
	st.End()
	st.Done("never printed")
	clk.Step(progressTick)
	time.Sleep(50 * time.Millisecond)
	if got := out.String(); got != "" {
		t.Errorf("an ended stage printed %q", got)
	}
}

// waitFor waits until out holds want; the stage's goroutine prints after
// the fake clock's tick, not during Step.
func waitFor(t *testing.T, out *lockedBuffer, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for out.String() != want {
		if time.Now().After(deadline) {
			t.Fatalf("progress printed:\n%s\nwant:\n%s", out.String(), want)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestProgressTicksCount: a stage that tracks its counts says at every
// tick how far it has come, as the counts are then.
func TestProgressTicksCount(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Unix(0, 0))
	var out lockedBuffer
	p := &progress{w: &out, clock: clk, ticker: clk}
	st := p.Start("decoding big.yaml (1.0 GiB)")
	var n atomic.Int64
	st.Track(func() string { return countLabel(n.Load(), "object") + " decoded" })
	want := ""
	for _, c := range []struct {
		n       int64
		elapsed string
		counted string
	}{{1, "5s", "1 object"}, {41200, "10s", "41,200 objects"}, {1234567, "15s", "1,234,567 objects"}} {
		n.Store(c.n)
		clk.Step(progressTick)
		want += "still decoding big.yaml (1.0 GiB)... [" + c.elapsed + " elapsed, " + c.counted + " decoded]\n"
		waitFor(t, &out, want)
	}
	st.End()
}
