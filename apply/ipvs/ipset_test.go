package ipvs

import (
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/ruleset/ipvs"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/testenv"
)

// testSets has one set of every type kube-proxy uses, in both families,
// with entries spelled as `ipset save` prints them.
var testSets = []*ipvs.Set{
	{Name: "KUBE-IPVS-IPS", Type: ipvs.HashIP, Family: "inet", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"10.96.0.1", "203.0.113.7"}},
	{Name: "KUBE-CLUSTER-IP", Type: ipvs.HashIPPort, Family: "inet", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"10.96.0.1,tcp:443", "10.96.0.10,udp:53", "10.96.0.11,sctp:9999"}},
	{Name: "KUBE-LOOP-BACK", Type: ipvs.HashIPPortIP, Family: "inet", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"10.244.0.5,tcp:8080,10.244.0.5"}},
	{Name: "KUBE-LOAD-BALANCER-SOURCE-CIDR", Type: ipvs.HashIPPortNet, Family: "inet", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"192.0.2.10,tcp:80,198.51.100.0/24", "192.0.2.10,tcp:80,203.0.113.2"}},
	{Name: "KUBE-NODE-PORT-TCP", Type: ipvs.BitmapPort, PortRange: "0-65535", Entries: []string{"30080", "31000"}},
	{Name: "KUBE-6-CLUSTER-IP", Type: ipvs.HashIPPort, Family: "inet6", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"fd00:96::1,tcp:443"}},
	{Name: "KUBE-6-LOAD-BALANCER-SOURCE-CID", Type: ipvs.HashIPPortNet, Family: "inet6", HashSize: 1024, MaxElem: 65536,
		Entries: []string{"fd00:192::10,tcp:80,fd00:198::/64"}},
}

var saveExtras = regexp.MustCompile(` bucketsize \d+| initval 0x[0-9a-f]+`)

// ipsetSave returns `ipset save` of the namespace, sorted, without the
// options the ipset tool adds on its own.
func ipsetSave(t *testing.T, ns netlab.NS) []string {
	t.Helper()
	out, err := ns.Run(t.Context(), "ipset", "save")
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if l != "" {
			lines = append(lines, saveExtras.ReplaceAllString(l, ""))
		}
	}
	slices.Sort(lines)
	return lines
}

func saveLines(sets []*ipvs.Set) []string {
	var lines []string
	for _, s := range sets {
		lines = append(lines, "create "+s.CreateLine())
		for _, e := range s.Entries {
			lines = append(lines, "add "+s.Name+" "+e)
		}
	}
	slices.Sort(lines)
	return lines
}

func ipsetLab(t *testing.T) (*NetlinkKernel, netlab.NS) {
	t.Helper()
	testenv.RequireTools(t, "ipset") // to check what netlink wrote
	lab := netlab.New(t)
	k, err := openNetlink("/run/netns/" + lab.Node().Name())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(k.Close)
	return k, lab.Node()
}

// TestIPSetNetlinkRoundTrip writes every kube-proxy set type through
// netlink and checks that the ipset tool lists exactly those sets and
// entries, and that reading them back gives the same values.
func TestIPSetNetlinkRoundTrip(t *testing.T) {
	k, ns := ipsetLab(t)
	for _, s := range testSets {
		if err := k.CreateSet(s); err != nil {
			t.Fatalf("create %s: %v", s.Name, err)
		}
		if err := k.CreateSet(s); err != nil {
			t.Fatalf("create %s again (-exist): %v", s.Name, err)
		}
		for _, e := range s.Entries {
			for range 2 { // the second add must be a no-op, not an error
				if err := k.AddEntry(s, e); err != nil {
					t.Fatalf("add %s %s: %v", s.Name, e, err)
				}
			}
		}
	}
	if diff := cmp.Diff(saveLines(testSets), ipsetSave(t, ns)); diff != "" {
		t.Fatalf("ipset save differs from what was written (-want +got):\n%s", diff)
	}
	for _, want := range testSets {
		got, err := k.Set(want.Name)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(got.Entries)
		w := *want
		w.Entries = slices.Sorted(slices.Values(want.Entries))
		if diff := cmp.Diff(&w, got); diff != "" {
			t.Errorf("read back %s (-want +got):\n%s", want.Name, diff)
		}
	}
	if s, err := k.Set("NO-SUCH-SET"); s != nil || err != nil {
		t.Errorf("missing set: %v, %v; want nil, nil", s, err)
	}
	for _, s := range testSets {
		for range 2 {
			if err := k.DeleteEntry(s, s.Entries[0]); err != nil {
				t.Fatalf("del %s %s: %v", s.Name, s.Entries[0], err)
			}
		}
		s2 := *s
		s2.Entries = s.Entries[1:]
		got, err := k.Set(s.Name)
		if err != nil || !slices.Equal(slices.Sorted(slices.Values(got.Entries)), slices.Sorted(slices.Values(s2.Entries))) {
			t.Errorf("after del: %v, %v; want %v", got, err, s2.Entries)
		}
		if err := k.DestroySet(s.Name); err != nil {
			t.Fatal(err)
		}
		if err := k.DestroySet(s.Name); err != nil {
			t.Fatalf("destroy a destroyed set: %v", err)
		}
	}
	if left := ipsetSave(t, ns); len(left) != 0 {
		t.Errorf("sets left: %v", left)
	}
}

// TestIPSetReadsToolSets reads sets that the ipset tool created, as
// kube-proxy does (they carry bucketsize and initval).
func TestIPSetReadsToolSets(t *testing.T) {
	k, ns := ipsetLab(t)
	var script strings.Builder
	for _, l := range saveLines(testSets) {
		script.WriteString(l + "\n")
	}
	// "create" lines must come before their "add" lines.
	lines := strings.Split(strings.TrimSpace(script.String()), "\n")
	slices.SortStableFunc(lines, func(a, b string) int {
		return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0]) * -1
	})
	if _, err := ns.RunInput(t.Context(), []byte(strings.Join(lines, "\n")+"\n"), "ipset", "restore"); err != nil {
		t.Fatal(err)
	}
	var got []*ipvs.Set
	for _, s := range testSets {
		r, err := k.Set(s.Name)
		if err != nil || r == nil {
			t.Fatalf("read %s: %v", s.Name, err)
		}
		got = append(got, r)
	}
	if diff := cmp.Diff(saveLines(testSets), saveLines(got)); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}
