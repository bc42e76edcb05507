package testcluster

import (
	"context"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
)

// Option changes how Start runs the cluster.
type Option func(*options)

// Dialer opens a connection as net.Dialer.DialContext does.
type Dialer func(ctx context.Context, network, addr string) (net.Conn, error)

type options struct {
	// host is the address kube-apiserver binds and advertises; "" is
	// 127.0.0.1 of the test's own namespace.
	host string
	// command builds the command that runs a server (etcd, kube-apiserver);
	// exec.Command unless WithNode replaces it.
	command func(name string, args ...string) *exec.Cmd
	// dial opens the Admin client's connections; nil is the default.
	dial Dialer
}

// APIServerPort is kube-apiserver's port with WithNode, as kubeadm's.
const APIServerPort = 6443

// WithNode runs etcd and kube-apiserver as on a real control-plane node,
// for the kubelet end-to-end test (test/kubeletlab): through command
// (which puts them into that node's namespaces), etcd on 127.0.0.1:2379
// and kube-apiserver on host:6443, advertising host, whose serving
// certificate then names host and the first ClusterIP. Unlike the
// default, the ServiceAccount admission plugin is on (Pods get their
// service account's token, which kubelet requests) and the default
// endpoint reconciler publishes host:6443 as default/kubernetes' endpoint.
// Admin and the readiness checks connect through dial, which must reach
// host from the test's process.
func WithNode(host string, command func(name string, args ...string) *exec.Cmd, dial Dialer) Option {
	return func(o *options) {
		o.host, o.command, o.dial = host, command, dial
	}
}

func newOptions(opts []Option) *options {
	o := &options{command: exec.Command}
	for _, opt := range opts {
		opt(o)
	}
	return o
}

// host is the address kube-apiserver listens on.
func (c *Cluster) host() string {
	if c.opts.host == "" {
		return "127.0.0.1"
	}
	return c.opts.host
}

// nodeFlags changes kube-apiserver's flags for WithNode: its address, the
// ServiceAccount admission plugin and the default endpoint reconciler.
func (c *Cluster) nodeFlags() {
	args := c.apiserverArgs[:0]
	for _, a := range c.apiserverArgs {
		switch {
		case strings.HasPrefix(a, "--bind-address="),
			strings.HasPrefix(a, "--advertise-address="),
			strings.HasPrefix(a, "--endpoint-reconciler-type="),
			strings.HasPrefix(a, "--disable-admission-plugins="):
			continue
		}
		args = append(args, a)
	}
	c.apiserverArgs = append(args, "--bind-address="+c.opts.host, "--advertise-address="+c.opts.host,
		// Logs and exec reach kubelet at the Node's address, not through
		// a DNS lookup of its name.
		"--kubelet-preferred-address-types=InternalIP")
}

// CAFile is the file holding the CA of kube-apiserver's serving
// certificate (it appears once kube-apiserver has started).
func (c *Cluster) CAFile() string { return c.caFile }

// ServiceAccountKey is the key that signs service account tokens, for
// kube-controller-manager's --service-account-private-key-file.
func (c *Cluster) ServiceAccountKey() string { return filepath.Join(c.dir, "sa.key") }
