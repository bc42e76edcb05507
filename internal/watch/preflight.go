package watch

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
)

// preflight checks, before any informer starts, what would otherwise only
// show as informers retrying forever: that this node's Node exists and
// that the credentials may get, list and watch every resource watched. A
// PermanentError (401, 403, no such Node, an untrusted certificate) ends the run with a message that
// names the verb and resource; anything else (the API server unreachable,
// 5xx) is returned as is and retried by the caller.
//
// A ServiceCIDR API that the server lacks (404) or that the credentials
// may not read (403) is tolerated as cluster.FromAPI tolerates it: no
// ServiceCIDRs, and a warning.
func preflight(ctx context.Context, client kubernetes.Interface, nodeName string) (withCIDRs bool, warnings []cluster.Warning, err error) {
	if _, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{ResourceVersion: "0"}); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil, &PermanentError{&nodeMissingError{name: nodeName, err: err}}
		}
		return false, nil, classify("get", resNodes, err)
	}
	byName := metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", nodeName).String()}
	checks := []struct {
		resource string
		list     listFunc
		watch    watchFunc
		opts     metav1.ListOptions
	}{
		{resNodes, listRV(client.CoreV1().Nodes().List), client.CoreV1().Nodes().Watch, byName},
		{resServices, listRV(client.CoreV1().Services("").List), client.CoreV1().Services("").Watch, metav1.ListOptions{}},
		{resEndpointSlices, listRV(client.DiscoveryV1().EndpointSlices("").List), client.DiscoveryV1().EndpointSlices("").Watch, metav1.ListOptions{}},
	}
	for _, c := range checks {
		if err := listAndWatch(ctx, c.resource, c.opts, c.list, c.watch); err != nil {
			return false, nil, err
		}
	}
	cidrs := client.NetworkingV1().ServiceCIDRs()
	err = listAndWatch(ctx, resServiceCIDRs, metav1.ListOptions{}, listRV(cidrs.List), cidrs.Watch)
	var perm *PermanentError
	switch {
	case errors.As(err, &perm) && (apierrors.IsNotFound(err) || apierrors.IsForbidden(err)):
		return false, []cluster.Warning{{
			Object:  resServiceCIDRs,
			Message: fmt.Sprintf("cannot list and watch (%v): continuing without ServiceCIDRs", errors.Unwrap(perm.Err)),
		}}, nil
	case err != nil:
		return false, nil, err
	}
	return true, nil, nil
}

// listFunc lists and returns the list's resourceVersion; watchFunc watches.
type (
	listFunc  func(context.Context, metav1.ListOptions) (string, error)
	watchFunc func(context.Context, metav1.ListOptions) (watch.Interface, error)
)

// listRV adapts a typed List to a listFunc.
func listRV[L interface{ GetResourceVersion() string }](list func(context.Context, metav1.ListOptions) (L, error)) listFunc {
	return func(ctx context.Context, o metav1.ListOptions) (string, error) {
		l, err := list(ctx, o)
		if err != nil {
			return "", err
		}
		return l.GetResourceVersion(), nil
	}
}

// listAndWatch lists one object of resource and opens (and closes) a watch
// from there, as an informer would.
func listAndWatch(ctx context.Context, resource string, opts metav1.ListOptions, list listFunc, watchFn watchFunc) error {
	o := opts
	o.Limit = 1
	rv, err := list(ctx, o)
	if err != nil {
		return classify("list", resource, err)
	}
	o = opts
	o.ResourceVersion = rv
	timeout := int64(1)
	o.TimeoutSeconds = &timeout
	w, err := watchFn(ctx, o)
	if err != nil {
		return classify("watch", resource, err)
	}
	w.Stop()
	return nil
}

// classify wraps err with the verb and resource, as a PermanentError when
// retrying cannot help.
func classify(verb, resource string, err error) error {
	err = fmt.Errorf("%s %s: %w", verb, resource, err)
	switch {
	case apierrors.IsUnauthorized(err):
		return &PermanentError{err}
	case apierrors.IsForbidden(err), apierrors.IsNotFound(err), untrusted(err):
		return &PermanentError{err}
	}
	return err
}

// untrusted says whether err is a server certificate that the client does
// not trust: a wrong CA or server name in the kubeconfig, which no retry
// fixes.
func untrusted(err error) bool {
	var unknownCA x509.UnknownAuthorityError
	var hostname x509.HostnameError
	var invalid x509.CertificateInvalidError
	return errors.As(err, &unknownCA) || errors.As(err, &hostname) || errors.As(err, &invalid)
}

// PermanentError is a problem that retrying cannot fix: Run returns it
// rather than wait for the API server.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }
