package watch

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// startup watches the informers' errors until their caches are full. As
// kube-proxy, the loop asks the API server for nothing but the informers'
// lists and watches: what a separate check before them would find (a
// missing permission, credentials or a certificate the server rejects,
// the ServiceCIDR API missing) their first errors say, and a missing Node
// their full cache does. Only those checks would make each node cost the
// API server more requests than kube-proxy does.
type startup struct {
	m     *metrics
	log   *slog.Logger
	src   atomic.Pointer[source]
	done  atomic.Bool // the caches filled once
	fatal chan error
}

func newStartup(m *metrics, log *slog.Logger) *startup {
	return &startup{m: m, log: log, fatal: make(chan error, 1)}
}

// watchError is the informers' error handler. Before the caches fill, an
// error that waiting cannot fix ends Run with it, bar ServiceCIDRs the
// server lacks or forbids, which are dropped with a warning. After, every
// error is logged and retried: a permission revoked later is a watch
// error, not a stop. An API server that cannot be reached is logged by
// the transport's monitor, once.
func (st *startup) watchError(resource string, err error) {
	st.m.watchErrors.WithLabelValues(resource).Inc()
	if !st.done.Load() {
		if resource == resServiceCIDRs && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)) {
			if s := st.src.Load(); s != nil {
				if w := s.dropCIDRs(err); w != nil {
					st.log.Warn(w.String())
				}
			}
			return
		}
		var perm *PermanentError
		if err := classify("list and watch", resource, err); errors.As(err, &perm) {
			select {
			case st.fatal <- err:
			default:
			}
			return
		}
	}
	var netErr net.Error
	if errors.As(err, &netErr) {
		return
	}
	st.log.Error("Watch failed, retrying", "resource", resource, "err", err)
}

// until waits until cond holds, a permanent error comes, or ctx is done
// (nil).
func (st *startup) until(ctx context.Context, cond func() bool) error {
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			return nil
		case err := <-st.fatal:
			return err
		case <-tick.C:
		}
	}
	return nil
}

// wait waits until s's caches are full and this node's Node is among
// them. It returns a PermanentError for what waiting cannot fix, and nil
// when ctx is done first (a clean stop) or the caches are full.
func (st *startup) wait(ctx context.Context, s *source, nodeName string) error {
	if err := st.until(ctx, s.hasSynced); err != nil || ctx.Err() != nil {
		return err
	}
	st.done.Store(true)
	if s.node() == nil {
		err := apierrors.NewNotFound(schema.GroupResource{Resource: resNodes}, nodeName)
		return &PermanentError{&nodeMissingError{name: nodeName, err: err}}
	}
	return nil
}
