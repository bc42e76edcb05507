package conformance

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/test/synthetic"
)

// changeRounds counts the endpoint changes made by this process, so that
// every change gives an address of its own.
var changeRounds atomic.Int32

// SkipRounds makes the next change's address the one after n rounds: for
// a process that follows others against the same API server (each boot
// of the VM), so that no change rewrites an address already there, which
// kube-proxy would not see as a change.
func SkipRounds(n int) { changeRounds.Store(int32(n)) }

// Measure changes one endpoint of one of the n synthetic Services
// (LoadSynthetic) at a time, changes times, waiting after each until both
// have counted it in kubeproxy_network_programming_duration_seconds; each
// one's sample is the rise of that histogram's sum, its own exact measure
// of the change. Then it notes the syncs made meanwhile and each one's
// usage, and stops both.
func (p Pair) Measure(ctx context.Context, client kubernetes.Interface, n, changes int) error {
	table := synthetic.Table(n, SyntheticEndpoints)
	syncsBefore, err := p.readTotals(ctx, syncCount, syncSum)
	if err != nil {
		return err
	}
	for i := range changes {
		round := int(changeRounds.Add(1))
		sp := table.Ports[(i*7919+n/2)%n].Name
		before, err := p.readTotals(ctx, latencyCount, latencySum)
		if err != nil {
			return err
		}
		if err := changeOneEndpoint(ctx, client, sp.Namespace, sp.Name+"-1", round); err != nil {
			return err
		}
		if err := p.waitProgrammed(ctx, before); err != nil {
			return err
		}
		// Both idle again for their minimum sync period (1 s by default)
		// before the next change, so that each sample is one change's.
		time.Sleep(time.Second)
	}
	syncsAfter, err := p.readTotals(ctx, syncCount, syncSum)
	if err != nil {
		return err
	}
	for i, w := range p {
		w.Syncs = histTotals{syncsAfter[i].count - syncsBefore[i].count, syncsAfter[i].sum - syncsBefore[i].sum}
		if w.Usage, err = w.proc.Usage(); err != nil {
			return err
		}
		if w.API, err = w.apiLoad(ctx); err != nil {
			return err
		}
		w.Stop()
	}
	return nil
}

// changeOneEndpoint replaces the last endpoint of an EndpointSlice with
// an address of its own for round, stamping the slice with the time of
// the change as the EndpointSlice controller does.
func changeOneEndpoint(ctx context.Context, client kubernetes.Interface, namespace, name string, round int) error {
	slices := client.DiscoveryV1().EndpointSlices(namespace)
	slice, err := slices.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	last := &slice.Endpoints[len(slice.Endpoints)-1]
	last.Addresses = []string{fmt.Sprintf("10.127.%d.%d", round>>8, round&0xff)}
	if slice.Annotations == nil {
		slice.Annotations = map[string]string{}
	}
	slice.Annotations[corev1.EndpointsLastChangeTriggerTime] = time.Now().UTC().Format(time.RFC3339Nano)
	_, err = slices.Update(ctx, slice, metav1.UpdateOptions{})
	return err
}

// histTotals are a process's count and sum of a histogram.
type histTotals struct{ count, sum float64 }

// readTotals reads both processes' count and sum of a histogram.
func (p Pair) readTotals(ctx context.Context, count, sum string) ([2]histTotals, error) {
	var out [2]histTotals
	for i, w := range p {
		body, err := w.scrape(ctx)
		if err != nil {
			return out, err
		}
		out[i] = histTotals{MetricSum(body, count), MetricSum(body, sum)}
	}
	return out, nil
}

// waitProgrammed waits until both have counted one more network
// programming latency than before, and takes each one's sample from the
// rise of its histogram's sum.
func (p Pair) waitProgrammed(ctx context.Context, before [2]histTotals) error {
	deadline := time.Now().Add(2 * time.Minute)
	var done [2]bool
	for !done[0] || !done[1] {
		now, err := p.readTotals(ctx, latencyCount, latencySum)
		if err != nil {
			return err
		}
		for i, w := range p {
			switch {
			case done[i] || now[i].count == before[i].count:
			case now[i].count != before[i].count+1:
				return fmt.Errorf("%s: %s went from %v to %v for one change", w.Name, latencyCount, before[i].count, now[i].count)
			default:
				w.Latencies = append(w.Latencies, now[i].sum-before[i].sum)
				done[i] = true
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("one endpoint change not programmed by both in 2 minutes (done: kube-proxy %v, tool %v)", done[0], done[1])
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil
}
