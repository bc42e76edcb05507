// Package fromapi reads a cluster.Snapshot from the API server. It is the
// only part of the snapshot code that needs the Kubernetes client
// libraries, so that reading files and building tables do not pull them.
package fromapi

import (
	"context"
	"errors"
	"fmt"

	"github.com/kubectl-svcproxy/kubectl-svcproxy/cluster"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// Snapshot reads a snapshot from the API server: every Service, discovery/v1
// EndpointSlice and networking/v1 ServiceCIDR, and the one Node named
// nodeName (not all Nodes, so that read access to one Node suffices). Lists
// use resourceVersion "0" so the API server's watch cache answers, as it
// does for kube-proxy's informers.
//
// A server without the ServiceCIDR API (NotFound), or credentials not allowed
// to list it (Forbidden), give no ServiceCIDRs and a warning; a missing Node
// is an error for which cluster.IsNodeNotFound is true.
func Snapshot(ctx context.Context, client kubernetes.Interface, nodeName string) (*cluster.Snapshot, error) {
	return SnapshotReporting(ctx, client, nodeName, nil)
}

// Listed is told each list's kind (Service, EndpointSlice) and item count
// as it arrives.
type Listed func(kind string, items int)

// SnapshotReporting is Snapshot that tells listed (if not nil) of each
// list as it arrives, for a progress line while a large cluster's lists
// come in.
func SnapshotReporting(ctx context.Context, client kubernetes.Interface, nodeName string, listed Listed) (*cluster.Snapshot, error) {
	if listed == nil {
		listed = func(string, int) {}
	}
	if nodeName == "" {
		return nil, errors.New("no node name given")
	}
	fromCache := metav1.ListOptions{ResourceVersion: "0"}
	s := &cluster.Snapshot{}

	node, err := client.CoreV1().Nodes().Get(ctx, nodeName, metav1.GetOptions{ResourceVersion: "0"})
	switch {
	case apierrors.IsNotFound(err):
		return nil, &cluster.NodeNotFoundError{Name: nodeName, Err: err}
	case err != nil:
		return nil, fmt.Errorf("get node %q: %w", nodeName, err)
	}
	s.Nodes = append(s.Nodes, *node)

	services, err := client.CoreV1().Services(metav1.NamespaceAll).List(ctx, fromCache)
	if err != nil {
		return nil, fmt.Errorf("list services: %w", err)
	}
	s.Services = services.Items
	listed("Service", len(s.Services))

	slices, err := client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, fromCache)
	if err != nil {
		return nil, fmt.Errorf("list endpointslices: %w", err)
	}
	s.EndpointSlices = slices.Items
	listed("EndpointSlice", len(s.EndpointSlices))

	cidrs, err := client.NetworkingV1().ServiceCIDRs().List(ctx, fromCache)
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsForbidden(err):
		s.Warnings = append(s.Warnings, cluster.Warning{
			Object:  "servicecidrs",
			Message: fmt.Sprintf("cannot list (%v): continuing without ServiceCIDRs", err),
		})
	case err != nil:
		return nil, fmt.Errorf("list servicecidrs: %w", err)
	default:
		s.ServiceCIDRs = cidrs.Items
	}

	s.Normalize()
	return s, nil
}
