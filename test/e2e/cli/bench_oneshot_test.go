package cli

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/benchsize"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// oneShotSizes is 100 Services, or what SVCPROXY_BENCH_SIZES asks for
// (test/benchsize), e.g. "1000,10000".
func oneShotSizes(b *testing.B) []int { return benchsize.Sizes(b, 100) }

// snapshotFiles writes the realistic synthetic snapshot of n Services
// (synthetic.Realistic) as JSON and as YAML, as kubectl prints them, and rounds more JSON files, each with Service 0's first endpoint
// moved.
func snapshotFiles(b *testing.B, dir string, n, rounds int) (yamlFile string, jsonFiles []string) {
	b.Helper()
	s := synthetic.Realistic(n)
	write := func(name string, fn func(f *os.File) error) string {
		path := filepath.Join(dir, name)
		f, err := os.Create(path)
		if err == nil {
			err = fn(f)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err != nil {
			b.Fatal(err)
		}
		return path
	}
	yamlFile = write("snapshot.yaml", func(f *os.File) error { return synthetic.WriteKubectlYAML(f, s) })
	for r := range rounds + 1 {
		if r > 0 {
			synthetic.MoveEndpoint(s, 0, r)
		}
		jsonFiles = append(jsonFiles, write(fmt.Sprintf("snapshot-%d.json", r), func(f *os.File) error { return synthetic.WriteKubectlJSON(f, s) }))
	}
	return yamlFile, jsonFiles
}

// timed runs the binary once and returns its wall and CPU time.
func timed(b *testing.B, cmd *exec.Cmd, wantCode int) (wall, cpu time.Duration) {
	b.Helper()
	r := runCmd(cmd)
	if r.code != wantCode {
		b.Fatalf("want exit %d:\n%s", wantCode, r)
	}
	if u, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		cpu = time.Duration(u.Utime.Nano() + u.Stime.Nano())
	}
	return r.took, cpu
}

func report(b *testing.B, wall, cpu time.Duration) {
	b.ReportMetric(float64(wall.Milliseconds())/float64(b.N), "wall-ms/op")
	b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
}

// BenchmarkOneShot runs the real binary as a user runs it, process start
// and snapshot decoding included (wall-ms/op and cpu-ms/op are per run):
//   - render-yaml, render-json: render -f of the snapshot, nftables mode;
//   - apply-one-endpoint/MODE: apply -f in a lab node that holds the
//     previous round's rules, one endpoint of one Service moved each round
//     (MODE nftables-compact: nftables mode in the compact layout);
//   - plan-cold/MODE: plan -f, nothing to change, with the tool's state
//     directory (its caches) emptied before each run.
func BenchmarkOneShot(b *testing.B) {
	for _, n := range oneShotSizes(b) {
		yamlFile, files := snapshotFiles(b, b.TempDir(), n, 4)
		bin := binary(b)
		b.Run(fmt.Sprintf("render-yaml/services=%d", n), func(b *testing.B) { benchRender(b, bin, yamlFile) })
		b.Run(fmt.Sprintf("render-json/services=%d", n), func(b *testing.B) { benchRender(b, bin, files[0]) })
		for _, mode := range []string{"nftables", "nftables-compact", "iptables"} {
			b.Run(fmt.Sprintf("apply-one-endpoint/%s/services=%d", mode, n), func(b *testing.B) { benchApply(b, mode, files) })
			b.Run(fmt.Sprintf("plan-cold/%s/services=%d", mode, n), func(b *testing.B) { benchColdPlan(b, mode, files[0]) })
		}
	}
}

func benchRender(b *testing.B, bin, file string) {
	var wall, cpu time.Duration
	for b.Loop() {
		w, c := timed(b, exec.Command(bin, "render", "-f", file, "--node-name", "node1", "--mode=nftables"), ExitOK)
		wall, cpu = wall+w, cpu+c
	}
	report(b, wall, cpu)
}

// oneShotArgs are the flags of a one-shot run in mode: iptables,
// nftables, or nftables-compact (nftables mode, --nftables-layout=compact).
func oneShotArgs(mode, file string) []string {
	args := []string{"-f", file, "--node-name", "node1", "--cluster-cidr=10.128.0.0/9"}
	if mode == "nftables-compact" {
		return append(args, "--mode=nftables", "--nftables-layout=compact")
	}
	return append(args, "--mode="+mode)
}

func benchApply(b *testing.B, mode string, files []string) {
	n := newE2ENode(b, "nft")
	if r := n.run("apply", oneShotArgs(mode, files[0])...); r.code != ExitOK {
		b.Fatal(r)
	}
	var wall, cpu time.Duration
	i := 0
	for b.Loop() {
		file := files[1+i%(len(files)-1)]
		i++
		w, c := timed(b, n.command(b.Context(), nil, "apply", oneShotArgs(mode, file)...), ExitOK)
		wall, cpu = wall+w, cpu+c
	}
	report(b, wall, cpu)
}

func benchColdPlan(b *testing.B, mode, file string) {
	n := newE2ENode(b, "nft")
	if r := n.run("apply", oneShotArgs(mode, file)...); r.code != ExitOK {
		b.Fatal(r)
	}
	var wall, cpu time.Duration
	for b.Loop() {
		if err := os.RemoveAll(filepath.Join(n.dir, "state")); err != nil {
			b.Fatal(err)
		}
		w, c := timed(b, n.command(b.Context(), nil, "plan", oneShotArgs(mode, file)...), ExitOK)
		wall, cpu = wall+w, cpu+c
	}
	report(b, wall, cpu)
}
