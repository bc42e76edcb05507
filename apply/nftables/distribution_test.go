package nftables

import (
	"net/netip"
	"testing"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/render"
	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/netlab"
)

// chiSquareCritical3 is the chi-square distribution's critical value for 3
// degrees of freedom at p = 0.001: a fair choice among 4 endpoints exceeds
// it once in a thousand runs.
const chiSquareCritical3 = 16.27

// TestEndpointDistribution sends real connections through a Service of 4
// endpoints in each layout and checks, with chi-square tests at p = 0.001,
// that each layout spreads them uniformly, as kube-proxy's numgen map does,
// and that the two layouts' spreads do not differ.
func TestEndpointDistribution(t *testing.T) {
	const endpoints, conns = 4, 800
	counts := map[string][]int{}
	for _, layout := range []string{render.NFTablesLayoutKubeProxy, render.NFTablesLayoutCompact} {
		lab, pods := trafficLab(t, endpoints)
		writeLabTable(t, lab, layout, trafficService("spread", "10.96.0.10", 0, pods...))
		spread, err := lab.Client().Spread(t.Context(), netlab.TCP, netip.MustParseAddrPort("10.96.0.10:80"), conns)
		if err != nil {
			t.Fatalf("%s: %v (answers so far %v)", layout, err, spread)
		}
		var row []int
		for _, p := range pods {
			row = append(row, spread[p.Name()])
		}
		counts[layout] = row
		if x := chiSquareUniform(row); x > chiSquareCritical3 {
			t.Errorf("%s: %d connections spread as %v: chi-square %.1f against a uniform choice, above %.2f", layout, conns, row, x, chiSquareCritical3)
		}
		t.Logf("%s: %v", layout, row)
	}
	a, b := counts[render.NFTablesLayoutKubeProxy], counts[render.NFTablesLayoutCompact]
	if x := chiSquareHomogeneity(a, b); x > chiSquareCritical3 {
		t.Errorf("the layouts spread differently: %v against %v, chi-square %.1f above %.2f", a, b, x, chiSquareCritical3)
	}
}

// chiSquareUniform is Pearson's statistic of counts against equal
// expected counts.
func chiSquareUniform(counts []int) float64 {
	total := 0
	for _, c := range counts {
		total += c
	}
	expected := float64(total) / float64(len(counts))
	x := 0.0
	for _, c := range counts {
		d := float64(c) - expected
		x += d * d / expected
	}
	return x
}

// chiSquareHomogeneity is Pearson's statistic of a 2 x k table: do two
// samples come from one distribution?
func chiSquareHomogeneity(a, b []int) float64 {
	sum := func(xs []int) (s int) {
		for _, x := range xs {
			s += x
		}
		return s
	}
	na, nb := float64(sum(a)), float64(sum(b))
	x := 0.0
	for i := range a {
		col := float64(a[i] + b[i])
		for _, obs := range []struct{ o, n float64 }{{float64(a[i]), na}, {float64(b[i]), nb}} {
			e := obs.n * col / (na + nb)
			if e > 0 {
				x += (obs.o - e) * (obs.o - e) / e
			}
		}
	}
	return x
}

func TestChiSquare(t *testing.T) {
	if x := chiSquareUniform([]int{200, 200, 200, 200}); x != 0 {
		t.Errorf("uniform counts: %v", x)
	}
	if x := chiSquareUniform([]int{400, 200, 100, 100}); x <= chiSquareCritical3 {
		t.Errorf("skewed counts pass: %v", x)
	}
	if x := chiSquareHomogeneity([]int{400, 200, 100, 100}, []int{200, 200, 200, 200}); x <= chiSquareCritical3 {
		t.Errorf("different spreads pass: %v", x)
	}
}
