package trigger

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

// Retry delays of a watch that failed to start, doubling up to the cap.
const (
	retryFirst = time.Second
	retryMax   = 30 * time.Second
)

// API watches what cluster.FromAPI reads (every Service, EndpointSlice and
// ServiceCIDR, and the Node named nodeName) until ctx is done, and signals
// on every change. Each watch starts without a resourceVersion, so its
// first events replay the current objects: one signal soon after start,
// which the caller's first reload absorbs. A watch that ends resumes from
// the last resourceVersion seen; one that has expired (410 Gone) starts
// over, and signals again, since changes may have been missed.
//
// This is a bare watch loop rather than client-go informers: the caller
// re-reads the whole state on a signal and needs no cache of its own.
func API(ctx context.Context, client kubernetes.Interface, nodeName string, log *slog.Logger) Signal {
	sig := newSignal()
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nodeName).String()}
	sources := []struct {
		kind  string
		watch func(context.Context, metav1.ListOptions) (watch.Interface, error)
		base  metav1.ListOptions
	}{
		{"services", client.CoreV1().Services(metav1.NamespaceAll).Watch, metav1.ListOptions{}},
		{"endpointslices", client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).Watch, metav1.ListOptions{}},
		{"servicecidrs", client.NetworkingV1().ServiceCIDRs().Watch, metav1.ListOptions{}},
		{"nodes", client.CoreV1().Nodes().Watch, byName},
	}
	for _, s := range sources {
		w := &watcher{kind: s.kind, start: s.watch, opts: s.base, sig: sig, log: log.With("resource", s.kind)}
		go w.run(ctx)
	}
	return sig
}

// watcher keeps one watch open.
type watcher struct {
	kind  string
	start func(context.Context, metav1.ListOptions) (watch.Interface, error)
	opts  metav1.ListOptions
	sig   Signal
	log   *slog.Logger
	rv    string // last resourceVersion seen; "" replays everything
}

func (w *watcher) run(ctx context.Context) {
	delay := retryFirst
	for ctx.Err() == nil {
		opts := w.opts
		opts.ResourceVersion = w.rv
		opts.AllowWatchBookmarks = true
		wi, err := w.start(ctx, opts)
		switch {
		case err == nil:
			delay = retryFirst
			w.consume(ctx, wi)
			continue
		case ctx.Err() != nil:
			return
		case w.kind == "servicecidrs" && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
			// As cluster.FromAPI: a server without the API, or no
			// permission, means no ServiceCIDRs.
			w.log.Debug("not watching: the API is unavailable", "err", err)
			return
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			w.rv = ""
			w.sig.notify()
			continue
		}
		w.log.Warn("watch failed; retrying", "err", err, "retryIn", delay)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, retryMax)
	}
}

// consume reads one watch until it ends.
func (w *watcher) consume(ctx context.Context, wi watch.Interface) {
	defer wi.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			switch ev.Type {
			case watch.Error:
				err := apierrors.FromObject(ev.Object)
				if status, ok := err.(apierrors.APIStatus); ok && status.Status().Code == http.StatusGone {
					w.rv = ""
					w.sig.notify()
				}
				w.log.Debug("watch ended with an error", "err", err)
				return
			case watch.Bookmark:
				w.remember(ev)
			default:
				w.remember(ev)
				w.log.Debug("change", "type", ev.Type)
				w.sig.notify()
			}
		}
	}
}

func (w *watcher) remember(ev watch.Event) {
	if m, err := meta.Accessor(ev.Object); err == nil && m.GetResourceVersion() != "" {
		w.rv = m.GetResourceVersion()
	}
}
